// The balancer's scheduler (README.md "Balancer"): every round it takes a snapshot of the
// placement and of each chunk's owned bytes (the shards' _shardsvrChunkStats), asks the pure
// policy (balancer_policy.h) what to do, and does it: splits at the median the owning shard
// finds (_shardsvrSplitPoint), migrations in parallel on disjoint shard pairs (the online
// protocol of ddl_move_range.cpp). Runs while config.settings {_id: "balancer"} has mode "full"
// (the default).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <set>
#include <thread>

#include "base/log.h"
#include "base/wall_clock.h"
#include "bson/bson_builder.h"
#include "config/balancer_policy.h"
#include "config/catalog_docs.h"
#include "config/chunk_ops.h"
#include "config/config_server_impl.h"
#include "config/shard_requests.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

namespace {

constexpr int64_t kDefaultChunkSizeMB = 128;
constexpr int64_t kDefaultRoundIntervalMillis = 5000;
constexpr int64_t kShortRoundIntervalMillis = 250;

void logFailure(int id, std::string_view msg, const std::string& ns, const Status& s) {
    log::warning("SHARDING", id, msg,
                 "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"error\":\"" +
                     log::jsonEscape(s.toString()) + "\"}");
}

}  // namespace

BalancerSettings ConfigServerImpl::balancerSettings() {
    BalancerSettings s;
    s.chunkSizeBytes = kDefaultChunkSizeMB << 20;
    s.roundIntervalMillis = kDefaultRoundIntervalMillis;
    if (auto doc = _local.findOne("settings", idQuery("balancer")); doc.isOK() && doc.getValue()) {
        const BsonObj& d = *doc.getValue();
        if (d["mode"].type() == bson::BsonType::String) {
            s.enabled = d["mode"].stringValue() == "full";
        } else if (d["stopped"].trueValue()) {
            s.enabled = false;
        }
        if (d["roundIntervalMillis"].isNumber() && d["roundIntervalMillis"].numberLong() >= 10) {
            s.roundIntervalMillis = d["roundIntervalMillis"].numberLong();
        }
        if (d["imbalanceTolerance"].isNumber() && d["imbalanceTolerance"].numberDouble() >= 1.0) {
            s.tolerance = d["imbalanceTolerance"].numberDouble();
        }
        if (d["activeWindow"].isObject()) {
            BsonView w = d["activeWindow"].objValue();
            if (w["start"].type() == bson::BsonType::String &&
                w["stop"].type() == bson::BsonType::String) {
                s.activeWindow = std::pair{std::string(w["start"].stringValue()),
                                           std::string(w["stop"].stringValue())};
            }
        }
    }
    if (auto doc = _local.findOne("settings", idQuery("automerge")); doc.isOK() && doc.getValue()) {
        bson::BsonElement e = (*doc.getValue())["enabled"];
        if (e.type() == bson::BsonType::Bool) s.autoMerge = e.boolValue();
        bson::BsonElement every = (*doc.getValue())["intervalSecs"];
        if (every.isNumber() && every.numberDouble() >= 0) {
            s.mergeIntervalMillis = static_cast<int64_t>(every.numberDouble() * 1000);
        }
    }
    if (auto doc = _local.findOne("settings", idQuery("chunksize")); doc.isOK() && doc.getValue()) {
        bson::BsonElement v = (*doc.getValue())["value"];
        if (v.isNumber() && v.numberLong() >= 1 && v.numberLong() <= 1024) {
            s.chunkSizeBytes = v.numberLong() << 20;
        }
    }
    return s;
}

bool BalancerSettings::runsNow() const {
    if (!enabled) return false;
    if (!activeWindow) return true;
    std::time_t t = std::time(nullptr);
    std::tm local{};
    localtime_r(&t, &local);
    auto in = balancer::inActiveWindow(activeWindow->first, activeWindow->second,
                                       local.tm_hour * 60 + local.tm_min);
    return in.value_or(true);  // a malformed window is ignored (MongoDB does the same)
}

namespace {

// The chunk size of one collection: configureCollectionBalancing's maxChunkSizeBytes, else the
// cluster's.
int64_t collectionChunkSize(BsonView collectionDoc, const BalancerSettings& settings) {
    bson::BsonElement own = collectionDoc["maxChunkSizeBytes"];
    return own.isNumber() && own.numberLong() > 0 ? own.numberLong() : settings.chunkSizeBytes;
}

}  // namespace

