// The router's state (Router) and the dispatch primitives every routed command shares:
// attachVersion, sendToShards, noteStaleError, runRouted. See README.md.

#include "router/router.h"

#include <algorithm>
#include <thread>

#include "base/guarded.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/wall_clock.h"
#include "bson/bson_builder.h"
#include "cluster/chunk_delta.h"
#include "command/server_info.h"
#include "placement/stale_info.h"
#include "router/placement_announcements.h"
#include "router/router_commands.h"
#include "router/router_cursor_manager.h"
#include "router/router_util.h"
#include "router/transaction_router.h"

namespace tessera::router {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

namespace {

// MongoDB's kMaxNumStaleVersionRetries.
constexpr int kMaxStaleRetries = 10;
constexpr auto kPingInterval = std::chrono::seconds(10);

bool isUnversionedDb(std::string_view db) {
    return db == "admin" || db == "config" || db == "local";
}

// Notes one error document (a reply or a writeErrors[i]); true when it was a stale error.
bool noteOne(Router& router, BsonView err) {
    int code = static_cast<int>(err["code"].numberLong());
    if (code == static_cast<int>(ErrorCodes::StaleConfig)) {
        auto info = placement::StaleConfigInfo::parse(err);
        if (info.isOK()) {
            const placement::StaleConfigInfo& i = info.getValue();
            if (i.wanted) {
                // A shard ahead of us sends what changed since our version: no config refresh.
                auto changed = cluster::parseChangedChunks(err, i.wanted->generation());
                if (changed && router.catalog().applyChangedChunks(i.ns, i.shardId, *i.wanted,
                                                                   std::move(*changed))) {
                    return true;
                }
            }
            router.catalog().onStaleShardVersion(i.ns, i.wanted);
        } else if (err["ns"].type() == bson::BsonType::String) {
            router.catalog().invalidateCollection(err["ns"].stringValue());
        }
        return true;
    }
    if (code == static_cast<int>(ErrorCodes::StaleDbVersion)) {
        auto info = placement::StaleDbVersionInfo::parse(err);
        if (info.isOK()) {
            router.catalog().onStaleDatabaseVersion(info.getValue().db, info.getValue().wanted);
        } else if (err["db"].type() == bson::BsonType::String) {
            router.catalog().invalidateDatabase(err["db"].stringValue());
        }
        return true;
    }
    return false;
}

}  // namespace

// ---- Router ------------------------------------------------------------------------------------

Router::Router(std::string configHost, std::string selfHost)
    : _client(),
      // A router may route on an older placement (shards correct it), so it reads the catalog
      // from a config secondary when the config service has no primary.
      _shards(_client, std::move(configHost), cluster::ConfigReads::kPrimaryPreferred),
      _catalog(_client, _shards),
      _cursors(std::make_unique<RouterCursorManager>()),
      _transactions(std::make_unique<TransactionRouter>(*this)),
      _announcements(std::make_unique<PlacementAnnouncements>(_catalog)),
      _selfHost(std::move(selfHost)) {}

Router::~Router() { stopBackgroundTasks(); }

Router& Router::get(command::OperationContext& opCtx) {
    Router* router = opCtx.service ? opCtx.service->roleStateAs<Router>() : nullptr;
    invariant(router);
    return *router;
}

void Router::appendServerStatus(BsonBuilder& b) const {
    cluster::CatalogCache::Stats s = _catalog.stats();
    // mongos's `sharding` section. There is no replicated config optime: lastSeenConfigServerOpTime
    // carries the wall-clock time (seconds) of the newest placement this router read from the
    // config server, with term -1.
    b.startObject("sharding")
        .append("configsvrConnectionString", configHost())
        .startObject("lastSeenConfigServerOpTime")
        .appendTimestamp("ts", (static_cast<uint64_t>(s.lastRefreshMillis / 1000) << 32) | 1)
        .appendInt64("t", -1)
        .end()
        .appendInt64("maxChunkSizeInBytes", int64_t{128} << 20)
        .end();
    b.startObject("shardingStatistics")
        .startObject("catalogCache")
        .appendInt64("numDatabaseEntries", s.numDatabaseEntries)
        .appendInt64("numCollectionEntries", s.numCollectionEntries)
        .appendInt64("countFullRefreshesStarted", s.fullCollectionRefreshes)
        .appendInt64("countIncrementalRefreshesStarted", s.incrementalCollectionRefreshes)
        .appendInt64("countDatabaseRefreshesStarted", s.databaseRefreshes)
        .appendInt64("countStaleChunkDeltasApplied", s.changedChunksApplied)
        .appendInt64("countAnnouncedRefreshes", s.announcedRefreshes)
        .end()
        .end();
}

void Router::startBackgroundTasks() {
    MutexLock lock(_bgMutex);
    if (_pinger.joinable()) return;
    _bgStopping = false;
    _pinger = std::thread([this] { pingLoop(); });
}

void Router::stopBackgroundTasks() {
    {
        MutexLock lock(_bgMutex);
        _bgStopping = true;
    }
    _bgCv.notify_all();
    if (_pinger.joinable()) _pinger.join();
    _announcements->stop();
}

Status Router::pingOnce() {
    int64_t now = wallClockMillis();
    int64_t up = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() -
                                                                  _startTime)
                     .count();
    BsonBuilder cmd;
    cmd.append("update", "mongos");
    cmd.startArray("updates").startObject("0");
    cmd.startObject("q").append("_id", _selfHost).end();
    cmd.startObject("u");
    cmd.startObject("$set")
        .startArray("advisoryHostFQDNs")
        .end()
        .append("mongoVersion", command::kCompatibleMongoVersion)
        .appendDate("ping", now)
        .appendInt64("up", up)
        .appendBool("waiting", true)
        .end();
    cmd.startObject("$setOnInsert").appendDate("created", now).end();
    cmd.end();  // u
    cmd.appendBool("upsert", true);
    cmd.end().end();  // updates.0, updates
    ASSIGN_OR_RETURN(BsonObj reply, _client.runCommand(configHost(), "config", cmd.obj()));
    TRY_STATUS(net::replyStatus(reply));
    if (reply["writeErrors"].isArray()) {
        return Status(ErrorCodes::UnknownError, "config.mongos ping: " + reply.toJson());
    }
    return Status::OK();
}

