#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/exec/plan_executor.h"
#include "query/collator.h"
#include "query/matcher.h"
#include "storage/catalog_types.h"
#include "storage/read_snapshot.h"

namespace tessera::query {
class Variables;
}

namespace tessera::command::exec {

// What a query asks for, independent of the command that carries it (find, count, distinct,
// update/delete statements, findAndModify, a $match-led aggregation).
struct QuerySpec {
    bson::BsonObj filter;
    bson::BsonObj sort;        // empty: no sort
    bson::BsonObj projection;  // empty: whole documents
    bson::BsonObj hint;        // {} / {$natural: 1} / {a: 1} / {$hint: "name"} (see parseHint)
    int64_t skip = 0;
    std::optional<int64_t> limit;  // > 0 when set
    // The operation's collation (see resolveCollation in command/collation_util.h); nullptr is
    // the simple (binary) collation. Applies to the filter's comparisons, the sort, and which
    // indexes may bound strings (only those with the same collation).
    query::CollatorPtr collator;
    // The command's `let` variables, visible to $expr as $$name (null: none).
    std::shared_ptr<const query::Variables> let;
};

// MongoDB's IDHACK fast path: the `_id` value of a query that is exactly {_id: v} — v a value the
// `_id` index looks up exactly (the planner's IDHACK) — under the simple collation, without sort,
// projection, skip or hint. Its plan is one lookup, so runPointLookup answers it without a
// matcher, a planner or plan stages. nullopt: not such a query.
std::optional<bson::BsonElement> pointLookupId(const QuerySpec& spec);
// That lookup: the document stored under `_id` = id, if any and owned by this shard (the
// operation's ownership filter of `ns`).
StatusWith<std::optional<bson::BsonObj>> runPointLookup(OperationContext& opCtx,
                                                        storage::ReadSnapshot& snapshot,
                                                        const storage::CollectionInfo& coll,
                                                        std::string_view ns, bson::BsonElement id);

// `hint` argument: a key pattern object or an index name (string, stored as {$hint: name}).
StatusWith<bson::BsonObj> parseHint(const bson::BsonElement& hint);

// Builds the executor of a query over `snapshot`:
//   access path (IDHACK for {_id: v}; IXSCAN + FETCH when the planner finds usable bounds or a
//   hint names an index; COLLSCAN otherwise) -> FILTER (full predicate, always) -> SORT (unless
//   the index order provides it; top-k when limited) -> SKIP -> LIMIT -> PROJECTION.
// A null `coll` (missing collection) yields an executor with no results.
// Errors: the filter's/sort's/projection's parse errors; BadValue (2) for a hint that names no
// index.
StatusWith<std::unique_ptr<PlanExecutor>> buildQueryExecutor(
    std::unique_ptr<storage::ReadSnapshot> snapshot, storage::CollectionPtr coll, std::string ns,
    const QuerySpec& spec);

// The same, with an already-parsed matcher for spec.filter.
StatusWith<std::unique_ptr<PlanExecutor>> buildQueryExecutor(
    std::unique_ptr<storage::ReadSnapshot> snapshot, storage::CollectionPtr coll, std::string ns,
    const QuerySpec& spec, std::shared_ptr<const query::Matcher> matcher);

// The access path alone (scan + fetch + filter), for pipelines that add their own stages.
// *sortProvided is set when the stream comes out ordered by `sort`.
StatusWith<std::unique_ptr<PlanStage>> buildAccessPath(
    const storage::CollectionPtr& coll, const QuerySpec& spec,
    std::shared_ptr<const query::Matcher> matcher, bool* sortProvided);

// For {_id: <value>} filters (a value that equality on the _id index can answer exactly), a
// document {"": value}; nullopt otherwise.
std::optional<bson::BsonObj> idHackValue(bson::BsonView filter);

}  // namespace tessera::command::exec
