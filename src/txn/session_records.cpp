#include "txn/session_records.h"

#include "bson/bson_builder.h"
#include "storage/engine.h"
#include "storage/read_snapshot.h"

namespace tessera::txn {

bson::BsonObj transactionRecordUpsert(const std::string& lsid, int64_t txnNumber,
                                      const bson::BsonObj& reply, Timestamp lastWrite,
                                      int64_t lastWriteDateMillis) {
    bson::BsonBuilder id;
    id.appendBinary("id", 4, lsid);
    bson::BsonObj idObj = id.obj();
    bson::BsonBuilder u;
    u.append("_id", idObj);
    u.appendInt64("txnNum", txnNumber);
    u.startObject("lastWriteOpTime")
        .appendTimestamp("ts", lastWrite.value)
        .appendInt64("t", -1)
        .end();
    u.appendDate("lastWriteDate", lastWriteDateMillis);
    u.append("result", reply);
    bson::BsonBuilder cmd;
    cmd.append("update", kTransactionsCollection);
    cmd.startArray("updates");
    cmd.startObject("0");
    cmd.startObject("q").append("_id", idObj).startObject("txnNum").appendInt64("$lt", txnNumber);
    cmd.end().end();
    cmd.append("u", u.obj());
    cmd.append("upsert", true);
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
        table.restore(std::string(lsid.binaryValue().data), txn.numberLong(),
                      result.objValue().copy());
        ++n;
    }
    return n;
}

bool isRetryableWriteCommand(std::string_view name) {
    return name == "insert" || name == "update" || name == "delete" || name == "findAndModify" ||
           name == "findandmodify" || name == "bulkWrite";
}

}  // namespace tessera::txn
