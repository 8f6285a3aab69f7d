// Draining and removing a shard (README.md "Draining"): startShardDraining marks it in
// config.shards; the balancer then moves every chunk off it (the policy's first goal) and the
// primary of every database on it (with its unsharded collections, movePrimary); once nothing is
// left, commitShardRemoval (or the legacy removeShard, called again) removes it from the catalog.
#include <algorithm>
#include <map>

#include "base/log.h"
#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "config/config_server_impl.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

namespace {

struct DrainState {
    int64_t chunks = 0;
    int64_t jumboChunks = 0;
    std::vector<std::string> dbs;  // databases whose primary it is
    bool draining = false;
    int failures = 0;
    bool failed = false;
    BsonObj lastError;
    bool done() const { return chunks == 0 && dbs.empty(); }
};

}  // namespace

Status ConfigServerImpl::setShardDraining(const std::string& shardId, bool draining) {
    MutexLock lk(_shardsMutex);
    ASSIGN_OR_RETURN(std::vector<ShardEntry> shards, allShards());
    auto it = std::find_if(shards.begin(), shards.end(),
                           [&](const ShardEntry& s) { return s.id == shardId; });
    if (it == shards.end()) {
        return Status(ErrorCodes::ShardNotFound, "Shard " + shardId + " does not exist");
    }
    if (draining) {
        int64_t others = std::count_if(shards.begin(), shards.end(), [&](const ShardEntry& s) {
            return s.id != shardId && !s.draining;
        });
        if (others == 0) {
            return Status(ErrorCodes::IllegalOperation,
                          "Operation not allowed because it would remove the last shard");
        }
    }
    BsonBuilder u;
    if (draining) {
        u.startObject("$set").appendBool("draining", true).end();
    } else {
        u.startObject("$unset")
            .appendString("draining", "")
            .appendString("drainingFailures", "")
            .appendString("drainingLastError", "")
            .end();
    }
    // Starting (again) or stopping clears a failed drain: the balancer acts on it again.
    if (draining) {
        u.startObject("$unset")
            .appendString("drainingFailures", "")
            .appendString("drainingLastError", "")
            .end();
    }
    TRY_STATUS(_local.update("shards", idQuery(shardId), u.obj(), false).getStatus());
    BsonBuilder details;
    details.appendString("shard", shardId);
    logChange(draining ? "removeShard.start" : "removeShard.stop", "", details.obj());
    log::info("SHARDING", 9140, draining ? "Shard draining started" : "Shard draining stopped",
              "{\"shard\":\"" + log::jsonEscape(shardId) + "\"}");
    return Status::OK();
}

namespace {

StatusWith<DrainState> drainState(LocalClient& local, const std::vector<ShardEntry>& shards,
                                  const std::string& shardId) {
    DrainState st;
    auto it = std::find_if(shards.begin(), shards.end(),
                           [&](const ShardEntry& s) { return s.id == shardId; });
    if (it == shards.end()) {
        return Status(ErrorCodes::ShardNotFound, "Shard " + shardId + " does not exist");
    }
    st.draining = it->draining;
    st.failures = it->drainingFailures;
    st.failed = it->drainFailed();
    ASSIGN_OR_RETURN(auto entry, local.findOne("shards", idQuery(shardId)));
    if (entry) st.lastError = (*entry)["drainingLastError"].objValue().copy();
    BsonBuilder q;
    q.appendString("shard", shardId);
    ASSIGN_OR_RETURN(std::vector<BsonObj> chunks, local.find("chunks", q.obj()));
    st.chunks = static_cast<int64_t>(chunks.size());
    for (const BsonObj& c : chunks) st.jumboChunks += c["jumbo"].trueValue() ? 1 : 0;
    BsonBuilder dq;
    dq.appendString("primary", shardId);
    ASSIGN_OR_RETURN(std::vector<BsonObj> dbs, local.find("databases", dq.obj()));
    for (const BsonObj& d : dbs) st.dbs.emplace_back(d["_id"].stringValue());
    return st;
}

void appendRemaining(BsonBuilder& b, const DrainState& st) {
    b.startObject("remaining")
        .appendInt64("chunks", st.chunks)
        .appendInt64("dbs", static_cast<int64_t>(st.dbs.size()))
        .appendInt64("jumboChunks", st.jumboChunks)
        .end();
    bson::BsonArrayBuilder dbs;
    for (const std::string& d : st.dbs) dbs.append(d);
    b.appendArray("dbsToMove", dbs.arr());
    if (!st.dbs.empty()) {
        b.appendString("note",
                       "the balancer moves the primary of these databases (and their "
                       "unsharded collections) off the draining shard");
    }
}

}  // namespace

