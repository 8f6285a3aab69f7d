#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::config {

// Persisted state of the config server's long-running DDL coordinators, one document each in
// config.system.coordinators (docs/protocols/migration.md). The coordinator writes the
// document before each phase's side effects are made durable elsewhere, so that a restarted
// config server can decide from the phase (and the catalog) whether to abort or to finish.

// Phases of moveRange and movePrimary, in order. A coordinator only moves forward.
//  kStart:     document written; the donor may be starting (a migration: observing its range
//              and opening the clone's snapshot; movePrimary: entering its critical section).
//  kCloning:   the recipient is copying data (a migration: while the donor serves its range).
//  kCriticalSection: (migrations) the donor holds the range's writes; the recipient drains the
//              last changes; the commit follows.
//  kCommitted: the catalog (config.chunks / config.databases) names the recipient.
//  kCleaned:   refreshes done, critical section exited, donor copy deleted (doc then removed).
enum class CoordinatorPhase {
    kStart = 0,
    kCloning = 1,
    kCriticalSection = 2,
    kCommitted = 3,
    kCleaned = 4
};

std::string_view phaseName(CoordinatorPhase phase);
StatusWith<CoordinatorPhase> parsePhase(std::string_view name);

// {_id: "moveRange-<ns>-<min>", type: "moveRange", ns, min, max, from, to, phase,
// waitForDelete, migrationId}. migrationId names this attempt on the shards (a retry after an
// abort is another attempt).
struct MoveRangeState {
    std::string id;
    std::string migrationId;
    std::string ns;
    bson::BsonObj min;
    bson::BsonObj max;
    std::string from;
    std::string to;
    CoordinatorPhase phase = CoordinatorPhase::kStart;
    bool waitForDelete = false;

    bson::BsonObj toBson() const;
    static StatusWith<MoveRangeState> parse(bson::BsonView doc);
};
std::string moveRangeCoordinatorId(std::string_view ns, bson::BsonView min);

// {_id: "movePrimary-<db>", type: "movePrimary", db, from, to, phase}
struct MovePrimaryState {
    std::string id;
    std::string db;
    std::string from;
    std::string to;
    CoordinatorPhase phase = CoordinatorPhase::kStart;

    bson::BsonObj toBson() const;
    static StatusWith<MovePrimaryState> parse(bson::BsonView doc);
};
std::string movePrimaryCoordinatorId(std::string_view db);

// {_id: "<type>-<target>", type, target, shards: [...], created: [...], phase}: the coordinators
// of shardCollection (target: ns), dropCollection (ns) and dropDatabase (db). Each holds writes
// to `target` on `shards` with a critical section from before it reads anything to decide
// placement until its commit is visible (docs/protocols/ddl-coordinators.md "Placement DDL"): the
// entered sections are exited on every path that removes the document. `created`: shards on which
// shardCollection created the collection (an abort drops those copies again, when empty).
// Phases used: kStart (sections may be entered), kCommitted (catalog written), kCleaned.
struct PlacementDdlState {
    std::string id;
    std::string type;    // "shardCollection", "dropCollection", "dropDatabase"
    std::string target;  // ns, or db for dropDatabase
    std::vector<std::string> shards;
    std::vector<std::string> created;
    CoordinatorPhase phase = CoordinatorPhase::kStart;

    // A new coordinator (phase kStart) of `type` on `target` holding writes on `shards`.
    static PlacementDdlState start(std::string type, std::string target,
                                   std::vector<std::string> shards);
    bson::BsonObj toBson() const;
    static StatusWith<PlacementDdlState> parse(bson::BsonView doc);
};
std::string placementDdlCoordinatorId(std::string_view type, std::string_view target);

// What a resumed coordinator must do.
enum class RecoveryAction {
    kAbort,         // undo: recipient drops its copy, donor exits its critical section
    kFinishCommit,  // the catalog already names the recipient: redo refreshes + cleanup
    kForget,        // nothing left to do: remove the document
};

// Recovery decision. `catalogNamesRecipient`: the catalog already shows the commit (the chunk
// [min, max) is on `to`, or the database's primary is `to`). A crash between the catalog write
// and the phase update leaves phase < kCommitted with the commit done: the catalog wins, since
// the recipient's data is then the only owned copy and must not be deleted.
RecoveryAction recoveryAction(CoordinatorPhase phase, bool catalogNamesRecipient);

// ---- When a coordinator's step fails (docs/protocols/ddl-coordinators.md "When a coordinator
// fails")
//
// A step that fails because a shard or the network is away is retried for as long as it takes
// (transient: it is not the coordinator's fault, and giving up could leave a critical section
// held). Any other failure — an internal error, an exception thrown by a step, running out of
// memory — counts as an attempt; each attempt is counted in the coordinator's document before it
// runs (so one that crashes the process counts too), and after kMaxCoordinatorAttempts the
// coordinator is abandoned: its critical sections released and its placement left old or new,
// never both, its failure recorded — it never crash-loops the process.
inline constexpr int kMaxCoordinatorAttempts = 5;

bool isTransientCoordinatorError(const Status& status);

// The wait before attempt `attempt` (1-based) of a failed coordinator: 200 ms doubling, at most
// 10 s (a coordinator that keeps failing is abandoned about 12 s after its first failure).
std::chrono::milliseconds coordinatorBackoff(int attempt);

// The recovery bookkeeping of a coordinator document ({recovery: {attempts, lastError:
// {code, codeName, errmsg}, abandoning}}); saveState replaces the document, so an attempt
// counter restarts when a phase is reached.
struct CoordinatorRecovery {
    int attempts = 0;
    std::optional<Status> lastError;
    bool abandoning = false;
    static CoordinatorRecovery of(bson::BsonView doc);
};

}  // namespace tessera::config
