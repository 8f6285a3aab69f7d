#include "query/update_paths.h"

#include <utility>

#include "bson/bson_obj.h"

namespace tessera::query {
namespace {

bool overlapsAny(std::string_view path, const std::vector<std::string_view>& paths) {
    std::string_view prefix = path;
    if (size_t pos = path.find(".$"); pos != std::string_view::npos) prefix = path.substr(0, pos);
    for (std::string_view p : paths) {
        if (pathsOverlap(prefix, p)) return true;
    }
    return false;
}

}  // namespace

bool pathsOverlap(std::string_view a, std::string_view b) {
    if (a.size() > b.size()) std::swap(a, b);
    return b.substr(0, a.size()) == a && (b.size() == a.size() || b[a.size()] == '.');
}

bool updateMayModifyPaths(bson::BsonElement u, const std::vector<std::string_view>& paths) {
    // A pipeline (or something malformed, which the update's parser reports) may change anything.
    if (!u.isObject()) return true;
    return updateMayModifyPaths(u.objValue(), false, paths);
}

bool updateMayModifyPaths(bson::BsonView ops, bool isPipeline,
                          const std::vector<std::string_view>& paths) {
    if (isPipeline) return true;
    if (ops.isEmpty()) return true;                                       // empty replacement
    if (ops.firstElement().fieldName().substr(0, 1) != "$") return true;  // replacement
    for (bson::BsonElement op : ops) {
        if (!op.isObject()) continue;
        bool rename = op.fieldName() == "$rename";
        for (bson::BsonElement f : op.objValue()) {
            if (overlapsAny(f.fieldName(), paths)) return true;
            if (rename && f.type() == bson::BsonType::String &&
                overlapsAny(f.stringValue(), paths)) {
                return true;
            }
        }
    }
    return false;
}

}  // namespace tessera::query
