#pragma once
// Helpers for the shard's unit tests: routing tables built from split points and owners, and a
// PlacementSource fake whose answers the test controls.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>

#include "base/mutex.h"
#include "bson/bson_obj.h"
#include "command/command.h"
#include "placement/routing_table.h"
#include "shard/shard_metadata.h"

namespace tessera::shard::test {

inline bson::BsonObj J(std::string_view json) { return bson::fromJson(json); }

inline placement::CollectionGeneration gen(uint8_t epochByte = 1, uint32_t secs = 100) {
    placement::CollectionGeneration g;
    g.epoch.bytes[11] = epochByte;
    g.timestamp = Timestamp::fromParts(secs, 1);
    return g;
}

// A table over `pattern` split at `points` (sorted JSON keys); chunk i is on owners[i], with
// version major|i (so each shard's version is distinct).
inline std::shared_ptr<const placement::RoutingTable> makeTable(
    const std::string& ns, std::string_view patternJson, const std::vector<std::string>& points,
    const std::vector<std::string>& owners, uint32_t major = 1,
    placement::CollectionGeneration g = gen()) {
    auto pattern = placement::ShardKeyPattern::parse(J(patternJson));
    EXPECT_TRUE(pattern.isOK());
    const auto& p = pattern.getValue();
    EXPECT_EQ(points.size() + 1, owners.size());
    std::vector<placement::Chunk> chunks;
    for (size_t i = 0; i < owners.size(); ++i) {
        placement::Chunk c;
        c.min = i == 0 ? p.globalMin() : J(points[i - 1]);
        c.max = i < points.size() ? J(points[i]) : p.globalMax();
        c.shard = owners[i];
        c.version = placement::ChunkVersion(g, major, static_cast<uint32_t>(i));
        chunks.push_back(std::move(c));
    }
    auto table = placement::RoutingTable::make(ns, p, g, std::move(chunks));
    EXPECT_TRUE(table.isOK()) << table.getStatus().toString();
    return table.getValue();
}

// Hooks that filter reads of "test.c" with `filter` and check nothing else.
class FixedHooks : public command::CommandHooks {
  public:
    Status beforeCommand(command::OperationContext&, const command::CommandRequest&,
                         const command::Command&) override {
        return Status::OK();
    }
    StatusWith<std::shared_ptr<const command::OwnershipFilter>> ownershipFilter(
        command::OperationContext&, std::string_view ns) override {
        return ns == "test.c" ? filter : std::shared_ptr<const command::OwnershipFilter>();
    }
    std::shared_ptr<const command::OwnershipFilter> filter;
};

class FakePlacementSource : public PlacementSource {
  public:
    StatusWith<std::shared_ptr<const placement::RoutingTable>> loadCollection(
        std::string_view ns, bool mayUseOwnCopy) override {
        MutexLock lk(mutex);
        ++collectionLoads;
        lastMayUseOwnCopy = mayUseOwnCopy;
        if (!error.isOK()) return error;
        auto it = tables.find(std::string(ns));
        return it == tables.end() ? nullptr : it->second;
    }
    StatusWith<std::optional<cluster::DatabaseInfo>> loadDatabase(std::string_view db,
                                                                  bool mayUseOwnCopy) override {
        MutexLock lk(mutex);
        ++databaseLoads;
        lastMayUseOwnCopy = mayUseOwnCopy;
        if (!error.isOK()) return error;
        auto it = dbs.find(std::string(db));
        if (it == dbs.end()) return std::optional<cluster::DatabaseInfo>();
        return std::optional<cluster::DatabaseInfo>(it->second);
    }
    void setTable(const std::string& ns, std::shared_ptr<const placement::RoutingTable> t) {
        MutexLock lk(mutex);
        tables[ns] = std::move(t);
    }
    void setDb(const cluster::DatabaseInfo& info) {
        MutexLock lk(mutex);
        dbs[info.name] = info;
    }

    Mutex mutex;
    std::map<std::string, std::shared_ptr<const placement::RoutingTable>> tables;
    std::map<std::string, cluster::DatabaseInfo> dbs;
    Status error = Status::OK();
    std::atomic<int> collectionLoads{0};
    std::atomic<int> databaseLoads{0};
    bool lastMayUseOwnCopy = false;  // of the last load
};

}  // namespace tessera::shard::test
