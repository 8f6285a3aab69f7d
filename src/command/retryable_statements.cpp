#include "command/retryable_statements.h"

#include "base/error_codes.h"
#include "command/command.h"

namespace tessera::command {

bson::BsonObj StatementResult::toBson() const {
    bson::BsonBuilder b;
    b.appendInt64("n", n);
    b.appendInt64("nModified", nModified);
    if (!upsertedId.isEmpty()) b.appendElementAs(upsertedId.firstElement(), "upserted");
    return b.obj();
}

StatementResult StatementResult::fromBson(bson::BsonView doc) {
    StatementResult r;
    r.n = doc["n"].numberLong();
    r.nModified = doc["nModified"].numberLong();
    if (bson::BsonElement u = doc["upserted"]; !u.eoo()) {
        bson::BsonBuilder id;
        id.appendElementAs(u, "_id");
        r.upsertedId = id.obj();
    }
    return r;
}

StatusWith<std::vector<int32_t>> statementIds(const CommandRequest& request, size_t count) {
    std::vector<int32_t> ids;
    ids.reserve(count);
    bson::BsonElement given = request.body["stmtIds"];
    if (given.eoo()) {
        for (size_t i = 0; i < count; ++i) ids.push_back(static_cast<int32_t>(i));
        return ids;
    }
    if (!given.isArray()) {
        return Status(ErrorCodes::TypeMismatch, "stmtIds must be an array of statement ids");
    }
    for (bson::BsonElement e : given.objValue()) {
        if (e.type() != bson::BsonType::Int32 || e.numberInt() < 0) {
            return Status(
                ErrorCodes::TypeMismatch,
                "stmtIds must hold non-negative int statement ids, found " + e.toString(false));
        }
        ids.push_back(e.numberInt());
    }
    if (ids.size() != count) {
        return Status(ErrorCodes::InvalidLength,
                      "Number of statement ids must match the number of batch entries: " +
                          std::to_string(ids.size()) + " ids for " + std::to_string(count) +
                          " statements");
    }
    return ids;
}

void appendRetriedStatementIds(bson::BsonBuilder& reply, const std::vector<int32_t>& ids) {
    if (ids.empty()) return;
    bson::BsonArrayBuilder a;
    for (int32_t id : ids) a.append(id);
    reply.appendArray("retriedStmtIds", a.arr());
}

}  // namespace tessera::command
