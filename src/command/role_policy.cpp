#include "command/role_policy.h"

namespace tessera::command {

RolePolicy RolePolicy::of(const ServiceContext& service) {
    RolePolicy p;
    p.role = service.role;
    const bool data = service.engine != nullptr;
    const bool replicaSet = !service.replSetName.empty() && data;
    p.acceptsSessions = service.role != ClusterRole::kStandalone || !service.replSetName.empty();
    p.participantTransactions = service.transactions != nullptr;
    p.routerTransactions = service.routerTransactions != nullptr;
    if (replicaSet) {
        p.clusterTime = ClusterTime::kReplicaSet;
    } else if (service.role == ClusterRole::kRouter) {
        p.clusterTime = ClusterTime::kRouter;
    } else if ((service.role == ClusterRole::kShard || service.role == ClusterRole::kConfig) &&
               data) {
        p.clusterTime = ClusterTime::kOperationTime;
    }
    // A shard (and the config server) tells its clients its time (operationTime): a driver's
    // causally consistent session sends it back as readConcern.afterClusterTime, which it waits
    // for; so does a one-member replica set.
    p.waitsForClusterTime =
        p.clusterTime == ClusterTime::kReplicaSet || p.clusterTime == ClusterTime::kOperationTime;
    // A --replSet node or a shard reads at its own time; a router picks one for its shards.
    p.snapshotReads = replicaSet || service.role == ClusterRole::kRouter ||
                      (service.role == ClusterRole::kShard && data);
    p.journals = data && service.role != ClusterRole::kRouter;
    p.hooks = service.hooks != nullptr;
    return p;
}

GenericArgsRules RolePolicy::genericArgs() const {
    GenericArgsRules rules;
    rules.role = role;
    rules.gossipsClusterTime = clusterTime != ClusterTime::kNone;
    rules.snapshotReads = snapshotReads;
    rules.replicaSetMember = acceptsSessions;
    return rules;
}

}  // namespace tessera::command
