#pragma once

#include <atomic>
#include <cstdint>

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
};

}  // namespace tessera::command
