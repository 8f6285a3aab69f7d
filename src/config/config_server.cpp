#include "config/config_server.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "base/log.h"
#include "base/mutex.h"
#include "base/wall_clock.h"
#include "bson/bson_builder.h"
#include "config/chunk_ops.h"
#include "config/config_server_impl.h"
#include "net/replica_set_monitor.h"
#include "repl/replica_set.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

TESSERA_FAIL_POINT_DEFINE(moveRangeHangAfterDonorStart);
TESSERA_FAIL_POINT_DEFINE(moveRangeHangInCriticalSection);
TESSERA_FAIL_POINT_DEFINE(moveRangeHangBeforeCommit);
TESSERA_FAIL_POINT_DEFINE(moveRangeFailBeforeCommit);
TESSERA_FAIL_POINT_DEFINE(moveRangeHangAfterCommit);

// ---- ConfigServer (public facade) ----

ConfigServer::ConfigServer(command::ServiceContext& service)
    : _impl(std::make_unique<ConfigServerImpl>(service)) {}

ConfigServer::~ConfigServer() { shutdown(); }

Status ConfigServer::startup() { return _impl->startup(); }

command::CommandHooks* ConfigServer::hooks() { return _impl->hooks(); }

void ConfigServer::shutdown() { _impl->shutdown(); }

StatusWith<ConfigServerImpl*> configServerImpl(command::OperationContext& opCtx) {
    ConfigServer* server = opCtx.service && opCtx.service->role == command::ClusterRole::kConfig
                               ? opCtx.service->roleStateAs<ConfigServer>()
                               : nullptr;
    if (!server) {
        return Status(ErrorCodes::IllegalOperation, "this command runs only on a config server");
    }
    return &server->impl();
}

// ---- ConfigServerImpl: lifecycle ----

ConfigServerImpl::ConfigServerImpl(command::ServiceContext& service)
    : _service(service),
      _local(service),
      _retryableWrites(service, [this](std::string_view db, const BsonObj& cmd) {
          return _local.runChecked(db, cmd).getStatus();
      }) {}

ConfigServerImpl::~ConfigServerImpl() { shutdown(); }

Status ConfigServerImpl::startup() {
    BsonBuilder q;
    q.appendInt32("_id", 1);
    BsonObj versionQuery = q.obj();
    ASSIGN_OR_RETURN(auto version, _local.findOne("version", versionQuery));
    if (version) {
        if ((*version)["clusterId"].type() == bson::BsonType::ObjectId) {
            _clusterId = (*version)["clusterId"].oidValue();
        }
    } else {
        _clusterId = bson::ObjectId::generate();
        BsonBuilder b;
        b.appendInt32("_id", 1).appendOid("clusterId", _clusterId);
        TRY_STATUS(_local.insert("version", b.obj()));
    }
    struct IndexSpec {
        const char* coll;
        const char* json;
        const char* name;
        bool unique;
    };
    const IndexSpec specs[] = {
        {"chunks", R"({"uuid": 1, "min": 1})", "uuid_1_min_1", true},
        {"chunks", R"({"uuid": 1, "shard": 1, "min": 1})", "uuid_1_shard_1_min_1", true},
        {"chunks", R"({"uuid": 1, "lastmod": 1})", "uuid_1_lastmod_1", false},
        {"shards", R"({"host": 1})", "host_1", true},
        {"tags", R"({"ns": 1, "min": 1})", "ns_1_min_1", true},
        {"changelog", R"({"time": 1})", "time_1", false},
    };
    for (const IndexSpec& s : specs) {
        TRY_STATUS(_local.createIndex(s.coll, bson::fromJson(s.json), s.name, s.unique));
    }
    _retryableWrites.startup();
    TRY_STATUS(repairInterruptedChunkOps());
    _recovery = std::thread([this] { recoverCoordinators(); });
    _balancer = std::thread([this] { runBalancer(); });
    return Status::OK();
}

void ConfigServerImpl::shutdown() {
    _shutdown.store(true);
    if (_recovery.joinable()) _recovery.join();
    if (_balancer.joinable()) _balancer.join();
    _routerNotifier.stop();
}

