#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace tessera::command {

// One home for MongoDB's naming rules of databases and namespaces ("db.coll").

struct Namespace {
    std::string db;
    std::string coll;
    std::string ns() const { return db + "." + coll; }
};

// Splits "db.coll" at its first dot; InvalidNamespace (73) when there is no dot or either part
// is empty. Checks nothing else (names that exist already, e.g. in a reply).
StatusWith<Namespace> parseNamespace(std::string_view ns);

// MongoDB's rules for a database name (DatabaseName::validate): non-empty, at most 63 bytes,
// none of / \ . space " $ or NUL. InvalidNamespace (73) naming the rule otherwise.
Status validateDatabaseName(std::string_view db);

// MongoDB's rules for a collection name a user may write: non-empty, not starting with '.', no
// '$' and no NUL. InvalidNamespace (73) otherwise.
Status validateCollectionName(std::string_view coll);

// A namespace argument of a command ({_configsvrDropCollection: "db.c"}): both parts valid as
// above and at most 255 bytes in all (MongoDB's limit). InvalidNamespace (73) otherwise — before
// anything is locked or looked up.
StatusWith<Namespace> parseValidNamespace(std::string_view ns);

}  // namespace tessera::command
