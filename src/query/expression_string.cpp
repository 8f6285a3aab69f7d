// String operators.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cctype>

#include "query/expression_internal.h"
#include "query/match_expression.h"

namespace tessera::query::expr {

using bson::BsonElement;
using bson::BsonType;

namespace {

bool isContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

size_t cpLength(std::string_view s) {
    size_t n = 0;
    for (unsigned char c : s) n += !isContinuation(c);
    return n;
}

// Byte offset of code point `cp` (clamped to the end).
size_t cpToByte(std::string_view s, size_t cp) {
    size_t i = 0;
    while (i < s.size() && cp > 0) {
        ++i;
        while (i < s.size() && isContinuation(static_cast<unsigned char>(s[i]))) ++i;
        --cp;
    }
    return i;
}

StatusWith<Value> concat(const std::vector<Value>& args, const Variables&) {
    size_t bytes = 0;
    for (const auto& a : args) {
        if (a.nullish()) return Value::null();
        if (!a.isString())
            return Status(16702, "$concat only supports strings, not " + typeNameOf(a));
        bytes += a.element().stringValue().size();
    }
    TRY_STATUS(checkValueBytes("$concat", bytes));
    std::string out;
    out.reserve(bytes);
    for (const auto& a : args) out += a.element().stringValue();
    return Value::fromString(out);
}

StatusWith<Value> substrBytes(std::string op, const std::vector<Value>& args) {
    ASSIGN_OR_RETURN(std::string s, coerceToString(args[0]));
    if (!args[1].isNumber()) {
        return Status(16034, op + ":  starting index must be a numeric type (is BSON type " +
                                 typeNameOf(args[1]) + ")");
    }
    if (!args[2].isNumber()) {
        return Status(16035, op + ":  length must be a numeric type (is BSON type " +
                                 typeNameOf(args[2]) + ")");
    }
    double startD = toDouble(args[1].element());
    if (startD < 0) {
        return Status(50752, op + ":  starting index must be non-negative (got: " +
                                 std::to_string(static_cast<int64_t>(startD)) + ")");
    }
    size_t start = static_cast<size_t>(startD);
    double lenD = toDouble(args[2].element());
    if (start >= s.size()) return Value::fromString("");
    size_t len =
        lenD < 0 ? s.size() - start : std::min<size_t>(static_cast<size_t>(lenD), s.size() - start);
    if (isContinuation(static_cast<unsigned char>(s[start]))) {
        return Status(28656, op + ":  Invalid range, starting index is a UTF-8 continuation byte.");
    }
    if (start + len < s.size() && isContinuation(static_cast<unsigned char>(s[start + len]))) {
        return Status(28657,
                      op + ":  Invalid range, ending index is in the middle of a UTF-8 character.");
    }
    return Value::fromString(s.substr(start, len));
}

StatusWith<Value> substrCP(const std::vector<Value>& args, const Variables&) {
    ASSIGN_OR_RETURN(std::string s, coerceToString(args[0]));
    int64_t start, len;
    if (!args[1].isNumber()) {
        return Status(34450, "$substrCP: starting index must be a numeric type (is BSON type " +
                                 typeNameOf(args[1]) + ")");
    }
    if (!integralValue(args[1], &start)) {
        return Status(34451,
                      "$substrCP: starting index cannot be represented as a 32-bit integral value");
    }
    if (!args[2].isNumber()) {
        return Status(34452, "$substrCP: length must be a numeric type (is BSON type " +
                                 typeNameOf(args[2]) + ")");
    }
    if (!integralValue(args[2], &len)) {
        return Status(34453, "$substrCP: length cannot be represented as a 32-bit integral value");
    }
    if (start < 0)
        return Status(34455, "$substrCP: the starting index must be nonnegative integer.");
    if (len < 0) return Status(34454, "$substrCP: length must be a nonnegative integer.");
    size_t b = cpToByte(s, static_cast<size_t>(start));
    size_t e = cpToByte(std::string_view(s).substr(b), static_cast<size_t>(len)) + b;
    return Value::fromString(s.substr(b, e - b));
}

PositionalFn caseFn(bool upper) {
    return [upper](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
        ASSIGN_OR_RETURN(std::string s, coerceToString(args[0]));
        for (char& c : s) {
            c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c))
                                        : std::tolower(static_cast<unsigned char>(c)));
        }
        return Value::fromString(s);
    };
}

PositionalFn strLen(bool cp) {
    return [cp](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
        if (!args[0].isString()) {
            return Status(cp ? 34471 : 34473,
                          std::string(cp ? "$strLenCP" : "$strLenBytes") +
                              " requires a string argument, found: " + typeNameOf(args[0]));
        }
        std::string_view s = args[0].element().stringValue();
        return Value::fromInt32(static_cast<int32_t>(cp ? cpLength(s) : s.size()));
    };
}

