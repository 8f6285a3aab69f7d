#include "router/transaction_router.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

#include "base/failpoint.h"
#include "base/log.h"
#include "base/mutex.h"
#include "command/command.h"
#include "command/generic_args.h"
#include "command/reply_util.h"
#include "command/server_info.h"
#include "net/remote_client.h"
#include "router/commit_decision_sender.h"
#include "router/router.h"
#include "txn/logical_sessions.h"
#include "txn/transaction_args.h"

namespace tessera::router {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

namespace {

constexpr std::chrono::minutes kIdleSessionLimit = txn::kLogicalSessionTimeout;

}  // namespace

enum class RouterTxnPhase { kNone, kInProgress, kCommitting, kCommitted, kAborted };

struct TransactionRouter::Session {
    Mutex checkout;    // held by the statement using the session
    std::string lsid;  // lsid.id, 16 bytes
    int64_t txnNumber = -1;
    RouterTxnPhase phase = RouterTxnPhase::kNone;
    Timestamp readTs;
    bool readTsFromClient = false;  // atClusterTime given: never moved
    // The first statement reached one shard with readTs as a lower bound (afterClusterTime): that
    // shard reads at its latest commit and names the time, which every later participant reads
    // at (noteReply). Cleared by its reply.
    bool readTsOpen = false;
    bool readConcernLocal = true;  // the client's level (the shards all read at readTs)
    struct Participant {
        ShardId shard;
        std::string host;
    };
    std::vector<Participant> participants;  // in the order they joined
    std::string abortReason;
    std::chrono::steady_clock::time_point lastUse;
};

// The statement of a transaction an operation is (OperationContext::routerStatement: sendToShards
// and the cursors' getMores of the operation find it there).
class TransactionRouter::Statement final : public command::RouterTransactionStatement {
  public:
    Statement(std::shared_ptr<Session> session, std::string_view commandName)
        : _session(std::move(session)), _checkout(_session->checkout), _commandName(commandName) {}

    Session& session() { return *_session; }
    std::string_view commandName() const { return _commandName; }
    // The participants the statement found, once its session is at the statement's transaction
    // (a new transaction starts with none): only shards it adds itself may be forgotten.
    void markParticipantsBefore() { _participantsBefore = _session->participants.size(); }

    // The transaction's first statement failed everywhere it went (every shard it started on
    // forgot its part) because its read timestamp is too old for a shard: it starts again at a
    // later one, which the router's clock, having seen those shards' replies, now gives.
    bool restartAtLaterTime() {
        MutexLock lk(_mutex);
        Session& s = *_session;
        if (s.phase != RouterTxnPhase::kInProgress || s.readTsFromClient ||
            _participantsBefore != 0 || !s.participants.empty()) {
            return false;
        }
        s.readTs = std::max(s.readTs, HybridLogicalClock::global().next());
        return true;
    }

    // `onlyTarget`: the statement sends this one request (no other shard joins before its reply).
    BsonObj join(const ShardId* shard, const std::string& host, BsonView cmd, bool onlyTarget) {
        MutexLock lk(_mutex);
        Session& s = *_session;
        if (s.phase != RouterTxnPhase::kInProgress) return BsonObj::fromBytes(cmd.bytes());
        auto it = std::find_if(s.participants.begin(), s.participants.end(), [&](const auto& p) {
            return shard ? p.shard == *shard : p.host == host;
        });
        bool start = it == s.participants.end();
        if (start && !shard) return BsonObj::fromBytes(cmd.bytes());  // not part of it
        if (start) {
            // The transaction's first shard, alone: it picks the snapshot, at or after readTs, so
            // that the transaction also sees what other routers acknowledged there (this router's
            // clock has not necessarily seen those commits).
            s.readTsOpen = s.participants.empty() && onlyTarget && !s.readTsFromClient;
            s.participants.push_back({*shard, host});
        }
        return transactionRequest(s, cmd, start);
    }