StatusWith<BsonObj> ConfigServerImpl::shardDrainingStatus(const std::string& shardId) {
    ASSIGN_OR_RETURN(std::vector<ShardEntry> shards, allShards());
    ASSIGN_OR_RETURN(DrainState st, drainState(_local, shards, shardId));
    if (!st.draining) {
        return Status(ErrorCodes::IllegalOperation,
                      "shard " + shardId + " is not draining: run startShardDraining first");
    }
    BsonBuilder b;
    if (st.failed && !st.done()) {
        b.appendString("msg", "draining failed: run startShardDraining again to retry it");
        b.appendString("state", "failed");
    } else {
        b.appendString("msg", st.done() ? "draining completed successfully" : "draining ongoing");
        b.appendString("state", st.done() ? "drainingComplete" : "ongoing");
    }
    b.appendString("shard", shardId);
    appendRemaining(b, st);
    if (st.failures > 0) {
        b.appendInt32("failedAttempts", st.failures)
            .appendInt32("maxAttempts", kMaxCoordinatorAttempts);
    }
    if (!st.lastError.isEmpty()) b.appendObject("lastError", st.lastError);
    return b.obj();
}

Status ConfigServerImpl::commitShardRemoval(const std::string& shardId) {
    MutexLock lk(_shardsMutex);
    ASSIGN_OR_RETURN(std::vector<ShardEntry> shards, allShards());
    ASSIGN_OR_RETURN(DrainState st, drainState(_local, shards, shardId));
    if (!st.draining || !st.done()) {
        return Status(ErrorCodes::ConflictingOperationInProgress,
                      "shard " + shardId +
                          (st.draining ? " is still draining (" : " is not draining (") +
                          std::to_string(st.chunks) + " chunks, " + std::to_string(st.dbs.size()) +
                          " databases left): wait until shardDrainingStatus says it is complete");
    }
    TRY_STATUS(_local.remove("shards", idQuery(shardId), false).getStatus());
    BsonBuilder details;
    details.appendString("shard", shardId);
    logChange("removeShard", "", details.obj());
    log::info("SHARDING", 9141, "Shard removed",
              "{\"shard\":\"" + log::jsonEscape(shardId) + "\"}");
    return Status::OK();
}

StatusWith<BsonObj> ConfigServerImpl::removeShard(const std::string& shardId) {
    ASSIGN_OR_RETURN(std::vector<ShardEntry> shards, allShards());
    ASSIGN_OR_RETURN(DrainState st, drainState(_local, shards, shardId));
    BsonBuilder b;
    if (!st.draining) {
        TRY_STATUS(setShardDraining(shardId, true));
        b.appendString("msg", "draining started successfully");
        b.appendString("state", "started");
        b.appendString("shard", shardId);
        bson::BsonArrayBuilder dbs;
        for (const std::string& d : st.dbs) dbs.append(d);
        b.appendArray("dbsToMove", dbs.arr());
        return b.obj();
    }
    if (!st.done()) {
        b.appendString("msg", "draining ongoing");
        b.appendString("state", "ongoing");
        b.appendString("shard", shardId);
        appendRemaining(b, st);
        return b.obj();
    }
    TRY_STATUS(commitShardRemoval(shardId));
    b.appendString("msg", "removeshard completed successfully");
    b.appendString("state", "completed");
    b.appendString("shard", shardId);
    return b.obj();
}

