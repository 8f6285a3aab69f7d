#include "command/namespace_util.h"

namespace tessera::command {
namespace {

constexpr size_t kMaxDatabaseNameBytes = 63;
constexpr size_t kMaxNamespaceBytes = 255;

Status invalid(std::string message) {
    return Status(ErrorCodes::InvalidNamespace, std::move(message));
}

}  // namespace

StatusWith<Namespace> parseNamespace(std::string_view ns) {
    size_t dot = ns.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == ns.size()) {
        return invalid("Invalid namespace specified '" + std::string(ns) + "'");
    }
    return Namespace{std::string(ns.substr(0, dot)), std::string(ns.substr(dot + 1))};
}

Status validateDatabaseName(std::string_view db) {
    if (db.empty()) return invalid("database names cannot be empty");
    if (db.size() > kMaxDatabaseNameBytes) {
        return invalid("database name is too long (max " + std::to_string(kMaxDatabaseNameBytes) +
                       " bytes): '" + std::string(db) + "'");
    }
    if (db.find_first_of(std::string_view("/\\. \"$\0", 7)) != std::string_view::npos) {
        return invalid("Invalid database name: '" + std::string(db) +
                       "': it may not contain / \\ . space \" $ or a null character");
    }
    return Status::OK();
}

Status validateCollectionName(std::string_view coll) {
    if (coll.empty()) return invalid("collection names cannot be empty");
    if (coll.front() == '.') {
        return invalid("Invalid collection name '" + std::string(coll) + "': it starts with '.'");
    }
    if (coll.find_first_of(std::string_view("$\0", 2)) != std::string_view::npos) {
        return invalid("Invalid collection name '" + std::string(coll) +
                       "': it may not contain '$' or a null character");
    }
    return Status::OK();
}

StatusWith<Namespace> parseValidNamespace(std::string_view ns) {
    ASSIGN_OR_RETURN(Namespace parsed, parseNamespace(ns));
    TRY_STATUS(validateDatabaseName(parsed.db));
    TRY_STATUS(validateCollectionName(parsed.coll));
    if (ns.size() > kMaxNamespaceBytes) {
        return invalid("Fully qualified namespace is too long (max " +
                       std::to_string(kMaxNamespaceBytes) + " bytes): '" + std::string(ns) + "'");
    }
    return parsed;
}

}  // namespace tessera::command
