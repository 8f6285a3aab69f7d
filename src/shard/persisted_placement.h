#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "command/command.h"
#include "shard/shard_metadata.h"

namespace tessera::shard {

// The shard's own durable copy of its placement (ARCHITECTURE.md invariant 4): a PlacementSource
// that loads from `inner` (the config server) and records every placement it loads in the
// shard's local `config.cache.placement` ({_id: "coll:<ns>", sharded, key, unique, epoch,
// timestamp, chunks: [{min, max, shard, major, minor}]}; {_id: "db:<name>", exists, primary,
// version}), journaled. When `inner` cannot reach the config server (network errors only: any
// other error, such as a placement read while a split was half-written, is returned as it is)
// and the caller allows it, it answers from that copy, so the shard keeps filtering what it owns —
// and keeps serving — instead of failing every read, or worse, reading without a filter. Without a
// copy the error stands.
class PersistedPlacementSource final : public PlacementSource {
  public:
    PersistedPlacementSource(std::unique_ptr<PlacementSource> inner,
                             command::ServiceContext& service)
        : _inner(std::move(inner)), _service(service) {}

    StatusWith<std::shared_ptr<const placement::RoutingTable>> loadCollection(
        std::string_view ns, bool mayUseOwnCopy) override;
    StatusWith<std::optional<cluster::DatabaseInfo>> loadDatabase(std::string_view db,
                                                                  bool mayUseOwnCopy) override;

  private:
    void persist(std::string_view id, const bson::BsonObj& doc);
    std::optional<bson::BsonObj> read(std::string_view id);

    std::unique_ptr<PlacementSource> _inner;
    command::ServiceContext& _service;
};

// The documents and their parsers (unit-tested round trips).
bson::BsonObj placementDoc(std::string_view ns,
                           const std::shared_ptr<const placement::RoutingTable>& table);
StatusWith<std::shared_ptr<const placement::RoutingTable>> parsePlacementDoc(bson::BsonView doc);
bson::BsonObj databaseDoc(std::string_view db, const std::optional<cluster::DatabaseInfo>& info);
StatusWith<std::optional<cluster::DatabaseInfo>> parseDatabaseDoc(bson::BsonView doc);

}  // namespace tessera::shard