void Router::pingLoop() {
    bool warned = false;
    UniqueLock lock(_bgMutex);
    while (!_bgStopping) {
        lock.unlock();
        Status s = Status::OK();
        runLoggingExceptions("SHARDING", 22876, "config.mongos ping", [&] { s = pingOnce(); });
        if (!s.isOK() && !warned) {
            log::warning("SHARDING", 22875, "Error updating config.mongos",
                         "{\"error\":\"" + log::jsonEscape(s.toString()) + "\"}");
        }
        warned = !s.isOK();
        lock.lock();
        _bgCv.wait_for(lock, kPingInterval, [this]() REQUIRES(_bgMutex) { return _bgStopping; });
    }
}

// ---- dispatch primitives ----------------------------------------------------------------------

BsonObj attachVersion(BsonView cmd, const CollectionRoutingInfo& info, const ShardId& shard) {
    BsonBuilder b;
    for (auto e : cmd) {
        std::string_view name = e.fieldName();
        if (name == "shardVersion" || name == "databaseVersion") continue;
        b.appendElement(e);
    }
    appendPlacementVersion(b, info, shard);
    return b.obj();
}

void appendPlacementVersion(BsonBuilder& b, const CollectionRoutingInfo& info,
                            const ShardId& shard) {
    if (isUnversionedDb(info.db.name)) return;
    if (info.isSharded()) {
        info.table->shardVersion(shard).appendToBson(b, "shardVersion");
    } else {
        placement::ChunkVersion::unsharded().appendToBson(b, "shardVersion");
        info.db.version.appendToBson(b, "databaseVersion");
    }
}

std::vector<ShardResponse> sendToShards(const command::OperationContext& opCtx, Router& router,
                                        std::string_view db,
                                        const std::vector<ShardRequest>& requests) {
    std::vector<ShardResponse> responses(requests.size());
    std::vector<net::RemoteCommand> cmds;
    std::vector<size_t> slots;  // response index of each cmds[i]
    for (size_t i = 0; i < requests.size(); ++i) {
        responses[i].shard = requests[i].shard;
        auto host = router.shards().hostOf(requests[i].shard);
        if (!host.isOK()) {
            responses[i].status = host.getStatus();
            continue;
        }
        responses[i].host = host.getValue();
        cmds.push_back({host.getValue(), std::string(db),
                        joinTransaction(opCtx, requests[i].shard, host.getValue(), requests[i].cmd,
                                        requests.size() == 1)});
        slots.push_back(i);
    }
    std::vector<StatusWith<BsonObj>> results;
    if (cmds.size() == 1) {
        results.push_back(router.client().runCommand(cmds[0].host, cmds[0].db, cmds[0].cmd));
    } else if (!cmds.empty()) {
        results = router.client().runCommands(cmds);
    }
    for (size_t i = 0; i < results.size(); ++i) {
        ShardResponse& out = responses[slots[i]];
        if (results[i].isOK()) {
            out.reply = std::move(results[i]).getValue();
            observeShardReply(out.reply);
        } else {
            out.status = results[i].getStatus();
        }
        noteTransactionReply(opCtx, out.shard, out.status, out.reply);
    }
    return responses;
}

