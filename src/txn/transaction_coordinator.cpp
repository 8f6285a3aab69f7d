#include "txn/transaction_coordinator.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>

#include "base/failpoint.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/wall_clock.h"
#include "bson/bson_builder.h"
#include "net/remote_client.h"
#include "storage/engine.h"
#include "txn/transaction_coordinator_record.h"

namespace tessera::txn {

// Hang a coordination after every participant prepared, before its decision is written, and
// after it is written, before its caller hears it (tests: readers wait; kill -9 at either point).
TESSERA_FAIL_POINT_DEFINE(hangBeforeWritingDecision);
TESSERA_FAIL_POINT_DEFINE(hangAfterWritingDecision);
// Makes deliver() throw (tests: a coordinator step that fails is retried, never the end of the
// process).
TESSERA_FAIL_POINT_DEFINE(transactionCoordinatorStepThrows);

// Hang a delivery thread before it tells the participants a decision its caller already heard
// (tests: the session's next transaction and readers wait for the delivery).
TESSERA_FAIL_POINT_DEFINE(hangBeforeDeliveringDecision);

namespace {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

}  // namespace

TransactionCoordinator::TransactionCoordinator(storage::Engine& engine, net::RemoteClient& client)
    : _engine(engine), _client(client) {}

TransactionCoordinator::~TransactionCoordinator() { stop(); }

void TransactionCoordinator::start() {
    MutexLock lk(_mutex);
    if (_recovery.joinable()) return;
    _stopping = false;
    _recovery = std::thread([this] { recoveryLoop(); });
    _participantRecovery = std::thread([this] { participantRecoveryLoop(); });
    for (int i = 0; i < kDeliveryThreads; ++i) {
        _deliverers.emplace_back([this] { deliveryLoop(); });
    }
}

void TransactionCoordinator::stop() {
    {
        MutexLock lk(_mutex);
        _stopping = true;
    }
    _wake.notify_all();
    _deliveryQueued.notify_all();
    if (_recovery.joinable()) _recovery.join();
    if (_participantRecovery.joinable()) _participantRecovery.join();
    for (std::thread& t : _deliverers) t.join();
    _deliverers.clear();
    writeDone();
}

void TransactionCoordinator::deliveryLoop() {
    UniqueLock lk(_mutex);
    for (;;) {
        _deliveryQueued.wait(lk,
                             [&]() REQUIRES(_mutex) { return _stopping || !_deliveries.empty(); });
        if (_deliveries.empty()) return;  // stopping, and every queued delivery finished
        std::function<void()> job = std::move(_deliveries.front());
        _deliveries.pop_front();
        lk.unlock();
        job();
        lk.lock();
    }
}

void TransactionCoordinator::runOnDeliveryThread(std::function<void()> job) {
    {
        MutexLock lk(_mutex);
        if (!_deliverers.empty()) {
            _deliveries.push_back(std::move(job));
            job = nullptr;
        }
    }
    if (job) {
        job();
        return;
    }
    _deliveryQueued.notify_one();  // after unlocking: the thread woken takes the mutex
}

void TransactionCoordinator::finishInBackground(Record record, std::shared_ptr<Coordination> c) {
    runOnDeliveryThread(
        [this, record = std::move(record), c = std::move(c)] { finish(record, c); });
}

void TransactionCoordinator::finish(const Record& decided, const std::shared_ptr<Coordination>& c) {
    try {
        finishUnguarded(decided, c);
    } catch (...) {
        Status failed = statusFromCurrentException("delivering a transaction decision");
        noteStepFailed(decided.key, failed);
        // The decision stands (it is durable); recovery delivers it.
        release(decided.key, c, decided.outcome(), decided.commitTs);
    }
}

void TransactionCoordinator::finishUnguarded(const Record& decided,
                                             const std::shared_ptr<Coordination>& c) {
    Record record = decided;
    // No participant hears a decision before it is durable (a caller that asked for a
    // journaled commit had it synced before its reply).
    if (Status synced = _engine.syncWal(); !synced.isOK()) {
        log::warning("TXN", 22223, "Could not sync a coordinator's decision; recovery delivers it",
                     "{\"error\":\"" + log::jsonEscape(synced.toString()) + "\"}");
        release(record.key, c, record.outcome(), record.commitTs);
        return;
    }
    hangAt(hangBeforeDeliveringDecision);
    bool delivered = false;
    for (int round = 0; round < kDeliveryRounds && !delivered; ++round) {
        if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100 << round));
        delivered = deliver(record);
    }
    if (delivered) {
        record.done = true;
        markDone(record);
    }
    release(record.key, c, record.outcome(), record.commitTs);
}

