#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/hlc.h"
#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "net/request_handler.h"
#include "storage/write_observer.h"

namespace tessera::storage {
class Engine;
class Transaction;
class ReadSnapshot;
class CollectionWriter;
class PrepareReads;
}  // namespace tessera::storage

namespace tessera::repl {
class ReplicaSet;
}  // namespace tessera::repl

namespace tessera::txn {
class SessionTransactions;
struct TransactionSession;
}  // namespace tessera::txn

namespace tessera::command {

class CursorManager;
class CommandRegistry;
class CommandHooks;
class RetryableStatements;
struct OperationContext;
class RouterTransactionHooks;
struct CommandRequest;
class Command;

// Which process this is. The command layer serves all of them; roles differ in their registry
// (src/router registers router commands, src/shard and src/config add internal commands) and in
// the hooks below.
enum class ClusterRole { kStandalone, kShard, kConfig, kRouter };

// The documents of one sharded collection a shard owns at the operation's placement version.
// Read paths skip documents for which owns() is false (orphans: a range being received, or one
// donated and not yet deleted), so that no read — counts included — ever sees them
// (ARCHITECTURE.md invariant 3).
//
// Writes use it too: a write never leaves a document under a shard key value the shard does not
// own (exec/write_executor.h, cmd_insert.cpp), so no acknowledged write can become an orphan.
class OwnershipFilter {
  public:
    virtual ~OwnershipFilter() = default;
    virtual bool owns(bson::BsonView doc) const = 0;
    // The shard key pattern ({k: 1} / {_id: "hashed"}) and its dotted field paths, in order.
    virtual bson::BsonView shardKeyPattern() const = 0;
    virtual const std::vector<std::string_view>& shardKeyPaths() const = 0;
    // Whether two versions of a document have the same shard key (numbers by value: 1 == 1.0;
    // hashed fields by their hash). A version whose key cannot be extracted (an array on a key
    // path) has no key equal to any other.
    virtual bool sameShardKey(bson::BsonView a, bson::BsonView b) const = 0;
    // For error messages: "shard key { k: 5 } (owned by shard 'shard1')".
    virtual std::string describeKey(bson::BsonView doc) const = 0;
    // Whether a unique index on `indexKey` can be enforced by each shard alone
    // (placement::ShardKeyPattern::isUniqueIndexCompatible); createIndexes refuses the others.
    virtual bool isUniqueIndexCompatible(bson::BsonView indexKey) const = 0;

