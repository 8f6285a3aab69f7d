#include "txn/session_records.h"

#include "bson/bson_builder.h"
#include "bson/validate.h"
#include "storage/engine.h"
#include "storage/read_snapshot.h"
#include "storage/transaction.h"

namespace tessera::txn {

bson::BsonObj transactionRecordDelete(const std::string& lsid) {
    bson::BsonBuilder cmd;
    cmd.append("delete", kTransactionsCollection);
    cmd.startArray("deletes");
    cmd.startObject("0");
    cmd.startObject("q").startObject("_id").appendBinary("id", 4, lsid).end().end();
    cmd.appendInt32("limit", 1);
    cmd.end();
    cmd.end();
    return cmd.obj();
}

size_t restoreTransactionRecords(storage::Engine& engine, TransactionTable& table) {
    storage::CollectionPtr coll =
        engine.getCollection("config." + std::string(kTransactionsCollection));
    if (!coll) return 0;
    auto snapshot = engine.snapshot();
    auto cursor = snapshot->scan(*coll);
    size_t n = 0;
    while (auto rec = cursor->next()) {
        bson::BsonView doc = rec->doc;
        bson::BsonElement id = doc["_id"];
        if (!id.isObject()) continue;
        bson::BsonElement lsid = id.objValue()["id"];
        bson::BsonElement txn = doc["txnNum"];
        bson::BsonElement result = doc["result"];
        if (lsid.type() != bson::BsonType::BinData || !txn.isNumber() || !result.isObject()) {
            continue;
        }
        table.restore(std::string(lsid.binaryValue().data), txn.numberLong(), kWholeCommand,
                      result.objValue().copy());
        ++n;
    }
    return n;
}

std::string statementRecordKey(const std::string& lsid, StmtId stmtId) {
    return std::string(kStatementRecordPrefix) + lsid + "#" + std::to_string(stmtId);
}

std::string statementRecordValue(const std::string& lsid, int64_t txnNumber, StmtId stmtId,
                                 bson::BsonView result) {
    bson::BsonBuilder b;
    b.appendBinary("lsid", 4, lsid);
    b.appendInt64("txnNum", txnNumber);
    b.appendInt32("stmtId", stmtId);
    b.append("result", result);
    bson::BsonObj record = b.obj();
    return std::string(reinterpret_cast<const char*>(record.data()), record.size());
}

std::optional<StatementRecord> parseStatementRecord(std::string_view value) {
    if (value.size() < 5) return std::nullopt;
    const auto* bytes = reinterpret_cast<const uint8_t*>(value.data());
    if (!bson::validateBson(bytes, value.size()).isOK()) return std::nullopt;
    return parseStatementRecord(bson::BsonView(value.data()));
}

std::optional<StatementRecord> parseStatementRecord(bson::BsonView v) {
    bson::BsonElement lsid = v["lsid"];
    bson::BsonElement txn = v["txnNum"];
    bson::BsonElement stmtId = v["stmtId"];
    bson::BsonElement result = v["result"];
    if (lsid.type() != bson::BsonType::BinData || !txn.isNumber() || !stmtId.isNumber() ||
        !result.isObject()) {
        return std::nullopt;
    }
    return StatementRecord{std::string(lsid.binaryValue().data), txn.numberLong(),
                           stmtId.numberInt(), result.objValue().copy()};
}

size_t restoreStatementRecords(storage::Engine& engine, TransactionTable& table) {
    size_t n = 0;
    for (const auto& [key, value] : engine.sideRecords(kStatementRecordPrefix)) {
        std::optional<StatementRecord> r = parseStatementRecord(value);
        if (!r) continue;
        table.restore(r->lsid, r->txnNumber, r->stmtId, std::move(r->result));
        ++n;
    }
    return n;
}

size_t adoptStatementRecords(const std::vector<std::pair<std::string, std::string>>& records,
                             TransactionTable& table) {
    size_t n = 0;
    for (const auto& [key, value] : records) {
        if (!key.starts_with(kStatementRecordPrefix)) continue;
        std::optional<StatementRecord> r = parseStatementRecord(value);
        if (r && table.adopt(r->lsid, r->txnNumber, r->stmtId, std::move(r->result))) ++n;
    }
    return n;
}

void releaseMoveOnAbort(storage::Transaction& txn, std::weak_ptr<TransactionTable> table,
                        std::string lsid, int64_t txnNumber, StmtId stmtId, uint64_t token) {
    if (token == 0) return;
    txn.onAbort([table = std::move(table), lsid = std::move(lsid), txnNumber, stmtId, token] {
        if (auto t = table.lock()) t->releaseMove(lsid, txnNumber, stmtId, token);
    });
}

size_t holdStatementRecords(const std::vector<std::pair<std::string, std::string>>& records,
                            const std::weak_ptr<TransactionTable>& table,
                            storage::Transaction& txn) {
    std::shared_ptr<TransactionTable> t = table.lock();
    if (!t) return 0;
    size_t n = 0;
    for (const auto& [key, value] : records) {
        if (!key.starts_with(kStatementRecordPrefix)) continue;
        std::optional<StatementRecord> r = parseStatementRecord(value);
        if (!r) continue;
        uint64_t token = t->holdMove(r->lsid, r->txnNumber, r->stmtId);
        if (token == 0) continue;
        releaseMoveOnAbort(txn, table, r->lsid, r->txnNumber, r->stmtId, token);
        ++n;
    }
    return n;
}

Status forgetStatementRecords(storage::Engine& engine, const std::string& lsid) {
    // Every key of the session starts with this (an lsid is 16 bytes: no other session's
    // key has it as a prefix).
    std::string prefix = std::string(kStatementRecordPrefix) + lsid + "#";
    std::vector<std::pair<std::string, std::string>> deletes;
    for (auto& [key, value] : engine.sideRecords(prefix)) deletes.emplace_back(key, std::string());
    if (deletes.empty()) return Status::OK();
    return engine.writeSideRecords(deletes, false);
}

bool isRetryableWriteCommand(std::string_view name) {
    return name == "insert" || name == "update" || name == "delete" || name == "findAndModify" ||
           name == "findandmodify" || name == "bulkWrite";
}

}  // namespace tessera::txn
