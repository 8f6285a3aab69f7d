#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/hlc.h"
#include "base/mutex.h"
#include "base/op_id.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "txn/local_participant.h"

namespace tessera::storage {
class Engine;
}
namespace tessera::net {
class RemoteClient;
}

namespace tessera::txn {

// The two-phase commit of a router's transaction with several participants, run by one of them
// (MongoDB's TransactionCoordinator; docs/protocols/two-phase-commit.md). Its state is a durable
// side record per transaction, so that the decision outlives a crash of any process:
//
//   1. prepareTransaction {coordinator} to every other participant, in parallel (each makes its
//      part durable before it answers);
//   2. meanwhile {participants} written to the WAL, then this shard's own prepare in process,
//      after it in the same log (both made durable by step 4's sync; a coordinator that dies
//      before writing the record prepared nothing itself, and the participants it asked learn
//      abort from participant recovery);
//   3. {decision: "commit", commitTimestamp = the greatest prepare timestamp, writers} — or
//      {decision: "abort"} if one could not prepare — written to the WAL: this is the decision;
//      this shard's own part commits (or aborts) in process, after it in the same log, and the
//      caller of coordinate() hears the decision now (synced first when its write concern asks
//      for the journal, by the command's entry point, as for any write);
//   4. then, in the background: the WAL synced (no other participant hears an undurable
//      decision), commitTransaction {commitTimestamp} to every other participant that
//      wrote (abortTransaction to every participant), until each acknowledged; a participant
//      that no longer knows the transaction has finished it (its commit is acknowledged before it
//      is journaled, within SessionTransactions::kSyncCommitsWithin by its participant-recovery
//      thread; restarted before that, it is prepared again and asks). Until then its prepared
//      documents hold readers and writers (they wait for the decision, so nobody sees the
//      caller's commit missing);
//   5. {done: true}, written in batches each second: kept to answer a retried commit, forgotten
//      after 30 minutes.
//
// Routers stage their commits instead (stage(), decideStaged(); docs/protocols/two-phase-commit.md
// "Staged commit"): the router prepares the other participants itself and answers its client once
// every part is prepared with writes; a staged record without decision is resolved by the
// coordination above run on it (every participant prepared again), never aborted blindly.
//
// Recovery (a background thread: every record at startup and each minute, the coordinations not
// settled each second): a record without decision is aborted (no participant can have been told
// to commit; a staged one is resolved), a decided one is delivered again (when the background
// delivery gave up on an unreachable participant, or the process restarted). Participant recovery
// (another thread): a transaction prepared on this shard whose decision has not come for
// kAskCoordinatorAfter asks its coordinator (recoverDecision) and applies the answer — the case of
// a coordinator that lost its unsynced record of step 2 in a power loss, or died before writing it,
// while another participant's prepare was durable: it answers abort, having decided nothing. The
// same thread journals the commits this shard acknowledged unsynced (each kSyncCommitsWithin).
class TransactionCoordinator {
  public:
    struct Participant {
        std::string shard;
        std::string host;
    };

    TransactionCoordinator(storage::Engine& engine, net::RemoteClient& client);
    ~TransactionCoordinator();

    // This shard's own transactions (prepared, committed and aborted in process when it is a
    // participant of what it coordinates; participant recovery). Set before start(); without
    // it every participant is reached through the network.
    void setLocalParticipant(LocalParticipant* local) { _local = local; }
    // How long a transaction prepared here waits for its decision before asking its coordinator.
    static constexpr std::chrono::seconds kAskCoordinatorAfter{10};

    // Commits transaction (lsid, txnNumber) over `participants` (the coordinator among them).
    // OK: committed at *commitTs. NoSuchTransaction: aborted (the reason says which participant
    // could not prepare). A retried call returns the same decision.
    Status coordinate(const std::string& lsid, int64_t txnNumber,
                      const std::vector<Participant>& participants, Timestamp* commitTs);