StatusWith<Value> split(const std::vector<Value>& args, const Variables&) {
    if (args[0].nullish() || args[1].nullish()) return Value::null();
    if (!args[0].isString()) {
        return Status(40085,
                      "$split requires an expression that evaluates to a string as a first "
                      "argument, found: " +
                          typeNameOf(args[0]));
    }
    if (!args[1].isString()) {
        return Status(40086,
                      "$split requires an expression that evaluates to a string as a "
                      "second argument, found: " +
                          typeNameOf(args[1]));
    }
    std::string_view s = args[0].element().stringValue();
    std::string_view d = args[1].element().stringValue();
    if (d.empty()) return Status(40087, "$split requires a non-empty separator");
    bson::BsonArrayBuilder parts;
    size_t pos = 0;
    while (true) {
        size_t f = s.find(d, pos);
        if (f == std::string_view::npos) {
            parts.append(s.substr(pos));
            break;
        }
        parts.append(s.substr(pos, f - pos));
        TRY_STATUS(checkValueBytes("$split", parts.len()));
        pos = f + d.size();
    }
    return Value::fromArray(parts.arr());
}

// Splits into UTF-8 code points.
std::vector<std::string_view> codePoints(std::string_view s) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < s.size()) {
        size_t j = i + 1;
        while (j < s.size() && isContinuation(static_cast<unsigned char>(s[j]))) ++j;
        out.push_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

NamedFn trimFn(std::string op, bool left, bool right) {
    return [op, left, right](const NamedValues& a, const Variables&) -> StatusWith<Value> {
        Value in = a.get("input");
        if (in.nullish()) return Value::null();
        if (!in.isString()) {
            return Status(50699, op + " requires its input to be a string, got " + in.toString() +
                                     " (of type " + typeNameOf(in) + ") instead.");
        }
        std::vector<std::string_view> chars;
        if (a.has("chars")) {
            Value c = a.get("chars");
            if (c.nullish()) return Value::null();
            if (!c.isString()) {
                return Status(50700, op + " requires 'chars' to be a string, got " + c.toString() +
                                         " (of type " + typeNameOf(c) + ") instead.");
            }
            chars = codePoints(c.element().stringValue());
        } else {
            static const std::string_view kWs[] = {" ",
                                                   "\t",
                                                   "\n",
                                                   "\v",
                                                   "\f",
                                                   "\r",
                                                   std::string_view("\0", 1),
                                                   "\xC2\xA0",
                                                   "\xE2\x80\x80",
                                                   "\xE2\x80\x81",
                                                   "\xE2\x80\x82",
                                                   "\xE2\x80\x83",
                                                   "\xE2\x80\x84",
                                                   "\xE2\x80\x85",
                                                   "\xE2\x80\x86",
                                                   "\xE2\x80\x87",
                                                   "\xE2\x80\x88",
                                                   "\xE2\x80\x89",
                                                   "\xE2\x80\x8A"};
            chars.assign(std::begin(kWs), std::end(kWs));
        }
        auto cps = codePoints(in.element().stringValue());
        auto isTrim = [&](std::string_view cp) {
            return std::find(chars.begin(), chars.end(), cp) != chars.end();
        };
        size_t b = 0, e = cps.size();
        if (left)
            while (b < e && isTrim(cps[b])) ++b;
        if (right)
            while (e > b && isTrim(cps[e - 1])) --e;
        std::string out;
        for (size_t i = b; i < e; ++i) out += cps[i];
        return Value::fromString(out);
    };
}

PositionalFn indexOf(bool cp) {
    std::string op = cp ? "$indexOfCP" : "$indexOfBytes";
    return [cp, op](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
        if (args[0].nullish()) return Value::null();
        if (!args[0].isString()) {
            return Status(40091, op + " requires a string as the first argument, found: " +
                                     typeNameOf(args[0]));
        }
        if (!args[1].isString()) {
            return Status(40092, op + " requires a string as the second argument, found: " +
                                     typeNameOf(args[1]));
        }
        std::string_view s = args[0].element().stringValue();
        std::string_view t = args[1].element().stringValue();
        int64_t total = static_cast<int64_t>(cp ? cpLength(s) : s.size());
        int64_t start = 0, end = total;
        for (size_t i = 2; i < args.size(); ++i) {
            int64_t x;
            if (!integralValue(args[i], &x)) {
                return Status(40096, op + " requires an integral " +
                                         std::string(i == 2 ? "starting" : "ending") +
                                         " index, found a value of type: " + typeNameOf(args[i]) +
                                         ", with value: " + args[i].toString());
            }
            if (x < 0) {
                return Status(40097, op + " requires a nonnegative " +
                                         std::string(i == 2 ? "start" : "ending") +
                                         " index, found: " + std::to_string(x));
            }
            (i == 2 ? start : end) = x;
        }
        end = std::min(end, total);
        if (start > end) return Value::fromInt32(-1);
        if (!cp) {
            std::string_view window = s.substr(0, static_cast<size_t>(end));
            size_t f = window.find(t, static_cast<size_t>(start));
            return Value::fromInt32(f == std::string_view::npos ? -1 : static_cast<int32_t>(f));
        }
        auto cps = codePoints(s);
        auto tcps = codePoints(t);
        for (int64_t i = start; i + static_cast<int64_t>(tcps.size()) <= end; ++i) {
            bool ok = true;
            for (size_t j = 0; j < tcps.size() && ok; ++j) ok = cps[i + j] == tcps[j];
            if (ok) return Value::fromInt32(static_cast<int32_t>(i));
        }
        return Value::fromInt32(-1);
    };
}

StatusWith<Value> strcasecmp(const std::vector<Value>& args, const Variables&) {
    ASSIGN_OR_RETURN(std::string a, coerceToString(args[0]));
    ASSIGN_OR_RETURN(std::string b, coerceToString(args[1]));
    for (auto* s : {&a, &b}) {
        for (char& c : *s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    int c = a.compare(b);
    return Value::fromInt32(c < 0 ? -1 : c > 0 ? 1 : 0);
}

// ---- regex ----
enum class RegexMode { kMatch, kFind, kFindAll };

StatusWith<Value> regexFn(RegexMode mode, const NamedValues& a) {
    std::string op = mode == RegexMode::kMatch  ? "$regexMatch"
                     : mode == RegexMode::kFind ? "$regexFind"
                                                : "$regexFindAll";
    auto empty = [&]() -> Value {
        if (mode == RegexMode::kMatch) return Value::fromBool(false);
        if (mode == RegexMode::kFind) return Value::null();
        return makeArray({});
    };
    Value in = a.get("input"), re = a.get("regex"), opts = a.get("options");
    std::string pattern, flags;
    if (!opts.nullish()) {
        if (!opts.isString()) {
            return Status(51106, op + " needs 'options' to be of type string");
        }
        flags = std::string(opts.element().stringValue());
    }
    if (re.type() == BsonType::Regex) {
        auto r = re.element().regexValue();
        pattern = std::string(r.pattern);
        if (!r.options.empty()) {
            if (!flags.empty()) {
                return Status(51107, op + " found regex option(s) specified in both 'regex' and "
                                          "'option' fields");
            }
            flags = std::string(r.options);
        }
    } else if (re.isString()) {
        pattern = std::string(re.element().stringValue());
    } else if (!re.nullish()) {
        return Status(51105, op + " needs 'regex' to be of type string or regex");
    }
    if (in.nullish()) return empty();
    if (!in.isString()) return Status(51104, op + " needs 'input' to be of type string");
    if (re.nullish()) return empty();
    if (pattern.find('\0') != std::string::npos) {
        return Status(51109, op + ": regular expression cannot contain an embedded null byte");
    }
    auto options = CompiledRegex::compileOptions(flags);
    if (!options.isOK()) return Status(51108, op + " " + options.getStatus().reason());
    int err = 0;
    PCRE2_SIZE errOff = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     options.getValue(), &err, &errOff, nullptr);
    if (!code) {
        PCRE2_UCHAR buf[256];
        pcre2_get_error_message(err, buf, sizeof buf);
        return Status(51111, op + ": Invalid Regex: " + reinterpret_cast<const char*>(buf));
    }
    std::unique_ptr<pcre2_code, void (*)(pcre2_code*)> codeGuard(code, pcre2_code_free);
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
    std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> mdGuard(md,
                                                                           pcre2_match_data_free);
    std::string_view subject = in.element().stringValue();
    uint32_t groups = 0;
    pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &groups);
    std::vector<Value> results;
    size_t offset = 0;
    while (offset <= subject.size()) {
        int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(),
                             offset, 0, md, nullptr);
        if (rc < 0) break;
        if (mode == RegexMode::kMatch) return Value::fromBool(true);
        PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        bson::BsonBuilder b;
        b.startObject("");
        b.appendString("match", subject.substr(ov[0], ov[1] - ov[0]));
        b.appendInt32("idx", static_cast<int32_t>(cpLength(subject.substr(0, ov[0]))));
        b.startArray("captures");
        for (uint32_t g = 1; g <= groups; ++g) {
            std::string key = std::to_string(g - 1);
            if (static_cast<int>(g) < rc && ov[2 * g] != PCRE2_UNSET) {
                b.appendString(key, subject.substr(ov[2 * g], ov[2 * g + 1] - ov[2 * g]));
            } else {
                b.appendNull(key);
            }
        }
        b.end();
        b.end();
        results.push_back(Value::fromHolder(b.obj()));
        if (mode == RegexMode::kFind) return results[0];
        if (ov[1] == ov[0]) {
            // Empty match: advance one code point.
            size_t next = ov[1] + 1;
            while (next < subject.size() &&
                   isContinuation(static_cast<unsigned char>(subject[next])))
                ++next;
            offset = next;
        } else {
            offset = ov[1];
        }
    }
    if (mode == RegexMode::kFindAll) return makeArray(results);
    return empty();
}