Status ConfigServerImpl::configureCollectionBalancing(const std::string& ns,
                                                      std::optional<int64_t> chunkSizeMB,
                                                      std::optional<bool> autoMerge) {
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock,
                     _ddlLocks.lockCollection(ns, "configureCollectionBalancing " + ns));
    TRY_STATUS(loadCollection(ns).getStatus());
    if (!chunkSizeMB && !autoMerge) return Status::OK();
    BsonBuilder set, unset;
    if (chunkSizeMB && *chunkSizeMB == 0) unset.appendInt32("maxChunkSizeBytes", 1);
    if (chunkSizeMB && *chunkSizeMB > 0) set.appendInt64("maxChunkSizeBytes", *chunkSizeMB << 20);
    if (autoMerge && *autoMerge) unset.appendInt32("enableAutoMerge", 1);
    if (autoMerge && !*autoMerge) set.appendBool("enableAutoMerge", false);
    BsonBuilder u;
    if (BsonObj s = set.obj(); !s.isEmpty()) u.appendObject("$set", s);
    if (BsonObj s = unset.obj(); !s.isEmpty()) u.appendObject("$unset", s);
    TRY_STATUS(_local.update("collections", idQuery(ns), u.obj()).getStatus());
    BsonBuilder details;
    if (chunkSizeMB) details.appendInt64("chunkSizeMB", *chunkSizeMB);
    if (autoMerge) details.appendBool("enableAutoMerger", *autoMerge);
    logChange("configureCollectionBalancing", ns, details.obj());
    return Status::OK();
}

// The policy's view of one collection: its chunks with the owned bytes their shards report.
StatusWith<balancer::Collection> ConfigServerImpl::balancerSnapshot(const ShardedCollection& coll,
                                                                    int64_t chunkSizeBytes) {
    balancer::Collection out;
    out.ns = coll.coll.ns;
    out.chunkSizeBytes = chunkSizeBytes;
    for (const ChunkRecord& c : coll.chunks) {
        balancer::Chunk chunk;
        chunk.min = c.min.toJson();
        chunk.max = c.max.toJson();
        chunk.shard = c.shard;
        chunk.jumbo = c.jumbo;
        out.chunks.push_back(std::move(chunk));
    }
    std::map<std::string, std::vector<size_t>> byShard;
    for (size_t i = 0; i < coll.chunks.size(); ++i) byShard[coll.chunks[i].shard].push_back(i);
    for (const auto& [shard, indexes] : byShard) {
        BsonBuilder cmd;
        cmd.appendString("_shardsvrChunkStats", coll.coll.ns);
        bson::BsonArrayBuilder ranges;
        for (size_t i : indexes) {
            BsonBuilder r;
            r.appendObject("min", coll.chunks[i].min).appendObject("max", coll.chunks[i].max);
            ranges.append(r.obj());
        }
        cmd.appendArray("ranges", ranges.arr());
        ASSIGN_OR_RETURN(BsonObj reply, runOnShard(shard, "admin", cmd.obj()));
        bson::BsonElement sizes = reply["ranges"];
        if (sizes.type() != bson::BsonType::Array) {
            return Status(ErrorCodes::InternalError, "malformed _shardsvrChunkStats reply");
        }
        size_t k = 0;
        for (bson::BsonElement e : sizes.objValue()) {
            if (k < indexes.size() && e.isObject()) {
                out.chunks[indexes[k]].bytes = e.objValue()["bytes"].numberLong();
            }
            ++k;
        }
    }
    return out;
}

