// CompiledRegex and RegexMatchExpression: PCRE2 with MongoDB's flags.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "query/match_expression.h"

namespace tessera::query {

using bson::BsonElement;
using bson::BsonType;

StatusWith<uint32_t> CompiledRegex::compileOptions(std::string_view flags) {
    uint32_t options = PCRE2_UTF;
    for (char c : flags) {
        switch (c) {
            case 'i':
                options |= PCRE2_CASELESS;
                break;
            case 'm':
                options |= PCRE2_MULTILINE;
                break;
            case 's':
                options |= PCRE2_DOTALL;
                break;
            case 'x':
                options |= PCRE2_EXTENDED;
                break;
            case 'u':  // UTF-8 is always on
                break;
            default:
                return Status(51108, std::string("invalid flag in regex options: ") + c);
        }
    }
    return options;
}

StatusWith<std::shared_ptr<const CompiledRegex>> CompiledRegex::compile(std::string_view pattern,
                                                                        std::string_view flags) {
    if (pattern.find('\0') != std::string_view::npos) {
        return Status(ErrorCodes::BadValue,
                      "Regular expression cannot contain an embedded null byte");
    }
    ASSIGN_OR_RETURN(uint32_t options, compileOptions(flags));
    int errorCode = 0;
    PCRE2_SIZE errorOffset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     options, &errorCode, &errorOffset, nullptr);
    if (!code) {
        PCRE2_UCHAR buf[256];
        pcre2_get_error_message(errorCode, buf, sizeof buf);
        return Status(51091, std::string("Regular expression is invalid: ") +
                                 reinterpret_cast<const char*>(buf));
    }
    std::shared_ptr<CompiledRegex> re(new CompiledRegex());
    re->_pattern = std::string(pattern);
    re->_flags = std::string(flags);
    re->_code = code;
    return std::shared_ptr<const CompiledRegex>(std::move(re));
}

CompiledRegex::~CompiledRegex() {
    if (_code) pcre2_code_free(static_cast<pcre2_code*>(_code));
}

bool CompiledRegex::matches(std::string_view subject) const {
    auto* code = static_cast<pcre2_code*>(_code);
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
    int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0,
                         md, nullptr);
    pcre2_match_data_free(md);
    return rc >= 0;
}

bool RegexMatchExpression::matchesSingleElement(const BsonElement& e, MatchDetails*) const {
    switch (e.type()) {
        case BsonType::String:
        case BsonType::Symbol:
            return _re->matches(e.stringValue());
        case BsonType::Regex: {
            auto r = e.regexValue();
            return r.pattern == _re->pattern() && r.options == _re->flags();
        }
        default:
            return false;
    }
}

}  // namespace tessera::query
