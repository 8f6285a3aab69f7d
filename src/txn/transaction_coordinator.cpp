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

// The recovery thread looks at the coordinations not settled every kRecoveryInterval, and at
// every record (what a crash left; done records to forget) at startup and every
// kFullScanInterval.
constexpr auto kRecoveryInterval = std::chrono::seconds(1);
constexpr auto kFullScanInterval = std::chrono::minutes(1);
// Threads delivering decisions (step 4): a delivery is one round trip and a participant's sync,
// so a few keep up with many concurrent commits.
constexpr int kDeliveryThreads = 4;
constexpr int64_t kForgetDoneAfterMs = 30LL * 60 * 1000;  // logicalSessionTimeoutMinutes
// Delivery rounds of a delivery thread before the recovery thread takes over.
constexpr int kDeliveryRounds = 3;

enum class Decision { kNone, kCommit, kAbort };

// The record of (lsid, txnNumber): the lsid's 16 bytes as they are (as the statement records of
// txn/session_records.h), the number zero-padded so that no key is a prefix of another.
std::string recordKey(const std::string& lsid, int64_t txnNumber) {
    std::string n = std::to_string(txnNumber);
    return std::string(TransactionCoordinator::kRecordPrefix) + lsid + "/" +
           std::string(20 - std::min<size_t>(20, n.size()), '0') + n;
}

// A participant's answer to a decision that means its part is finished: done, or no longer known
// (a prepared part is durable until its commit or abort is), or the session has gone on to a
// newer transaction (a prepared one holds the next back until it is decided).
bool finishedBy(const Status& st) {
    return st.isOK() || st.is(ErrorCodes::NoSuchTransaction) ||
           st.is(ErrorCodes::TransactionTooOld);
}

void hangAt(FailPoint& fp) { pauseWhileActive(fp, "TXN", 22220); }

}  // namespace

struct TransactionCoordinator::Record {
    std::string key;
    std::string lsid;
    int64_t txnNumber = 0;
    std::vector<Participant> participants;
    Decision decision = Decision::kNone;
    Timestamp commitTs;
    std::vector<std::string> writers;  // shards of participants that prepared with writes
    std::string reason;                // why it aborted
    // The code the client hears for an abort: NoSuchTransaction (TransientTransactionError:
    // run the transaction again), or a participant's refusal that running it again cannot
    // change (OperationNotSupportedInTransaction: it created a collection, storage/transaction.h).
    int abortCode = static_cast<int>(ErrorCodes::NoSuchTransaction);
    // Written by stage(): the router prepares the participants and sends the decision;
    // undecided, it is resolved by preparing every participant again (never aborted blindly:
    // the router may have acknowledged the commit once every part was prepared).
    bool staged = false;
    bool done = false;
    bool localFinished = false;  // in memory: this shard's own part is committed or aborted

    BsonObj toBson() const {
        BsonBuilder b;
        b.appendBinary("lsid", 4, lsid);
        b.appendInt64("txnNumber", txnNumber);
        b.startArray("participants");
        for (size_t i = 0; i < participants.size(); ++i) {
            b.startObject(std::to_string(i));
            b.append("shard", participants[i].shard);
            b.append("host", participants[i].host);
            b.end();
        }
        b.end();
        if (decision != Decision::kNone) {
            b.append("decision", decision == Decision::kCommit ? "commit" : "abort");
        }
        if (decision == Decision::kCommit) {
            b.appendTimestamp("commitTimestamp", commitTs.value);
            b.startArray("writers");
            for (size_t i = 0; i < writers.size(); ++i) b.append(std::to_string(i), writers[i]);
            b.end();
        }
        if (!reason.empty()) b.append("reason", reason);
        if (staged) b.appendBool("staged", true);
        if (abortCode != static_cast<int>(ErrorCodes::NoSuchTransaction)) {
            b.appendInt32("abortCode", abortCode);
        }
        b.appendBool("done", done);
        b.appendDate("updatedAt", wallClockMillis());
        return b.obj();
    }

