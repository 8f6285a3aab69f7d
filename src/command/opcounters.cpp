#include "command/opcounters.h"

namespace tessera::command {

OpCounters& OpCounters::global() {
    static OpCounters counters;
    return counters;
}

void OpCounters::countRequest(
    std::string_view commandName, bson::BsonView body,
    const std::vector<std::pair<std::string_view, size_t>>& sequenceSizes) {
    auto statements = [&](std::string_view field) -> int64_t {
        for (const auto& [id, n] : sequenceSizes) {
            if (id == field) return static_cast<int64_t>(n);
        }
        bson::BsonElement e = body[field];
        return e.isArray() ? e.objValue().nFields() : 0;
    };
    constexpr auto relaxed = std::memory_order_relaxed;
    if (commandName == "insert") {
        insert.fetch_add(statements("documents"), relaxed);
    } else if (commandName == "update") {
        update.fetch_add(statements("updates"), relaxed);
    } else if (commandName == "delete") {
        remove.fetch_add(statements("deletes"), relaxed);
    } else if (commandName == "find") {
        query.fetch_add(1, relaxed);
    } else if (commandName == "getMore") {
        getmore.fetch_add(1, relaxed);
    } else {
        command.fetch_add(1, relaxed);
    }
}

}  // namespace tessera::command
