#pragma once

// A shard's StaleConfig reply to a router that is behind carries the chunks that changed since
// the router's version, so the router catches up without a round trip to the config service
// (the stale router's first operation then costs one extra shard round trip, not two).
// Internal to Tessera's roles: the field is ignored by anything else, and a router that finds it
// missing, too large or inconsistent refreshes from the config service as usual.

#include <optional>
#include <string_view>
#include <vector>

#include "bson/bson_builder.h"
#include "placement/chunk_version.h"
#include "placement/routing_table.h"

namespace tessera::cluster {

inline constexpr std::string_view kChangedChunksField = "tesseraChangedChunks";
// Bound on the chunks carried in one error; a router further behind refreshes from the config.
inline constexpr size_t kMaxChangedChunks = 64;

// Appends `kChangedChunksField: [config.chunks-shaped {min, max, shard, lastmod}]` with the
// chunks of `table` whose version is newer than `since`, when `since` is of the table's
// generation and older than its collection version and at most kMaxChangedChunks chunks
// changed; appends nothing otherwise.
//
// Why a router may apply them (CatalogCache::applyChangedChunks): `since` is a shard version the
// router sent, so it is at most the router's collection version; every chunk of `table` not in
// the delta is older than `since` and therefore already in the router's table, and every chunk
// the router holds that `table` replaced is overlapped by a newer chunk, which is in the delta.
void appendChangedChunks(const placement::RoutingTable& table, const placement::ChunkVersion& since,
                         bson::BsonBuilder& b);

// The chunks of an error reply's kChangedChunksField (versions of `gen`), or nullopt when the
// field is absent or malformed.
std::optional<std::vector<placement::Chunk>> parseChangedChunks(
    bson::BsonView errorReply, const placement::CollectionGeneration& gen);

}  // namespace tessera::cluster
