#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/hlc.h"
#include "base/mutex.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/router_transaction_hooks.h"
#include "placement/chunk_map.h"
#include "txn/transaction_args.h"

namespace tessera::router {

class Router;
class CommitDecisionSender;
using placement::ShardId;

// A router's multi-document transactions (MongoDB's TransactionRouter), README.md
// "Transactions". Per logical session: the transaction in progress, the one read timestamp all
// of its participants read at, and the participants — the shards its statements reached.
//
// - A statement runs with its session checked out (one at a time). While it runs, every request
//   the router sends a shard for its operation joins the transaction (joinTransaction): lsid,
//   txnNumber and autocommit: false, and for a shard not yet a participant startTransaction with
//   readConcern {level: snapshot, atClusterTime: T}. T is drawn once, at the first statement,
//   from the router's clock, which observes every shard reply's operationTime: so a
//   transaction reads at least what its client saw acknowledged through this router, and every
//   participant reads the same snapshot of the cluster. When the first statement reaches one
//   shard (the usual case), that shard gets T as afterClusterTime instead and reads at its
//   latest commit, which it names in its reply (txn::kTransactionReadTimestampField): T
//   becomes that time, so the transaction also sees what another router acknowledged on that
//   shard before it began (a second router's clock may not have seen it yet).
// - A statement that fails (a write error included) aborts the transaction on every participant.
//   A participant whose first request failed is forgotten (its shard aborted its part): a retry
//   of the statement after a stale placement starts it there again.
// - commitTransaction: no participant, nothing to do; one participant, its commitTransaction;
//   more, a staged two-phase commit coordinated by the first participant
//   (`_shardsvrCoordinateCommitTransaction`, txn/transaction_coordinator.h): this router sends
//   it `stage` (its record, its own prepare) and the others prepareTransaction at once; every
//   part prepared with writes → committed at the greatest prepare timestamp, answered at once,
//   the decision sent after (a lost one is resolved by the coordinator); a read-only part or a
//   failed prepare → the decision is sent and its answer awaited. NoSuchTransaction
//   (TransientTransactionError) when it aborted; a commit whose answer is lost is retried by the
//   client and answered from the coordinator's record. Between a participant's prepare and its
//   commit a shard holds the reads at or after its prepare timestamp that meet its documents
//   (storage/prepared_transactions.h): no reader sees half.
// - recoveryToken: every successful reply of a statement names the coordinator,
//   `recoveryToken: {recoveryShardId}` (the first participant), and drivers send it back with
//   commitTransaction. A router that does not know the transaction (the client retried its
//   commit through another router, or this one restarted) asks that shard for the decision
//   (`_shardsvrCoordinateCommitTransaction` without participants): the coordinator's record,
//   else that shard's own part, committed or aborted then (txn/transaction_coordinator.h).
enum class RouterTxnPhase;

class TransactionRouter final : public command::RouterTransactionHooks {
  public:
    explicit TransactionRouter(Router& router);
    ~TransactionRouter() override;

    Status beginStatement(command::OperationContext& opCtx, const txn::TransactionArgs& args,
                          std::string_view commandName) override;
    void endStatement(command::OperationContext& opCtx, const Status& status) override;
    Status commit(command::OperationContext& opCtx, bson::BsonView cmd,
                  bson::BsonBuilder& reply) override;
    Status abort(command::OperationContext& opCtx, bson::BsonBuilder& reply) override;
    void appendToReply(command::OperationContext& opCtx, bson::BsonBuilder& reply) override;
    void endSession(const std::string& lsid) override;
    void killAll() override;

    // Runs `body` as a transaction of a session of the router's own (a fresh lsid, txnNumber 1):
    // every shard request `opCtx` sends while `body` runs joins it; it commits when `body`
    // returns OK (two-phase when it wrote to several shards) and aborts otherwise. For a
    // statement outside any transaction (a document moved between shards by an update).
    Status runInternalTransaction(command::OperationContext& opCtx,
                                  const std::function<Status()>& body);

    struct Session;
    class Statement;

