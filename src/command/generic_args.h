#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "command/command.h"

namespace tessera::command {

// The generic arguments: fields any command may carry besides its own (drivers add them to every
// command). Each has one decision, checked once per request by the service entry point
// (checkGenericArguments) on every role, so that no field is silently dropped anywhere
// (src/command/README.md "Generic arguments" lists them; tests/integration/node/
// cluster_argument_audit.test.mjs asserts each):
enum class GenericArgKind {
    kApplied,    // carried out with its meaning (a router forwards it where the shards act on it)
    kShardOnly,  // set by a router for its shards: accepted on a shard, refused everywhere else
    kRefused,    // not implemented: refused with a clear error before anything runs
};

struct GenericArgument {
    std::string_view name;
    GenericArgKind kind;
    std::string_view meaning;  // for errors and the README
};

// Every generic argument Tessera knows (MongoDB's generic_argument.idl, plus the fields only
// MongoDB's own processes send, which Tessera refuses).
const std::vector<GenericArgument>& genericArguments();
// nullptr when `field` is not a generic argument.
const GenericArgument* findGenericArgument(std::string_view field);
bool isGenericArgument(std::string_view field);

// The read concern a request asks for (checkGenericArguments validated it).
enum class ReadConcernLevel { kLocal, kAvailable, kMajority, kLinearizable, kSnapshot };

// The reads that take readConcern {level: "snapshot"} outside a transaction: find, aggregate,
// distinct (MongoDB's list).
bool takesSnapshotReadConcern(std::string_view commandName);

// The reads that take a read concern other than "local": find, aggregate, count, distinct.
bool takesReadConcern(std::string_view commandName);

// The one cluster time a router reads every shard of a read that reaches several at (a
// kShardOnly Timestamp on find, aggregate, count and distinct outside a transaction, at
// readConcern local, available or majority): each shard reads at exactly that time and waits
// for the transactions prepared at or before it, so no reader sees part of a cross-shard
// transaction (src/router/README.md "One time for every shard").
inline constexpr std::string_view kReadAtClusterTimeField = "$readAtClusterTime";

// A router's write without shard key asks, with its read phase's find, whether this shard
// executed the client's retryable statement already: a kShardOnly object {lsid: {id: UUID},
// txnNumber: long, stmtId: int} on `find` only (InvalidOptions otherwise); the find's reply then
// carries kRetryableWriteExecutedField (bool). A shard that did gets the write, which it answers
// from its record, so a retry is never applied on a second shard
// (src/router/cluster_write_without_shard_key.h).
inline constexpr std::string_view kRetryableWriteStatusField = "$retryableWriteStatus";
inline constexpr std::string_view kRetryableWriteExecutedField = "retryableWriteExecuted";

// Whether `body`'s writeConcern asks for the journal: j: true, fsync: true or w: "majority"
// (the majority of a one-member set is this process, journaled: MongoDB's
// writeConcernMajorityJournalDefault).
bool writeConcernWaitsForJournal(bson::BsonView body);

// What a process's role lets the generic arguments of its requests ask for (RolePolicy).
struct GenericArgsRules {
    ClusterRole role = ClusterRole::kStandalone;
    // Replies carry the cluster time, and $clusterTime / afterClusterTime are taken.
    bool gossipsClusterTime = false;
    // readConcern {level: "snapshot"} outside a transaction (the process has a cluster time).
    bool snapshotReads = false;
    // A member of a replica set (a --replSet node, a shard, the config server, a router in
    // front of shards) runs a write whose `w` asks for more members than it has and reports
    // writeConcernError UnsatisfiableWriteConcern, as MongoDB's primary does; a standalone
    // refuses it before it runs.
    bool replicaSetMember = false;
};

// Checks the generic arguments of `request` for `command` under `rules`, before anything runs:
//  - kShardOnly fields anywhere but on a shard, and kRefused fields: InvalidOptions (72), or
//    the feature's own error;
//  - apiVersion must be "1" (APIVersionError 322); apiStrict / apiDeprecationErrors need it
//    (4886600); apiStrict: true refuses commands outside API version 1 (APIStrictError 323);
//  - readConcern (not for a transaction's statement, whose read concern is the transaction's):
//    level local, available, majority or linearizable (majority and linearizable only on the
//    reads of takesReadConcern); with `snapshotReads` also snapshot, with an optional
//    atClusterTime, on the reads of takesSnapshotReadConcern (elsewhere InvalidOptions; on
//    getMore and killCursors it is what the cursor does already: level local);
//    afterClusterTime only where it gossips cluster time; afterOpTime is refused;
//  - writeConcern: w a number, or "majority" (every process is a one-member set: majority is
//    this process, journaled), j, fsync, wtimeout; w > 1 runs and reports
//    unsatisfiableWriteConcernError() on a replica set member, and is UnsatisfiableWriteConcern
//    (100) on a standalone; a tag UnknownReplWriteConcern (79), an unknown field 40415;
//  - $readPreference (or the legacy $queryOptions.$readPreference), on a router: every shard is
//    one member, its primary, so "secondary" (and "nearest" with tags no primary has) cannot be
//    satisfied: FailedToSatisfyReadPreference (133). A standalone, a shard or the config server
//    ignores it as mongod does.
// On success `*readConcern` is the level asked for (local when none).
Status checkGenericArguments(const CommandRequest& request, const Command& command,
                             const GenericArgsRules& rules, bool transactionStatement,
                             ReadConcernLevel* readConcern);

// The writeConcernError a one-member replica set reports after running a command whose
// writeConcern asks for more members than one ({code: 100, codeName, errmsg}, as MongoDB's
// "Not enough data-bearing nodes"), or nullopt when the write concern can be met.
std::optional<bson::BsonObj> unsatisfiableWriteConcernError(bson::BsonView body);

}  // namespace tessera::command
