#pragma once

// Reads through views: find, count and distinct on a view run as an aggregation over the view's
// backing collection, with the view's pipeline first and the command's filter/sort/skip/limit
// after it (MongoDB's view resolution).

#include <memory>
#include <string>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "command/command.h"
#include "command/exec/find_request.h"
#include "command/exec/plan_executor.h"
#include "storage/catalog_types.h"

namespace tessera::command {

// Whether `coll` (may be null) is a view.
bool isViewCollection(const storage::CollectionPtr& coll);

// find on the view `ns`: the reply {cursor: {firstBatch, id, ns}} (ns is the view's).
Status runFindOnView(OperationContext& opCtx, const exec::FindRequest& req, const std::string& ns,
                     bson::BsonBuilder& reply);

// An executor over the view `ns` with `filter` applied after the view's pipeline (and
// skip/limit when given), for count and distinct.
StatusWith<std::unique_ptr<exec::PlanExecutor>> viewQueryExecutor(
    OperationContext& opCtx, const std::string& ns, bson::BsonView filter, int64_t skip = 0,
    std::optional<int64_t> limit = std::nullopt, query::CollatorPtr collator = nullptr);

}  // namespace tessera::command