std::shared_ptr<TransactionCoordinator::Coordination> TransactionCoordinator::claim(
    const std::string& key, bool* owner) {
    MutexLock lk(_mutex);
    auto [it, added] = _active.try_emplace(key);
    if (added) {
        it->second = std::make_shared<Coordination>();
        // Until it is settled (done, or no record): the recovery thread looks at it each second.
        _pending.insert(key);
    }
    *owner = added;
    return it->second;
}

void TransactionCoordinator::publish(Coordination& c, Status outcome, Timestamp commitTs) {
    {
        MutexLock lk(c.mutex);
        if (c.finished) return;
        c.finished = true;
        c.outcome = std::move(outcome);
        c.commitTs = commitTs;
    }
    c.cv.notify_all();
}

void TransactionCoordinator::unclaim(const std::string& key,
                                     const std::shared_ptr<Coordination>& c) {
    {
        MutexLock lk(_mutex);
        _active.erase(key);
    }
    {
        MutexLock lk(c->mutex);
        c->finished = true;
        c->givenUp = true;
    }
    c->cv.notify_all();
}

std::optional<Status> TransactionCoordinator::claimAndLoad(const std::string& key,
                                                           std::shared_ptr<Coordination>* c,
                                                           std::optional<Record>* record,
                                                           Timestamp* commitTs) {
    for (;;) {
        bool owner = false;
        *c = claim(key, &owner);
        if (owner) break;
        if (std::optional<Status> outcome = awaitOutcome(**c, commitTs)) return outcome;
    }
    // Read under the claim: a retried commit finds the first attempt's record, and nobody
    // decides on a copy read before a coordination it waited out decided.
    StatusWith<std::optional<Record>> loaded = load(key);
    if (!loaded.isOK()) {
        release(key, *c, loaded.getStatus(), Timestamp());
        return loaded.getStatus();
    }
    *record = std::move(loaded.getValue());
    return std::nullopt;
}

void TransactionCoordinator::release(const std::string& key, const std::shared_ptr<Coordination>& c,
                                     Status outcome, Timestamp commitTs) {
    publish(*c, std::move(outcome), commitTs);
    MutexLock lk(_mutex);
    _active.erase(key);
}

Status TransactionCoordinator::write(const Record& record, bool synced) {
    return _engine.writeSideRecords({{record.key, std::string(record.toBson().bytes())}}, synced);
}

Status TransactionCoordinator::coordinate(const std::string& lsid, int64_t txnNumber,
                                          const std::vector<Participant>& participants,
                                          Timestamp* commitTs) {
    std::string key = recordKey(lsid, txnNumber);
    std::shared_ptr<Coordination> c;
    std::optional<Record> record;
    if (std::optional<Status> outcome = claimAndLoad(key, &c, &record, commitTs)) return *outcome;
    return coordinateClaimed(key, c, std::move(record), lsid, txnNumber, participants, commitTs);
}

std::optional<Status> TransactionCoordinator::awaitOutcome(Coordination& c, Timestamp* commitTs) {
    // A retried commit while the first attempt (or recovery) still runs: its outcome.
    UniqueLock lk(c.mutex);
    c.cv.wait(lk, [&]() REQUIRES(c.mutex) { return c.finished; });
    if (c.givenUp) return std::nullopt;
    *commitTs = c.commitTs;
    return c.outcome;
}