StatusWith<bool> ConfigServerImpl::balancerSplit(const std::string& ns, const BsonObj& min,
                                                 const BsonObj& max, bool forBalance,
                                                 int64_t chunkSizeBytes) {
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock, _ddlLocks.lockCollection(ns, "balancer split"));
    ASSIGN_OR_RETURN(ShardedCollection coll, loadCollection(ns));
    auto index = findChunkWithBounds(coll.chunks, min, max);
    if (!index) return false;  // changed meanwhile: the next round looks again
    BsonBuilder cmd;
    cmd.appendString("_shardsvrSplitPoint", ns).appendObject("min", min).appendObject("max", max);
    cmd.appendInt64("maxChunkBytes", chunkSizeBytes);
    ASSIGN_OR_RETURN(BsonObj reply, runOnShard(coll.chunks[*index].shard, "admin", cmd.obj()));
    // The round sized the chunk by estimates; the shard counted it exactly. A chunk that is not
    // too large after all stays whole (unless the split is for balance), and only a too large
    // one-value chunk is jumbo. A too large chunk is cut at once into pieces of equal bytes
    // within the chunk size (one scan, however large it is); a split for balance halves it.
    const bool tooLarge = reply["bytes"].numberLong() > chunkSizeBytes;
    if (!tooLarge && !forBalance) return false;
    if (!forBalance && reply["splitPoints"].type() == bson::BsonType::Array &&
        !reply["splitPoints"].objValue().isEmpty()) {
        std::vector<BsonObj> points;
        for (bson::BsonElement p : reply["splitPoints"].objValue()) {
            if (p.isObject()) points.push_back(p.objValue().copy());
        }
        TRY_STATUS(splitAt(coll, *index, std::move(points)));
        return true;
    }
    if (reply["splitPoint"].isObject()) {
        TRY_STATUS(splitAt(coll, *index, {reply["splitPoint"].objValue().copy()}));
        return true;
    }
    if (reply["jumbo"].trueValue() && tooLarge) {
        // One key value: flagged, so that the policy reports it instead of asking again.
        ChunkRecord chunk = coll.chunks[*index];
        chunk.jumbo = true;
        TRY_STATUS(writeChunk(chunk, coll.coll.uuid, false));
        log::info("SHARDING", 9131, "Marked a chunk jumbo (one shard key value)",
                  "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"min\":" + min.toJson() + "}");
        return true;
    }
    return false;
}

