#pragma once

// DDL inside a multi-document transaction (MongoDB 4.4+): a transaction may create a
// collection — `create`, or the first insert or upsert into a missing one — and indexes on a
// collection it created while that is still empty (`createIndexes`); the collection exists
// for the transaction's statements at once and for everyone else from its commit
// (storage::Transaction::createCollection). MongoDB's rules, checked here:
// - the transaction's read concern is `local` (InvalidOptions 72 otherwise), where the process
//   sees the client's: a `--replSet` node and a router; a shard's statements come from routers
//   with their cluster-wide snapshot, the router checked the client's level;
// - not a view, a capped or a system collection (OperationNotSupportedInTransaction 263);
// - indexes only on a collection the transaction created, while it has no documents (263,
//   "Cannot create new indexes on existing collection"), except indexes that all exist already;
// - never in a cross-shard write transaction (the shard refuses to prepare it: 263).

#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/command.h"
#include "storage/catalog_types.h"

namespace tessera::command {

// The collection `ns` as this operation sees it: the one its transaction created, else the
// catalog's; nullptr when neither exists.
storage::CollectionPtr lookupCollection(const OperationContext& opCtx, std::string_view ns);

// Whether this operation's transaction may create collection `ns` (the rules above).
Status checkCreateInTransaction(const OperationContext& opCtx, const std::string& ns);

// Creates `ns` in the operation's transaction (opCtx.transaction must be set), after
// checkCreateInTransaction. NamespaceExists when it exists, WriteConflict (transient) when
// another transaction is creating it.
StatusWith<storage::CollectionPtr> createInTransaction(OperationContext& opCtx,
                                                       const std::string& ns,
                                                       bson::BsonView options);

}  // namespace tessera::command
