#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "bson/compare.h"
#include "query/path.h"

namespace tessera::query {

// A find/aggregate sort specification such as {a: 1, "b.c": -1}, with MongoDB's sort semantics:
//  - a field's sort key is computed over all values the path reaches (arrays expanded at every
//    level, like a multikey index): ascending uses the smallest value, descending the largest;
//  - a missing field (or a branch of an array without it) sorts as null; an empty array at the
//    end of the path sorts as undefined, i.e. before null;
//  - values compare in MongoDB's cross-type order (bson::compareElementValues).
// Equal keys keep the input order (stable).
class SortPattern {
  public:
    struct Field {
        FieldPath path;
        bool ascending = true;
    };

    SortPattern() = default;
    // Errors: 15974 for a non-numeric direction ("Illegal key in $sort specification"), 15975 for
    // a number other than 1/-1, BadValue (2) for {$meta: ...} (text scores are not supported) and
    // for empty field names.
    static StatusWith<SortPattern> parse(bson::BsonView spec);

    bool empty() const { return _fields.empty(); }

    // Compares strings by `collator` (nullptr: binary), both when choosing an array's smallest /
    // largest element and when comparing keys.
    void setCollator(std::shared_ptr<const bson::StringComparator> collator) {
        _collator = std::move(collator);
    }
    const bson::StringComparator* collator() const { return _collator.get(); }
    const std::vector<Field>& fields() const { return _fields; }

    // The sort key of `doc`: a document with one (unnamed, "") element per sort field.
    bson::BsonObj sortKey(bson::BsonView doc) const;
    // Compares two sort keys made by sortKey(), applying the directions. <0, 0, >0.
    int compareKeys(bson::BsonView a, bson::BsonView b) const;
    // Compares two documents (computes both keys).
    int compare(bson::BsonView a, bson::BsonView b) const;

    // Stable sort of `docs`.
    void sort(std::vector<bson::BsonObj>* docs) const;

  private:
    std::vector<Field> _fields;
    std::shared_ptr<const bson::StringComparator> _collator;
};

// Keeps the first `limit` documents in sort order without sorting the whole input (a bounded
// heap, O(n log k)). Ties keep insertion order. limit 0 means "no limit" (keeps everything).
class TopKSorter {
  public:
    TopKSorter(const SortPattern& pattern, size_t limit) : _pattern(pattern), _limit(limit) {}
    void add(bson::BsonObj doc);
    // The kept documents in sort order; the sorter is then empty.
    std::vector<bson::BsonObj> finish();

  private:
    struct Entry {
        bson::BsonObj key;
        bson::BsonObj doc;
        uint64_t seq;
    };
    bool less(const Entry& a, const Entry& b) const;

    const SortPattern& _pattern;
    size_t _limit;
    uint64_t _seq = 0;
    std::vector<Entry> _heap;  // max-heap by (key, seq) when bounded
};

}  // namespace tessera::query