    static std::optional<Record> parse(const std::string& key, BsonView doc) {
        Record r;
        r.key = key;
        if (doc["lsid"].type() != bson::BsonType::BinData || !doc["participants"].isArray()) {
            return std::nullopt;
        }
        r.lsid = std::string(doc["lsid"].binaryValue().data);
        r.txnNumber = doc["txnNumber"].numberLong();
        for (bson::BsonElement e : doc["participants"].objValue()) {
            if (!e.isObject()) return std::nullopt;
            r.participants.push_back({std::string(e.objValue()["shard"].stringValue()),
                                      std::string(e.objValue()["host"].stringValue())});
        }
        std::string_view decision =
            doc["decision"].type() == bson::BsonType::String ? doc["decision"].stringValue() : "";
        r.decision = decision == "commit"  ? Decision::kCommit
                     : decision == "abort" ? Decision::kAbort
                                           : Decision::kNone;
        if (r.decision == Decision::kCommit) {
            r.commitTs = Timestamp{doc["commitTimestamp"].timestampValue()};
            for (bson::BsonElement e : doc["writers"].objValue()) {
                r.writers.emplace_back(e.stringValue());
            }
        }
        if (doc["reason"].type() == bson::BsonType::String) {
            r.reason = std::string(doc["reason"].stringValue());
        }
        if (doc["abortCode"].isNumber()) r.abortCode = doc["abortCode"].numberInt();
        r.done = doc["done"].trueValue();
        r.staged = doc["staged"].trueValue();
        return r;
    }

    // Whether participant `shard` prepared with writes (the others finished at their prepare).
    bool wrote(const std::string& shard) const {
        return std::find(writers.begin(), writers.end(), shard) != writers.end();
    }

    // What the caller of a coordination hears once it is decided.
    Status outcome() const {
        if (decision == Decision::kCommit) return Status::OK();
        return Status(static_cast<ErrorCodes>(abortCode),
                      "Transaction " + std::to_string(txnNumber) + " was aborted: " + reason);
    }

    // {name: 1, lsid, txnNumber, autocommit: false, extra...}: a statement of the transaction.
    BsonObj command(std::string_view name, BsonView extra = BsonView()) const {
        BsonBuilder b;
        b.appendInt32(name, 1);
        b.startObject("lsid");
        b.appendBinary("id", 4, lsid);
        b.end();
        b.appendInt64("txnNumber", txnNumber);
        b.appendBool("autocommit", false);
        if (!extra.isEmpty()) {
            for (bson::BsonElement e : extra) b.appendElement(e);
        }
        return b.obj();
    }
};

struct TransactionCoordinator::Coordination {
    Mutex mutex;
    CondVar cv;
    bool finished GUARDED_BY(mutex) = false;
    bool givenUp GUARDED_BY(mutex) = false;  // unclaim(): no outcome, the waiters claim again
    Status outcome GUARDED_BY(mutex) = Status::OK();
    Timestamp commitTs GUARDED_BY(mutex);
};

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

void TransactionCoordinator::recoveryLoop() {
    auto nextScan = std::chrono::steady_clock::now();  // at startup: what a crash left
    UniqueLock lk(_mutex);
    while (!_stopping) {
        bool scan = std::chrono::steady_clock::now() >= nextScan;
        std::vector<std::string> pending(_pending.begin(), _pending.end());
        // Notices whose stage never came here, or whose record a resolution decided: stale.
        std::erase_if(_votes, [now = std::chrono::steady_clock::now()](const auto& v) {
            return now - v.second.since > 10 * kResolveStagedAfter;
        });
        lk.unlock();
        try {
            writeDone();
            if (scan) {
                recoverAll();
                nextScan = std::chrono::steady_clock::now() + kFullScanInterval;
            } else {
                for (const std::string& key : pending) recoverRecord(key);
            }
        } catch (...) {
            // recoverRecord guards each record; this is a scan or a write that threw: the next
            // round tries again, the thread goes on.
            log::warning("TXN", 22230, "A transaction coordinator recovery round failed",
                         "{\"error\":\"" +
                             log::jsonEscape(statusFromCurrentException("recovery").toString()) +
                             "\"}");
        }
        lk.lock();
        _wake.wait_for(lk, kRecoveryInterval, [&]() REQUIRES(_mutex) { return _stopping; });
    }
}

