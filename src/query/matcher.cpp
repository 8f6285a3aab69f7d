#include "query/matcher.h"

#include <vector>

#include "bson/bson_builder.h"

namespace tessera::query {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonView;

StatusWith<std::unique_ptr<Matcher>> Matcher::parse(BsonView filter) {
    return parse(filter, nullptr);
}

StatusWith<std::unique_ptr<Matcher>> Matcher::parse(
    BsonView filter, std::shared_ptr<const bson::StringComparator> collator) {
    return parse(filter, std::move(collator), nullptr);
}

StatusWith<std::unique_ptr<Matcher>> Matcher::parse(
    BsonView filter, std::shared_ptr<const bson::StringComparator> collator,
    std::shared_ptr<const Variables> let) {
    std::unique_ptr<Matcher> m(new Matcher());
    m->_filter = filter.copy();
    ASSIGN_OR_RETURN(m->_root, parseMatchExpression(m->_filter, std::move(let)));
    if (collator) {
        m->_collator = std::move(collator);
        m->_root->setCollator(m->_collator.get());
    }
    return m;
}

bool Matcher::matches(BsonView doc, MatchDetails* details) const {
    if (details) details->reset();
    return _root->matches(doc, details);
}

namespace {

struct Equality {
    std::string path;
    BsonElement value;
};

void collect(const MatchExpression* e, std::vector<Equality>* out) {
    switch (e->matchType()) {
        case MatchType::kAnd:
            for (size_t i = 0; i < e->numChildren(); ++i) collect(e->child(i), out);
            break;
        case MatchType::kEq:
            out->push_back({e->path(), static_cast<const ComparisonMatchExpression*>(e)->rhs()});
            break;
        case MatchType::kIn: {
            auto* in = static_cast<const InMatchExpression*>(e);
            if (in->equalities().size() == 1 && in->regexes().empty()) {
                out->push_back({e->path(), in->equalities().front()});
            }
            break;
        }
        default:
            break;
    }
}

// True when `prefix` is a proper dotted prefix of `path` ("a" of "a.b").
bool isPathPrefix(const std::string& prefix, const std::string& path) {
    return path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
           path[prefix.size()] == '.';
}

}  // namespace

StatusWith<BsonObj> Matcher::collectEqualities(BsonView filter) {
    ASSIGN_OR_RETURN(auto matcher, Matcher::parse(filter));
    std::vector<Equality> eqs;
    collect(matcher->root(), &eqs);
    bson::BsonBuilder b;
    for (size_t i = 0; i < eqs.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
            if (eqs[i].path == eqs[j].path) {
                return Status(ErrorCodes::NotSingleValueField,
                              "cannot infer query fields to set, path '" + eqs[i].path +
                                  "' is matched twice");
            }
            if (isPathPrefix(eqs[i].path, eqs[j].path) || isPathPrefix(eqs[j].path, eqs[i].path)) {
                const auto& shorter = eqs[i].path.size() < eqs[j].path.size() ? eqs[i] : eqs[j];
                const auto& longer = eqs[i].path.size() < eqs[j].path.size() ? eqs[j] : eqs[i];
                return Status(ErrorCodes::NotSingleValueField,
                              "cannot infer query fields to set, both paths '" + longer.path +
                                  "' and '" + shorter.path + "' are matched");
            }
        }
        b.appendElementAs(eqs[i].value, eqs[i].path);
    }
    return b.obj();
}

}  // namespace tessera::query
