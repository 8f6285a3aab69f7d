#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "placement/routing_table.h"
#include "router/router.h"

// The pure part of the router's write path (MongoDB's BatchWriteOp): how each statement of an
// insert/update/delete batch is targeted, how a round of per-shard sub-batches is cut (ordered
// batches never run a statement after one that may fail), and how shard replies are merged
// into the client's reply with the client's statement indexes. No network: unit-tested over
// fake routing tables (cluster_write_batch_test.cpp); cluster_write_commands.cpp drives it.
namespace tessera::router {

enum class WriteKind { kInsert, kUpdate, kDelete };

std::string_view writeCommandName(WriteKind kind);      // "insert", "update", "delete"
std::string_view writeStatementsField(WriteKind kind);  // "documents", "updates", "deletes"

// Error codes a shard returns when the router's placement was stale: StaleConfig (13388),
// StaleDbVersion (249), ShardCannotRefreshDueToLocksHeld (343).
bool isStaleCode(int code);

// How one statement is routed.
struct StatementTarget {
    enum class Mode {
        kShards,           // send to `shards` (one for an exact key; several for multi or _id)
        kWithoutShardKey,  // single-document write without an exact key: the two-phase protocol
        kError,            // cannot be targeted: `error` becomes its write error
    };
    Mode mode = Mode::kShards;
    std::vector<ShardId> shards;
    Status error = Status::OK();
};

// True when an update's `u` (replacement, operators or pipeline: `u` is the element) may change
// a shard key field: a replacement always may, operators when a path they write overlaps a key
// path ($rename: source and destination), a pipeline always.
bool updateMayChangeShardKey(const placement::ShardKeyPattern& pattern, bson::BsonElement u);

// MongoDB's targeting rules for one statement of a sharded collection:
//  - insert: the chunk of the document's shard key (the document must have its `_id` already);
//  - multi update/delete: every shard the filter may match on;
//  - single update/delete: the shard of an exact key (an upsert needs one; an update that may
//    change the shard key goes through the two-phase protocol so the router sees the document),
//    or the one shard the filter can match on; otherwise two-phase — also for an `_id`
//    equality, which MongoDB broadcasts although `_id` is unique per shard only (so "one" write
//    could change one document per shard).
// A statement with a non-simple collation is never exact (targeting assumes binary strings).
StatementTarget targetStatement(const placement::RoutingTable& table, WriteKind kind,
                                bson::BsonView stmt);

// Statements sent to one shard in one command, as client indexes in ascending order.
struct SubBatch {
    ShardId shard;
    std::vector<size_t> indexes;
};

// What one round does. `targets[i]` is null for statements that are finished.
struct RoundPlan {
    std::vector<SubBatch> batches;        // sent concurrently (shard order)
    std::vector<size_t> withoutShardKey;  // run one by one with the two-phase protocol
    std::vector<size_t> errors;           // targeting errors, recorded as write errors
};

// Bounds of one sub-batch, as mongos cuts its batches: at most MongoDB's maxWriteBatchSize
// statements, and a command body that fits the internal BSON size limit (16 MiB + 16 KiB). A
// statement costs its size plus its array entry and stmtId (kStatementOverheadBytes); a
// sub-batch always takes at least one statement.
struct SubBatchLimits {
    static constexpr size_t kMaxWriteBatchSize = 100'000;
    static constexpr size_t kStatementOverheadBytes = 24;
    size_t maxStatements = kMaxWriteBatchSize;
    size_t maxBytes = SIZE_MAX;
};

// The statements of a batch as a round sees them: each one's target — computed when first
// asked for and kept until the routing table changes, so a batch is targeted once, not once
// per round — or null once it is finished, and its size in a sub-command.
class RoundStatements {
  public:
    virtual ~RoundStatements() = default;
    virtual size_t size() const = 0;
    virtual const StatementTarget* target(size_t i) = 0;
    virtual size_t bytes(size_t i) const = 0;
};

// Unordered: every pending statement, cut into sub-batches within `limits` (a shard may get
// several, all sent in the round). Ordered: only a prefix that cannot overtake a failure, from
// the first pending statement at or after `first` — a targeting error alone, a two-phase
// statement alone, a multi-shard statement alone, or the longest run of consecutive statements
// targeting the same single shard that fits `limits`. Looks only at the statements it takes
// (ordered) or each pending one once (unordered): a batch of n statements is planned in O(n)
// over all its rounds.
RoundPlan planRound(RoundStatements& statements, size_t first, bool ordered,
                    const SubBatchLimits& limits = {});
// The same over precomputed targets (every statement of size 0).
RoundPlan planRound(const std::vector<std::optional<StatementTarget>>& targets, bool ordered,
                    const SubBatchLimits& limits = {});

// What a shard's answer to a sub-batch meant for its statements.
struct SubBatchOutcome {
    std::vector<size_t> completed;  // applied, or failed with a final error
    std::vector<size_t> stale;      // stale placement: not applied, retry after a refresh
    std::vector<size_t> skipped;    // ordered: not run because an earlier statement failed
    bool sawStale = false;
    bool sawError = false;  // a final (non-stale) error
};

// Accumulates the client's reply of an insert/update/delete batch.
class WriteBatchMerger {
  public:
    explicit WriteBatchMerger(WriteKind kind) : _kind(kind) {}

