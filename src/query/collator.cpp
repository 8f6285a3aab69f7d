#include "query/collator.h"

#include <unicode/ucol.h>
#include <unicode/uloc.h>
#include <unicode/ustring.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "bson/bson_builder.h"

namespace tessera::query {

using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;

namespace {

UCollator* ucol(void* p) { return static_cast<UCollator*>(p); }

// "{ locale: \"xx\", strength: 2 }", as mongod prints a document in messages.
std::string formatForMessage(BsonView obj) {
    if (obj.isEmpty()) return "{}";
    std::string out = "{ ";
    bool first = true;
    for (BsonElement e : obj) {
        if (!first) out += ", ";
        first = false;
        out += e.fieldName();
        out += ": ";
        if (e.type() == BsonType::String) {
            out += "\"" + std::string(e.stringValue()) + "\"";
        } else if (e.isObject()) {
            out += formatForMessage(e.objValue());
        } else {
            out += e.toString(false);
        }
    }
    return out + " }";
}

Status wrongType(const BsonElement& e, std::string_view expected) {
    return Status(ErrorCodes::TypeMismatch, "BSON field 'collation." + std::string(e.fieldName()) +
                                                "' is the wrong type '" +
                                                std::string(bson::typeName(e.type())) +
                                                "', expected type '" + std::string(expected) + "'");
}

StatusWith<bool> boolOption(const BsonElement& e) {
    if (e.type() != BsonType::Bool) return wrongType(e, "bool");
    return e.boolValue();
}

StatusWith<std::string> enumOption(const BsonElement& e,
                                   std::initializer_list<std::string_view> allowed) {
    if (e.type() != BsonType::String) return wrongType(e, "string");
    for (std::string_view a : allowed) {
        if (e.stringValue() == a) return std::string(a);
    }
    return Status(ErrorCodes::BadValue, "Enumeration value '" + std::string(e.stringValue()) +
                                            "' for field 'collation." + std::string(e.fieldName()) +
                                            "' is not a valid value.");
}

UColAttributeValue onOff(bool b) { return b ? UCOL_ON : UCOL_OFF; }

// A locale ICU has collation data for (ucol_getAvailable: "en", "en_US", "fr_CA", "zh_Hant",
// ...), optionally with a collation keyword ("de@collation=phonebook"), or "root".
bool isSupportedLocale(const std::string& name) {
    if (name == "root") return true;
    if (name.empty() || name.size() > 100 || name.find_first_of(" !;") != std::string::npos) {
        return false;
    }
    std::string base = name.substr(0, name.find('@'));
    if (base.empty()) return false;
    const int32_t n = ucol_countAvailable();
    for (int32_t i = 0; i < n; ++i) {
        if (base == ucol_getAvailable(i)) return true;
    }
    return false;
}

}  // namespace

bson::BsonObj CollationSpec::toBson() const {
    bson::BsonBuilder b;
    b.append("locale", locale);
    b.append("caseLevel", caseLevel);
    b.append("caseFirst", caseFirst);
    b.append("strength", static_cast<int32_t>(strength));
    b.append("numericOrdering", numericOrdering);
    b.append("alternate", alternate);
    b.append("maxVariable", maxVariable);
    b.append("normalization", normalization);
    b.append("backwards", backwards);
    b.append("version", version);
    return b.obj();
}

Collator::~Collator() {
    if (_ucol) ucol_close(ucol(_ucol));
}

StatusWith<std::shared_ptr<const Collator>> Collator::fromArgument(const BsonElement& e,
                                                                   bool* given) {
    if (given) *given = !e.eoo();
    if (e.eoo()) return std::shared_ptr<const Collator>();
    if (e.type() != BsonType::Object) {
        return Status(ErrorCodes::TypeMismatch, "BSON field 'collation' is the wrong type '" +
                                                    std::string(bson::typeName(e.type())) +
                                                    "', expected type 'object'");
    }
    return parse(e.objValue());
}

StatusWith<std::shared_ptr<const Collator>> Collator::parse(BsonView spec) {
    static constexpr std::array<std::string_view, 10> kFields = {
        "locale",    "caseLevel",   "caseFirst",     "strength",  "numericOrdering",
        "alternate", "maxVariable", "normalization", "backwards", "version"};
    for (BsonElement e : spec) {
        if (std::find(kFields.begin(), kFields.end(), e.fieldName()) == kFields.end()) {
            return Status(40415, "BSON field 'collation." + std::string(e.fieldName()) +
                                     "' is an unknown field.");
        }
    }
    BsonElement locale = spec["locale"];
    if (locale.eoo()) {
        return Status(40414, "BSON field 'collation.locale' is missing but a required field");
    }
    if (locale.type() != BsonType::String) return wrongType(locale, "string");
    std::string localeName(locale.stringValue());
    if (localeName == "simple") {
        if (spec.nFields() > 1) {
            for (BsonElement e : spec) {
                if (e.fieldName() == "locale") continue;
                // mongod accepts the defaults spelled out, but nothing that changes comparison.
                if (e.fieldName() == "version") continue;
                return Status(ErrorCodes::BadValue,
                              "If locale is 'simple', no other fields may be set; found '" +
                                  std::string(e.fieldName()) + "' in: " + formatForMessage(spec));
            }
        }
        return std::shared_ptr<const Collator>();
    }

    auto invalidLocale = [&] {
        return Status(ErrorCodes::BadValue,
                      "Field 'locale' is invalid in: " + formatForMessage(spec));
    };
    if (!isSupportedLocale(localeName)) return invalidLocale();
    UErrorCode status = U_ZERO_ERROR;
    UCollator* c = ucol_open(localeName == "root" ? "" : localeName.c_str(), &status);
    if (U_FAILURE(status)) {
        if (c) ucol_close(c);
        return invalidLocale();
    }
    std::shared_ptr<Collator> out(new Collator());
    out->_ucol = c;
    CollationSpec& s = out->_spec;
    s.locale = localeName;

    // Strength first: ICU resets nothing else when it changes, but caseLevel/caseFirst defaults
    // read below depend on the locale only.
    if (BsonElement e = spec["strength"]) {
        if (!e.isNumber()) return wrongType(e, "int");
        double d = e.numberDouble();
        if (!std::isfinite(d) || d != std::floor(d)) {
            return Status(ErrorCodes::BadValue,
                          "BSON field 'strength' must be an integer, got " + e.toString(false));
        }
        int64_t v = e.numberLong();
        if (v > 5) {
            return Status(51024, "BSON field 'strength' value must be <= 5, actual value '" +
                                     std::to_string(v) + "'");
        }
        if (v < 1) {
            return Status(51024, "BSON field 'strength' value must be >= 1, actual value '" +
                                     std::to_string(v) + "'");
        }
        s.strength = static_cast<int>(v);
        static constexpr UColAttributeValue kStrengths[] = {
            UCOL_PRIMARY, UCOL_SECONDARY, UCOL_TERTIARY, UCOL_QUATERNARY, UCOL_IDENTICAL};
        ucol_setAttribute(c, UCOL_STRENGTH, kStrengths[s.strength - 1], &status);
    } else {
        UColAttributeValue v = ucol_getAttribute(c, UCOL_STRENGTH, &status);
        s.strength = v == UCOL_PRIMARY      ? 1
                     : v == UCOL_SECONDARY  ? 2
                     : v == UCOL_QUATERNARY ? 4
                     : v == UCOL_IDENTICAL  ? 5
                                            : 3;
    }
    if (BsonElement e = spec["caseLevel"]) {
        ASSIGN_OR_RETURN(s.caseLevel, boolOption(e));
        ucol_setAttribute(c, UCOL_CASE_LEVEL, onOff(s.caseLevel), &status);
    } else {
        s.caseLevel = ucol_getAttribute(c, UCOL_CASE_LEVEL, &status) == UCOL_ON;
    }
    if (BsonElement e = spec["caseFirst"]) {
        ASSIGN_OR_RETURN(s.caseFirst, enumOption(e, {"upper", "lower", "off"}));
        ucol_setAttribute(c, UCOL_CASE_FIRST,
                          s.caseFirst == "upper"   ? UCOL_UPPER_FIRST
                          : s.caseFirst == "lower" ? UCOL_LOWER_FIRST
                                                   : UCOL_OFF,
                          &status);
    } else {
        UColAttributeValue v = ucol_getAttribute(c, UCOL_CASE_FIRST, &status);
        s.caseFirst = v == UCOL_UPPER_FIRST ? "upper" : v == UCOL_LOWER_FIRST ? "lower" : "off";
    }
    if (BsonElement e = spec["numericOrdering"]) {
        ASSIGN_OR_RETURN(s.numericOrdering, boolOption(e));
        ucol_setAttribute(c, UCOL_NUMERIC_COLLATION, onOff(s.numericOrdering), &status);
    } else {
        s.numericOrdering = ucol_getAttribute(c, UCOL_NUMERIC_COLLATION, &status) == UCOL_ON;
    }
    if (BsonElement e = spec["alternate"]) {
        ASSIGN_OR_RETURN(s.alternate, enumOption(e, {"non-ignorable", "shifted"}));
        ucol_setAttribute(c, UCOL_ALTERNATE_HANDLING,
                          s.alternate == "shifted" ? UCOL_SHIFTED : UCOL_NON_IGNORABLE, &status);
    } else {
        s.alternate = ucol_getAttribute(c, UCOL_ALTERNATE_HANDLING, &status) == UCOL_SHIFTED
                          ? "shifted"
                          : "non-ignorable";
    }
    if (BsonElement e = spec["maxVariable"]) {
        ASSIGN_OR_RETURN(s.maxVariable, enumOption(e, {"punct", "space"}));
        ucol_setMaxVariable(
            c, s.maxVariable == "space" ? UCOL_REORDER_CODE_SPACE : UCOL_REORDER_CODE_PUNCTUATION,
            &status);
    } else {
        s.maxVariable = ucol_getMaxVariable(c) == UCOL_REORDER_CODE_SPACE ? "space" : "punct";
    }
    if (BsonElement e = spec["normalization"]) {
        ASSIGN_OR_RETURN(s.normalization, boolOption(e));
        ucol_setAttribute(c, UCOL_NORMALIZATION_MODE, onOff(s.normalization), &status);
    } else {
        s.normalization = ucol_getAttribute(c, UCOL_NORMALIZATION_MODE, &status) == UCOL_ON;
    }
    if (BsonElement e = spec["backwards"]) {
        ASSIGN_OR_RETURN(s.backwards, boolOption(e));
        ucol_setAttribute(c, UCOL_FRENCH_COLLATION, onOff(s.backwards), &status);
    } else {
        s.backwards = ucol_getAttribute(c, UCOL_FRENCH_COLLATION, &status) == UCOL_ON;
    }
    if (BsonElement e = spec["version"]) {
        if (e.type() != BsonType::String) return wrongType(e, "string");
        if (e.stringValue() != "57.1") {
            return Status(ErrorCodes::IncompatibleCollationVersion,
                          "Requested collation version " + std::string(e.stringValue()) +
                              " but the only available collator version was 57.1. Requested "
                              "collation spec: " +
                              formatForMessage(spec));
        }
    }
    if (U_FAILURE(status)) {
        return Status(ErrorCodes::BadValue, "Failed to configure collator for " +
                                                formatForMessage(spec) + ": " +
                                                u_errorName(status));
    }
    out->_specObj = s.toBson();
    return std::shared_ptr<const Collator>(std::move(out));
}

int Collator::compare(std::string_view a, std::string_view b) const {
    UErrorCode status = U_ZERO_ERROR;
    UCollationResult r = ucol_strcollUTF8(ucol(_ucol), a.data(), static_cast<int32_t>(a.size()),
                                          b.data(), static_cast<int32_t>(b.size()), &status);
    if (U_FAILURE(status)) return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1);
    return r == UCOL_LESS ? -1 : r == UCOL_EQUAL ? 0 : 1;
}

