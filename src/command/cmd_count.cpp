#include <algorithm>
#include <set>

#include "bson/compare.h"
#include "bson/validate.h"
#include "command/collation_util.h"
#include "command/crud_commands.h"
#include "command/exec/find_request.h"
#include "command/exec/query_executor.h"
#include "command/reply_util.h"
#include "command/transaction_ddl.h"
#include "command/view_reads.h"
#include "command/write_ops_util.h"
#include "query/path.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

using bson::BsonType;

// count: {count: "c", query?, limit?, skip?, hint?} → {n}. An empty query is answered from the
// collection's exact maintained count (no scan).
class CountCommand final : public Command {
  public:
    std::string_view name() const override { return "count"; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        bson::BsonView body = request.body;
        ASSIGN_OR_RETURN(std::string collName, collectionName(request.firstElement(), "count"));
        ASSIGN_OR_RETURN(bson::BsonView query, optionalObject(body, "query", "count"));
        ASSIGN_OR_RETURN(auto skip, exec::nonNegativeArgument(body, "skip", "count"));
        ASSIGN_OR_RETURN(auto limit, exec::nonNegativeArgument(body, "limit", "count", true));
        ASSIGN_OR_RETURN(bson::BsonObj hint, exec::parseHint(body["hint"]));
        TRY_STATUS(query::Collator::fromArgument(body["collation"]).getStatus());
        if (limit && *limit < 0) *limit = -*limit;
        if (limit && *limit == 0) limit.reset();

        std::string ns = request.db + "." + collName;
        storage::Engine& engine = *opCtx.service->engine;
        // The operation's snapshot: at its cluster time when it has one (a router's read of
        // several shards), its transaction's, else the latest.
        auto snapshot = opCtx.snapshot();
        storage::CollectionPtr coll = engine.getCollection(ns);
        int64_t n = 0;
        if (isViewCollection(coll)) {
            ASSIGN_OR_RETURN(auto collator, resolveCollation(body["collation"], nullptr));
            ASSIGN_OR_RETURN(auto viewExec, viewQueryExecutor(opCtx, ns, query, skip.value_or(0),
                                                              limit, collator));
            exec::WorkingMember vm;
            while (true) {
                ASSIGN_OR_RETURN(bool more, viewExec->next(opCtx, &vm));
                if (!more) break;
                ++n;
            }
            reply.appendNumber("n", n);
            return Status::OK();
        }
        std::shared_ptr<const OwnershipFilter> ownership;
        if (coll) {
            ASSIGN_OR_RETURN(ownership, opCtx.ownershipFilter(ns));
        }
        if (!coll) {
            ASSIGN_OR_RETURN(auto m, query::Matcher::parse(query));  // still validate
            (void)m;
        } else if (query.isEmpty() && hint.isEmpty() && !opCtx.readAtClusterTime &&
                   (!ownership || ownership->ownedTotals(engine, *coll))) {
            // The maintained count, less what a shard stores without owning it (kept exactly
            // by the shard); when it cannot say, the scan below filters orphans out. It is the
            // latest count: a read at a cluster time scans.
            n = ownership ? ownership->ownedTotals(engine, *coll)->count
                          : engine.stats(*coll).count;
            n = std::max<int64_t>(0, n - skip.value_or(0));
            if (limit) n = std::min(n, *limit);
        } else {
            exec::QuerySpec spec;
            spec.filter = query.copy();
            spec.hint = hint;
            ASSIGN_OR_RETURN(spec.collator, resolveCollation(body["collation"], coll.get()));
            spec.skip = skip.value_or(0);
            spec.limit = limit;
            ASSIGN_OR_RETURN(auto exec,
                             exec::buildQueryExecutor(std::move(snapshot), coll, ns, spec));
            exec::WorkingMember m;
            while (true) {
                ASSIGN_OR_RETURN(bool more, exec->next(opCtx, &m));
                if (!more) break;
                ++n;
            }
        }
        reply.appendNumber("n", n);
        return Status::OK();
    }
};

struct ElementLess {
    const bson::StringComparator* collator = nullptr;
    bool operator()(const bson::BsonElement& a, const bson::BsonElement& b) const {
        return bson::compareElementValues(a, b, collator) < 0;
    }
};

// distinct: {distinct: "c", key, query?} → {values: [...]}. Array values contribute their
// elements; values are deduplicated by BSON comparison (1 and 1.0 are one value).
class DistinctCommand final : public Command {
  public:
    std::string_view name() const override { return "distinct"; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        bson::BsonView body = request.body;
        ASSIGN_OR_RETURN(std::string collName, collectionName(request.firstElement(), "distinct"));
        bson::BsonElement key = body["key"];
        if (key.eoo()) {
            return Status(40414, "BSON field 'distinct.key' is missing but a required field");
        }
        TRY_STATUS(expectType(key, BsonType::String, "distinct"));
        if (key.stringValue().empty()) {
            return Status(ErrorCodes::BadValue,
                          "FieldPath cannot be constructed with empty string");
        }
        ASSIGN_OR_RETURN(bson::BsonView query, optionalObject(body, "query", "distinct"));
        ASSIGN_OR_RETURN(bson::BsonObj hint, exec::parseHint(body["hint"]));

        std::string ns = request.db + "." + collName;
        storage::CollectionPtr coll = lookupCollection(opCtx, ns);
        exec::QuerySpec spec;
        spec.filter = query.copy();
        spec.hint = hint;
        ASSIGN_OR_RETURN(spec.collator, resolveCollation(body["collation"], coll.get()));
        std::unique_ptr<exec::PlanExecutor> exec;
        if (isViewCollection(coll)) {
            ASSIGN_OR_RETURN(exec,
                             viewQueryExecutor(opCtx, ns, query, 0, std::nullopt, spec.collator));
        } else {
            ASSIGN_OR_RETURN(exec, exec::buildQueryExecutor(opCtx.snapshot(), coll, ns, spec));
        }
        query::FieldPath path(key.stringValue());
        std::vector<bson::BsonObj> docs;  // keeps the values' bytes alive
        // Values equal under the collation are one value (the first one met is returned).
        std::set<bson::BsonElement, ElementLess> values(ElementLess{spec.collator.get()});
        size_t bytes = 0;
        exec::WorkingMember m;
        while (true) {
            ASSIGN_OR_RETURN(bool more, exec->next(opCtx, &m));
            if (!more) break;
            bool kept = false;
            query::visitPath(m.doc, path, query::LeafArrayBehavior::kTraverseOmitArray,
                             [&](const query::PathValue& v) {
                                 if (v.element.eoo()) return false;
                                 if (values.insert(v.element).second) {
                                     kept = true;
                                     bytes += v.element.size();
                                 }
                                 return false;
                             });
            if (kept) docs.push_back(m.doc);
            if (bytes > bson::kMaxUserDocumentSize) {
                return Status(17217, "distinct too big, 16mb cap");
            }
        }
        bson::BsonArrayBuilder arr;
        for (const auto& v : values) arr.appendElement(v);
        reply.appendArray("values", arr.arr());
        if (opCtx.readAtClusterTime) {
            reply.appendTimestamp("atClusterTime", opCtx.readAtClusterTime->value);
        }
        return Status::OK();
    }
};

}  // namespace

std::unique_ptr<Command> makeCountCommand() { return std::make_unique<CountCommand>(); }
std::unique_ptr<Command> makeDistinctCommand() { return std::make_unique<DistinctCommand>(); }

}  // namespace tessera::command
