#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::query {

class UpdateObjectNode;
class ArrayFilters;
class UpdatePipeline;
class Variables;

// What an update needs to know about the operation it is part of.
struct ApplyContext {
    // The array index the query matched (MatchDetails' elemMatchKey), for the positional `$`.
    std::optional<size_t> positionalIndex;
    // True when the update builds a new document for an upsert: $setOnInsert applies only then.
    bool isUpsertInsert = false;
    // Time sources for $currentDate; when empty the system clock is used. Both are read at most
    // once per apply(), so every $currentDate field of one update gets the same time.
    std::function<int64_t()> nowMillis;      // milliseconds since the epoch
    std::function<uint64_t()> nowTimestamp;  // BSON Timestamp: (seconds << 32) | increment
};

// A parsed update: a replacement document or a set of update operators ($set, $inc, ...), with
// MongoDB's semantics, error codes and messages (src/mongo/db/update).
//
//   ASSIGN_OR_RETURN(auto driver, UpdateDriver::parse(u, arrayFilters));
//   BsonObj out; bool modified;
//   TRY_STATUS(driver.apply(doc, ctx, &out, &modified));
//
// Operator updates apply in the lexicographic order of their field paths (MongoDB's UpdateNode
// tree), so fields that one update creates appear in that order at each level.
class UpdateDriver {
  public:
    enum class Kind { kReplacement, kOperators, kPipeline };

    // `update` is the `u` document; `arrayFilters` is a BSON array (keys "0", "1", ...) of filter
    // documents, or empty. Errors: FailedToParse (9) for unknown operators / unused array filters,
    // BadValue (2), TypeMismatch (14), ConflictingUpdateOperators (40), EmptyFieldName (56),
    // DollarPrefixedFieldName (52) for `$` fields at the top of a replacement.
    static StatusWith<UpdateDriver> parse(bson::BsonView update, bson::BsonView arrayFilters = {});

    // Parses the `u` field as given: a document (replacement / operators, as above) or an array
    // (a pipeline-style update: $addFields/$set, $project, $unset, $replaceRoot/$replaceWith
    // stages evaluated per document with $$ROOT; see query/expression_pipeline_update.h).
    // `let` (may be null) holds the command's `let` variables for the pipeline's expressions.
    // Pipelines with arrayFilters fail with FailedToParse (9); a `u` of another type with
    // FailedToParse too ("Update argument must be either an object or an array").
    static StatusWith<UpdateDriver> parse(const bson::BsonElement& u, bson::BsonView arrayFilters,
                                          std::shared_ptr<const Variables> let);
    // A pipeline-style update (`pipeline` is a BSON array of stages).
    static StatusWith<UpdateDriver> parsePipeline(bson::BsonView pipeline,
                                                  std::shared_ptr<const Variables> let = nullptr);

    UpdateDriver(UpdateDriver&&) noexcept;
    UpdateDriver& operator=(UpdateDriver&&) noexcept;
    ~UpdateDriver();

    Kind kind() const { return _kind; }
    bool isReplacement() const { return _kind == Kind::kReplacement; }
    // True when the update mentions the positional `$` (the caller must supply positionalIndex).
    bool usesPositional() const { return _positional; }

    // Applies the update to `doc`. `*out` receives the new document (equal to `doc` when nothing
    // changed); `*modified` is false for a no-op (nModified 0), judged by byte equality as
    // MongoDB does. The result is checked for storage (validateStorableDocument's rules, `_id`
    // immutability: ImmutableField 66).
    Status apply(bson::BsonView doc, const ApplyContext& ctx, bson::BsonObj* out,
                 bool* modified) const;

    // Applies the update as an upsert insert: for operator updates, to `seedFromQuery` with
    // isUpsertInsert (so $setOnInsert applies); for a replacement, the replacement plus `_id`
    // from the seed if it lacks one. `_id` is moved to the front; when neither the seed nor the
    // update gives one, a new ObjectId is generated (as mongod does for upserts).
    Status applyForUpsert(bson::BsonView seedFromQuery, bson::BsonObj* out,
                          const ApplyContext& ctx = {}) const;

    // Builds the upsert seed from a query's equality predicates (path, value): {"a.b": 1} gives
    // {a: {b: 1}}. Paths that conflict with an earlier one ("a" then "a.b") are skipped; the
    // matcher's equality extraction is expected to have reported such conflicts already.
    static bson::BsonObj seedFromEqualities(
        const std::vector<std::pair<std::string, bson::BsonElement>>& eqs);

  private:
    UpdateDriver();
    Status applyOperators(bson::BsonView doc, const ApplyContext& ctx, bool insert,
                          bson::BsonObj* out) const;
    Status applyReplacement(bson::BsonView doc, bson::BsonObj* out) const;

    Kind _kind = Kind::kOperators;
    bool _positional = false;
    bson::BsonObj _replacement;
    std::unique_ptr<UpdateObjectNode> _root;
    std::shared_ptr<const ArrayFilters> _arrayFilters;
    std::shared_ptr<const UpdatePipeline> _pipeline;  // kPipeline
    Status applyPipeline(bson::BsonView doc, bson::BsonObj* out) const;
};

// Storage rules for a document about to be written (insert, replacement or update result):
//  - at most 16 MiB (BSONObjectTooLarge 10334) and 100 levels of nesting (Overflow 15);
//  - `_id` is not an array, regex or undefined (InvalidIdField 53) and, when a document, has no
//    `$`-prefixed field names (DollarPrefixedFieldName 52);
//  - no top-level `$`-prefixed field names (52) unless `allowTopLevelDollar` (MongoDB 5.0+ lets
//    inserts store them; replacements and update results may not).
Status validateStorableDocument(bson::BsonView doc, bool allowTopLevelDollar = false);

}  // namespace tessera::query
