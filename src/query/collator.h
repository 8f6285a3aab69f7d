#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "bson/compare.h"

namespace tessera::query {

// A MongoDB collation document with every option resolved (MongoDB's CollationSpec). Omitted
// options take the locale's ICU defaults (e.g. fr_CA compares accents backwards by default).
struct CollationSpec {
    std::string locale;
    bool caseLevel = false;
    std::string caseFirst = "off";  // "upper" | "lower" | "off"
    int strength = 3;               // 1 (primary) .. 5 (identical)
    bool numericOrdering = false;
    std::string alternate = "non-ignorable";  // | "shifted"
    std::string maxVariable = "punct";        // | "space"
    bool normalization = false;
    bool backwards = false;
    std::string version = "57.1";

    // {locale, caseLevel, caseFirst, strength, numericOrdering, alternate, maxVariable,
    //  normalization, backwards, version}: what listIndexes / listCollections show.
    bson::BsonObj toBson() const;
};

// An ICU collator (ucol_*) for one collation spec. Implements bson::StringComparator, so every
// comparison routine taking a `const bson::StringComparator*` (compareElementValues, the matcher,
// SortPattern) compares strings by it. Immutable; safe to use from several threads.
class Collator : public bson::StringComparator {
  public:
    // Parses a collation document: {locale, caseLevel?, caseFirst?, strength?, numericOrdering?,
    // alternate?, maxVariable?, backwards?, normalization?, version?}. Returns nullptr (no
    // collator = binary comparison) for {locale: "simple"}. Errors, as mongod's:
    //  - 40414 "BSON field 'collation.locale' is missing but a required field";
    //  - 40415 "BSON field 'collation.<f>' is an unknown field.";
    //  - TypeMismatch (14) for a wrongly-typed option;
    //  - BadValue (2) "Field 'locale' is invalid in: { locale: \"xx\" }" for a locale ICU has no
    //    collation for, and for a bad caseFirst/alternate/maxVariable value or {locale: "simple"}
    //    with other options;
    //  - 51024 for a strength outside 1..5 ("BSON field 'strength' value must be <= 5, actual
    //    value '6'").
    static StatusWith<std::shared_ptr<const Collator>> parse(bson::BsonView spec);
    // The `collation` argument of a command: missing means "not given" (nullptr, *given false);
    // otherwise it must be an object (TypeMismatch "BSON field 'collation' is the wrong type
    // 'int', expected type 'object'") and is parsed as above.
    static StatusWith<std::shared_ptr<const Collator>> fromArgument(const bson::BsonElement& e,
                                                                    bool* given = nullptr);

    ~Collator() override;
    Collator(const Collator&) = delete;
    Collator& operator=(const Collator&) = delete;

    // <0, 0, >0 by the collation (UTF-8 input; invalid sequences compare as U+FFFD).
    int compare(std::string_view a, std::string_view b) const override;
    // ICU's sort key of `s` without its trailing NUL: memcmp order of two keys is the collation
    // order of the strings (equal keys iff the strings compare equal). Never contains a NUL byte.
    std::string sortKey(std::string_view s) const;

    const CollationSpec& spec() const { return _spec; }
    // spec().toBson(), computed once.
    const bson::BsonObj& specObj() const { return _specObj; }

    // Whether two (possibly null = simple) collators are the same collation.
    static bool equivalent(const Collator* a, const Collator* b);

  private:
    Collator() = default;
    CollationSpec _spec;
    bson::BsonObj _specObj;
    void* _ucol = nullptr;  // UCollator*
};

using CollatorPtr = std::shared_ptr<const Collator>;

// Appends `value` under `name` with every string and symbol — also inside documents and arrays —
// replaced by the string collator.sortKey(s), as MongoDB stores strings in the keys of an index
// with a collation (binary order of the keys = collation order).
void appendCollationKey(bson::BsonBuilder& b, std::string_view name, const bson::BsonElement& value,
                        const Collator& collator);

// The filter the planner analyses for a query with a (non-simple) collation, so that its index
// bounds are in the key space of indexes with that collation: the values of top-level
// predicates (and of those under top-level $and) have their strings replaced by collation keys;
// predicates whose bounds would not carry over — $regex (binary even under a collation),
// $in with regexes, $not, $elemMatch, $or/$nor/$expr and other top-level operators — are
// dropped (the matcher still applies the whole filter).
bson::BsonObj collationKeyFilter(bson::BsonView filter, const Collator& collator);

}  // namespace tessera::query
