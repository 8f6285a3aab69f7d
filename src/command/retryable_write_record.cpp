#include "command/retryable_write_record.h"

#include <memory>
#include <string>

#include "command/exec/query_adapters.h"
#include "command/reply_util.h"
#include "command/service_entry_point.h"
#include "command/write_ops_util.h"
#include "query/matcher.h"
#include "txn/session_records.h"

namespace tessera::command {
namespace {

using Op = storage::WriteObserver::Op;

// What cmd_find_and_modify.cpp answers, rebuilt from the one write it made. Must stay in step
// with that command's reply (field order and types included): a retry after a restart is
// answered with these bytes.
struct FindAndModifyArgs {
    bool remove = false;
    bool returnNew = false;
    std::shared_ptr<exec::ProjectionStage::Fn> projection;  // null: no `fields`
};

std::optional<FindAndModifyArgs> parseFindAndModify(const CommandRequest& request) {
    bson::BsonView body = request.body;
    FindAndModifyArgs args;
    auto remove = boolArgument(body["remove"], "findAndModify");
    auto returnNew = boolArgument(body["new"], "findAndModify");
    auto fields = optionalObject(body, "fields", "findAndModify");
    // Invalid arguments fail the command before any write: no scope needed.
    if (!remove.isOK() || !returnNew.isOK() || !fields.isOK()) return std::nullopt;
    args.remove = remove.getValue();
    args.returnNew = returnNew.getValue();
    if (!fields.getValue().isEmpty()) {
        auto projection = exec::makeProjection(fields.getValue());
        if (!projection.isOK()) return std::nullopt;
        args.projection =
            std::make_shared<exec::ProjectionStage::Fn>(std::move(projection.getValue()));
    }
    return args;
}

bson::BsonObj findAndModifyReply(const FindAndModifyArgs& args, Op op, bson::BsonView before,
                                 bson::BsonView after) {
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
        if (!sw.isOK()) return errorReply(sw.getStatus());
        projected = std::move(sw.getValue());
        value = *projected;
    }
    if (value) {
        b.append("value", *value);
    } else {
        b.appendNull("value");
    }
    b.appendDouble("ok", 1.0);
    return b.obj();
}

}  // namespace

std::optional<StatementResult> StatementRecorder::executed(int32_t stmtId) const {
    std::optional<bson::BsonObj> result = _executed.find(stmtId);
    if (!result) return std::nullopt;
    return StatementResult::fromBson(*result);
}

void StatementRecorder::beginStatement(int32_t stmtId, Kind kind, bool recordable) {
    _current = Current{stmtId, kind, recordable, std::nullopt};
}

void StatementRecorder::endStatement(const Status& outcome) {
    if (_current && outcome.isOK() && _current->result) {
        _new[_current->stmtId] = std::move(*_current->result);
    }
    if (_current && _current->recordable && outcome.is(ErrorCodes::WouldChangeOwningShard)) {
        _moving.push_back(_current->stmtId);
    }
    _current.reset();
}

void StatementRecorder::onWrite(const storage::CollectionInfo&, Op op, bson::BsonView,
                                bson::BsonView after,
                                std::vector<std::pair<std::string, std::string>>* out) {
    if (!_current || !_current->recordable) return;
    StatementResult r;
    r.n = 1;
    if (_current->kind == Kind::kUpdate) {
        r.nModified = op == Op::kUpdate ? 1 : 0;
        if (op == Op::kInsert) {  // an update that inserts is an upsert
            bson::BsonBuilder id;
            id.appendElementAs(after["_id"], "_id");
            r.upsertedId = id.obj();
        }
    }
    // A write attempt that conflicts is retried and observed again: the last one is the one
    // that committed.
    _current->result = r.toBson();
    out->emplace_back(
        txn::statementRecordKey(_lsid, _current->stmtId),
        txn::statementRecordValue(_lsid, _txnNumber, _current->stmtId, *_current->result));
}

void FindAndModifyRecorder::onWrite(const storage::CollectionInfo&, Op op, bson::BsonView before,
                                    bson::BsonView after,
                                    std::vector<std::pair<std::string, std::string>>* out) {
    out->emplace_back(txn::statementRecordKey(_lsid, txn::kWholeCommand),
                      txn::statementRecordValue(_lsid, _txnNumber, txn::kWholeCommand,
                                                _reply(op, before, after)));
}

bson::BsonObj replayedWholeReply(const bson::BsonObj& recorded) {
    if (recorded.hasField("ok")) return recorded;
    bson::BsonBuilder b;
    b.appendElements(recorded);
    b.appendDouble("ok", 1.0);
    return b.obj();
}

std::unique_ptr<FindAndModifyRecorder> findAndModifyRecorder(const CommandRequest& request,
                                                             std::string lsid, int64_t txnNumber) {
    std::optional<FindAndModifyArgs> args = parseFindAndModify(request);
    if (!args) return nullptr;
    return std::make_unique<FindAndModifyRecorder>(
        std::move(lsid), txnNumber,
        [args = std::move(*args)](Op op, bson::BsonView before, bson::BsonView after) {
            return findAndModifyReply(args, op, before, after);
        });
}

}  // namespace tessera::command
