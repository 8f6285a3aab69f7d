#include <algorithm>

#include "bson/compare.h"
#include "command/reply_util.h"
#include "command/write_ops_util.h"
#include "query/matcher.h"
#include "router/cluster_find.h"

namespace tessera::router::reads {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;

// The filter argument of count/distinct (`query`), empty when absent.
BsonObj queryArgument(bson::BsonView body) {
    bson::BsonElement q = body["query"];
    return q.type() == bson::BsonType::Object ? q.objValue().copy() : BsonObj();
}

// For a read of a database that does not exist (answered empty): the `query` argument parsed as
// a shard parses it, so that a bad filter is an error there too.
Status parseQueryOnMissingDatabase(bson::BsonView body, const query::CollatorPtr& collator,
                                   std::string_view command) {
    bson::BsonElement q = body["query"];
    if (!q.eoo() && !q.isNull() && q.type() != bson::BsonType::Object) {
        return Status(ErrorCodes::TypeMismatch,
                      "BSON field '" + std::string(command) + ".query' is the wrong type '" +
                          std::string(bson::typeName(q.type())) + "', expected type 'object'");
    }
    ASSIGN_OR_RETURN(auto let, command::parseLet(body, command));
    return query::Matcher::parse(queryArgument(body), collator, let).getStatus();
}

// Targets `ns` by `filter` and sends `bodyFor(multi)` (with versions) to the shards.
StatusWith<std::vector<ShardResponse>> routeByFilter(
    command::OperationContext& opCtx, Router& router, const std::string& ns, bson::BsonView filter,
    bool simpleCollation, const std::function<BsonObj(bool multi)>& bodyFor, bool* multi) {
    auto makeRequests =
        [&](const CollectionRoutingInfo& info) -> StatusWith<std::vector<ShardRequest>> {
        std::vector<ShardId> shards{info.db.primary};
        if (info.isSharded()) {
            ASSIGN_OR_RETURN(auto t, targetRead(*info.table, filter, simpleCollation));
            shards = t.shards;
        }
        *multi = shards.size() > 1;
        BsonObj body = bodyFor(*multi);
        std::vector<ShardRequest> out;
        for (const ShardId& s : shards) out.push_back({s, attachVersion(body, info, s)});
        return out;
    };
    ASSIGN_OR_RETURN(auto responses, runRoutedRead(opCtx, router, ns, makeRequests));
    for (const ShardResponse& r : responses) TRY_STATUS(shardResponseStatus(r));
    return responses;
}

}  // namespace

// count after skip/limit over a sum of per-shard counts: n = min(max(0, sum - skip), |limit|)
// (limit 0: none; a negative limit counts as its absolute value, as MongoDB).
int64_t applyCountSkipLimit(int64_t sum, int64_t skip, int64_t limit) {
    int64_t n = std::max<int64_t>(0, sum - std::max<int64_t>(0, skip));
    if (limit < 0) limit = -limit;
    if (limit > 0) n = std::min(n, limit);
    return n;
}

namespace {

class ClusterCountCommand final : public command::Command {
  public:
    std::string_view name() const override { return "count"; }

    Status run(command::OperationContext& opCtx, const command::CommandRequest& request,
               BsonBuilder& reply) override {
        if (request.db == "config") return forwardToConfig(opCtx, request, reply);
        ASSIGN_OR_RETURN(std::string coll,
                         command::collectionName(request.firstElement(), "count"));
        ASSIGN_OR_RETURN(query::CollatorPtr collator, collatorArgument(request.body));
        bson::BsonElement skipE = request.body["skip"], limitE = request.body["limit"];
        if ((!skipE.eoo() && !skipE.isNumber()) || (!limitE.eoo() && !limitE.isNumber())) {
            return Status(ErrorCodes::TypeMismatch, "count skip/limit must be numbers");
        }
        if (skipE.isNumber() && skipE.numberLong() < 0) {
            return Status(51024, "BSON field 'skip' value must be >= 0, actual value '" +
                                     std::to_string(skipE.numberLong()) + "'");
        }
        Router& router = Router::get(opCtx);
        std::string ns = request.db + "." + coll;
        bool multi = false;
        auto routed = routeByFilter(
            opCtx, router, ns, queryArgument(request.body), collator == nullptr,
            [&](bool m) {
                return m ? shardBody(request.body, {"skip", "limit"}) : shardBody(request.body, {});
            },
            &multi);
        if (routed.getStatus().is(ErrorCodes::NamespaceNotFound)) {  // no such database
            TRY_STATUS(parseQueryOnMissingDatabase(request.body, collator, "count"));
            reply.appendNumber("n", int64_t{0});
            return Status::OK();
        }
        ASSIGN_OR_RETURN(auto responses, std::move(routed));
        int64_t sum = 0;
        for (const ShardResponse& r : responses) sum += r.reply["n"].numberLong();
        int64_t n = multi ? applyCountSkipLimit(sum, skipE.numberLong(), limitE.numberLong()) : sum;
        reply.appendNumber("n", n);
        return Status::OK();
    }
};

class ClusterDistinctCommand final : public command::Command {
  public:
    std::string_view name() const override { return "distinct"; }

    Status run(command::OperationContext& opCtx, const command::CommandRequest& request,
               BsonBuilder& reply) override {
        if (request.db == "config") return forwardToConfig(opCtx, request, reply);
        ASSIGN_OR_RETURN(std::string coll,
                         command::collectionName(request.firstElement(), "distinct"));
        ASSIGN_OR_RETURN(query::CollatorPtr collator, collatorArgument(request.body));
        Router& router = Router::get(opCtx);
        std::string ns = request.db + "." + coll;
        bool multi = false;
        auto routed = routeByFilter(
            opCtx, router, ns, queryArgument(request.body), collator == nullptr,
            [&](bool) { return shardBody(request.body, {}); }, &multi);
        if (routed.getStatus().is(ErrorCodes::NamespaceNotFound)) {  // no such database
            TRY_STATUS(parseQueryOnMissingDatabase(request.body, collator, "distinct"));
            if (request.body["key"].type() != bson::BsonType::String) {
                return Status(ErrorCodes::TypeMismatch,
                              "BSON field 'distinct.key' is missing or not a string");
            }
            reply.appendArray("values", bson::BsonArrayBuilder().arr());
            return Status::OK();
        }
        ASSIGN_OR_RETURN(auto responses, std::move(routed));
        // The union, deduplicated and ordered by BSON comparison under the collation.
        std::vector<bson::BsonElement> values;
        for (const ShardResponse& r : responses) {
            bson::BsonElement v = r.reply["values"];
            if (v.type() != bson::BsonType::Array) continue;
            for (bson::BsonElement e : v.objValue()) values.push_back(e);
        }
        const bson::StringComparator* cmp = collator.get();
        std::stable_sort(values.begin(), values.end(), [cmp](const auto& a, const auto& b) {
            return bson::compareElementValues(a, b, cmp) < 0;
        });
        values.erase(std::unique(values.begin(), values.end(),
                                 [cmp](const auto& a, const auto& b) {
                                     return bson::compareElementValues(a, b, cmp) == 0;
                                 }),
                     values.end());
        bson::BsonArrayBuilder arr;
        for (const auto& e : values) arr.appendElement(e);
        reply.appendArray("values", arr.arr());
        return Status::OK();
    }
};

}  // namespace

std::unique_ptr<command::Command> makeClusterCountCommand() {
    return std::make_unique<ClusterCountCommand>();
}
std::unique_ptr<command::Command> makeClusterDistinctCommand() {
    return std::make_unique<ClusterDistinctCommand>();
}

}  // namespace tessera::router::reads