StatusWith<BsonObj> ConfigServerImpl::balancerCollectionStatus(const std::string& ns) {
    BalancerSettings settings = balancerSettings();
    ASSIGN_OR_RETURN(ShardedCollection coll, loadCollection(ns));
    bool noBalance = false;
    if (auto doc = _local.findOne("collections", idQuery(ns)); doc.isOK() && doc.getValue()) {
        settings.chunkSizeBytes = collectionChunkSize(*doc.getValue(), settings);
        noBalance = (*doc.getValue())["noBalance"].trueValue();
    }
    ASSIGN_OR_RETURN(std::vector<ShardEntry> entries, allShards());
    std::vector<std::string> shards;
    std::set<std::string> draining;
    for (const ShardEntry& s : entries) {
        shards.push_back(s.id);
        if (s.draining) draining.insert(s.id);
    }
    ASSIGN_OR_RETURN(balancer::Collection snapshot,
                     balancerSnapshot(coll, settings.chunkSizeBytes));
    snapshot.noBalance = noBalance;
    assignZones(coll, snapshot);
    balancer::Cluster cluster;
    cluster.tolerance = settings.tolerance;
    cluster.shards = shards;
    cluster.draining = draining;
    cluster.zones = zoneShards();
    cluster.collections.push_back(snapshot);
    balancer::Decision d = balancer::decide(cluster);

    std::string violation;
    for (const balancer::Migration& m : d.migrations) {
        if (m.reason == balancer::Reason::kDraining) violation = "draining";
    }
    if (violation.empty()) {
        for (const balancer::Migration& m : d.migrations) {
            if (m.reason == balancer::Reason::kZoneViolation) violation = "zoneViolation";
        }
    }
    // Out of balance: owned bytes beyond the tolerance in a collection the byte goal applies to.
    int64_t total = 0;
    std::map<std::string, int64_t> owned;
    for (const std::string& s : shards) owned[s] = 0;
    for (const balancer::Chunk& c : snapshot.chunks) {
        owned[c.shard] += c.bytes;
        total += c.bytes;
    }
    const double ratio = balancer::imbalance(snapshot, balancer::eligibleShards(cluster, ""));
    const bool outOfBalance =
        !snapshot.noBalance && total >= 2 * settings.chunkSizeBytes && ratio > cluster.tolerance;
    const bool atWork = !d.migrations.empty() || !d.splits.empty();

    // The jumbo chunks that matter, sized exactly by their shards (the round's sizes are
    // estimates): a one-value range above the chunk size, or any the policy is stuck on while
    // the collection is out of balance. A small one-value range that harms nothing is not one.
    std::set<size_t> named;
    for (const balancer::Violation& v : d.violations) {
        if (v.what == "jumboChunks") named.insert(v.chunk);
    }
    // The fix: the current key refined with a high-cardinality suffix (_id, which always has an
    // index that keeps the data's layout), once an index on the refined key exists.
    BsonBuilder refinedKey;
    refinedKey.appendElements(coll.coll.key);
    if (!coll.coll.key.hasField("_id")) refinedKey.appendInt32("_id", 1);
    const std::string refined = refinedKey.obj().toJson();
    auto [dbName, collName] = splitNs(ns);
    const std::string fix = "add a high-cardinality field to the shard key: db.getSiblingDB(\"" +
                            dbName + "\")." + collName + ".createIndex(" + refined +
                            ") then db.adminCommand({refineCollectionShardKey: \"" + ns +
                            "\", key: " + refined +
                            "}) (no data moves; any other high-cardinality field works too)";
    bson::BsonArrayBuilder jumbo;
    int64_t jumboCount = 0;
    for (size_t i : named) {
        int64_t bytes = snapshot.chunks[i].bytes;
        BsonBuilder cmd;
        cmd.appendString("_shardsvrChunkStats", ns);
        bson::BsonArrayBuilder one;
        BsonBuilder r;
        r.appendObject("min", coll.chunks[i].min).appendObject("max", coll.chunks[i].max);
        one.append(r.obj());
        cmd.appendArray("ranges", one.arr()).appendBool("exact", true);
        auto reply = runOnShard(coll.chunks[i].shard, "admin", cmd.obj());
        if (reply.isOK() && reply.getValue()["ranges"].type() == bson::BsonType::Array) {
            for (bson::BsonElement e : reply.getValue()["ranges"].objValue()) {
                if (e.isObject()) bytes = e.objValue()["bytes"].numberLong();
            }
        }
        if (bytes <= settings.chunkSizeBytes && !(outOfBalance && !atWork)) continue;
        ++jumboCount;
        BsonBuilder j;
        j.appendObject("min", coll.chunks[i].min)
            .appendObject("max", coll.chunks[i].max)
            .appendString("shard", coll.chunks[i].shard)
            .appendInt64("bytes", bytes)
            .appendDouble("shareOfCollection",
                          total > 0 ? static_cast<double>(bytes) / static_cast<double>(total) : 0.0)
            .appendString("why",
                          "every document of this range has the same shard key value, so it "
                          "cannot be split or spread")
            .appendString("fix", fix);
        jumbo.append(j.obj());
    }
    // Then either the balancer is at work on it (chunksImbalance) or a range it cannot split
    // stops it (jumboChunks). A chunk that only grew past the chunk size is split in the next
    // round; that alone is not an imbalance.
    if (violation.empty() && outOfBalance) {
        violation = atWork || jumboCount == 0 ? "chunksImbalance" : "jumboChunks";
    }
    if (violation.empty() && jumboCount > 0) violation = "jumboChunks";

    BsonBuilder b;
    b.appendInt64("chunkSize", settings.chunkSizeBytes >> 20);
    b.appendBool("balancerCompliant", violation.empty());
    if (!violation.empty()) b.appendString("firstComplianceViolation", violation);
    b.startObject("details");
    b.startObject("ownedBytes");
    for (const auto& [s, bytes] : owned) b.appendInt64(s, bytes);
    b.end();
    b.appendDouble("maxOverMin", ratio);
    b.appendDouble("tolerance", cluster.tolerance);
    b.appendInt64("chunks", static_cast<int64_t>(snapshot.chunks.size()));
    if (jumboCount > 0) b.appendArray("jumboChunks", jumbo.arr());
    if (violation.empty()) {
        b.appendString("note", snapshot.noBalance
                                   ? "balancing is disabled for this collection (noBalance)"
                               : total < 2 * settings.chunkSizeBytes
                                   ? "smaller than two chunk sizes: not balanced by bytes"
                                   : "owned bytes within the tolerance");
    }
    b.end();
    return b.obj();
}

namespace {

constexpr int64_t kActionlogRoundsKept = 100;

// What one round did, for config.actionlog (sh.status() prints the last five rounds' errors).
struct RoundOutcome {
    int64_t splits = 0, migrations = 0, migrationsFailed = 0, merges = 0;
    std::string firstError;
    void failed(const Status& s) {
        if (firstError.empty()) firstError = s.toString();
    }
};

}  // namespace