void TransactionCoordinator::markDone(const Record& record) {
    MutexLock lk(_mutex);
    _failures.erase(record.key);
    _doneToWrite.emplace_back(record.key, std::string(record.toBson().bytes()));
    _pending.erase(record.key);
}

void TransactionCoordinator::writeDone() {
    std::vector<std::pair<std::string, std::string>> done;
    {
        MutexLock lk(_mutex);
        done.swap(_doneToWrite);
    }
    // Only answers retries and lets the records be forgotten: if it is lost, a full scan
    // delivers the decisions again, which the participants acknowledge again.
    if (!done.empty()) (void)_engine.writeSideRecords(done, false);
}

bool TransactionCoordinator::doneUnwritten(const std::string& key) {
    MutexLock lk(_mutex);
    for (const auto& [k, v] : _doneToWrite) {
        if (k == key) return true;
    }
    return false;
}

std::vector<BsonObj> TransactionCoordinator::currentOps() {
    std::vector<std::string> keys;
    {
        MutexLock lk(_mutex);
        keys.assign(_pending.begin(), _pending.end());
    }
    std::vector<BsonObj> ops;
    for (const std::string& key : keys) {
        StatusWith<std::optional<Record>> loaded = load(key);
        if (!loaded.isOK() || !loaded.getValue() || loaded.getValue()->done) continue;
        const Record& r = *loaded.getValue();
        BsonBuilder b;
        b.append("type", "op").appendInt32("opid", _opIds.idFor(key));
        b.append("desc", "transaction coordinator").appendBool("active", true);
        b.startObject("twoPhaseCommitCoordinator");
        b.startObject("lsid").appendBinary("id", 4, r.lsid).end();
        b.appendInt64("txnNumber", r.txnNumber);
        b.appendInt32("numParticipants", static_cast<int32_t>(r.participants.size()));
        b.startArray("participants");
        for (size_t i = 0; i < r.participants.size(); ++i) {
            b.append(std::to_string(i), r.participants[i].shard);
        }
        b.end();
        b.append("state",
                 r.decision == Decision::kNone ? "waitingForVotes" : "waitingForDecisionAcks");
        b.appendBool("staged", r.staged);
        {
            MutexLock lk(_mutex);
            if (auto f = _failures.find(key); f != _failures.end()) {
                b.appendInt32("attempts", f->second.attempts);
                b.startObject("lastError")
                    .appendInt32("code", f->second.lastError.code())
                    .append("codeName", f->second.lastError.codeName())
                    .append("errmsg", f->second.lastError.reason())
                    .end();
            }
        }
        if (r.decision != Decision::kNone) {
            b.startObject("decision");
            b.append("decision", r.decision == Decision::kCommit ? "commit" : "abort");
            if (r.decision == Decision::kCommit)
                b.appendTimestamp("commitTimestamp", r.commitTs.value);
            b.end();
        }
        b.end();
        ops.push_back(b.obj());
    }
    _opIds.retainOnly(keys);
    return ops;
}

void TransactionCoordinator::settle(const std::string& key) {
    MutexLock lk(_mutex);
    _failures.erase(key);
    _pending.erase(key);
}

void TransactionCoordinator::recoverAll() {
    int64_t now = wallClockMillis();
    for (const auto& [key, value] : _engine.sideRecords(kRecordPrefix)) {
        BsonView doc(value.data());
        if (!doc["done"].trueValue()) {
            recoverRecord(key);
        } else if (now - doc["updatedAt"].dateValue() > kForgetDoneAfterMs) {
            (void)_engine.writeSideRecords({{key, std::string()}});
        }
    }
}