bool noteStaleError(Router& router, BsonView reply) {
    bool stale = false;
    if (!reply["ok"].trueValue()) stale |= noteOne(router, reply);
    auto writeErrors = reply["writeErrors"];
    if (writeErrors.isArray()) {
        for (auto e : writeErrors.objValue()) {
            if (e.isObject()) stale |= noteOne(router, e.objValue());
        }
    }
    return stale;
}

namespace {

// The cursors the replies of a round about to be run again opened (a read's other shards, when
// one was stale or refused the time): killed now rather than left to the shards' idle reaper.
// Not in a transaction, whose cursors end with it.
void killCursorsOpenedBy(const command::OperationContext& opCtx, Router& router,
                         const std::vector<ShardResponse>& responses) {
    if (opCtx.routerStatement) return;
    std::vector<net::RemoteCommand> kills;
    for (const ShardResponse& r : responses) {
        if (!r.status.isOK() || !r.reply["ok"].trueValue()) continue;
        bson::BsonElement cursor = r.reply["cursor"];
        if (!cursor.isObject() || cursor.objValue()["id"].numberLong() == 0) continue;
        std::string_view ns = cursor.objValue()["ns"].stringValue();
        size_t dot = ns.find('.');
        if (dot == std::string_view::npos) continue;
        BsonBuilder kill;
        kill.append("killCursors", ns.substr(dot + 1));
        kill.startArray("cursors").appendInt64("0", cursor.objValue()["id"].numberLong()).end();
        kills.push_back({r.host, std::string(ns.substr(0, dot)), kill.obj()});
    }
    if (!kills.empty()) (void)router.client().runCommands(kills);
}

}  // namespace

StatusWith<std::vector<ShardResponse>> runRouted(
    command::OperationContext& opCtx, Router& router, std::string_view ns,
    const std::function<StatusWith<std::vector<ShardRequest>>(const CollectionRoutingInfo&)>&
        makeRequests,
    const RoutedOptions& options) {
    auto dot = ns.find('.');
    std::string_view db = ns.substr(0, dot);
    // "db" or "db.$cmd": a database-level command (no collection lookup).
    bool dbLevel = dot == std::string_view::npos || ns.substr(dot + 1) == "$cmd";
    for (int round = 0;; ++round) {
        TRY_STATUS(opCtx.checkForInterrupt());
        CollectionRoutingInfo info;
        if (dbLevel) {
            ASSIGN_OR_RETURN(info.db, router.catalog().getDatabase(db, options.createDbIfMissing));
        } else {
            ASSIGN_OR_RETURN(
                info, router.catalog().getCollectionRoutingInfo(ns, options.createDbIfMissing));
        }
        ASSIGN_OR_RETURN(auto requests, makeRequests(info));
        std::vector<ShardResponse> responses = sendToShards(opCtx, router, db, requests);
        bool stale = false;
        bool snapshotTooOld = false;
        for (const auto& r : responses) {
            if (r.status.isOK() && noteStaleError(router, r.reply)) stale = true;
            if (r.status.isOK() && !r.reply["ok"].trueValue() &&
                r.reply["code"].numberInt() == static_cast<int>(ErrorCodes::SnapshotUnavailable)) {
                snapshotTooOld = true;
            }
        }
        // A read time a shard cannot serve (it received a migrated range later): again at a later
        // one — a transaction's first statement restarted, or the router's next read time.
        if (snapshotTooOld && round + 1 < kMaxStaleRetries &&
            (restartTransactionAtLaterTime(opCtx) ||
             (options.readTimeChosenByRouter && options.readTimeChosenByRouter()))) {
            killCursorsOpenedBy(opCtx, router, responses);
            continue;
        }
        if (!stale || round + 1 >= kMaxStaleRetries) return responses;
        if (options.retryOnStale && !options.retryOnStale(responses)) return responses;
        killCursorsOpenedBy(opCtx, router, responses);
        // A shard that could not say which version it wants (vWanted absent: it is in a
        // critical section, or does not know its placement yet) needs time, not a refresh of
        // ours: from the third round on, back off (20, 40, ... 320 ms; ~2.5 s in all).
        if (round >= 2) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20 << std::min(round - 2, 4)));
        }
    }
}

void registerRouterCommands(command::CommandRegistry& registry) {
    // The families register into a registry of their own; `registry` gets a wrapper of each
    // that forwards commands on the `config` database to the config server (router_util.h).
    auto families = std::make_shared<command::CommandRegistry>();
    registerRouterGenericCommands(*families);
    registerRouterAdminCommands(*families);
    registerRouterDdlCommands(*families);
    registerClusterWriteCommands(*families);
    registerClusterReadCommands(*families);
    registerWithConfigPassthrough(registry, std::move(families));
}

}  // namespace tessera::router