Status TransactionCoordinator::coordinateClaimed(const std::string& key,
                                                 const std::shared_ptr<Coordination>& c,
                                                 std::optional<Record> loaded,
                                                 const std::string& lsid, int64_t txnNumber,
                                                 const std::vector<Participant>& participants,
                                                 Timestamp* commitTs) {
    Record record;
    if (loaded) {
        record = std::move(*loaded);
        if (record.participants.empty()) {
            // Aborted by recoverDecision before anything was coordinated: the participants the
            // router names now are told (they never prepared).
            record.participants = participants;
            record.done = false;
        }
        // Undecided: a staged record is resolved (its router may have acknowledged the commit
        // once every part was prepared), any other aborted (nobody was told to commit).
        Status s = record.decision != Decision::kNone ? Status::OK()
                   : record.staged                    ? decide(record)
                                                      : abortUndecided(record);
        if (!s.isOK()) {
            release(key, c, s, Timestamp());
            return s;
        }
    } else if (participants.empty()) {
        Status none(ErrorCodes::NoSuchTransaction,
                    "Transaction " + std::to_string(txnNumber) + " has no participants to commit");
        release(key, c, none, Timestamp());
        return none;
    } else {
        record.key = key;
        record.lsid = lsid;
        record.txnNumber = txnNumber;
        record.participants = participants;
        if (Status s = decide(record); !s.isOK()) {
            release(key, c, s, Timestamp());
            return s;
        }
    }
    return answerDecided(key, c, std::move(record), commitTs);
}

Status TransactionCoordinator::answerDecided(const std::string& key,
                                             const std::shared_ptr<Coordination>& c, Record record,
                                             Timestamp* commitTs) {
    {
        MutexLock lk(_mutex);
        _stagedAt.erase(key);
        _votes.erase(key);
    }
    // The decision is written: this shard's own part follows it in the same log (so it is never
    // durable without the decision), the caller hears it now, a delivery thread makes it durable
    // and tells the other participants (their prepared documents hold readers until then).
    if (!record.done) record.localFinished = finishLocal(record);
    Status outcome = record.outcome();
    *commitTs = record.commitTs;
    if (record.done) {
        release(key, c, outcome, record.commitTs);
    } else {
        publish(*c, outcome, record.commitTs);
        finishInBackground(std::move(record), c);
    }
    return outcome;
}

StatusWith<std::optional<TransactionCoordinator::Record>> TransactionCoordinator::load(
    const std::string& key) {
    ASSIGN_OR_RETURN(std::optional<std::string> found, _engine.sideRecord(key));
    if (!found) return std::optional<Record>();
    std::optional<Record> record = Record::parse(key, BsonView(found->data()));
    if (!record) return Status(ErrorCodes::InternalError, "damaged coordinator record " + key);
    return record;
}

Status TransactionCoordinator::abortUndecided(Record& record) {
    if (record.decision != Decision::kNone) return Status::OK();
    // Interrupted before its decision (a restart): nobody was told to commit.
    record.decision = Decision::kAbort;
    record.reason = "its coordinator restarted before deciding";
    return write(record);
}