    // Staged commit (docs/protocols/two-phase-commit.md "Staged commit"), the router's fast path:
    // the router sends prepareTransaction to the other participants itself and stage() here, all at
    // once. stage() writes the record {participants, staged} and prepares this shard's own part
    // after it in the same log, and answers this part's prepare. A record found already (a
    // retried commit) is resolved instead and its outcome returned (`decided`).
    struct Staged {
        bool decided = false;  // the outcome is final: `outcome` and commitTs
        Status outcome = Status::OK();
        Timestamp prepareTs;    // !decided: this shard's part is prepared at it
        bool readOnly = false;  // !decided: this shard's part wrote nothing
        Timestamp commitTs;     // decided commit
    };
    Staged stage(const std::string& lsid, int64_t txnNumber,
                 const std::vector<Participant>& participants);
    // The router's decision for a staged record: commit at `commitTs` (`writers`: the
    // participants that prepared with writes), or abort (`abortCode`, `reason`) when one could
    // not prepare. A record decided already (by a resolution) keeps its decision, which is
    // returned. No record: NoSuchTransaction.
    struct RouterDecision {
        bool commit = false;
        Timestamp commitTs;
        std::vector<std::string> writers;
        int abortCode = static_cast<int>(ErrorCodes::NoSuchTransaction);
        std::string reason;
    };
    Status decideStaged(const std::string& lsid, int64_t txnNumber, const RouterDecision& decision,
                        Timestamp* commitTs);
    // Staged commits without journal (docs/protocols/two-phase-commit.md "Staged commit", step 2):
    // the router asks the other participants to answer their prepare once written and to sync it
    // after, and sends no decision when every part wrote; this coordinator decides commit itself
    // once each other participant told it its part is durable.
    //
    // On a participant (prepareTransaction {notifyCoordinatorWhenDurable}, whose part wrote):
    // syncs the WAL, then tells `coordinator` with participantDurable — on a delivery thread
    // (hangBeforeNotifyingCoordinator). A failed sync or an unreachable coordinator tells
    // nothing: the coordinator's recovery resolves the staged record (prepares this part again,
    // synced).
    void notifyWhenDurable(const std::string& lsid, int64_t txnNumber,
                           const Participant& coordinator, Timestamp prepareTs);
    // On the coordinator: participant `shard`'s part of (lsid, txnNumber), prepared at
    // `prepareTs`, is durable. With this shard's own part staged with writes and every other
    // participant's notice in, the commit is decided (decideStaged, at the greatest prepare
    // timestamp); a notice that precedes the stage is kept until it comes (at most
    // 10 × kResolveStagedAfter: by then the recovery thread has resolved the record).
    void participantDurable(const std::string& lsid, int64_t txnNumber, const std::string& shard,
                            Timestamp prepareTs);

    // A staged record still undecided this long after stage() is resolved by the recovery
    // thread (its router died or its decision was lost): every participant is prepared again
    // (prepare is idempotent; an unprepared part is prepared now, one that is gone says so) and
    // the transaction commits if all are — exactly what a router that heard every prepare
    // acknowledges; it aborts only on a participant's own refusal (one that does not answer
    // leaves the record undecided: its router may have heard it prepared).
    static constexpr std::chrono::seconds kResolveStagedAfter{3};

    // The decision of transaction (lsid, txnNumber) for a router that does not know it (a commit
    // retried with a recoveryToken naming this shard): the record's if there is one (waiting for
    // a coordination under way). Without a record nothing was coordinated, so the transaction
    // had one participant, this shard, or never reached its commit: `localOutcome` says whether
    // this shard's part committed, aborting it otherwise (SessionTransactions::
    // committedElseAbort); an abort is recorded, so that a coordination asked for later by the
    // transaction's own router aborts too. OK with *commitTs null when the one participant
    // committed (its timestamp is not kept). A commit is synced before it is returned: a
    // participant that asked acts on it (participant recovery).
    Status recoverDecision(const std::string& lsid, int64_t txnNumber,
                           const std::function<StatusWith<bool>()>& localOutcome,
                           Timestamp* commitTs);

    // Starts the recovery thread (records a crash left unfinished) and the delivery threads
    // (step 4); stop() ends them, after the deliveries under way. Without start(), coordinate()
    // delivers before it returns.
    void start();
    void stop();