std::string ConfigServerImpl::serverName() const {
    if (!_service.host.empty()) return _service.host;
    return "127.0.0.1:" + std::to_string(_service.port);
}

std::string ConfigServerImpl::connectionString() const {
    const repl::ReplicaSet* set = _service.replicaSet;
    if (!set) return serverName();
    net::ConnectionString cs{set->options().name, {}};
    for (const repl::SetMember& m : set->state().members) cs.hosts.push_back(m.host);
    return cs.toString();
}

void ConfigServerImpl::pauseWhileSet(FailPoint& fp) {
    if (!fp.shouldFail()) return;
    log::info("SHARDING", 9100, "Hanging at failpoint", "{\"failpoint\":\"" + fp.name() + "\"}");
    while (fp.active() && !_shutdown.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// ---- helpers ----

StatusWith<std::vector<ShardEntry>> ConfigServerImpl::allShards() {
    ASSIGN_OR_RETURN(std::vector<BsonObj> docs,
                     _local.find("shards", BsonView(), bson::fromJson(R"({"_id": 1})")));
    std::vector<ShardEntry> shards;
    for (const BsonObj& d : docs) {
        if (d["_id"].type() != bson::BsonType::String || d["host"].type() != bson::BsonType::String)
            continue;
        shards.push_back({std::string(d["_id"].stringValue()), std::string(d["host"].stringValue()),
                          d["draining"].trueValue(),
                          static_cast<int>(d["drainingFailures"].numberLong())});
    }
    return shards;
}

StatusWith<std::vector<std::string>> ConfigServerImpl::allShardIds() {
    ASSIGN_OR_RETURN(std::vector<ShardEntry> shards, allShards());
    std::vector<std::string> ids;
    for (const ShardEntry& s : shards) ids.push_back(s.id);
    return ids;
}

StatusWith<std::string> ConfigServerImpl::shardHost(const std::string& shardId) {
    ASSIGN_OR_RETURN(auto doc, _local.findOne("shards", idQuery(shardId)));
    if (!doc || (*doc)["host"].type() != bson::BsonType::String) {
        return Status(ErrorCodes::ShardNotFound, "Shard " + shardId + " not found");
    }
    return std::string((*doc)["host"].stringValue());
}

StatusWith<BsonObj> ConfigServerImpl::runOnShard(const std::string& shardId, std::string_view db,
                                                 BsonView cmd, std::chrono::milliseconds timeout) {
    ASSIGN_OR_RETURN(std::string host, shardHost(shardId));
    auto reply = _remote.runCommand(host, db, cmd, timeout);
    if (!reply.isOK()) {
        return reply.getStatus().withContext("shard " + shardId + " (" + host + "): ");
    }
    Status s = net::replyStatus(reply.getValue());
    if (!s.isOK()) {
        return s.withContext("command " + std::string(cmd.firstElement().fieldName()) +
                             " on shard " + shardId + ": ");
    }
    return std::move(reply).getValue();
}

void ConfigServerImpl::flushRoutingTable(const std::vector<std::string>& shardIds,
                                         const std::string& ns) {
    _routerNotifier.collectionChanged(ns);
    BsonBuilder b;
    b.appendString("_flushRoutingTableCacheUpdates", ns);
    BsonObj cmd = b.obj();
    for (const std::string& s : shardIds) {
        auto r = runOnShard(s, "admin", cmd);
        if (!r.isOK()) {
            log::warning("SHARDING", 9101, "Failed to flush routing table on shard",
                         "{\"error\":\"" + log::jsonEscape(r.getStatus().toString()) + "\"}");
        }
    }
}

void ConfigServerImpl::flushDatabase(const std::vector<std::string>& shardIds,
                                     const std::string& db) {
    _routerNotifier.databaseChanged(db);
    BsonBuilder b;
    b.appendString("_flushDatabaseCacheUpdates", db);
    BsonObj cmd = b.obj();
    for (const std::string& s : shardIds) {
        auto r = runOnShard(s, "admin", cmd);
        if (!r.isOK()) {
            log::warning("SHARDING", 9102, "Failed to flush database cache on shard",
                         "{\"error\":\"" + log::jsonEscape(r.getStatus().toString()) + "\"}");
        }
    }
}

void ConfigServerImpl::logChange(std::string_view what, std::string_view ns, BsonView details) {
    Status s = _local.insert("changelog",
                             makeChangelogDoc(serverName(), what, ns, details, wallClockMillis()));
    if (!s.isOK()) {
        log::warning("SHARDING", 9103, "Failed to write config.changelog",
                     "{\"error\":\"" + log::jsonEscape(s.toString()) + "\"}");
    }
}

StatusWith<ShardedCollection> ConfigServerImpl::loadCollection(const std::string& ns) {
    ASSIGN_OR_RETURN(auto doc, _local.findOne("collections", idQuery(ns)));
    if (!doc || (*doc)["dropped"].trueValue()) {
        return Status(ErrorCodes::NamespaceNotSharded, ns + " is not sharded");
    }
    ASSIGN_OR_RETURN(CollectionRecord coll, parseCollectionRecord(*doc));
    ASSIGN_OR_RETURN(placement::ShardKeyPattern pattern,
                     placement::ShardKeyPattern::parse(coll.key));
    BsonBuilder q;
    appendUuid(q, "uuid", coll.uuid);
    ASSIGN_OR_RETURN(std::vector<BsonObj> docs, _local.find("chunks", q.obj()));
    std::vector<ChunkRecord> chunks;
    for (const BsonObj& d : docs) {
        ASSIGN_OR_RETURN(ChunkRecord c, parseChunkRecord(d));
        TRY_STATUS(pattern.validateKey(c.min));
        TRY_STATUS(pattern.validateKey(c.max));
        chunks.push_back(std::move(c));
    }
    sortChunks(pattern, chunks);
    return ShardedCollection{std::move(coll), std::move(pattern), std::move(chunks)};
}

Status ConfigServerImpl::writeChunk(const ChunkRecord& chunk, const placement::Uuid& uuid,
                                    bool insert) {
    BsonObj doc = makeChunkDoc(chunk, uuid);
    if (insert) return _local.insert("chunks", doc);
    BsonBuilder q;
    q.appendOid("_id", chunk.id);
    ASSIGN_OR_RETURN(int64_t n, _local.update("chunks", q.obj(), doc));
    if (n != 1) return Status(ErrorCodes::ConflictingOperationInProgress, "chunk vanished");
    return Status::OK();
}

// ---- addShard / createDatabase / balancer ----

namespace {

// What `hello` of the process (or the primary of the set) `host` names says about what it is:
// the host string config.shards keeps for it — a replica set as "name/member,member,…" with the
// members its primary lists, as mongos's addShard stores it. A process that is a replica set
// member given as one host, or a set given under another name, is refused.
// For a set "name/h1,h2,…": OK once one listed host answers as a member of that set. A host of
// another set, or of none, is named at once — asking the set for its primary would wait 15 s for
// one that no listed host can name.
Status checkListedMembers(net::RemoteClient& remote, const net::ConnectionString& given) {
    std::optional<std::string> stranger;
    Status unreachable = Status::OK();
    for (const std::string& h : given.hosts) {
        auto hello =
            remote.runCommand(h, "admin", net::primaryDiscoveryHello(), std::chrono::seconds(5));
        if (!hello.isOK()) {
            unreachable = hello.getStatus();
            continue;
        }
        bson::BsonElement setName = hello.getValue()["setName"];
        if (setName.type() == bson::BsonType::String && setName.stringValue() == given.setName) {
            return Status::OK();
        }
        if (!stranger) {
            stranger =
                h + (setName.type() == bson::BsonType::String
                         ? " is a member of replica set " + std::string(setName.stringValue())
                         : " is not a replica set member");
        }
    }
    if (stranger) {
        return Status(ErrorCodes::OperationFailed,
                      "host " + *stranger + ", not of replica set " + given.setName);
    }
    return Status(ErrorCodes::OperationFailed, "couldn't connect to new shard " + given.toString() +
                                                   ": " + unreachable.reason());
}

StatusWith<std::string> shardConnectionString(net::RemoteClient& remote, const std::string& host) {
    ASSIGN_OR_RETURN(net::ConnectionString given, net::ConnectionString::parse(host));
    if (given.isReplicaSet()) TRY_STATUS(checkListedMembers(remote, given));
    auto hello = remote.runCommand(host, "admin", net::primaryDiscoveryHello());
    if (!hello.isOK()) {
        return Status(ErrorCodes::OperationFailed,
                      "couldn't connect to new shard " + host + ": " + hello.getStatus().reason());
    }
    TRY_STATUS(net::replyStatus(hello.getValue()));
    bson::BsonView reply = hello.getValue();
    bson::BsonElement setName = reply["setName"];
    if (!given.isReplicaSet()) {
        if (setName.type() == bson::BsonType::String) {
            const std::string set(setName.stringValue());
            return Status(ErrorCodes::OperationFailed,
                          "host " + host + " is a member of replica set " + set +
                              ": add the shard as " + set + "/" + host + "[,other members]");
        }
        return host;
    }
    if (setName.type() != bson::BsonType::String || setName.stringValue() != given.setName) {
        return Status(
            ErrorCodes::OperationFailed,
            "the primary of " + host + " is not a member of replica set " + given.setName);
    }
    net::ConnectionString members{given.setName, {}};
    for (std::string_view field : {"hosts", "passives"}) {
        if (bson::BsonElement list = reply[field]; list.isArray()) {
            for (bson::BsonElement m : list.objValue()) {
                if (m.type() == bson::BsonType::String) members.hosts.emplace_back(m.stringValue());
            }
        }
    }
    if (members.hosts.empty()) members.hosts = given.hosts;
    return members.toString();
}

// Whether two config.shards hosts name the same shard: the same process, or the same set.
bool sameShardHost(const std::string& a, const std::string& b) {
    auto ca = net::ConnectionString::parse(a), cb = net::ConnectionString::parse(b);
    if (!ca.isOK() || !cb.isOK()) return a == b;
    if (ca.getValue().isReplicaSet() || cb.getValue().isReplicaSet()) {
        return ca.getValue().setName == cb.getValue().setName;
    }
    return a == b;
}

}  // namespace

StatusWith<std::string> ConfigServerImpl::addShard(const std::string& given,
                                                   std::optional<std::string> name) {
    MutexLock lock(_shardsMutex);
    ASSIGN_OR_RETURN(std::string host, shardConnectionString(_remote, given));
    ASSIGN_OR_RETURN(std::vector<ShardEntry> shards, allShards());
    std::vector<std::string> ids;
    for (const ShardEntry& s : shards) {
        ids.push_back(s.id);
        if (sameShardHost(s.host, host)) {
            if (name && *name != s.id) {
                return Status(ErrorCodes::IllegalOperation,
                              "'" + host + "' is already a member of the cluster as shard " + s.id);
            }
            return s.id;
        }
        if (name && *name == s.id) {
            return Status(ErrorCodes::IllegalOperation,
                          "A shard named " + *name + " already exists (host " + s.host + ")");
        }
    }
    std::string shardName = name ? *name : defaultShardName(ids);
    BsonBuilder cmd;
    cmd.startObject("_shardsvrSetShardIdentity")
        .appendString("shardName", shardName)
        .appendString("configsvrConnectionString", connectionString())
        .appendOid("clusterId", _clusterId)
        .end();
    auto reply = _remote.runCommand(host, "admin", cmd.obj());
    if (!reply.isOK()) return reply.getStatus();
    TRY_STATUS(net::replyStatus(reply.getValue()));
    TRY_STATUS(_local.insert("shards", makeShardDoc(shardName, host, now())));
    BsonBuilder details;
    details.appendString("name", shardName).appendString("host", host);
    logChange("addShard", "", details.obj());
    return shardName;
}

StatusWith<BsonObj> ConfigServerImpl::createDatabase(const std::string& db,
                                                     std::optional<std::string> primary) {
    // An existing database is answered without its lock: collection DDL holds it shared for
    // long, and databases are only removed under it exclusively (callers that need the
    // database to stay re-read it under their own lock).
    if (db != "admin" && db != "config" && db != "local") {
        ASSIGN_OR_RETURN(auto existing, _local.findOne("databases", idQuery(db)));
        if (existing) return *existing;
    }
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock,
                     _ddlLocks.lockDatabase(db, "createDatabase " + db));
    return createDatabaseLocked(db, std::move(primary));
}

StatusWith<BsonObj> ConfigServerImpl::createDatabaseLocked(const std::string& db,
                                                           std::optional<std::string> primary) {
    if (db == "admin" || db == "config" || db == "local") {
        return Status(ErrorCodes::InvalidOptions,
                      "cannot create database '" + db + "' on the shards: it is reserved");
    }
    if (db.empty() || db.find_first_of("/\\. \"$") != std::string::npos) {
        return Status(ErrorCodes::InvalidNamespace, "Invalid database name: '" + db + "'");
    }
    ASSIGN_OR_RETURN(auto existing, _local.findOne("databases", idQuery(db)));
    if (existing) return *existing;
    {
        // MongoDB refuses names that differ only in case from an existing database.
        std::string escaped;
        for (char c : db) {
            if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) {
                escaped += '\\';
            }
            escaped += c;
        }
        BsonBuilder q;
        q.appendRegex("_id", "^" + escaped + "$", "i");
        ASSIGN_OR_RETURN(auto differCase, _local.findOne("databases", q.obj()));
        if (differCase) {
            return Status(ErrorCodes::DatabaseDifferCase,
                          "database already exists with a different case: " +
                              std::string((*differCase)["_id"].stringValue()) + ", not " + db);
        }
    }
    ASSIGN_OR_RETURN(std::vector<ShardEntry> shards, allShards());
    if (shards.empty()) {
        return Status(ErrorCodes::ShardNotFound, "No shards found: add a shard first");
    }
    std::string chosen;
    if (primary) {
        bool known = std::any_of(shards.begin(), shards.end(),
                                 [&](const ShardEntry& s) { return s.id == *primary; });
        if (!known) return Status(ErrorCodes::ShardNotFound, "Shard " + *primary + " not found");
        chosen = *primary;
    } else {
        ASSIGN_OR_RETURN(std::vector<BsonObj> dbs, _local.find("databases", BsonView()));
        std::map<std::string, int> counts;  // a draining shard gets no new database
        for (const ShardEntry& s : shards) {
            if (!s.draining) counts[s.id] = 0;
        }
        for (const BsonObj& d : dbs) {
            if (d["primary"].type() == bson::BsonType::String) {
                auto it = counts.find(std::string(d["primary"].stringValue()));
                if (it != counts.end()) ++it->second;
            }
        }
        chosen = counts.empty() ? shards.front().id : counts.begin()->first;
        for (const auto& [id, n] : counts) {
            if (n < counts[chosen]) chosen = id;
        }
    }
    placement::DatabaseVersion version(generateUuid(), now(), 1);
    BsonObj doc = makeDatabaseDoc(db, chosen, version);
    TRY_STATUS(_local.insert("databases", doc));
    flushDatabase({chosen}, db);
    return doc;
}

Status ConfigServerImpl::setBalancerMode(bool enabled) {
    BsonBuilder u;
    u.startObject("$set")
        .appendString("mode", enabled ? "full" : "off")
        .appendBool("stopped", !enabled)
        .end();
    return _local.update("settings", idQuery("balancer"), u.obj(), /*upsert=*/true).getStatus();
}

StatusWith<BsonObj> ConfigServerImpl::balancerStatus() {
    ASSIGN_OR_RETURN(auto doc, _local.findOne("settings", idQuery("balancer")));
    std::string mode = "full";
    if (doc) {
        if ((*doc)["mode"].type() == bson::BsonType::String) {
            mode = std::string((*doc)["mode"].stringValue());
        } else if ((*doc)["stopped"].trueValue()) {
            mode = "off";
        }
    }
    BsonBuilder b;
    b.appendString("mode", mode)
        .appendBool("inBalancerRound", _inBalancerRound.load())
        .appendInt64("numBalancerRounds", _balancerRounds.load());
    return b.obj();
}

}  // namespace tessera::config