TransactionCoordinator::Staged TransactionCoordinator::stage(
    const std::string& lsid, int64_t txnNumber, const std::vector<Participant>& participants) {
    Staged staged;
    std::string key = recordKey(lsid, txnNumber);
    std::shared_ptr<Coordination> c;
    std::optional<Record> found;
    if (std::optional<Status> outcome = claimAndLoad(key, &c, &found, &staged.commitTs)) {
        staged.decided = true;
        staged.outcome = *outcome;
        return staged;
    }
    const int self = localIndex(participants);
    if (found || self < 0 || participants.size() < 2) {
        // A retried commit (its record is resolved, or answers), or nothing to stage here: the
        // classic coordination decides.
        staged.decided = true;
        staged.outcome = coordinateClaimed(key, c, std::move(found), lsid, txnNumber, participants,
                                           &staged.commitTs);
        return staged;
    }
    Record record;
    record.key = key;
    record.lsid = lsid;
    record.txnNumber = txnNumber;
    record.participants = participants;
    record.staged = true;
    // The record, then this shard's part after it in the same log, neither synced (as in
    // decide(): the decision's delivery syncs the log before another participant acts on it;
    // a commit whose write concern asks for the journal is synced by the entry point).
    Status written = write(record, false);
    StatusWith<LocalParticipant::Prepared> prepared =
        written.isOK()
            ? _local->prepare(lsid, txnNumber, participants[self].shard, participants[self].host)
            : StatusWith<LocalParticipant::Prepared>(written);
    if (!prepared.isOK()) {
        if (!written.isOK()) {
            release(key, c, written, Timestamp());
            staged.decided = true;
            staged.outcome = written;
            return staged;
        }
        // This part cannot commit: abort, told to every participant (those the router is
        // preparing meanwhile abort their part, prepared or not).
        record.decision = Decision::kAbort;
        record.reason = "prepareTransaction failed on shard " + participants[self].shard + ": " +
                        prepared.getStatus().toString();
        if (prepared.getStatus().is(ErrorCodes::OperationNotSupportedInTransaction)) {
            record.abortCode = static_cast<int>(ErrorCodes::OperationNotSupportedInTransaction);
        }
        staged.decided = true;
        if (Status s = write(record, false); !s.isOK()) {
            release(key, c, s, Timestamp());
            staged.outcome = s;
            return staged;
        }
        staged.outcome = answerDecided(key, c, std::move(record), &staged.commitTs);
        return staged;
    }
    staged.prepareTs = prepared.getValue().prepareTs;
    staged.readOnly = prepared.getValue().readOnly;
    bool votesComplete = false;
    {
        MutexLock lk(_mutex);
        const auto now = std::chrono::steady_clock::now();
        _stagedAt[key] = now;
        if (!staged.readOnly) {  // a read-only own part: the router decides
            DurableVotes& votes = _votes[key];
            votes.staged = true;
            votes.self = participants[self].shard;
            votes.ownPrepareTs = staged.prepareTs;
            for (const Participant& p : participants) {
                if (p.shard != votes.self) votes.others.push_back(p.shard);
            }
            if (votes.durable.empty()) votes.since = now;
            votesComplete = votes.durable.size() == votes.others.size();
        }
    }
    unclaim(key, c);  // stays pending: its decision or the recovery thread settles it
    // Every other part told it is durable before this stage ran (rare: their syncs raced it).
    if (votesComplete) decideIfDurable(lsid, txnNumber, key);
    return staged;
}

Status TransactionCoordinator::decideStaged(const std::string& lsid, int64_t txnNumber,
                                            const RouterDecision& decision, Timestamp* commitTs) {
    std::string key = recordKey(lsid, txnNumber);
    std::shared_ptr<Coordination> c;
    std::optional<Record> found;
    if (std::optional<Status> outcome = claimAndLoad(key, &c, &found, commitTs)) return *outcome;
    if (!found) {
        Status none(ErrorCodes::NoSuchTransaction,
                    "Transaction " + std::to_string(txnNumber) + " has no staged commit here");
        release(key, c, none, Timestamp());
        return none;
    }
    Record record = std::move(*found);
    if (record.decision != Decision::kNone || !record.staged) {
        // Resolved meanwhile (it keeps its decision), or not staged: as a retried commit.
        return coordinateClaimed(key, c, std::move(record), lsid, txnNumber, {}, commitTs);
    }
    if (decision.commit) {
        record.decision = Decision::kCommit;
        record.commitTs = decision.commitTs;
        record.writers = decision.writers;
        HybridLogicalClock::global().advanceTo(decision.commitTs);
    } else {
        record.decision = Decision::kAbort;
        record.reason = decision.reason;
        record.abortCode = decision.abortCode;
    }
    hangAt(hangBeforeWritingDecision);
    if (Status s = write(record, false); !s.isOK()) {
        release(key, c, s, Timestamp());
        return s;
    }
    hangAt(hangAfterWritingDecision);
    return answerDecided(key, c, std::move(record), commitTs);
}

