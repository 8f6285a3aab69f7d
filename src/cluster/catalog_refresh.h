#pragma once

// The decision logic of CatalogCache refreshes, factored out of the network code so that it can
// be unit-tested with fake config documents (catalog_cache_test.cpp).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "net/remote_client.h"
#include "placement/chunk_version.h"
#include "placement/database_version.h"
#include "placement/routing_table.h"
#include "placement/shard_key_pattern.h"

namespace tessera::cluster {

// A parsed config.collections entry.
struct CollectionDocInfo {
    std::string ns;
    placement::CollectionGeneration gen;
    placement::Uuid uuid{};
    bson::BsonObj key;
    bool unique = false;
};
StatusWith<CollectionDocInfo> parseCollectionDoc(bson::BsonView doc);

// What a collection refresh must read from config.chunks.
enum class RefreshKind {
    kUnsharded,    // no config.collections entry: unsharded (or dropped)
    kFull,         // every chunk of the collection's uuid
    kIncremental,  // chunks with lastmod > `since` (same generation as the cached table)
};
struct RefreshPlan {
    RefreshKind kind = RefreshKind::kUnsharded;
    std::optional<CollectionDocInfo> coll;
    placement::ChunkVersion since;  // kIncremental only
};

// `cached`: the table held now (null if none or unsharded); `collDoc`: the config.collections
// entry (nullopt when absent); `forceFull`: a previous incremental attempt conflicted.
StatusWith<RefreshPlan> planCollectionRefresh(const placement::RoutingTable* cached,
                                              const std::optional<bson::BsonObj>& collDoc,
                                              bool forceFull);

// The config.chunks filter for a plan (kFull / kIncremental).
bson::BsonObj chunksFilter(const RefreshPlan& plan);

// Builds the new table from the chunk documents the plan's filter returned. For kIncremental an
// error of ConflictingOperationInProgress means "do a full refresh"; for kFull it means the
// chunks changed while being read ("read again").
StatusWith<std::shared_ptr<const placement::RoutingTable>> applyRefresh(
    const std::shared_ptr<const placement::RoutingTable>& cached, const RefreshPlan& plan,
    const std::vector<bson::BsonObj>& chunkDocs);

// After StaleConfig with `wanted`: whether a cache holding `cached` must refresh. A wanted
// version that is set and not newer than the cached collection version (same generation) is
// already known (a concurrent refresh got it); everything else refreshes (absent wanted: the
// shard does not know; 0|0: the shard donated its last chunk, which our table may not show).
bool needsShardVersionRefresh(const placement::RoutingTable* cached,
                              const std::optional<placement::ChunkVersion>& wanted);
// After StaleDbVersion with `wanted`.
bool needsDatabaseVersionRefresh(const std::optional<placement::DatabaseVersion>& cached,
                                 const std::optional<placement::DatabaseVersion>& wanted);

// Runs find on `db`.`coll` at `host` and exhausts the cursor with getMore.
// {find: coll, filter, sort?, batchSize: 100000}. `primaryPreferred` (a router's reads): with
// `$readPreference: {mode: "primaryPreferred"}` — at the config service's primary, or, with none
// (its majority lost, the seed's config-down case), at a member that answers, whose copy holds
// every committed change it applied, maybe not the latest (net::RemoteClient::runCommand). A
// router may route on an older placement (the shards' version checks correct it); a shard, which
// deletes what it believes it does not own, reads at the primary only.
bson::BsonObj findCommand(std::string_view coll, bson::BsonView filter,
                          bson::BsonView sort = bson::BsonView(), bool primaryPreferred = false);
// Every document of a find whose first reply is `reply` (getMore until the cursor is exhausted).
StatusWith<std::vector<bson::BsonObj>> findAllFrom(net::RemoteClient& client,
                                                   const std::string& host, std::string_view db,
                                                   std::string_view coll, bson::BsonObj reply,
                                                   bool primaryPreferred = false);
StatusWith<std::vector<bson::BsonObj>> findAll(net::RemoteClient& client, const std::string& host,
                                               std::string_view db, std::string_view coll,
                                               bson::BsonView filter,
                                               bson::BsonView sort = bson::BsonView(),
                                               bool primaryPreferred = false);

}  // namespace tessera::cluster