NamedFn regexNamed(RegexMode mode) {
    return [mode](const NamedValues& a, const Variables&) { return regexFn(mode, a); };
}

NamedFn replaceFn(bool all) {
    std::string op = all ? "$replaceAll" : "$replaceOne";
    return [all, op](const NamedValues& a, const Variables&) -> StatusWith<Value> {
        Value in = a.get("input"), find = a.get("find"), rep = a.get("replacement");
        const char* names[] = {"input", "find", "replacement"};
        const Value* vals[] = {&in, &find, &rep};
        for (int i = 0; i < 3; ++i) {
            if (!vals[i]->nullish() && !vals[i]->isString()) {
                return Status(51746, op + " requires that '" + names[i] +
                                         "' be a string, found: " + vals[i]->toString());
            }
        }
        if (in.nullish() || find.nullish() || rep.nullish()) return Value::null();
        std::string s(in.element().stringValue());
        std::string_view f = find.element().stringValue();
        std::string_view r = rep.element().stringValue();
        std::string out;
        size_t pos = 0;
        while (true) {
            size_t hit = s.find(f, pos);
            if (hit == std::string::npos) break;
            out.append(s, pos, hit - pos);
            out += r;
            TRY_STATUS(checkValueBytes(op, out.size()));
            pos = hit + f.size();
            if (f.empty()) {
                if (pos < s.size()) out += s[pos];
                ++pos;
                if (pos > s.size()) break;
            }
            if (!all) break;
        }
        if (pos <= s.size()) out.append(s, pos, std::string::npos);
        return Value::fromString(out);
    };
}

}  // namespace