    // The owned documents of `coll` and their BSON bytes, exact and without a scan, when the
    // shard knows them (it counts every stored document it does not own apart, src/shard
    // README.md "Exact counts"); nullopt means only a scan can tell.
    struct Totals {
        int64_t count = 0;
        int64_t bytes = 0;
    };
    virtual std::optional<Totals> ownedTotals(storage::Engine&,
                                              const storage::CollectionInfo&) const {
        return std::nullopt;
    }
};

// Role-specific steps around every command, installed by the process's main (the shard's
// placement version checks, src/shard). Called on the worker thread running the command.
class CommandHooks {
  public:
    virtual ~CommandHooks() = default;
    // Runs after command lookup, generic arguments and failCommand, before command.run(). An
    // error becomes the reply (with opCtx.errorExtraInfo, e.g. StaleConfig's vReceived/vWanted).
    virtual Status beforeCommand(OperationContext& opCtx, const CommandRequest& request,
                                 const Command& command) = 0;
    // The filter for reads and writes of `ns`, or nullptr when every stored document is owned
    // (unsharded collections, no orphans); an error when the placement cannot be known.
    virtual StatusWith<std::shared_ptr<const OwnershipFilter>> ownershipFilter(
        OperationContext& opCtx, std::string_view ns) = 0;
    // Runs after beforeCommand succeeded: a reply to send instead of running the command (the
    // stored reply of a retried retryable write, without executing it again), or nullopt.
    virtual std::optional<bson::BsonObj> replayedReply(OperationContext&, const CommandRequest&,
                                                       const Command&) {
        return std::nullopt;
    }
    // Runs after command.run() when replayedReply returned nullopt (whatever the outcome):
    // `reply` is the full reply that will be sent ({ok: 1, ...} or the error reply).
    virtual void afterCommand(OperationContext&, const CommandRequest&, const Command&,
                              const Status&, const bson::BsonObj&) {}
};

// Process-wide state every command may use. Owned by the process's main; outlives all requests.
// The state of a process's role (router::Router, config::ConfigServer), owned by main and
// reached through ServiceContext::roleState; roles read it back with roleStateAs<T>().
class RoleState {
  public:
    virtual ~RoleState() = default;
};

struct ServiceContext {
    storage::Engine* engine = nullptr;
    CursorManager* cursors = nullptr;
    const CommandRegistry* registry = nullptr;
    bool enableTestCommands = false;
    std::string host;  // "hostname:port", for serverStatus/hello `me`
    int port = 0;
    std::vector<std::string> argv;  // for getCmdLineOpts
    std::chrono::system_clock::time_point startTime = std::chrono::system_clock::now();
    ClusterRole role = ClusterRole::kStandalone;
    CommandHooks* hooks = nullptr;  // null: no role-specific checks
    // Multi-document transactions of this process (transactions.h), or null where they are
    // refused (OperationNotSupportedInTransaction).
    txn::SessionTransactions* transactions = nullptr;
    // A router's transactions (router/transaction_router.h), or null: the entry point hands
    // them each statement of a transaction on a router.
    RouterTransactionHooks* routerTransactions = nullptr;
    // `--replSet NAME`: a member of a replica set (sessions, transactions, retryable writes);
    // empty otherwise.
    std::string replSetName;
    // That member's replication (repl/replica_set.h): who is primary, its members, stepping
    // down. Null without --replSet.
    repl::ReplicaSet* replicaSet = nullptr;
    // The role's own state (router::Router, shard::ShardingState, config::ConfigServer), owned by
    // main; role commands cast it back. Null on a standalone.
    RoleState* roleState = nullptr;
    // roleState as the role's type, or null when this process has another role (or none).
    template <typename T>
    T* roleStateAs() const {
        return dynamic_cast<T*>(roleState);
    }
    // Connection counters, maintained by the network layer.
    struct Connections {
        std::function<int64_t()> current;
        std::function<int64_t()> totalCreated;
        int64_t available = 0;
    } connections;
    // The role's own serverStatus sections (the router's shardingStatistics), if any.
    std::function<void(bson::BsonBuilder&)> appendRoleServerStatus;
};

// One kind-1 document sequence of an OP_MSG (e.g. `documents` of an insert).
struct DocumentSequence {
    std::string_view identifier;
    std::vector<bson::BsonView> documents;
};

// A parsed command: the body document (kind 0) plus document sequences. Views stay valid for the
// duration of the command's run().
struct CommandRequest {
    std::string db;                // from `$db`
    std::string_view commandName;  // first field of the body
    bson::BsonView body;
    std::vector<DocumentSequence> sequences;