    void noteReply(const ShardId& shard, const Status& status, BsonView reply) {
        MutexLock lk(_mutex);
        Session& s = *_session;
        if (s.readTsOpen && !s.participants.empty() && s.participants.front().shard == shard) {
            // The time the first shard read at (txn::kTransactionReadTimestampField); without
            // one (the request failed) the next participant starts at readTs as it was.
            s.readTsOpen = false;
            bson::BsonElement at =
                status.isOK() ? reply[txn::kTransactionReadTimestampField] : bson::BsonElement();
            // Exactly that time (at or after readTs, the bound it was given): every participant
            // reads the same snapshot.
            if (at.type() == bson::BsonType::Timestamp) s.readTs = Timestamp{at.timestampValue()};
        }
        // A shard whose first request of the transaction failed with an answer has aborted its
        // part (or never began it): forgotten, so that a retried statement starts it again. A
        // network error keeps it (its part may exist: the abort must reach it).
        if (!status.isOK() || reply["ok"].trueValue()) return;
        // Nothing written, nothing aborted: the router moves the document within the
        // transaction (cluster_write_move.h).
        if (reply["code"].numberInt() == static_cast<int>(ErrorCodes::WouldChangeOwningShard)) {
            return;
        }
        for (size_t i = _participantsBefore; i < s.participants.size(); ++i) {
            if (s.participants[i].shard == shard) {
                s.participants.erase(s.participants.begin() + static_cast<ptrdiff_t>(i));
                return;
            }
        }
    }

    // The body of a request of transaction `s` (`start`: its first on that shard).
    static BsonObj transactionRequest(const Session& s, BsonView cmd, bool start) {
        BsonBuilder b;
        for (bson::BsonElement e : cmd) {
            std::string_view n = e.fieldName();
            if (n == "lsid" || n == "txnNumber" || n == "autocommit" || n == "startTransaction" ||
                n == "readConcern" || n == "writeConcern" || n == "stmtIds" ||
                n == "recoveryToken") {
                continue;
            }
            b.appendElement(e);
        }
        b.startObject("lsid");
        command::appendUuid(b, "id", s.lsid);
        b.end();
        b.appendInt64("txnNumber", s.txnNumber);
        b.appendBool("autocommit", false);
        if (start) {
            b.appendBool("startTransaction", true);
            b.startObject("readConcern");
            b.append("level", "snapshot");
            b.appendTimestamp(s.readTsOpen ? "afterClusterTime" : "atClusterTime", s.readTs.value);
            b.end();
        }
        return b.obj();
    }