void registerString(Registry& r) {
    r.positional("$concat", 0, -1, concat);
    r.positional("$substr", 3, 3, [](const std::vector<Value>& a, const Variables&) {
        return substrBytes("$substrBytes", a);
    });
    r.positional("$substrBytes", 3, 3, [](const std::vector<Value>& a, const Variables&) {
        return substrBytes("$substrBytes", a);
    });
    r.positional("$substrCP", 3, 3, substrCP);
    r.positional("$toLower", 1, 1, caseFn(false));
    r.positional("$toUpper", 1, 1, caseFn(true));
    r.positional("$strLenBytes", 1, 1, strLen(false));
    r.positional("$strLenCP", 1, 1, strLen(true));
    r.positional("$split", 2, 2, split);
    r.named("$trim", {"input", "chars"}, {"input"}, trimFn("$trim", true, true), 50694, 50695);
    r.named("$ltrim", {"input", "chars"}, {"input"}, trimFn("$ltrim", true, false), 50694, 50695);
    r.named("$rtrim", {"input", "chars"}, {"input"}, trimFn("$rtrim", false, true), 50694, 50695);
    r.positional("$indexOfBytes", 2, 4, indexOf(false));
    r.positional("$indexOfCP", 2, 4, indexOf(true));
    r.positional("$strcasecmp", 2, 2, strcasecmp);
    for (auto [name, mode] :
         {std::pair{"$regexMatch", RegexMode::kMatch}, std::pair{"$regexFind", RegexMode::kFind},
          std::pair{"$regexFindAll", RegexMode::kFindAll}}) {
        r.named(name, {"input", "regex", "options"}, {"input", "regex"}, regexNamed(mode), 31024,
                31022);
    }
    r.named("$replaceOne", {"input", "find", "replacement"}, {"input", "find", "replacement"},
            replaceFn(false), 51750, 51749);
    r.named("$replaceAll", {"input", "find", "replacement"}, {"input", "find", "replacement"},
            replaceFn(true), 51750, 51749);
}

}  // namespace tessera::query::expr