    // currentOp: each coordination not settled (undecided, or its decision not yet delivered to
    // every participant: one that is unreachable keeps it here), as MongoDB reports a
    // coordinator: {type: "op", desc: "transaction coordinator", twoPhaseCommitCoordinator:
    // {lsid, txnNumber, numParticipants, participants, state, staged, decision}}, `state`
    // "waitingForVotes" before the decision, "waitingForDecisionAcks" after it.
    std::vector<bson::BsonObj> currentOps();
    static constexpr std::string_view kRecordPrefix = "txn.coordinator/";

  private:
    struct Coordination;
    struct Record;
    std::shared_ptr<Coordination> claim(const std::string& key, bool* owner);
    // Gives the claim of a staged, undecided record up without an outcome: its waiters claim it
    // again (and resolve it, or find it decided).
    void unclaim(const std::string& key, const std::shared_ptr<Coordination>& c);
    // Claims `key` (waiting out the coordinations that hold it) and reads its record under the
    // claim: nullopt with `*c` held and `*record` what is stored (nullopt: nothing); else the
    // outcome to return — a waited-out coordination's, or the read's error (claim given up).
    std::optional<Status> claimAndLoad(const std::string& key, std::shared_ptr<Coordination>* c,
                                       std::optional<Record>* record, Timestamp* commitTs);
    // Tells the waiters of `c` its outcome (publish) and gives the claim up (release, which
    // publishes too).
    static void publish(Coordination& c, Status outcome, Timestamp commitTs);
    void release(const std::string& key, const std::shared_ptr<Coordination>& c, Status outcome,
                 Timestamp commitTs);
    // The outcome `c` reached; nullopt when it was given up without one (unclaim).
    std::optional<Status> awaitOutcome(Coordination& c, Timestamp* commitTs);
    // A decided record whose claim `c` is held: this shard's own part follows the decision,
    // the waiters hear it, a delivery thread makes it durable and tells the others.
    Status answerDecided(const std::string& key, const std::shared_ptr<Coordination>& c,
                         Record record, Timestamp* commitTs);
    // recoverDecision() before its answer is synced.
    Status recoverDecisionUnsynced(const std::string& lsid, int64_t txnNumber,
                                   const std::function<StatusWith<bool>()>& localOutcome,
                                   Timestamp* commitTs);
    // coordinate() once `c` is claimed for `key` and its record read under the claim
    // (`loaded`): from that record if there is one, else from step 1.
    Status coordinateClaimed(const std::string& key, const std::shared_ptr<Coordination>& c,
                             std::optional<Record> loaded, const std::string& lsid,
                             int64_t txnNumber, const std::vector<Participant>& participants,
                             Timestamp* commitTs);
    // The record under `key`, if any (InternalError if it cannot be read).
    StatusWith<std::optional<Record>> load(const std::string& key);
    // A record found without decision (its coordinator restarted before deciding: nobody was
    // told to commit) is decided abort, durably.
    Status abortUndecided(Record& record);
    // Steps 2-3 for a new record.
    Status decide(Record& record);
    // Step 4: true when every participant acknowledged.
    bool deliver(const Record& record);
    // `job` on a delivery thread once they are started, else here before returning.
    void runOnDeliveryThread(std::function<void()> job);
    // Steps 4-5 for a decided record whose claim `c` is held, then gives the claim up: on a
    // delivery thread once started, else here.
    void finishInBackground(Record record, std::shared_ptr<Coordination> c);
    // finish(), recoverRecord(): a step that throws (or the failpoint
    // transactionCoordinatorStepThrows, on deliver) gives the claim up with its error, is
    // counted for currentOp (attempts, lastError) and is tried again by the recovery thread
    // after a back-off — never the end of the thread or of the process. A decided commit is
    // never given up (every participant must hear it); an undecided record is aborted by
    // recovery anyway (src/txn/README.md "When a step fails").
    void finish(const Record& record, const std::shared_ptr<Coordination>& c);
    void finishUnguarded(const Record& record, const std::shared_ptr<Coordination>& c);
    void deliveryLoop();
    Status write(const Record& record, bool synced = true);
    void recoveryLoop();
    // Every record: recoverRecord() of those not done, done ones older than 30 minutes deleted.
    void recoverAll();
    // Finishes the record under `key` if no coordination holds it: an undecided one aborted (a
    // staged one resolved, once kResolveStagedAfter passed since this process staged it), a
    // decided one delivered; settled once done or gone.
    void recoverRecord(const std::string& key);
    void recoverClaimed(const std::string& key, const std::shared_ptr<Coordination>& c);
    // A step of `key` threw with `failure`: counted, and its next recovery waits its back-off.
    void noteStepFailed(const std::string& key, const Status& failure);
    // Whether `key`'s back-off is over (recovery may try it now).
    bool mayRetryNow(const std::string& key);
    // `key` needs no more recovery (its record is done, or there is none).
    void settle(const std::string& key);
    // Whether markDone() queued `key`'s record and writeDone() has not written it yet.
    bool doneUnwritten(const std::string& key);
    // Step 5 for a delivered record: settled now, its {done: true} queued for writeDone(), which
    // writes the queue in one batch (the recovery thread, each second).
    void markDone(const Record& record);
    void writeDone();
    // Participant recovery: asks the coordinators of the transactions prepared here whose
    // decision is late, and applies their answers.
    void participantRecoveryLoop();
    void askCoordinators();
    // Index of this shard in `participants`, or -1.
    int localIndex(const std::vector<Participant>& participants) const;
    // This shard's part of a decided record, in process; true once it is finished.
    bool finishLocal(const Record& record);