// config.actionlog {what: "balancer.round", details: {executionTimeMillis, errorOccured,
// errmsg?, candidateChunks, chunksMoved, …}} — MongoDB's document, written for rounds that did
// or tried something (an idle round every few seconds would bury them); the last
// kActionlogRoundsKept are kept.
void ConfigServerImpl::logBalancerRound(int64_t millis, int64_t splits, int64_t migrations,
                                        int64_t migrationsFailed, int64_t merges,
                                        const std::string& error) {
    BsonBuilder d;
    d.appendInt64("executionTimeMillis", millis);
    d.appendBool("errorOccured", !error.empty());
    if (!error.empty()) d.appendString("errmsg", error);
    d.appendInt64("candidateChunks", migrations);
    d.appendInt64("chunksMoved", migrations - migrationsFailed);
    d.appendInt64("splits", splits);
    d.appendInt64("merges", merges);
    Status s = _local.insert("actionlog", makeChangelogDoc(serverName(), "balancer.round", "",
                                                           d.obj(), wallClockMillis()));
    if (!s.isOK()) return;
    BsonBuilder sort;
    sort.appendInt32("time", -1);
    auto newest = _local.find("actionlog", BsonView(), sort.obj(), kActionlogRoundsKept + 1);
    if (!newest.isOK() || newest.getValue().size() <= static_cast<size_t>(kActionlogRoundsKept)) {
        return;
    }
    BsonBuilder older;
    older.startObject("time").appendElementAs(newest.getValue().back()["time"], "$lte").end();
    (void)_local.remove("actionlog", older.obj(), true);
}