    bson::BsonElement firstElement() const { return body.firstElement(); }
    // The documents of a kind-1 sequence named `identifier`, or nullptr if there is none.
    const DocumentSequence* sequence(std::string_view identifier) const;
};

// Per-connection state of the command layer (lives in net::ClientContext::state).
struct ClientState final : net::HandlerState {
    int64_t connectionId = 0;
    std::string remote;
    std::string appName;
    bson::BsonObj clientMetadata;  // handshake `client` document
};

// What a role's hooks decided when they admitted one operation (CommandHooks::beforeCommand): a
// shard's admissions under its critical sections and the retryable write in progress. Owned by
// the operation (OperationContext::admission), so it ends with it on every path; the role that
// made it reads it back in its other hooks.
class OperationAdmission {
  public:
    virtual ~OperationAdmission() = default;
};

// A router's statement of a multi-document transaction (RouterTransactionHooks::beginStatement):
// the shard requests of its operation join the transaction (router/transaction_router.h).
// Opaque to the command layer, which only carries it.
class RouterTransactionStatement {
  public:
    virtual ~RouterTransactionStatement() = default;
};

// Per-request state: what a command needs beyond its arguments. Everything an operation carries
// across layers is here, explicit (no thread-local), so a command can run on any thread.
struct OperationContext {
    ServiceContext* service = nullptr;
    ClientState* client = nullptr;
    // Absolute deadline from maxTimeMS, if any. Long-running commands check it between
    // documents and fail with MaxTimeMSExpired (50).
    std::optional<std::chrono::steady_clock::time_point> deadline;
    // Session id (`lsid.id`, 16 bytes) and txnNumber of a retryable write, when present.
    std::optional<std::string> lsid;
    std::optional<int64_t> txnNumber;
    // Extra fields appended to an error reply (e.g. keyPattern/keyValue of DuplicateKey).
    bson::BsonObj errorExtraInfo;
    // Fields the role's hooks add to a successful reply (a shard's kRetryableWriteExecutedField).
    bson::BsonObj replyExtraFields;
    // The role's admission of this operation (set by CommandHooks::beforeCommand), or null.
    std::unique_ptr<OperationAdmission> admission;
    // Every collection writer the operation opens takes this unit: its observers add to the
    // atomic batch of each document write (the shard's retryable-write record).
    storage::WriteUnit writeUnit;
    // The retryable write's per-statement state (retryable_statements.h), or null: set by the
    // role's hooks for an insert/update/delete with lsid + txnNumber (owned by the admission).
    RetryableStatements* statements = nullptr;
    // Run on an io thread (ServiceEntryPoint::runInline): nothing of the operation may wait —
    // on a lock held across other work, a critical section, a placement refresh, another
    // attempt of the session. Where it would, it fails with InlineWouldBlock before it changes
    // anything, and runs again on the worker pool.
    bool inlineExecution = false;
    // The storage transaction this statement of a multi-document transaction runs in, or null.
    storage::Transaction* transaction = nullptr;
    // The checked-out session of a transaction statement (commitTransaction/abortTransaction
    // act on it), or null.
    txn::TransactionSession* transactionSession = nullptr;
    // On a router, the statement of a transaction this operation is (null outside one).
    std::unique_ptr<RouterTransactionStatement> routerStatement;

    // readConcern {level: "snapshot"} outside a transaction (a --replSet node or a shard): the
    // cluster time every read of the operation, and of its cursor's getMores, is at — the
    // client's atClusterTime, or the latest commit when it gave none; its replies say which
    // (`atClusterTime`, in `cursor` for find and aggregate).
    std::optional<Timestamp> readAtClusterTime;

    // How this operation's reads wait for a prepared transaction's decision, and the first
    // conflict they met (storage::PrepareReads): bound to every snapshot the operation reads
    // through — its own, its transaction's, its cursor's. The entry point sets it; null (an
    // internal caller) waits as long as a decision takes.
    std::shared_ptr<storage::PrepareReads> prepareReads;
    // The conflict this operation's reads met (OK: none). A read that met one found nothing:
    // a command checks before it acts on an absence, and the entry point fails the command.
    Status readConflict() const;

    // The snapshot reads of this operation use: its transaction's (with its own writes), the one
    // at readAtClusterTime, or the engine's latest.
    std::unique_ptr<storage::ReadSnapshot> snapshot() const;
    // A writer of `coll` for this operation: its transaction's (owned by the transaction; the
    // returned handle only borrows it), or a new one with writeUnit.
    StatusWith<std::unique_ptr<storage::CollectionWriter>> writer(
        const storage::CollectionPtr& coll);

