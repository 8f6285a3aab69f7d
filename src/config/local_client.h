#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/service_entry_point.h"

namespace tessera::config {

// Reads and writes the config server's own `config.*` collections by running ordinary commands
// through the process's command layer (MongoDB's DBDirectClient). Thread-safe as the command
// layer is.
class LocalClient {
  public:
    explicit LocalClient(command::ServiceContext& service) : _entry(service) {}

    // The whole reply, ok: 0 included.
    bson::BsonObj run(std::string_view db, bson::BsonView cmd);
    // replyStatus of run(), plus write errors turned into a Status.
    StatusWith<bson::BsonObj> runChecked(std::string_view db, bson::BsonView cmd);

    // All documents of config.<coll> matching `filter` (every batch).
    StatusWith<std::vector<bson::BsonObj>> find(std::string_view coll, bson::BsonView filter,
                                                bson::BsonView sort = bson::BsonView(),
                                                int64_t limit = 0);
    StatusWith<std::optional<bson::BsonObj>> findOne(std::string_view coll, bson::BsonView filter);
    Status insert(std::string_view coll, bson::BsonView doc);
    // Returns the number of matched documents (n), upserted included.
    StatusWith<int64_t> update(std::string_view coll, bson::BsonView query, bson::BsonView update,
                               bool upsert = false, bool multi = false);
    StatusWith<int64_t> remove(std::string_view coll, bson::BsonView query, bool multi = true);
    Status createIndex(std::string_view coll, bson::BsonView key, std::string_view name,
                       bool unique);

  private:
    command::ServiceEntryPoint _entry;
};

}  // namespace tessera::config