void ConfigServerImpl::drainDatabases(const std::vector<ShardEntry>& shards) {
    std::map<std::string, int> primaries;  // active shard → databases
    for (const ShardEntry& s : shards) {
        if (!s.draining) primaries[s.id] = 0;
    }
    if (primaries.empty()) return;
    auto dbs = _local.find("databases", BsonView());
    if (!dbs.isOK()) return;
    for (const BsonObj& d : dbs.getValue()) {
        auto it = primaries.find(std::string(d["primary"].stringValue()));
        if (it != primaries.end()) ++it->second;
    }
    for (const BsonObj& d : dbs.getValue()) {
        std::string primary(d["primary"].stringValue());
        bool onDraining = std::any_of(shards.begin(), shards.end(), [&](const ShardEntry& s) {
            return s.id == primary && s.draining && !s.drainFailed();
        });
        if (!onDraining) continue;
        std::string to = primaries.begin()->first;
        for (const auto& [id, n] : primaries) {
            if (n < primaries[to]) to = id;
        }
        std::string db(d["_id"].stringValue());
        log::info("SHARDING", 9142, "Balancer moves a database off a draining shard",
                  "{\"db\":\"" + log::jsonEscape(db) + "\",\"from\":\"" + log::jsonEscape(primary) +
                      "\",\"to\":\"" + log::jsonEscape(to) + "\"}");
        Status moved;
        try {
            coordinatorStep("drain");
            moved = movePrimary(db, to);
        } catch (...) {
            moved = statusFromCurrentException("draining " + primary);
        }
        if (!moved.isOK()) {
            log::warning("SHARDING", 9143, "Moving a database off a draining shard failed",
                         "{\"db\":\"" + log::jsonEscape(db) + "\",\"error\":\"" +
                             log::jsonEscape(moved.toString()) + "\"}");
        }
        noteDrainStep(primary, moved);
        return;  // one per round
    }
}

void ConfigServerImpl::noteDrainStep(const std::string& shardId, const Status& outcome) {
    if (!outcome.isOK() && isTransientCoordinatorError(outcome)) return;
    BsonBuilder u;
    if (outcome.isOK()) {
        u.startObject("$unset")
            .appendString("drainingFailures", "")
            .appendString("drainingLastError", "")
            .end();
    } else {
        u.startObject("$inc").appendInt32("drainingFailures", 1).end();
        u.startObject("$set")
            .startObject("drainingLastError")
            .appendInt32("code", outcome.code())
            .appendString("codeName", outcome.codeName())
            .appendString("errmsg", outcome.reason())
            .end()
            .end();
    }
    BsonBuilder q;
    q.appendString("_id", shardId).appendBool("draining", true);
    auto updated = _local.update("shards", q.obj(), u.obj(), false);
    if (!updated.isOK()) return;
    if (!outcome.isOK()) {
        auto entry = _local.findOne("shards", idQuery(shardId));
        if (entry.isOK() && entry.getValue() &&
            (*entry.getValue())["drainingFailures"].numberLong() == kMaxCoordinatorAttempts) {
            BsonBuilder details;
            details.appendString("shard", shardId)
                .appendInt32("attempts", kMaxCoordinatorAttempts)
                .appendString("errmsg", outcome.toString());
            logChange("removeShard.failed", "", details.obj());
            log::error("SHARDING", 9144, "Draining a shard failed; the balancer stops acting on it",
                       "{\"shard\":\"" + log::jsonEscape(shardId) + "\",\"error\":\"" +
                           log::jsonEscape(outcome.toString()) + "\"}");
        }
    }
}

bool ShardEntry::drainFailed() const { return drainingFailures >= kMaxCoordinatorAttempts; }

}  // namespace tessera::config
