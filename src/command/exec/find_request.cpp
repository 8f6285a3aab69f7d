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
                  bson::BsonArrayBuilder& batch, int64_t id, std::string_view ns,
                  std::optional<Timestamp> atClusterTime) {
    reply.startObject("cursor");
    reply.appendArray(batchField, batch.arr());
    reply.appendInt64("id", id);
    reply.append("ns", ns);
    if (atClusterTime) reply.appendTimestamp("atClusterTime", atClusterTime->value);
    reply.end();
}

namespace {

constexpr std::array<std::string_view, 28> kFindFields = {"find",
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

// The bit of a known find field in the set of fields present (checked at compile time).
consteval uint32_t bit(std::string_view field) {
    for (size_t i = 0; i < kFindFields.size(); ++i) {
        if (kFindFields[i] == field) return uint32_t{1} << i;
    }
    throw "not a find field";
}

}  // namespace

StatusWith<FindRequest> parseFindRequest(const CommandRequest& request, bson::BsonView body) {
    FindRequest req;
    ASSIGN_OR_RETURN(req.coll, collectionName(body.firstElement(), "find"));
    // One pass over the body: unknown fields are refused, and the fields present are noted so
    // that the (usually many) absent options cost no lookup.
    uint32_t present = 0;
    for (auto e : body) {
        std::string_view f = e.fieldName();
        if (f == body.firstElement().fieldName() || isGenericArgument(f)) continue;
        auto known = std::find(kFindFields.begin(), kFindFields.end(), f);
        if (known == kFindFields.end()) {
            return Status(40415, "BSON field 'find." + std::string(f) + "' is an unknown field.");
        }
        present |= uint32_t{1} << (known - kFindFields.begin());
    }
    // maxTimeMS and comment are generic arguments, so `present` never has them.
    if (present & bit("filter")) {
        ASSIGN_OR_RETURN(bson::BsonView filter, optionalObject(body, "filter", "find"));
        req.query.filter = filter.copy();
    }
    if (present & bit("sort")) {
        ASSIGN_OR_RETURN(bson::BsonView sort, optionalObject(body, "sort", "find"));
        req.query.sort = sort.copy();
    }
    if (present & bit("projection")) {
        ASSIGN_OR_RETURN(bson::BsonView projection, optionalObject(body, "projection", "find"));
        req.query.projection = projection.copy();
    }
    if (present & bit("hint")) {
        ASSIGN_OR_RETURN(req.query.hint, parseHint(body["hint"]));
    }
    if (present & bit("let")) {
        ASSIGN_OR_RETURN(req.query.let, parseLet(body, "find"));
    }

    if (present & bit("skip")) {
        ASSIGN_OR_RETURN(auto skip, nonNegativeArgument(body, "skip", "find"));
        req.query.skip = skip.value_or(0);
    }
    std::optional<int64_t> limit;
    if (present & bit("limit")) {
        ASSIGN_OR_RETURN(limit, nonNegativeArgument(body, "limit", "find", true));
    }
    if (present & bit("batchSize")) {
        ASSIGN_OR_RETURN(req.batchSize, nonNegativeArgument(body, "batchSize", "find"));
    }
    if (present & bit("singleBatch")) {
        ASSIGN_OR_RETURN(req.singleBatch, boolArgument(body["singleBatch"], "find"));
    }
    if (limit && *limit < 0) {
        req.singleBatch = true;
        *limit = -*limit;
    }
    if (limit && *limit > 0) req.query.limit = *limit;
    if (present & bit("noCursorTimeout")) {
        ASSIGN_OR_RETURN(req.noCursorTimeout, boolArgument(body["noCursorTimeout"], "find"));
    }
    if (present & bit("collation")) {
        bson::BsonElement c = body["collation"];
        ASSIGN_OR_RETURN(req.query.collator, query::Collator::fromArgument(c));
        bson::BsonBuilder cb;
        cb.appendElementAs(c, "collation");
        req.collationArg = cb.obj();
    }

    constexpr uint32_t kUnsupported =
        bit("tailable") | bit("awaitData") | bit("returnKey") | bit("showRecordId");
    if (present & kUnsupported) {
        for (std::string_view f : {"tailable", "awaitData", "returnKey", "showRecordId"}) {
            ASSIGN_OR_RETURN(bool on, boolArgument(body[f], "find"));
            if (on) {
                return Status(ErrorCodes::NotImplemented,
                              "find option '" + std::string(f) + "' is not supported");
            }
        }
    }
    if (present & (bit("min") | bit("max"))) {
        for (std::string_view f : {"min", "max"}) {
            bson::BsonElement e = body[f];
            if (e && !(e.type() == BsonType::Object && e.objValue().isEmpty())) {
                return Status(ErrorCodes::NotImplemented,
                              "find option '" + std::string(f) + "' is not supported");
            }
        }
    }
    (void)request;
    return req;
}

}  // namespace tessera::command::exec
