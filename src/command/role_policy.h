#pragma once

#include "command/command.h"
#include "command/generic_args.h"

namespace tessera::command {

// What a process's role decides for every request it serves — the per-role hooks of MongoDB's
// ServiceEntryPointCommon, as data: computed once from the ServiceContext, read by the entry
// point's phases (entry_point_phases.h) instead of flags tested in one long function.
struct RolePolicy {
    // How replies carry the cluster time, and whether a client's is taken.
    enum class ClusterTime {
        kNone,           // a standalone without --replSet
        kReplicaSet,     // a --replSet node: operationTime and $clusterTime from its engine
        kOperationTime,  // a shard or the config server: operationTime, for its routers
        kRouter,         // a router: its clock, which observed every shard reply
    };

    ClusterRole role = ClusterRole::kStandalone;
    // lsid / txnNumber are taken (retryable writes): every role but a standalone without
    // --replSet, which refuses them as mongod does. It is also what makes a process a replica
    // set member for write concerns (GenericArgsRules::replicaSetMember).
    bool acceptsSessions = false;
    // Multi-document transactions run here (ServiceContext::transactions), or through this
    // router (ServiceContext::routerTransactions); neither: they are refused.
    bool participantTransactions = false;
    bool routerTransactions = false;
    ClusterTime clusterTime = ClusterTime::kNone;
    // A read with afterClusterTime waits here until that time is readable (a node with data).
    bool waitsForClusterTime = false;
    // readConcern {level: "snapshot"} outside a transaction (the process has a cluster time).
    bool snapshotReads = false;
    // Writes are journaled here (j, fsync, w: "majority" sync the WAL; a router's shards do it).
    bool journals = false;
    // The role's CommandHooks run around each command (a shard's versions, retryable writes).
    bool hooks = false;

    bool transactions() const { return participantTransactions || routerTransactions; }
    GenericArgsRules genericArgs() const;

    static RolePolicy of(const ServiceContext& service);
};

}  // namespace tessera::command