bool ConfigServerImpl::balancerRound(const BalancerSettings& settings) {
    auto entries = allShards();
    if (!entries.isOK()) return false;
    auto colls = _local.find("collections", BsonView());
    if (!colls.isOK()) return false;
    const auto started = std::chrono::steady_clock::now();
    RoundOutcome outcome;
    balancer::Cluster cluster;
    cluster.tolerance = settings.tolerance;
    // The auto-merger takes part in one round per interval.
    const bool mergePass =
        settings.autoMerge && std::chrono::steady_clock::now() - _lastMergePass >=
                                  std::chrono::milliseconds(settings.mergeIntervalMillis);
    if (mergePass) _lastMergePass = std::chrono::steady_clock::now();
    cluster.autoMerge = mergePass;
    std::set<std::string> drainFailed;  // draining, but the drain failed: nothing moves off
    for (const ShardEntry& s : entries.getValue()) {
        cluster.shards.push_back(s.id);
        if (s.draining) cluster.draining.insert(s.id);
        if (s.draining && s.drainFailed()) drainFailed.insert(s.id);
    }
    if (!cluster.draining.empty()) drainDatabases(entries.getValue());
    cluster.zones = zoneShards();
    std::map<std::string, ShardedCollection> loaded;
    for (const BsonObj& doc : colls.getValue()) {
        if (doc["_id"].type() != bson::BsonType::String) continue;
        std::string ns(doc["_id"].stringValue());
        auto coll = loadCollection(ns);
        if (!coll.isOK()) continue;
        if (auto ranges = zoneRanges(coll.getValue());
            ranges.isOK() && !ranges.getValue().empty()) {
            // Chunks a zone's bound cuts through are split there first.
            Status split = splitAtZoneBounds(ns);
            if (!split.isOK()) {
                logFailure(9136, "Balancer split at a zone bound failed", ns, split);
                outcome.failed(split);
            }
            coll = loadCollection(ns);
            if (!coll.isOK()) continue;
        }
        auto snapshot = balancerSnapshot(coll.getValue(), collectionChunkSize(doc, settings));
        if (!snapshot.isOK()) {
            logFailure(9132, "Balancer could not size a collection", ns, snapshot.getStatus());
            outcome.failed(snapshot.getStatus());
            continue;
        }
        snapshot.getValue().noBalance = doc["noBalance"].trueValue();
        snapshot.getValue().autoMerge = !(doc["enableAutoMerge"].type() == bson::BsonType::Bool &&
                                          !doc["enableAutoMerge"].boolValue());
        assignZones(coll.getValue(), snapshot.getValue());
        cluster.collections.push_back(std::move(snapshot.getValue()));
        loaded.emplace(ns, std::move(coll.getValue()));
    }
    balancer::Decision decision = balancer::decide(cluster);
    for (const balancer::Split& s : decision.splits) {
        const ChunkRecord& c = loaded.at(s.ns).chunks[s.chunk];
        const int64_t chunkSize =
            std::find_if(cluster.collections.begin(), cluster.collections.end(),
                         [&](const auto& coll) { return coll.ns == s.ns; })
                ->chunkSizeBytes;
        auto split = balancerSplit(s.ns, c.min, c.max,
                                   s.reason == balancer::Reason::kChunksImbalance, chunkSize);
        if (!split.isOK()) {
            logFailure(9133, "Balancer split failed", s.ns, split.getStatus());
            outcome.failed(split.getStatus());
        } else if (split.getValue()) {
            ++outcome.splits;  // a chunk the exact count finds small enough is no work done
        }
    }
    // A failed drain is not acted on until startShardDraining is run again.
    std::erase_if(decision.migrations, [&](const balancer::Migration& m) {
        return m.reason == balancer::Reason::kDraining &&
               drainFailed.count(loaded.at(m.ns).chunks[m.chunk].shard);
    });
    // Disjoint shard pairs: each migration on a thread of its own (which never lets an
    // exception out: it would end the process).
    std::vector<std::thread> moves;
    std::vector<Status> moved(decision.migrations.size(), Status::OK());
    for (size_t i = 0; i < decision.migrations.size(); ++i) {
        const balancer::Migration& m = decision.migrations[i];
        const ChunkRecord& c = loaded.at(m.ns).chunks[m.chunk];
        moves.emplace_back([this, &result = moved[i], ns = m.ns, min = c.min, max = c.max,
                            from = c.shard, to = m.to,
                            draining = m.reason == balancer::Reason::kDraining,
                            reason = std::string(balancer::reasonName(m.reason))] {
            log::info("SHARDING", 9134, "Balancer moves a range",
                      "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"min\":" + min.toJson() +
                          ",\"to\":\"" + log::jsonEscape(to) + "\",\"reason\":\"" + reason + "\"}");
            try {
                if (draining) coordinatorStep("drain");
                result = moveRange(ns, min, max, to, /*waitForDelete=*/false);
            } catch (...) {
                result = statusFromCurrentException("a balancer migration");
            }
            if (!result.isOK()) logFailure(9135, "Balancer migration failed", ns, result);
            if (draining) noteDrainStep(from, result);
        });
    }
    for (std::thread& t : moves) t.join();
    for (const Status& m : moved) {
        ++outcome.migrations;
        if (!m.isOK()) {
            ++outcome.migrationsFailed;
            outcome.failed(m);
        }
    }
    // The auto-merger, last: only collections the round neither split nor moved (so the
    // indexes are of the snapshot still); mergeChunks re-reads the chunks under the
    // collection's lock and merges nothing if they changed meanwhile.
    for (const balancer::Merge& m : decision.merges) {
        const ShardedCollection& coll = loaded.at(m.ns);
        std::vector<bson::ObjectId> decided;
        for (size_t i = m.first; i <= m.last; ++i) decided.push_back(coll.chunks[i].id);
        Status merged = mergeChunks(m.ns, coll.chunks[m.first].min.view(),
                                    coll.chunks[m.last].max.view(), &decided);
        ++outcome.merges;
        if (!merged.isOK()) {
            logFailure(9137, "Balancer merge failed", m.ns, merged);
            outcome.failed(merged);
        }
    }
    const bool acted = outcome.splits + outcome.migrations + outcome.merges > 0;
    if (acted || !outcome.firstError.empty()) {
        const int64_t millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - started)
                                   .count();
        logBalancerRound(millis, outcome.splits, outcome.migrations, outcome.migrationsFailed,
                         outcome.merges, outcome.firstError);
    }
    return acted && outcome.firstError.empty();  // a failing round waits the whole interval
}

void ConfigServerImpl::runBalancer() {
    while (!_shutdown.load()) {
        BalancerSettings settings = balancerSettings();
        bool acted = false;
        if (settings.runsNow()) {
            _inBalancerRound = true;
            try {
                acted = balancerRound(settings);
            } catch (...) {
                // A round that throws is a failed round (recorded, retried after the whole
                // interval), never the end of the balancer or of the process.
                Status failed = statusFromCurrentException("a balancer round");
                log::error("SHARDING", 9138, "A balancer round failed",
                           "{\"error\":\"" + log::jsonEscape(failed.toString()) + "\"}");
                try {
                    logBalancerRound(0, 0, 0, 0, 0, failed.toString());
                } catch (...) {
                }
                acted = false;
            }
            _inBalancerRound = false;
            _balancerRounds.fetch_add(1);
        }
        // After a round that split or moved, the next comes soon (MongoDB waits 1 s then too):
        // the work of a round is what the next one builds on.
        auto until =
            std::chrono::steady_clock::now() +
            std::chrono::milliseconds(
                acted ? std::min<int64_t>(settings.roundIntervalMillis, kShortRoundIntervalMillis)
                      : settings.roundIntervalMillis);
        while (!_shutdown.load() && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
}

}  // namespace tessera::config
