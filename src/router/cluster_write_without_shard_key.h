#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "placement/routing_table.h"
#include "router/router.h"

// MongoDB's two-phase "write without shard key" (7.1+) for single-document writes whose filter
// does not pin one shard (update/delete with multi: false, findAndModify):
//   1. find {filter, sort, limit: 1, projection: _id + shard key + sort fields} on every shard the
//      filter may match on; the first document in sort order (any, without sort) wins;
//   2. the write goes to the shard that returned it with filter {_id: {$eq: <id>}, $and: [filter]};
//      when it matches nothing (the document changed in between), both phases run again.
// An update that may change the shard key reads the whole document instead and is refused
// (InvalidOptions 72) when the new key belongs to another shard: moving a document between
// shards needs a transaction, which Tessera does not have.
namespace tessera::router {

// {_id: 1, <key paths>: 1, <sort paths>: 1} without overlapping paths; empty (the whole
// document) when `wholeDocument`.
bson::BsonObj twoPhaseProjection(const placement::ShardKeyPattern& pattern, bson::BsonView sort,
                                 bool wholeDocument);

// The phase-1 find for one shard (versions not attached).
bson::BsonObj twoPhaseFindCommand(std::string_view coll, bson::BsonView filter, bson::BsonView sort,
                                  bson::BsonView projection, bson::BsonElement collation,
                                  bson::BsonElement let);

// The position in `docs` of the first document in `sort` order (ties: the earliest), or
// nullopt when empty. Without sort: the first.
std::optional<size_t> pickFirstMatch(const std::vector<bson::BsonObj>& docs, bson::BsonView sort);

// {_id: {$eq: <id>}, $and: [filter]}: the `_id` at the top, so that the shard sees a lookup of
// one `_id` (its io thread runs it, command::filterPinsId) and `$eq` matches a regex `_id` as a
// value, not as a pattern.
bson::BsonObj filterWithId(bson::BsonView filter, bson::BsonElement id);

// When `u` (update argument; `arrayFilters` may be empty) applied to `doc` gives a shard key
// owned by a shard other than `owner`: InvalidOptions (72), for a statement the router cannot
// move (one of several in an update command; TwoPhaseWrite::callerMovesDocuments). Updates
// the router cannot evaluate (positional `$`, errors the shard will report itself) pass.
Status checkShardKeyChange(const placement::RoutingTable& table, bson::BsonView doc,
                           bson::BsonElement u, bson::BsonView arrayFilters, const ShardId& owner);

// Where an upsert that matched nothing inserts (MongoDB 8.0 builds the document on the router):
// the document built from the filter's equalities and `u` (as the shard will build it), its
// shard's id, and the filter to send there: filterWithId(filter, <the document's _id>) so
// that the shard builds the same document.
struct UpsertTarget {
    ShardId shard;
    bson::BsonObj filter;
    bson::BsonObj document;
};
StatusWith<UpsertTarget> targetUpsertInsert(const placement::RoutingTable& table,
                                            bson::BsonView filter, bson::BsonElement u,
                                            bson::BsonView arrayFilters);

// {lsid, txnNumber} of a retryable write's body (empty when it has no txnNumber).
bson::BsonObj sessionFields(bson::BsonView body);

// One single-document write run with the protocol. The caller builds the phase-2 command for
// the filter it is given (versions not attached) and says how many documents a reply matched.
struct TwoPhaseWrite {
    std::string coll;
    bson::BsonObj filter;
    bson::BsonObj sort;
    bson::BsonObj collation;  // {collation: {...}} or empty
    bson::BsonObj let;        // {let: {...}} or empty
    std::vector<ShardId> shards;
    std::optional<bson::BsonElement> update;  // set: an update that may change the shard key
    // The shard's WouldChangeOwningShard answer is moved by the caller (cluster_write_move.h):
    // no refusal of a key change before the write.
    bool callerMovesDocuments = false;
    bson::BsonObj arrayFilters;
    std::function<bson::BsonObj(bson::BsonView filter, const ShardId& shard)> makeWriteCommand;
    std::function<int64_t(bson::BsonView reply)> matched;
    // A retryable statement: {lsid, txnNumber} of the client and the statement's id (the
    // client's index; txn::kWholeCommand, -1, for findAndModify). Phase 1's finds ask the shards
    // whether they executed that statement (command::kRetryableWriteStatusField); one that did
    // gets the write, which it answers from its record, so a retry is never applied on a second
    // shard.
    bson::BsonObj session;
    int32_t stmtId = -1;
};
// {name: <body's object field `name`>} (TwoPhaseWrite::collation, ::let), or empty when `body`
// has no such object.
bson::BsonObj objectFieldOf(bson::BsonView body, std::string_view name);

// The write of statement `index` of a client's update or delete command `body` (its statements
// in `field`): filter, sort, collation, let, the phase-2 command (the statement with the filter it
// is given, as buildSubCommand sends it) and the retryable statement's session. The caller adds
// what an update that may change the shard key needs. `body` and `stmt` must outlive it.
TwoPhaseWrite statementTwoPhaseWrite(bson::BsonView body, std::string_view field, std::string coll,
                                     bson::BsonView stmt, size_t index,
                                     std::vector<ShardId> shards);

struct TwoPhaseOutcome {
    bool stale = false;  // a stale placement error was noted: refresh and run it again
    bool found = false;  // a document matched and the write reply is in `response`
    ShardResponse response;
};

// The protocol one round at a time, for runTwoPhaseWrite below (a worker waiting on each round)
// and for the router's forwarding path (cluster_forward.cpp: the rounds sent from the io thread,
// no thread waiting). Holds `info` and `write` by reference: both outlive it.
class TwoPhaseSteps {
  public:
    TwoPhaseSteps(const CollectionRoutingInfo& info, const TwoPhaseWrite& write);

    // The read round: the find to each shard (versions attached; for a retryable statement with
    // command::kRetryableWriteStatusField).
    std::vector<ShardRequest> readRound() const;

    // What the read round's responses (in readRound's order) lead to.
    struct AfterRead {
        bool stale = false;                 // noted: refresh and run it again
        std::optional<ShardRequest> write;  // the write round; neither: nothing matches
    };
    StatusWith<AfterRead> afterRead(Router& router, const std::vector<ShardResponse>& responses);

    // What the write round's response leads to.
    enum class AfterWrite {
        kDone,     // the statement's reply
        kStale,    // noted: refresh and run it again (nothing was applied)
        kChanged,  // the document changed between the rounds: run both again
    };
    AfterWrite afterWrite(Router& router, const ShardResponse& response) const;

  private:
    const CollectionRoutingInfo& _info;
    const TwoPhaseWrite& _write;
    bson::BsonObj _find;
    bool _replaying = false;  // the write round replays a statement a shard executed already
};

// Network errors and shard errors other than stale are returned in `response` (found = true)
// or as the status (phase 1).
StatusWith<TwoPhaseOutcome> runTwoPhaseWrite(const command::OperationContext& opCtx, Router& router,
                                             const CollectionRoutingInfo& info, std::string_view db,
                                             const TwoPhaseWrite& write);

// A concurrent write may change the chosen document between the phases: both run again, a few
// times (MongoDB retries until it succeeds or nothing matches), then it reports no match.
inline constexpr int kTwoPhaseAttempts = 10;

}  // namespace tessera::router
