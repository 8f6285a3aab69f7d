#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "bson/bson_obj.h"

namespace tessera::command {

// serverStatus.opcounters: counted per operation (an insert of 10 documents counts 10 inserts,
// as MongoDB does). Process-wide.
struct OpCounters {
    std::atomic<int64_t> insert{0};
    std::atomic<int64_t> query{0};
    std::atomic<int64_t> update{0};
    std::atomic<int64_t> remove{0};  // "delete" in replies
    std::atomic<int64_t> getmore{0};
    std::atomic<int64_t> command{0};

    static OpCounters& global();

    // Counts one received request as MongoDB does: `insert` per document, `update`/`delete` per
    // statement, `find` as a query, `getMore` as a getmore, anything else as a command. Called
    // once per request by the service entry point, on every role (a router counts what its
    // clients asked for, not what it sends to shards).
    void countRequest(std::string_view commandName, bson::BsonView body,
                      const std::vector<std::pair<std::string_view, size_t>>& sequenceSizes);
};

}  // namespace tessera::command