std::string Collator::sortKey(std::string_view s) const {
    UErrorCode status = U_ZERO_ERROR;
    std::vector<UChar> utf16(s.size() + 1);
    int32_t len = 0;
    u_strFromUTF8WithSub(utf16.data(), static_cast<int32_t>(utf16.size()), &len, s.data(),
                         static_cast<int32_t>(s.size()), 0xFFFD, nullptr, &status);
    if (status == U_BUFFER_OVERFLOW_ERROR) {
        status = U_ZERO_ERROR;
        utf16.resize(len + 1);
        u_strFromUTF8WithSub(utf16.data(), static_cast<int32_t>(utf16.size()), &len, s.data(),
                             static_cast<int32_t>(s.size()), 0xFFFD, nullptr, &status);
    }
    if (U_FAILURE(status)) len = 0;
    std::string key(64 + 4 * static_cast<size_t>(len), '\0');
    int32_t n =
        ucol_getSortKey(ucol(_ucol), utf16.data(), len, reinterpret_cast<uint8_t*>(key.data()),
                        static_cast<int32_t>(key.size()));
    if (n > static_cast<int32_t>(key.size())) {
        key.resize(n);
        n = ucol_getSortKey(ucol(_ucol), utf16.data(), len, reinterpret_cast<uint8_t*>(key.data()),
                            static_cast<int32_t>(key.size()));
    }
    // n counts the terminating NUL.
    key.resize(n > 0 ? n - 1 : 0);
    return key;
}

