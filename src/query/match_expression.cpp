#include "query/match_expression.h"

#include <algorithm>
#include <cmath>

#include "bson/compare.h"

namespace tessera::query {

using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;

namespace {

const std::string kEmptyPath;

void setKey(MatchDetails* details, std::string_view key) {
    if (details) details->elemMatchKey = std::string(key);
}

bool isNaN(const BsonElement& e) {
    if (e.type() == BsonType::Double) return std::isnan(e.doubleValue());
    if (e.type() == BsonType::Decimal128) return e.decimalValue().isNaN();
    return false;
}

}  // namespace

const std::string& MatchExpression::path() const { return kEmptyPath; }

// ---- logical ----

bool LogicalMatchExpression::matches(BsonView doc, MatchDetails* details) const {
    switch (matchType()) {
        case MatchType::kAnd:
            for (const auto& c : _children) {
                if (!c->matches(doc, details)) {
                    if (details) details->reset();
                    return false;
                }
            }
            return true;
        case MatchType::kOr:
            for (const auto& c : _children) {
                if (c->matches(doc, nullptr)) {
                    if (details) details->reset();
                    return true;
                }
            }
            return false;
        case MatchType::kNor:
            for (const auto& c : _children) {
                if (c->matches(doc, nullptr)) return false;
            }
            return true;
        case MatchType::kNot:
            return !_children.front()->matches(doc, nullptr);
        default:
            invariant(false);
            return false;
    }
}

bool LogicalMatchExpression::matchesSingleElement(const BsonElement& e,
                                                  MatchDetails* details) const {
    switch (matchType()) {
        case MatchType::kAnd:
            for (const auto& c : _children) {
                if (!c->matchesSingleElement(e, details)) return false;
            }
            return true;
        case MatchType::kOr:
            for (const auto& c : _children) {
                if (c->matchesSingleElement(e, nullptr)) return true;
            }
            return false;
        case MatchType::kNor:
            for (const auto& c : _children) {
                if (c->matchesSingleElement(e, nullptr)) return false;
            }
            return true;
        case MatchType::kNot:
            return !_children.front()->matchesSingleElement(e, nullptr);
        default:
            invariant(false);
            return false;
    }
}

// ---- path ----

bool PathMatchExpression::matches(BsonView doc, MatchDetails* details) const {
    return visitPath(doc, _path, _leaf, [&](const PathValue& v) {
        if (!matchesSingleElement(v.element, details)) return false;
        if (details && !v.arrayOffset.empty()) details->elemMatchKey = std::string(v.arrayOffset);
        return true;
    });
}

bool ComparisonMatchExpression::matchesSingleElement(const BsonElement& e,
                                                     MatchDetails* details) const {
    const MatchType mt = matchType();
    if (e.type() != _rhs.type()) {
        const int ect = bson::canonicalTypeOrder(e.type());
        const int rct = bson::canonicalTypeOrder(_rhs.type());
        if (ect != rct) {
            // Null on one side and missing/undefined on the other compare equal.
            if (ect + rct == 5) {
                return mt == MatchType::kEq || mt == MatchType::kLte || mt == MatchType::kGte;
            }
            // MinKey and MaxKey compare against every type.
            if (_rhs.type() == BsonType::MaxKey || _rhs.type() == BsonType::MinKey) {
                switch (mt) {
                    case MatchType::kLt:
                    case MatchType::kLte:
                        return _rhs.type() == BsonType::MaxKey;
                    case MatchType::kGt:
                    case MatchType::kGte:
                        return _rhs.type() == BsonType::MinKey;
                    default:
                        return false;
                }
            }
            return false;
        }
    }
    if (mt != MatchType::kEq) {
        // NaN equals NaN but is neither less nor greater than any number.
        const bool lhsNaN = isNaN(e), rhsNaN = isNaN(_rhs);
        if (lhsNaN || rhsNaN) {
            if (mt == MatchType::kLt || mt == MatchType::kGt) return false;
            return lhsNaN && rhsNaN;
        }
    }
    const int c = bson::compareElementValues(e, _rhs, _collator);
    switch (mt) {
        case MatchType::kLt:
            return c < 0;
        case MatchType::kLte:
            return c <= 0;
        case MatchType::kEq:
            return c == 0;
        case MatchType::kGt:
            return c > 0;
        case MatchType::kGte:
            return c >= 0;
        default:
            invariant(false);
            return false;
    }
}

// ---- $in ----

void InMatchExpression::addEquality(BsonElement e) {
    if (e.isNull()) _hasNull = true;
    _equalities.push_back(e);
}

void InMatchExpression::finish() {
    auto less = [this](const BsonElement& a, const BsonElement& b) {
        return bson::compareElementValues(a, b, _collator) < 0;
    };
    std::sort(_equalities.begin(), _equalities.end(), less);
    auto eq = [this](const BsonElement& a, const BsonElement& b) {
        return bson::compareElementValues(a, b, _collator) == 0;
    };
    _equalities.erase(std::unique(_equalities.begin(), _equalities.end(), eq), _equalities.end());
}

bool InMatchExpression::matchesSingleElement(const BsonElement& e, MatchDetails* details) const {
    if (_hasNull && (e.eoo() || e.type() == BsonType::Undefined)) return true;
    if (!e.eoo()) {
        auto less = [this](const BsonElement& a, const BsonElement& b) {
            return bson::compareElementValues(a, b, _collator) < 0;
        };
        if (std::binary_search(_equalities.begin(), _equalities.end(), e, less)) return true;
    }
    for (const auto& re : _regexes) {
        switch (e.type()) {
            case BsonType::String:
            case BsonType::Symbol:
                if (re->matches(e.stringValue())) return true;
                break;
            case BsonType::Regex: {
                auto r = e.regexValue();
                if (r.pattern == re->pattern() && r.options == re->flags()) return true;
                break;
            }
            default:
                break;
        }
    }
    return false;
}

// ---- $mod ----

bool ModMatchExpression::matchesSingleElement(const BsonElement& e, MatchDetails*) const {
    if (!e.isNumber()) return false;
    int64_t dividend;
    if (e.type() == BsonType::Double || e.type() == BsonType::Decimal128) {
        long double d = e.type() == BsonType::Double ? static_cast<long double>(e.doubleValue())
                                                     : e.decimalValue().toLongDouble();
        if (!std::isfinite(d)) return false;
        d = std::trunc(d);
        if (d >= 9223372036854775808.0L || d < -9223372036854775808.0L) return false;
        dividend = static_cast<int64_t>(d);
    } else {
        dividend = e.numberLong();
    }
    const int64_t r = _divisor == -1 ? 0 : dividend % _divisor;
    return r == _remainder;
}

// ---- $type ----

bool TypeMatchExpression::matchesSingleElement(const BsonElement& e, MatchDetails*) const {
    if (e.eoo()) return false;
    if (_allNumbers && e.isNumber()) return true;
    return std::find(_types.begin(), _types.end(), e.type()) != _types.end();
}

// ---- arrays ----

bool SizeMatchExpression::matchesSingleElement(const BsonElement& e, MatchDetails*) const {
    return e.isArray() && e.objValue().nFields() == static_cast<size_t>(_size);
}

bool ElemMatchObjectMatchExpression::matchesSingleElement(const BsonElement& e,
                                                          MatchDetails* details) const {
    if (!e.isArray()) return false;
    for (BsonElement inner : e.objValue()) {
        if (!inner.isObject() && !inner.isArray()) continue;
        if (_sub->matches(inner.objValue(), nullptr)) {
            setKey(details, inner.fieldName());
            return true;
        }
    }
    return false;
}

bool ElemMatchValueMatchExpression::matchesSingleElement(const BsonElement& e,
                                                         MatchDetails* details) const {
    if (!e.isArray()) return false;
    for (BsonElement inner : e.objValue()) {
        bool all = true;
        for (const auto& c : _children) {
            if (!c->matchesSingleElement(inner, nullptr)) {
                all = false;
                break;
            }
        }
        if (all) {
            setKey(details, inner.fieldName());
            return true;
        }
    }
    return false;
}

}  // namespace tessera::query