    // Merges a shard's response to `batch` (sent with `ordered`). Stale errors are not recorded
    // (the caller retries those statements), unless `staleIsFinal` (retries exhausted).
    SubBatchOutcome addResponse(const SubBatch& batch, const ShardResponse& response, bool ordered,
                                bool staleIsFinal = false);
    // A write error for a client statement (targeting errors, exhausted retries, two-phase).
    void addError(size_t index, const Status& status, bson::BsonView extraInfo = {});
    // Counts of a statement the router ran itself (two-phase write).
    void addCounts(int64_t n, int64_t nModified) {
        _n += n;
        _nModified += nModified;
    }
    void addUpserted(size_t index, bson::BsonElement id);
    void setWriteConcernError(bson::BsonView wce);

    int64_t n() const { return _n; }
    int64_t nModified() const { return _nModified; }
    bool hasErrors() const { return !_errors.empty(); }
    // Index of the first write error, if any.
    std::optional<size_t> firstErrorIndex() const;
    // The first write error whose code is a retriable one (command/error_labels.h), if any.
    std::optional<Status> firstRetriableError() const;

    // {n, nModified? (update), upserted?, writeErrors?, writeConcernError?}. Errors and upserts
    // sorted by index; an ordered batch keeps only its first error.
    void appendReply(bson::BsonBuilder& reply, bool ordered) const;

  private:
    struct Error {
        size_t index;
        bson::BsonObj fields;  // every field of the error but `index`
    };
    WriteKind _kind;
    int64_t _n = 0;
    int64_t _nModified = 0;
    std::vector<std::pair<size_t, bson::BsonObj>> _upserted;  // (index, {_id: v})
    std::vector<Error> _errors;
    bson::BsonObj _writeConcernError;
};

// The fields of a reply that are not the result itself and are never copied from a shard's
// reply to the client's: ok, $clusterTime, operationTime, $configTime, $topologyTime, ...
bool isReplyMetadataField(std::string_view name);

// The body of a command for a shard: `body`'s generic fields (lsid, txnNumber, writeConcern,
// bypassDocumentValidation, let, comment, maxTimeMS, ...) without $db, versions, and the
// statements array `field`, followed by `field: [stmts...]`. A retryable write (txnNumber) gets
// `stmtIds: [...]`, the client's indexes of `stmts` (`clientIndexes`, one per statement; empty:
// the statements are the client's own 0..n-1) — mapped through `body`'s own `stmtIds` when it
// has them — so that each shard runs every statement of the client's command at most once,
// whichever sub-command carries it (MongoDB's stmtIds).
bson::BsonObj buildSubCommand(bson::BsonView body, std::string_view field,
                              const std::vector<bson::BsonView>& stmts, bool ordered,
                              const std::vector<size_t>& clientIndexes = {});
// The statement id (stmtId) of the client's statement `index` of `body`: its `stmtIds` entry
// when the body has them (the per-op commands of the router's bulkWrite), else the index — the
// id buildSubCommand sends the shards for it.
int32_t clientStatementId(bson::BsonView body, size_t index);

}  // namespace tessera::router