bool Collator::equivalent(const Collator* a, const Collator* b) {
    if (a == b) return true;
    if (!a || !b) return false;
    return a->_specObj.binaryEqual(b->_specObj);
}

}  // namespace tessera::query

namespace tessera::query {

void appendCollationKey(bson::BsonBuilder& b, std::string_view name, const BsonElement& value,
                        const Collator& collator) {
    switch (value.type()) {
        case BsonType::String:
        case BsonType::Symbol:
            b.appendString(name, collator.sortKey(value.stringValue()));
            break;
        case BsonType::Object:
        case BsonType::Array: {
            if (value.type() == BsonType::Object) {
                b.startObject(name);
            } else {
                b.startArray(name);
            }
            for (BsonElement e : value.objValue())
                appendCollationKey(b, e.fieldName(), e, collator);
            b.end();
            break;
        }
        default:
            b.appendElementAs(value, name);
    }
}

namespace {

bool hasRegex(BsonView arr) {
    for (BsonElement e : arr) {
        if (e.type() == BsonType::Regex) return true;
    }
    return false;
}

void appendFieldPredicates(bson::BsonBuilder& b, const BsonElement& e, const Collator& collator) {
    if (e.type() == BsonType::Regex) return;
    if (e.type() != BsonType::Object) {
        appendCollationKey(b, e.fieldName(), e, collator);
        return;
    }
    BsonView ops = e.objValue();
    if (ops.isEmpty() || ops.firstElement().fieldName().empty() ||
        ops.firstElement().fieldName()[0] != '$') {
        appendCollationKey(b, e.fieldName(), e, collator);  // equality to a document
        return;
    }
    bson::BsonBuilder kept;
    for (BsonElement op : ops) {
        std::string_view name = op.fieldName();
        if (name == "$regex" || name == "$options" || name == "$not" || name == "$elemMatch") {
            continue;
        }
        if ((name == "$in" || name == "$nin") && op.isArray() && hasRegex(op.objValue())) continue;
        appendCollationKey(kept, name, op, collator);
    }
    bson::BsonObj k = kept.obj();
    if (!k.isEmpty()) b.appendObject(e.fieldName(), k);
}

void appendFilter(bson::BsonBuilder& b, BsonView filter, const Collator& collator) {
    for (BsonElement e : filter) {
        std::string_view name = e.fieldName();
        if (!name.empty() && name[0] == '$') {
            if (name == "$and" && e.isArray()) {
                b.startArray("$and");
                size_t i = 0;
                for (BsonElement sub : e.objValue()) {
                    if (!sub.isObject()) continue;
                    b.startObject(std::to_string(i++));
                    appendFilter(b, sub.objValue(), collator);
                    b.end();
                }
                b.end();
            }
            continue;
        }
        appendFieldPredicates(b, e, collator);
    }
}

}  // namespace

bson::BsonObj collationKeyFilter(BsonView filter, const Collator& collator) {
    bson::BsonBuilder b;
    appendFilter(b, filter, collator);
    return b.obj();
}

}  // namespace tessera::query
