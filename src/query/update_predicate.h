#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::query {

// A query predicate over a document, as the update language needs it ($pull conditions and
// arrayFilters). Backed by query/matcher.h's Matcher when that header is present; otherwise by a
// small built-in matcher (equality, $eq $ne $gt $gte $lt $lte $in $nin $exists $not $elemMatch
// $size, $and $or $nor, dotted paths with array traversal).
class DocPredicate {
  public:
    virtual ~DocPredicate() = default;
    virtual bool matches(bson::BsonView doc) const = 0;

    static StatusWith<std::unique_ptr<DocPredicate>> parse(bson::BsonView filter);
    // The built-in matcher regardless of matcher.h (for tests).
    static StatusWith<std::unique_ptr<DocPredicate>> parseFallback(bson::BsonView filter);
};

// A $pull argument: equality for non-documents, a condition on the element for operator
// documents ({$gte: 6}), a query on document elements otherwise ({score: 8}).
class PullPredicate {
  public:
    static StatusWith<std::unique_ptr<PullPredicate>> parse(const bson::BsonElement& arg);
    bool matches(const bson::BsonElement& e) const;

  private:
    enum class Kind { kEquality, kWrapped, kObject };
    Kind _kind = Kind::kEquality;
    bson::BsonObj _holder;  // {v: arg}
    std::unique_ptr<DocPredicate> _pred;
};

// Parsed `arrayFilters`: identifier -> predicate on an array element.
class ArrayFilters {
  public:
    // `filters` is a BSON array of documents.
    static StatusWith<std::shared_ptr<const ArrayFilters>> parse(bson::BsonView filters);

    bool has(const std::string& id) const { return _filters.count(id) != 0; }
    // Whether the element matches the filter for `id` (which must exist).
    bool matches(const std::string& id, const bson::BsonElement& e) const;
    std::vector<std::string> identifiers() const;

  private:
    std::map<std::string, std::unique_ptr<DocPredicate>> _filters;
};

}  // namespace tessera::query