  private:
    std::shared_ptr<Session> sessionFor(const std::string& lsid);
    // Sends abortTransaction to every participant (errors ignored: a shard that has no such
    // transaction has nothing to undo) and marks the transaction aborted.
    void abortParticipants(Session& session, const std::string& reason);
    // Makes `session` transaction `txnNumber` in `phase`, with no participants yet; an older one
    // still in progress is aborted first (`whyAbortOlder`).
    void moveTo(Session& session, int64_t txnNumber, RouterTxnPhase phase,
                const std::string& whyAbortOlder);
    // Staged commit (docs/protocols/two-phase-commit.md "Staged commit"): stage on the first
    // participant, the coordinator, and prepareTransaction on the others, all at once; the decision
    // follows.
    Status twoPhaseCommit(Session& session, bson::BsonView writeConcern);
    // The commit of a transaction this router does not know, from the coordinator that the
    // client's `recoveryToken` names.
    Status recoverCommit(Session& session, bson::BsonView cmd, bson::BsonView writeConcern);
    // {_shardsvrCoordinateCommitTransaction, lsid, txnNum, participants, writeConcern...} sent to
    // `host`; OK, NoSuchTransaction (aborted) or an unknown outcome, recorded in the session.
    Status askCoordinator(Session& session, const std::string& host, bool withParticipants,
                          bson::BsonView writeConcern);
    // {_shardsvrCoordinateCommitTransaction, lsid, txnNum, participants (or []), extra...}.
    bson::BsonObj coordinatorCommand(const Session& session, bool withParticipants,
                                     bson::BsonView extra) const;
    // The coordinator's final answer `reply`, recorded in the session (see askCoordinator).
    Status takeCoordinatorAnswer(Session& session, const StatusWith<bson::BsonObj>& reply,
                                 bool withParticipants);

    Router& _router;
    std::unique_ptr<CommitDecisionSender> _decisions;
    Mutex _mutex;
    std::unordered_map<std::string, std::shared_ptr<Session>> _sessions GUARDED_BY(_mutex);
    size_t _insertsSincePurge GUARDED_BY(_mutex) = 0;
};

// The shard request `cmd` for `shard` (at `host`) as part of the transaction of the statement
// the operation is, or `cmd` unchanged outside one. `cmd` has no `$db`. `onlyTarget`: the
// statement sends no other request before this one's reply (noteTransactionReply), so when it
// starts the transaction the shard may pick its read timestamp.
bson::BsonObj joinTransaction(const command::OperationContext& opCtx, const ShardId& shard,
                              const std::string& host, bson::BsonView cmd, bool onlyTarget);
// The same for a request addressed by host only (a cursor's getMore or killCursors): joined only
// when the host is already a participant.
bson::BsonObj joinTransactionByHost(const command::OperationContext& opCtx, const std::string& host,
                                    bson::BsonView cmd);
// Whether the operation is a statement of a client's transaction.
bool inTransactionStatement(const command::OperationContext& opCtx);
// `create`/`createIndexes` in the operation's transaction: InvalidOptions unless the client's
// read concern is local (MongoDB's rule; the shards, which all read at the router's cluster-wide
// timestamp, cannot tell — command/transaction_ddl.h).
Status checkTransactionMayCreate(const command::OperationContext& opCtx, const std::string& ns);
// Tells the operation's transaction (if any) how the shard answered a joined request.
void noteTransactionReply(const command::OperationContext& opCtx, const ShardId& shard,
                          const Status& status, bson::BsonView reply);
// After SnapshotUnavailable from every shard the operation's statement reached: when it is its
// transaction's first and the router chose the read timestamp, moves that timestamp to the
// router's clock now (which has seen the shards' replies) and returns true (send it again).
bool restartTransactionAtLaterTime(const command::OperationContext& opCtx);

// A shard's reply: its operationTime advances this router's clock (cluster time gossip between
// the roles, which transactions' read timestamps are drawn from).
void observeShardReply(bson::BsonView reply);

}  // namespace tessera::router