  private:
    std::shared_ptr<Session> _session;
    std::unique_lock<Mutex> _checkout;
    std::string _commandName;
    size_t _participantsBefore = 0;
    Mutex _mutex;
};

// Commit with the classic coordination (the coordinator prepares the others, decides, then
// answers) instead of a staged commit: tests of that path, and paired measurements of both.
TESSERA_FAIL_POINT_DEFINE(forceClassicTwoPhaseCommit);
// Stage commits without journal as commits with it are (every prepare synced before its answer,
// the decision sent by the router) instead of with durable-prepare notices: paired
// measurements of both in one cluster.
TESSERA_FAIL_POINT_DEFINE(forceSyncedPrepares);

namespace {

// The router statement the operation is, or null outside a transaction.
TransactionRouter::Statement* statementOf(const command::OperationContext& opCtx) {
    return static_cast<TransactionRouter::Statement*>(opCtx.routerStatement.get());
}

// The end command `name` ({prepareTransaction | commitTransaction | abortTransaction: 1}) of
// the session's transaction, with `extra` fields.
BsonObj endCommand(const TransactionRouter::Session& s, std::string_view name, BsonView extra) {
    BsonBuilder b;
    b.appendInt32(name, 1);
    for (bson::BsonElement e : extra) b.appendElement(e);
    BsonObj body = b.obj();
    return TransactionRouter::Statement::transactionRequest(s, body, false);
}

Status statusOf(const StatusWith<BsonObj>& r) {
    if (!r.isOK()) return r.getStatus();
    observeShardReply(r.getValue());
    return net::replyStatus(r.getValue());
}

std::string describe(const ShardId& shard, const Status& s) {
    return "shard " + shard + ": " + s.toString();
}

}  // namespace

TransactionRouter::TransactionRouter(Router& router)
    : _router(router), _decisions(std::make_unique<CommitDecisionSender>(router.client())) {}

TransactionRouter::~TransactionRouter() = default;

std::shared_ptr<TransactionRouter::Session> TransactionRouter::sessionFor(const std::string& lsid) {
    MutexLock lk(_mutex);
    auto [it, added] = _sessions.try_emplace(lsid);
    if (added) {
        it->second = std::make_shared<Session>();
        it->second->lsid = lsid;
        it->second->lastUse = std::chrono::steady_clock::now();
        if (++_insertsSincePurge >= 1024) {
            // Sessions idle past logicalSessionTimeoutMinutes go (not one checked out, nor one
            // whose transaction is unfinished).
            _insertsSincePurge = 0;
            auto now = std::chrono::steady_clock::now();
            std::erase_if(_sessions, [&](const auto& entry) {
                Session& s = *entry.second;
                std::unique_lock busy(s.checkout, std::try_to_lock);
                return busy && s.phase != RouterTxnPhase::kInProgress &&
                       s.phase != RouterTxnPhase::kCommitting &&
                       now - s.lastUse > kIdleSessionLimit;
            });
        }
    }
    return it->second;
}

void TransactionRouter::moveTo(Session& s, int64_t txnNumber, RouterTxnPhase phase,
                               const std::string& whyAbortOlder) {
    if (s.phase == RouterTxnPhase::kInProgress) abortParticipants(s, whyAbortOlder);
    s.txnNumber = txnNumber;
    s.phase = phase;
    s.participants.clear();
    s.abortReason.clear();
}

Status TransactionRouter::beginStatement(command::OperationContext& opCtx,
                                         const txn::TransactionArgs& args,
                                         std::string_view commandName) {
    auto statement = std::make_unique<Statement>(sessionFor(*opCtx.lsid), commandName);
    Session& s = statement->session();
    s.lastUse = std::chrono::steady_clock::now();
    int64_t txnNumber = *opCtx.txnNumber;
    std::string number = std::to_string(txnNumber);
    if (txnNumber < s.txnNumber) {
        return Status(ErrorCodes::TransactionTooOld,
                      "Cannot start transaction " + number +
                          " on session because a newer transaction " + std::to_string(s.txnNumber) +
                          " has already started");
    }
    if (args.start) {
        if (txnNumber == s.txnNumber) {
            return Status(ErrorCodes::ConflictingOperationInProgress,
                          "Cannot start transaction " + number +
                              " on session: a transaction with the same number was started "
                              "already");
        }
        moveTo(s, txnNumber, RouterTxnPhase::kInProgress,
               "a newer transaction of the session started");
        // One snapshot of the whole cluster: at least everything this router has seen acknowledged
        // (its clock observes the shards' operationTime), or the client's causal or chosen time.
        s.readTsFromClient = args.atClusterTime.has_value();
        s.readConcernLocal = args.readConcernLocal;
        s.readTs = args.atClusterTime ? *args.atClusterTime
                                      : std::max(HybridLogicalClock::global().next(),
                                                 args.afterClusterTime.value_or(Timestamp{}));
    } else if ((txnNumber > s.txnNumber || s.phase == RouterTxnPhase::kNone) &&
               commandName == "commitTransaction") {
        // Not a transaction of this router (or one it forgot): commit() recovers the decision
        // through the client's recoveryToken.
        moveTo(s, txnNumber, RouterTxnPhase::kNone,
               "a newer transaction of the session is committing");
    } else if (txnNumber > s.txnNumber || s.phase == RouterTxnPhase::kNone) {
        return Status(ErrorCodes::NoSuchTransaction,
                      "Given transaction number " + number +
                          " does not match any in-progress transactions. The active transaction "
                          "number is " +
                          std::to_string(s.txnNumber));
    } else if (s.phase == RouterTxnPhase::kAborted) {
        return Status(ErrorCodes::NoSuchTransaction,
                      "Transaction " + number + " has been aborted" +
                          (s.abortReason.empty() ? "." : ": " + s.abortReason));
    } else if (s.phase == RouterTxnPhase::kCommitted || s.phase == RouterTxnPhase::kCommitting) {
        if (commandName != "commitTransaction") {
            return Status(ErrorCodes::TransactionCommitted,
                          "Transaction " + number + " has been committed.");
        }
    }
    statement->markParticipantsBefore();
    opCtx.routerStatement = std::move(statement);
    return Status::OK();
}

void TransactionRouter::endStatement(command::OperationContext& opCtx, const Status& status) {
    std::unique_ptr<Statement> statement(statementOf(opCtx));
    opCtx.routerStatement.release();
    if (!statement) return;
    Session& s = statement->session();
    s.lastUse = std::chrono::steady_clock::now();
    if (!status.isOK() && s.phase == RouterTxnPhase::kInProgress &&
        !txn::isTransactionEndCommand(statement->commandName())) {
        abortParticipants(s, "a statement failed with " + status.toString());
    }
}  // the session is checked in with the statement

Status TransactionRouter::runInternalTransaction(command::OperationContext& opCtx,
                                                 const std::function<Status()>& body) {
    if (opCtx.routerStatement) {
        return Status(ErrorCodes::InternalError, "an internal transaction inside a statement");
    }
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string lsid(16, '\0');
    uint64_t a = rng(), b = rng();
    std::memcpy(lsid.data(), &a, 8);
    std::memcpy(lsid.data() + 8, &b, 8);
    lsid[6] = static_cast<char>((lsid[6] & 0x0f) | 0x40);  // a version 4 UUID
    lsid[8] = static_cast<char>((lsid[8] & 0x3f) | 0x80);
    std::optional<std::string> clientLsid = std::move(opCtx.lsid);
    std::optional<int64_t> clientTxnNumber = opCtx.txnNumber;
    opCtx.lsid = lsid;
    opCtx.txnNumber = 1;
    txn::TransactionArgs start;
    start.statement = true;
    start.start = true;
    Status st = beginStatement(opCtx, start, "update");
    if (st.isOK()) {
        try {
            st = body();
        } catch (...) {
            endStatement(opCtx, Status(ErrorCodes::InternalError, "an exception"));  // aborts it
            endSession(lsid);
            opCtx.lsid = std::move(clientLsid);
            opCtx.txnNumber = clientTxnNumber;
            throw;
        }
        endStatement(opCtx, st);
    }
    if (st.isOK()) {
        txn::TransactionArgs next;
        next.statement = true;
        st = beginStatement(opCtx, next, "commitTransaction");
        if (st.isOK()) {
            BsonBuilder cmd;
            cmd.appendInt32("commitTransaction", 1);
            BsonBuilder ignored;
            st = commit(opCtx, cmd.obj(), ignored);
            endStatement(opCtx, st);
        }
    }
    endSession(lsid);  // aborts it everywhere unless it committed
    opCtx.lsid = std::move(clientLsid);
    opCtx.txnNumber = clientTxnNumber;
    return st;
}

void TransactionRouter::abortParticipants(Session& s, const std::string& reason) {
    s.phase = RouterTxnPhase::kAborted;
    s.abortReason = reason;
    std::vector<net::RemoteCommand> cmds;
    for (const auto& p : s.participants) {
        cmds.push_back({p.host, "admin", endCommand(s, "abortTransaction", BsonObj())});
    }
    if (!cmds.empty()) {
        for (const auto& r : _router.client().runCommands(cmds)) {
            if (r.isOK()) observeShardReply(r.getValue());
        }
    }
}

Status TransactionRouter::commit(command::OperationContext& opCtx, BsonView cmd, BsonBuilder&) {
    Statement* statement = statementOf(opCtx);
    if (!statement) return Status(ErrorCodes::NoSuchTransaction, "no transaction is in progress");
    Session& s = statement->session();
    if (s.phase == RouterTxnPhase::kCommitted) return Status::OK();  // a retried commit
    BsonObj writeConcern;
    if (bson::BsonElement wc = cmd["writeConcern"]; wc.isObject()) {
        BsonBuilder b;
        b.appendObject("writeConcern", wc.objValue());
        writeConcern = b.obj();
    }
    if (s.phase == RouterTxnPhase::kNone) return recoverCommit(s, cmd, writeConcern);
    if (s.participants.empty()) {
        s.phase = RouterTxnPhase::kCommitted;
        return Status::OK();
    }
    if (s.participants.size() == 1) {
        // One participant: its own commit is atomic; no prepare, no coordinator.
        const auto& p = s.participants.front();
        Status st = statusOf(_router.client().runCommand(
            p.host, "admin", endCommand(s, "commitTransaction", writeConcern)));
        if (st.isOK()) {
            s.phase = RouterTxnPhase::kCommitted;
        } else if (st.is(ErrorCodes::NoSuchTransaction)) {
            s.phase = RouterTxnPhase::kAborted;
            s.abortReason = describe(p.shard, st);
        } else {
            s.phase = RouterTxnPhase::kCommitting;  // the outcome is unknown: a retry asks again
        }
        return st;
    }
    return twoPhaseCommit(s, writeConcern);
}

Status TransactionRouter::twoPhaseCommit(Session& s, BsonView writeConcern) {
    // Staged commit (docs/protocols/two-phase-commit.md "Staged commit"): the coordinator, the
    // first participant, writes its record and prepares its part while this router prepares the
    // others, so once every part is prepared with writes the transaction is committed: the client
    // hears it before the coordinator decides. With the journal asked for, every part is durable
    // when answered (the coordinator's with this commit's write concern) and this router sends the
    // decision; without, as for any unjournaled write, the other parts answer once written and
    // each tells the coordinator when its sync is done, which decides when all have: no part
    // commits before every part is durable, so a power loss takes the whole transaction or
    // none of it.
    const auto& coordinator = s.participants.front();
    if (forceClassicTwoPhaseCommit.shouldFail()) {
        return askCoordinator(s, coordinator.host, true, writeConcern);
    }
    const bool durableNotices = !command::writeConcernWaitsForJournal(writeConcern) &&
                                !CommitDecisionSender::decisionsHeld() &&
                                !forceSyncedPrepares.active();
    BsonObj stage;
    {
        BsonBuilder extra;
        extra.appendBool("stage", true);
        for (bson::BsonElement e : writeConcern) extra.appendElement(e);
        stage = coordinatorCommand(s, true, extra.obj());
    }
    BsonObj prepare;
    {
        BsonBuilder extra;
        extra.startObject("coordinator");
        extra.append("shard", coordinator.shard);
        extra.append("host", coordinator.host);
        extra.end();
        if (durableNotices) extra.appendBool("notifyCoordinatorWhenDurable", true);
        prepare = endCommand(s, "prepareTransaction", extra.obj());
    }
    std::vector<net::RemoteCommand> cmds{{coordinator.host, "admin", stage}};
    for (size_t i = 1; i < s.participants.size(); ++i) {
        cmds.push_back({s.participants[i].host, "admin", prepare});
    }
    s.phase = RouterTxnPhase::kCommitting;
    std::vector<StatusWith<BsonObj>> replies = _router.client().runCommands(cmds);

    // A coordinator that failed, aborted, or answered a retried commit from its record: final.
    if (!statusOf(replies[0]).isOK() || replies[0].getValue()["decided"].trueValue()) {
        return takeCoordinatorAnswer(s, replies[0], true);
    }
    Timestamp commitTs;
    std::vector<std::string> writers;
    bool everyPartWrote = true;
    Status refusal = Status::OK();
    std::string refusalShard;
    for (size_t i = 0; i < replies.size(); ++i) {
        Status st = i == 0 ? Status::OK() : statusOf(replies[i]);
        if (!st.isOK()) {
            if (refusal.isOK()) {
                refusal = st;
                refusalShard = s.participants[i].shard;
            }
            continue;
        }
        BsonView reply = replies[i].getValue();
        commitTs = std::max(commitTs, Timestamp{reply["prepareTimestamp"].timestampValue()});
        if (reply["readOnly"].trueValue()) {
            everyPartWrote = false;
        } else {
            writers.push_back(s.participants[i].shard);
        }
    }
    BsonBuilder decision;
    decision.startObject("decision");
    if (refusal.isOK()) {
        decision.appendBool("commit", true);
        decision.appendTimestamp("commitTimestamp", commitTs.value);
        decision.startArray("writers");
        for (size_t i = 0; i < writers.size(); ++i) decision.append(std::to_string(i), writers[i]);
        decision.end();
    } else {
        decision.appendBool("commit", false);
        decision.appendInt32("code", refusal.is(ErrorCodes::OperationNotSupportedInTransaction)
                                         ? static_cast<int>(refusal.code())
                                         : static_cast<int>(ErrorCodes::NoSuchTransaction));
        decision.append("reason", "prepareTransaction failed on shard " + refusalShard + ": " +
                                      refusal.toString());
    }
    decision.end();
    if (refusal.isOK() && everyPartWrote) {
        // Committed: every part is prepared (durably, or with its notice to come), and a
        // resolution of the staged record finds them all prepared again. The coordinator
        // commits and delivers once it hears this decision, or every notice.
        s.phase = RouterTxnPhase::kCommitted;
        HybridLogicalClock::global().advanceTo(commitTs);
        if (!durableNotices) {
            _decisions->send(
                {coordinator.host, "admin", coordinatorCommand(s, false, decision.obj())});
        }
        return Status::OK();
    }
    // A read-only part finished at its prepare (a resolution could not find it prepared again),
    // or one could not prepare: the coordinator's decision is the outcome, journaled before its
    // answer when the commit's write concern asks for it.
    for (bson::BsonElement e : writeConcern) decision.appendElement(e);
    BsonObj decide = coordinatorCommand(s, false, decision.obj());
    return takeCoordinatorAnswer(s, _router.client().runCommand(coordinator.host, "admin", decide),
                                 true);
}

Status TransactionRouter::recoverCommit(Session& s, BsonView cmd, BsonView writeConcern) {
    bson::BsonElement token = cmd["recoveryToken"];
    bson::BsonElement shard =
        token.isObject() ? token.objValue()["recoveryShardId"] : bson::BsonElement();
    if (shard.type() != bson::BsonType::String) {
        return Status(ErrorCodes::NoSuchTransaction,
                      "Transaction " + std::to_string(s.txnNumber) +
                          " is unknown to this router and its commit carries no recoveryToken "
                          "naming its coordinator; a transaction that reached no shard can be "
                          "run again");
    }
    ASSIGN_OR_RETURN(std::string host, _router.shards().hostOf(ShardId(shard.stringValue())));
    return askCoordinator(s, host, false, writeConcern);
}

BsonObj TransactionRouter::coordinatorCommand(const Session& s, bool withParticipants,
                                              BsonView extra) const {
    BsonBuilder b;
    b.appendInt32("_shardsvrCoordinateCommitTransaction", 1);
    b.startObject("lsid");
    command::appendUuid(b, "id", s.lsid);
    b.end();
    b.appendInt64("txnNum", s.txnNumber);
    b.startArray("participants");
    for (size_t i = 0; withParticipants && i < s.participants.size(); ++i) {
        b.startObject(std::to_string(i));
        b.append("shard", s.participants[i].shard);
        b.append("host", s.participants[i].host);
        b.end();
    }
    b.end();
    for (bson::BsonElement e : extra) b.appendElement(e);
    return b.obj();
}

Status TransactionRouter::askCoordinator(Session& s, const std::string& host, bool withParticipants,
                                         BsonView writeConcern) {
    s.phase = RouterTxnPhase::kCommitting;
    return takeCoordinatorAnswer(
        s,
        _router.client().runCommand(host, "admin",
                                    coordinatorCommand(s, withParticipants, writeConcern)),
        withParticipants);
}

Status TransactionRouter::takeCoordinatorAnswer(Session& s, const StatusWith<BsonObj>& reply,
                                                bool withParticipants) {
    Status st = statusOf(reply);
    if (st.isOK()) {
        s.phase = RouterTxnPhase::kCommitted;
        if (bson::BsonElement ts = reply.getValue()["commitTimestamp"];
            ts.type() == bson::BsonType::Timestamp) {
            HybridLogicalClock::global().advanceTo(Timestamp{ts.timestampValue()});
        }
    } else if (st.is(ErrorCodes::NoSuchTransaction)) {
        s.phase = RouterTxnPhase::kAborted;
        s.abortReason = st.reason();
    } else if (!withParticipants) {
        s.phase = RouterTxnPhase::kNone;  // still unknown here: a retry recovers again
    }
    // Else unknown (the coordinator unreachable): the client's retry asks again.
    return st;
}

Status TransactionRouter::abort(command::OperationContext& opCtx, BsonBuilder&) {
    Statement* statement = statementOf(opCtx);
    if (!statement) return Status(ErrorCodes::NoSuchTransaction, "no transaction is in progress");
    Session& s = statement->session();
    if (s.phase == RouterTxnPhase::kCommitting) {
        return Status(ErrorCodes::TransactionCommitted,
                      "Transaction " + std::to_string(s.txnNumber) +
                          " is being committed: it cannot be aborted");
    }
    abortParticipants(s, "abortTransaction");
    return Status::OK();
}

void TransactionRouter::appendToReply(command::OperationContext& opCtx, BsonBuilder& reply) {
    Statement* statement = statementOf(opCtx);
    if (!statement) return;
    const Session& s = statement->session();
    if (s.participants.empty()) return;
    reply.startObject("recoveryToken");
    reply.append("recoveryShardId", s.participants.front().shard);
    reply.end();
}

void TransactionRouter::endSession(const std::string& lsid) {
    std::shared_ptr<Session> s;
    {
        MutexLock lk(_mutex);
        auto it = _sessions.find(lsid);
        if (it == _sessions.end()) return;
        s = it->second;
    }
    MutexLock checkout(s->checkout);                      // after a statement still running in it
    if (s->phase == RouterTxnPhase::kCommitting) return;  // its decision must still reach them
    if (s->phase == RouterTxnPhase::kInProgress) abortParticipants(*s, "the session ended");
    MutexLock lk(_mutex);
    if (auto it = _sessions.find(lsid); it != _sessions.end() && it->second == s) {
        _sessions.erase(it);
    }
}

void TransactionRouter::killAll() {
    std::vector<std::string> lsids;
    {
        MutexLock lk(_mutex);
        for (const auto& entry : _sessions) lsids.push_back(entry.first);
    }
    for (const std::string& lsid : lsids) endSession(lsid);
}

BsonObj joinTransaction(const command::OperationContext& opCtx, const ShardId& shard,
                        const std::string& host, BsonView cmd, bool onlyTarget) {
    TransactionRouter::Statement* statement = statementOf(opCtx);
    if (!statement) return BsonObj::fromBytes(cmd.bytes());
    return statement->join(&shard, host, cmd, onlyTarget);
}

BsonObj joinTransactionByHost(const command::OperationContext& opCtx, const std::string& host,
                              BsonView cmd) {
    TransactionRouter::Statement* statement = statementOf(opCtx);
    if (!statement) return BsonObj::fromBytes(cmd.bytes());
    return statement->join(nullptr, host, cmd, false);
}

void noteTransactionReply(const command::OperationContext& opCtx, const ShardId& shard,
                          const Status& status, BsonView reply) {
    if (TransactionRouter::Statement* statement = statementOf(opCtx)) {
        statement->noteReply(shard, status, reply);
    }
}

bool inTransactionStatement(const command::OperationContext& opCtx) {
    return opCtx.routerStatement != nullptr;
}

Status checkTransactionMayCreate(const command::OperationContext& opCtx, const std::string& ns) {
    TransactionRouter::Statement* statement = statementOf(opCtx);
    if (!statement || statement->session().readConcernLocal) return Status::OK();
    return Status(ErrorCodes::InvalidOptions,
                  "Cannot create collection " + ns +
                      " in a multi-document transaction with a read concern other than 'local'; "
                      "start the transaction with readConcern {level: 'local'}");
}

bool restartTransactionAtLaterTime(const command::OperationContext& opCtx) {
    TransactionRouter::Statement* statement = statementOf(opCtx);
    return statement && statement->restartAtLaterTime();
}

void observeShardReply(BsonView reply) {
    bson::BsonElement t = reply["operationTime"];
    if (t.type() == bson::BsonType::Timestamp) {
        HybridLogicalClock::global().advanceTo(Timestamp{t.timestampValue()});
    }
}

}  // namespace tessera::router