void TransactionCoordinator::participantDurable(const std::string& lsid, int64_t txnNumber,
                                                const std::string& shard, Timestamp prepareTs) {
    std::string key = recordKey(lsid, txnNumber);
    bool complete = false;
    {
        MutexLock lk(_mutex);
        DurableVotes& votes = _votes[key];
        if (votes.durable.empty() && !votes.staged) votes.since = std::chrono::steady_clock::now();
        votes.durable[shard] = prepareTs;
        complete = votes.staged && votes.durable.size() >= votes.others.size();
    }
    if (complete) decideIfDurable(lsid, txnNumber, key);
}

std::optional<TransactionCoordinator::RouterDecision>
TransactionCoordinator::takeReadyDecisionLocked(const std::string& key) {
    auto it = _votes.find(key);
    if (it == _votes.end() || !it->second.staged) return std::nullopt;
    const DurableVotes& votes = it->second;
    RouterDecision decision;
    decision.commit = true;
    decision.commitTs = votes.ownPrepareTs;
    decision.writers.push_back(votes.self);
    for (const std::string& other : votes.others) {
        auto vote = votes.durable.find(other);
        if (vote == votes.durable.end()) return std::nullopt;
        decision.commitTs = std::max(decision.commitTs, vote->second);
        decision.writers.push_back(other);
    }
    _votes.erase(it);
    return decision;
}

void TransactionCoordinator::decideIfDurable(const std::string& lsid, int64_t txnNumber,
                                             const std::string& key) {
    std::optional<RouterDecision> decision;
    {
        MutexLock lk(_mutex);
        decision = takeReadyDecisionLocked(key);
    }
    if (!decision) return;  // another notice's thread took it
    // Every part is prepared with writes and durable: committed, at the greatest prepare
    // timestamp — what the router answered its client. A decision reached first (a
    // resolution, the router's) stands.
    Timestamp commitTs;
    if (Status s = decideStaged(lsid, txnNumber, *decision, &commitTs); !s.isOK()) {
        log::info("TXN", 22246, "A staged commit's votes found it decided otherwise",
                  "{\"txnNumber\":" + std::to_string(txnNumber) + ",\"outcome\":\"" +
                      log::jsonEscape(s.toString()) + "\"}");
    }
}

Status TransactionCoordinator::recoverDecision(
    const std::string& lsid, int64_t txnNumber,
    const std::function<StatusWith<bool>()>& localOutcome, Timestamp* commitTs) {
    Status outcome = recoverDecisionUnsynced(lsid, txnNumber, localOutcome, commitTs);
    // Whoever asks may act on the answer (a participant commits its part): it is durable first.
    if (outcome.isOK()) TRY_STATUS(_engine.syncWal());
    return outcome;
}

Status TransactionCoordinator::recoverDecisionUnsynced(
    const std::string& lsid, int64_t txnNumber,
    const std::function<StatusWith<bool>()>& localOutcome, Timestamp* commitTs) {
    std::string key = recordKey(lsid, txnNumber);
    std::shared_ptr<Coordination> c;
    std::optional<Record> found;
    if (std::optional<Status> outcome = claimAndLoad(key, &c, &found, commitTs)) return *outcome;
    if (found) {
        // A coordination exists: its outcome (the participants are in its record).
        return coordinateClaimed(key, c, std::move(found), lsid, txnNumber, {}, commitTs);
    }
    // Nothing was coordinated, and nothing will be while this claim is held.
    *commitTs = Timestamp();
    StatusWith<bool> committed = localOutcome();
    if (!committed.isOK() || committed.getValue()) {
        Status outcome = committed.isOK() ? Status::OK() : committed.getStatus();
        release(key, c, outcome, Timestamp());
        return outcome;
    }
    Record record;
    record.key = key;
    record.lsid = lsid;
    record.txnNumber = txnNumber;
    record.decision = Decision::kAbort;
    record.reason = "its commit was retried through another router before it was coordinated";
    record.done = true;
    Status outcome = write(record);
    if (outcome.isOK()) outcome = record.outcome();
    release(key, c, outcome, Timestamp());
    return outcome;
}