    storage::Engine& _engine;
    net::RemoteClient& _client;
    Mutex _mutex;
    CondVar _wake;  // stop, and the recovery threads' periodic rounds
    // One delivery queued: wakes one delivery thread, not every thread waiting on _wake (on two
    // cores, six threads woken per commit competed with the reply it was queued before).
    CondVar _deliveryQueued;
    std::map<std::string, std::shared_ptr<Coordination>> _active GUARDED_BY(_mutex);
    // Coordinations claimed since startup and not settled: what the recovery thread looks at
    // each second (instead of reading every record, done ones included).
    std::set<std::string> _pending GUARDED_BY(_mutex);
    KeyedOpIds _opIds;  // currentOp's ids of the pending coordinations
    // When this process staged each record not yet decided: the recovery thread resolves one
    // after kResolveStagedAfter (one staged before a restart is not here: resolved at once).
    std::map<std::string, std::chrono::steady_clock::time_point> _stagedAt GUARDED_BY(_mutex);
    // Records whose steps failed: how often, the last error, and when recovery may retry.
    struct StepFailures {
        int attempts = 0;
        Status lastError;
        std::chrono::steady_clock::time_point notBefore;
    };
    std::map<std::string, StepFailures> _failures GUARDED_BY(_mutex);
    // Per staged record (or notice that came first): what decides its commit without the
    // router (participantDurable).
    struct DurableVotes {
        bool staged = false;  // stage() prepared this shard's part, with writes
        std::string self;
        Timestamp ownPrepareTs;
        std::vector<std::string> others;           // the other participants
        std::map<std::string, Timestamp> durable;  // their notices: shard → prepare timestamp
        std::chrono::steady_clock::time_point since;
    };
    std::map<std::string, DurableVotes> _votes;
    // Under _mutex: the commit decision of `key` if every vote is in (its votes then forgotten).
    std::optional<RouterDecision> takeReadyDecisionLocked(const std::string& key);
    // Decides `key`'s commit when its votes are complete.
    void decideIfDurable(const std::string& lsid, int64_t txnNumber, const std::string& key);
    std::vector<std::pair<std::string, std::string>> _doneToWrite;  // markDone()
    bool _stopping GUARDED_BY(_mutex) = false;
    std::thread _recovery;
    std::thread _participantRecovery;
    LocalParticipant* _local = nullptr;
    std::vector<std::thread> _deliverers;
    std::deque<std::function<void()>> _deliveries;  // for the delivery threads
};

}  // namespace tessera::txn