    // MaxTimeMSExpired if the deadline has passed.
    Status checkForInterrupt() const;
    // The ownership filter of `ns` (nullptr: every stored document is owned), decided once per
    // namespace for the whole operation: the role's hooks are asked the first time, and every
    // later read or write of the operation uses the same placement. An error when the placement
    // cannot be known (a shard that can reach neither the config server nor its own copy):
    // reading without a filter would show orphans.
    StatusWith<std::shared_ptr<const OwnershipFilter>> ownershipFilter(std::string_view ns);

  private:
    std::vector<std::pair<std::string, std::shared_ptr<const OwnershipFilter>>> _ownership;
};

// A command: MongoDB's name, arguments and reply shape. Implementations live one (or a small
// family) per file and are registered explicitly (see registry.h), never through static
// initializers (the linker would drop them from static libraries).
// The exchanges with remotes that settle a command (Command::planForward): one round, sent
// together. What a command keeps from round to round (ForwardPlan::state): its subclass.
struct ForwardPlanState {
    virtual ~ForwardPlanState() = default;
};

struct ForwardPlan {
    std::vector<net::ForwardExchange> exchanges;  // the round; moved out when it is sent
    std::shared_ptr<ForwardPlanState> state;      // the command's own, for completeForward
};

class Command {
  public:
    virtual ~Command() = default;
    virtual std::string_view name() const = 0;
    // Other names the command answers to (e.g. "ismaster" for "isMaster").
    virtual std::vector<std::string_view> aliases() const { return {}; }
    // Must be run against the admin database (Unauthorized 13 otherwise, as MongoDB).
    virtual bool adminOnly() const { return false; }
    // Only with --enableTestCommands (else it does not exist: CommandNotFound).
    virtual bool testOnly() const { return false; }
    // Takes a `txnNumber` outside a transaction: a retryable write (insert, update, delete,
    // findAndModify, bulkWrite). Any other command carrying one is refused with MongoDB's
    // NotARetryableWriteCommand (50768) before it runs.
    virtual bool supportsRetryableWrite() const { return false; }

    // Whether `request` may run on an io thread (ServiceEntryPoint::runInline): its work is
    // bounded by construction (a lookup by `_id`, a small batch of such writes) and it never
    // waits for its journal or for other processes. Called on the io thread: cheap, no I/O.
    virtual bool runsInline(const ServiceContext&, const CommandRequest&) const { return false; }

    // Runs the command, appending reply fields (without `ok`) to `reply`. An error status becomes
    // {ok: 0, errmsg, code, codeName} plus opCtx.errorExtraInfo; fields already appended to
    // `reply` are then discarded.
    virtual Status run(OperationContext& opCtx, const CommandRequest& request,
                       bson::BsonBuilder& reply) = 0;

    // The forwarding fast path (ServiceEntryPoint::tryForward; the router's targeted finds and
    // single-statement writes, and its writes without shard key): when exchanges with remotes
    // settle the request, the command returns the first round here and the network layer
    // performs it without a thread waiting. Called on an io thread after the generic checks:
    // must not block (cached state only), and returns nullopt whenever it cannot decide without
    // blocking — run() then does the work.
    virtual std::optional<ForwardPlan> planForward(OperationContext&, const CommandRequest&) {
        return std::nullopt;
    }
    // With each exchange's reply (or failure), in the round's order: appends the reply fields
    // and returns the status exactly as run() would have; or returns nullopt after putting the
    // next round in `plan.exchanges` (a later step of the command); or returns nullopt with no
    // exchanges when the replies do not settle the request (a stale placement version) — then
    // planForward is asked again, and failing that run() runs as if nothing had been forwarded,
    // so that is only allowed when the remotes applied nothing. Must not block.
    virtual std::optional<Status> completeForward(OperationContext&, const CommandRequest&,
                                                  ForwardPlan&,
                                                  const std::vector<StatusWith<bson::BsonObj>>&,
                                                  bson::BsonBuilder&) {
        return std::nullopt;
    }
};

}  // namespace tessera::command