int TransactionCoordinator::localIndex(const std::vector<Participant>& participants) const {
    if (!_local) return -1;
    std::string self = _local->shardName();
    if (self.empty()) return -1;
    for (size_t i = 0; i < participants.size(); ++i) {
        if (participants[i].shard == self) return static_cast<int>(i);
    }
    return -1;
}

Status TransactionCoordinator::decide(Record& record) {
    const int self = localIndex(record.participants);
    const size_t n = record.participants.size();
    std::vector<Status> prepared(n, Status::OK());
    std::vector<Timestamp> prepareTs(n);
    std::vector<bool> readOnly(n, false);

    // The other participants are sent prepareTransaction naming this shard as their coordinator
    // (whom they ask should the decision not come); while their round trips are under way this
    // shard writes the record (step 2) and prepares its own part in process, after the record in
    // the same log.
    BsonBuilder extra;
    if (self >= 0) {
        extra.startObject("coordinator");
        extra.append("shard", record.participants[self].shard);
        extra.append("host", record.participants[self].host);
        extra.end();
    }
    BsonObj prepare = record.command("prepareTransaction", extra.obj());
    std::vector<net::RemoteCommand> prepares;
    std::vector<size_t> remote;
    for (size_t i = 0; i < n; ++i) {
        if (static_cast<int>(i) == self) continue;
        prepares.push_back({record.participants[i].host, "admin", prepare});
        remote.push_back(i);
    }
    Status recorded = Status::OK();
    auto recordAndPrepareLocal = [&] {
        // To the WAL only: the decision's sync (finish), later in the same log, makes it durable
        // before any other participant can be told to commit. Lost in a power loss (or not yet
        // written when this process dies), it was heard by nobody: the participants prepared
        // meanwhile ask this shard after kAskCoordinatorAfter and are told abort.
        recorded = write(record, false);
        if (!recorded.isOK() || self < 0) return;
        const Participant& me = record.participants[self];
        auto p = _local->prepare(record.lsid, record.txnNumber, me.shard, me.host);
        if (!p.isOK()) {
            prepared[self] = p.getStatus();
            return;
        }
        prepareTs[self] = p.getValue().prepareTs;
        readOnly[self] = p.getValue().readOnly;
    };
    std::vector<StatusWith<BsonObj>> replies;
    if (prepares.empty()) {
        recordAndPrepareLocal();
    } else {
        replies = _client.runCommands(prepares, recordAndPrepareLocal);
    }
    TRY_STATUS(recorded);
    for (size_t r = 0; r < replies.size(); ++r) {
        size_t i = remote[r];
        if (record.staged && !replies[r].isOK()) {
            // A staged record's router may have heard this participant prepared and told its
            // client committed: only the participant's own answer may abort it. Unreachable, the
            // record stays undecided and is resolved again later (the recovery thread, a retry).
            const Status& st = replies[r].getStatus();
            return Status(st.code(), "cannot resolve the staged commit of transaction " +
                                         std::to_string(record.txnNumber) + " yet: shard " +
                                         record.participants[i].shard +
                                         " did not answer: " + st.reason());
        }
        prepared[i] =
            replies[r].isOK() ? net::replyStatus(replies[r].getValue()) : replies[r].getStatus();
        if (!prepared[i].isOK()) continue;
        prepareTs[i] = Timestamp{replies[r].getValue()["prepareTimestamp"].timestampValue()};
        readOnly[i] = replies[r].getValue()["readOnly"].trueValue();
    }

    Timestamp commitTs;
    std::vector<std::string> writers;
    std::string refusal;
    int refusalCode = static_cast<int>(ErrorCodes::NoSuchTransaction);
    for (size_t i = 0; i < n; ++i) {
        if (!prepared[i].isOK()) {
            if (refusal.empty()) {
                refusal = "prepareTransaction failed on shard " + record.participants[i].shard +
                          ": " + prepared[i].toString();
            }
            if (prepared[i].is(ErrorCodes::OperationNotSupportedInTransaction)) {
                refusalCode = static_cast<int>(ErrorCodes::OperationNotSupportedInTransaction);
            }
            continue;
        }
        commitTs = std::max(commitTs, prepareTs[i]);
        if (!readOnly[i]) writers.push_back(record.participants[i].shard);
    }
    if (refusal.empty()) {
        record.decision = Decision::kCommit;
        record.commitTs = commitTs;
        record.writers = std::move(writers);
        HybridLogicalClock::global().advanceTo(commitTs);
    } else {
        record.decision = Decision::kAbort;
        record.reason = refusal;
        record.abortCode = refusalCode;
    }
    hangAt(hangBeforeWritingDecision);
    // The decision, written to the WAL: it survives a crash of this process; the delivery syncs
    // it before any participant hears it, so a lost decision (power loss) was heard by nobody
    // and the recovery aborts the transaction — the fate of any w:1 write not yet journaled.
    TRY_STATUS(write(record, false));
    hangAt(hangAfterWritingDecision);
    return Status::OK();
}