void TransactionCoordinator::recoverRecord(const std::string& key) {
    if (!mayRetryNow(key)) return;
    bool owner = false;
    std::shared_ptr<Coordination> c = claim(key, &owner);
    if (!owner) return;  // coordinate() is at it
    try {
        recoverClaimed(key, c);
    } catch (...) {
        Status failed = statusFromCurrentException("recovering a transaction coordination");
        noteStepFailed(key, failed);
        release(key, c, failed, Timestamp());
    }
}

void TransactionCoordinator::noteStepFailed(const std::string& key, const Status& failure) {
    MutexLock lk(_mutex);
    StepFailures& f = _failures[key];
    ++f.attempts;
    f.lastError = failure;
    // 250 ms doubling, at most 10 s: a commit decision is delivered as soon as it can be.
    const int doublings = std::min(f.attempts - 1, 6);
    f.notBefore = std::chrono::steady_clock::now() +
                  std::min(std::chrono::milliseconds(10000),
                           std::chrono::milliseconds(250) * (int64_t{1} << doublings));
    log::warning("TXN", 22229, "A transaction coordinator step failed; it is retried",
                 "{\"attempts\":" + std::to_string(f.attempts) + ",\"error\":\"" +
                     log::jsonEscape(failure.toString()) + "\"}");
}

bool TransactionCoordinator::mayRetryNow(const std::string& key) {
    MutexLock lk(_mutex);
    auto it = _failures.find(key);
    return it == _failures.end() || std::chrono::steady_clock::now() >= it->second.notBefore;
}

void TransactionCoordinator::recoverClaimed(const std::string& key,
                                            const std::shared_ptr<Coordination>& c) {
    // Read under the claim: a coordination that held it may have decided since.
    StatusWith<std::optional<Record>> loaded = load(key);
    if (!loaded.isOK()) {
        release(key, c, loaded.getStatus(), Timestamp());
        return;
    }
    if (!loaded.getValue()) {
        settle(key);
        release(key, c, Status(ErrorCodes::NoSuchTransaction, "forgotten"), Timestamp());
        return;
    }
    Record& record = *loaded.getValue();
    if (!record.done && doneUnwritten(key)) {
        // Delivered while the scan read it: its `done` is queued for the next writeDone().
        release(key, c, record.outcome(), record.commitTs);
        return;
    }
    if (record.staged && record.decision == Decision::kNone) {
        bool young = false;
        {
            MutexLock lk(_mutex);
            auto it = _stagedAt.find(key);
            young = it != _stagedAt.end() &&
                    std::chrono::steady_clock::now() - it->second < kResolveStagedAfter;
        }
        if (young) {  // its router's decision is on its way
            unclaim(key, c);
            return;
        }
        log::info("TXN", 22228, "Resolving a staged commit whose router sent no decision",
                  "{\"txnNumber\":" + std::to_string(record.txnNumber) + "}");
    }
    Status decided = record.decision != Decision::kNone ? Status::OK()
                     : record.staged                    ? decide(record)
                                                        : abortUndecided(record);
    if (!decided.isOK()) {
        release(key, c, decided, Timestamp());
        return;
    }
    {
        MutexLock lk(_mutex);
        _stagedAt.erase(key);
        _votes.erase(key);
    }
    // Read back after a restart, the decision may be in the WAL's unsynced tail: durable
    // before anyone hears it.
    if (!record.done && _engine.syncWal().isOK() && deliver(record)) {
        record.done = true;
        (void)write(record);
        log::info("TXN", 22222, "Delivered the decision of an interrupted coordination",
                  "{\"txnNumber\":" + std::to_string(record.txnNumber) + ",\"decision\":\"" +
                      (record.decision == Decision::kCommit ? "commit" : "abort") + "\"}");
    }
    if (record.done) settle(key);
    release(key, c, record.outcome(), record.commitTs);
}

}  // namespace tessera::txn
