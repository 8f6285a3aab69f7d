#include "shard/retryable_write_record.h"

#include <memory>
#include <string>

#include "command/exec/query_adapters.h"
#include "command/reply_util.h"
#include "command/service_entry_point.h"
#include "command/write_ops_util.h"
#include "query/matcher.h"

namespace tessera::shard {
namespace {

using command::CommandRequest;
using Op = storage::WriteObserver::Op;

std::string recordBytes(int64_t txnNumber, const bson::BsonObj& reply) {
    bson::BsonBuilder b;
    b.appendInt64("txnNum", txnNumber);
    b.append("reply", reply);
    bson::BsonObj record = b.obj();
    return std::string(reinterpret_cast<const char*>(record.data()), record.size());
}

// insert/update/delete with exactly one statement: {n, nModified?, upserted?, ok} (an update
// that inserts is an upsert).
std::string crudReply(std::string_view cmd, Op op, bson::BsonView after, int64_t txnNumber) {
    bson::BsonBuilder b;
    b.appendInt32("n", 1);
    if (cmd == "update") {
        b.appendInt32("nModified", op == Op::kUpdate ? 1 : 0);
        if (op == Op::kInsert) {
            b.startArray("upserted").startObject("0").appendInt32("index", 0);
            b.appendElementAs(after["_id"], "_id");
            b.end().end();
        }
    }
    b.appendDouble("ok", 1.0);
    return recordBytes(txnNumber, b.obj());
}

bool isSingleStatementCrud(const CommandRequest& request, std::string_view name) {
    std::string_view field = name == "insert"   ? "documents"
                             : name == "update" ? "updates"
                             : name == "delete" ? "deletes"
                                                : "";
    if (field.empty()) return false;
    auto statements = command::writeStatements(request, field);
    return statements.isOK() && statements.getValue().size() == 1;
}

// What cmd_find_and_modify.cpp answers, rebuilt from the one write it made. Must stay in step
// with that command's reply (field order and types included): a retry after a restart is
// answered with these bytes.
struct FindAndModifyArgs {
    bool remove = false;
    bool returnNew = false;
    std::shared_ptr<command::exec::ProjectionStage::Fn> projection;  // null: no `fields`
};

std::optional<FindAndModifyArgs> parseFindAndModify(const CommandRequest& request) {
    bson::BsonView body = request.body;
    FindAndModifyArgs args;
    auto remove = command::boolArgument(body["remove"], "findAndModify");
    auto returnNew = command::boolArgument(body["new"], "findAndModify");
    auto fields = command::optionalObject(body, "fields", "findAndModify");
    // Invalid arguments fail the command before any write: no scope needed.
    if (!remove.isOK() || !returnNew.isOK() || !fields.isOK()) return std::nullopt;
    args.remove = remove.getValue();
    args.returnNew = returnNew.getValue();
    if (!fields.getValue().isEmpty()) {
        auto projection = command::exec::makeProjection(fields.getValue());
        if (!projection.isOK()) return std::nullopt;
        args.projection =
            std::make_shared<command::exec::ProjectionStage::Fn>(std::move(projection.getValue()));
    }
    return args;
}

std::string findAndModifyReply(const FindAndModifyArgs& args, Op op, bson::BsonView before,
                               bson::BsonView after, int64_t txnNumber) {
    bson::BsonBuilder b;
    b.startObject("lastErrorObject");
    b.appendNumber("n", 1);
    std::optional<bson::BsonView> value;
    if (args.remove) {
        value = before;
    } else {
        b.append("updatedExisting", op == Op::kUpdate);
        if (op == Op::kInsert) b.appendElementAs(after["_id"], "upserted");
        // An upsert has no pre-image.
        if (args.returnNew) {
            value = after;
        } else if (op == Op::kUpdate) {
            value = before;
        }
    }
    b.end();
    std::optional<bson::BsonObj> projected;
    if (value && args.projection) {
        auto sw = (*args.projection)(*value, query::MatchDetails{});
        // The command fails after its write with this error: that is its reply.
        if (!sw.isOK()) return recordBytes(txnNumber, command::errorReply(sw.getStatus()));
        projected = std::move(sw.getValue());
        value = *projected;
    }
    if (value) {
        b.append("value", *value);
    } else {
        b.appendNull("value");
    }
    b.appendDouble("ok", 1.0);
    return recordBytes(txnNumber, b.obj());
}

}  // namespace

std::unique_ptr<RetryableWriteRecorder> singleWriteRecorder(const command::OperationContext& opCtx,
                                                            const CommandRequest& request,
                                                            std::string_view commandName,
                                                            std::string key, int64_t txnNumber) {
    // failCommand's writeConcernError is appended to the reply after the command ran; the
    // record could not hold it, so such a reply is persisted after the command.
    if (opCtx.replyGetsWriteConcernError) return nullptr;
    if (commandName == "findAndModify") {
        // One document by definition.
        std::optional<FindAndModifyArgs> args = parseFindAndModify(request);
        if (!args) return nullptr;
        return std::make_unique<RetryableWriteRecorder>(
            std::move(key), [args = std::move(*args), txnNumber](Op op, bson::BsonView before,
                                                                 bson::BsonView after) {
                return findAndModifyReply(args, op, before, after, txnNumber);
            });
    }
    if (!isSingleStatementCrud(request, commandName)) return nullptr;
    return std::make_unique<RetryableWriteRecorder>(
        std::move(key),
        [cmd = std::string(commandName), txnNumber](Op op, bson::BsonView, bson::BsonView after) {
            return crudReply(cmd, op, after, txnNumber);
        });
}

}  // namespace tessera::shard
