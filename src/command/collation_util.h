#pragma once

#include "base/status.h"
#include "bson/bson_obj.h"
#include "query/collator.h"
#include "storage/catalog_types.h"

namespace tessera::command {

// Installs query::Collator as storage's factory of index collation keys (idempotent; called when
// the commands are registered, before any index is written).
void installCollationSupport();

// The collation an operation runs with: the command's `collation` argument when given (parsed
// and validated; {locale: "simple"} is binary even on a collection with a default), otherwise the
// collection's default collation (options.collation; `coll` may be null). nullptr = simple.
StatusWith<query::CollatorPtr> resolveCollation(const bson::BsonElement& argument,
                                                const storage::CollectionInfo* coll);

// {collation: body.collation} when `body` has a collation field, else an empty document (what
// FindRequest / UpdateStatement / DeleteStatement carry as collationArg).
bson::BsonObj collationArgument(bson::BsonView body);

// The collator of an index (its spec's `collation`); nullptr for simple or none.
query::CollatorPtr indexCollator(const storage::IndexSpec& index);

}  // namespace tessera::command
