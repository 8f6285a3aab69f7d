#include "command/exec/find_request.h"

#include <array>

#include "command/generic_args.h"
#include "command/reply_util.h"
#include "command/write_ops_util.h"

namespace tessera::command::exec {

using bson::BsonType;

StatusWith<std::optional<int64_t>> nonNegativeArgument(bson::BsonView body, std::string_view field,
                                                       std::string_view command,
                                                       bool allowNegative) {
    ASSIGN_OR_RETURN(std::optional<int64_t> v, optionalInteger(body, field, command));
    if (v && *v < 0 && !allowNegative) {
        return Status(51024, "BSON field '" + std::string(field) +
                                 "' value must be >= 0, actual value '" + std::to_string(*v) + "'");
    }
    return v;
}

void appendCursor(bson::BsonBuilder& reply, std::string_view batchField,
                  bson::BsonArrayBuilder& batch, int64_t id, std::string_view ns) {
    reply.startObject("cursor");
    reply.appendArray(batchField, batch.arr());
    reply.appendInt64("id", id);
    reply.append("ns", ns);
    reply.end();
}

StatusWith<FindRequest> parseFindRequest(const CommandRequest& request, bson::BsonView body) {
    static constexpr std::array<std::string_view, 28> kKnown = {"find",
                                                                "filter",
                                                                "projection",
                                                                "sort",
                                                                "hint",
                                                                "skip",
                                                                "limit",
                                                                "batchSize",
                                                                "singleBatch",
                                                                "comment",
                                                                "maxTimeMS",
                                                                "readConcern",
                                                                "max",
                                                                "min",
                                                                "returnKey",
                                                                "showRecordId",
                                                                "tailable",
                                                                "oplogReplay",
                                                                "noCursorTimeout",
                                                                "awaitData",
                                                                "allowPartialResults",
                                                                "collation",
                                                                "allowDiskUse",
                                                                "let",
                                                                "readOnce",
                                                                "allowSpeculativeMajorityRead",
                                                                "term",
                                                                "includeQueryStatsMetrics"};
    FindRequest req;
    ASSIGN_OR_RETURN(req.coll, collectionName(body.firstElement(), "find"));
    for (auto e : body) {
        std::string_view f = e.fieldName();
        if (f == body.firstElement().fieldName() || isGenericArgument(f)) continue;
        if (std::find(kKnown.begin(), kKnown.end(), f) == kKnown.end()) {
            return Status(40415, "BSON field 'find." + std::string(f) + "' is an unknown field.");
        }
    }
    ASSIGN_OR_RETURN(bson::BsonView filter, optionalObject(body, "filter", "find"));
    ASSIGN_OR_RETURN(bson::BsonView sort, optionalObject(body, "sort", "find"));
    ASSIGN_OR_RETURN(bson::BsonView projection, optionalObject(body, "projection", "find"));
    req.query.filter = filter.copy();
    req.query.sort = sort.copy();
    req.query.projection = projection.copy();
    ASSIGN_OR_RETURN(req.query.hint, parseHint(body["hint"]));
    ASSIGN_OR_RETURN(req.query.let, parseLet(body, "find"));

    ASSIGN_OR_RETURN(auto skip, nonNegativeArgument(body, "skip", "find"));
    req.query.skip = skip.value_or(0);
    ASSIGN_OR_RETURN(auto limit, nonNegativeArgument(body, "limit", "find", true));
    ASSIGN_OR_RETURN(req.batchSize, nonNegativeArgument(body, "batchSize", "find"));
    ASSIGN_OR_RETURN(req.singleBatch, boolArgument(body["singleBatch"], "find"));
    if (limit && *limit < 0) {
        req.singleBatch = true;
        *limit = -*limit;
    }
    if (limit && *limit > 0) req.query.limit = *limit;
    ASSIGN_OR_RETURN(req.noCursorTimeout, boolArgument(body["noCursorTimeout"], "find"));
    if (bson::BsonElement c = body["collation"]) {
        ASSIGN_OR_RETURN(req.query.collator, query::Collator::fromArgument(c));
        bson::BsonBuilder cb;
        cb.appendElementAs(c, "collation");
        req.collationArg = cb.obj();
    }

    for (std::string_view f : {"tailable", "awaitData", "returnKey", "showRecordId"}) {
        ASSIGN_OR_RETURN(bool on, boolArgument(body[f], "find"));
        if (on) {
            return Status(ErrorCodes::NotImplemented,
                          "find option '" + std::string(f) + "' is not supported");
        }
    }
    for (std::string_view f : {"min", "max"}) {
        bson::BsonElement e = body[f];
        if (e && !(e.type() == BsonType::Object && e.objValue().isEmpty())) {
            return Status(ErrorCodes::NotImplemented,
                          "find option '" + std::string(f) + "' is not supported");
        }
    }
    (void)request;
    return req;
}

}  // namespace tessera::command::exec