bool TransactionCoordinator::finishLocal(const Record& record) {
    const int self = localIndex(record.participants);
    if (self < 0) return true;
    bool commit = record.decision == Decision::kCommit;
    if (commit && !record.wrote(record.participants[self].shard)) return true;
    Status st = commit ? _local->commit(record.lsid, record.txnNumber, record.commitTs)
                       : _local->abort(record.lsid, record.txnNumber);
    if (finishedBy(st)) return true;
    log::warning("TXN", 22224, "Could not apply a decision to this shard's own part yet",
                 "{\"txnNumber\":" + std::to_string(record.txnNumber) + ",\"decision\":\"" +
                     (commit ? "commit" : "abort") + "\",\"error\":\"" +
                     log::jsonEscape(st.toString()) + "\"}");
    return false;
}

bool TransactionCoordinator::deliver(const Record& record) {
    if (transactionCoordinatorStepThrows.shouldFail()) {
        throw std::runtime_error("failpoint transactionCoordinatorStepThrows");
    }
    bool commit = record.decision == Decision::kCommit;
    BsonObj cmd;
    if (commit) {
        BsonBuilder extra;
        extra.appendTimestamp("commitTimestamp", record.commitTs.value);
        cmd = record.command("commitTransaction", extra.obj());
    } else {
        cmd = record.command("abortTransaction");
    }
    const int self = localIndex(record.participants);
    std::vector<net::RemoteCommand> cmds;
    for (size_t i = 0; i < record.participants.size(); ++i) {
        const Participant& p = record.participants[i];
        if (static_cast<int>(i) == self) continue;       // in process, below
        if (commit && !record.wrote(p.shard)) continue;  // read-only: done at its prepare
        cmds.push_back({p.host, "admin", cmd});
    }
    bool all = record.localFinished || finishLocal(record);
    auto replies = _client.runCommands(cmds);
    for (size_t i = 0; i < replies.size(); ++i) {
        Status st =
            replies[i].isOK() ? net::replyStatus(replies[i].getValue()) : replies[i].getStatus();
        if (finishedBy(st)) continue;
        all = false;
        log::warning("TXN", 22221, "A participant has not acknowledged the decision yet",
                     "{\"host\":\"" + log::jsonEscape(cmds[i].host) + "\",\"decision\":\"" +
                         (commit ? "commit" : "abort") + "\",\"error\":\"" +
                         log::jsonEscape(st.toString()) + "\"}");
    }
    return all;
}

}  // namespace tessera::txn
