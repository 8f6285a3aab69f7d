#include "config/local_client.h"

#include "bson/bson_builder.h"
#include "net/remote_client.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

BsonObj LocalClient::run(std::string_view db, BsonView cmd) {
    return _entry.runCommand(db, cmd, nullptr);
}

StatusWith<BsonObj> LocalClient::runChecked(std::string_view db, BsonView cmd) {
    BsonObj reply = run(db, cmd);
    TRY_STATUS(net::replyStatus(reply));
    if (reply["writeErrors"].isArray()) {
        for (const bson::BsonElement& e : reply["writeErrors"].objValue()) {
            BsonView we = e.objValue();
            return Status(we["code"].numberInt(), std::string(we["errmsg"].stringValue()));
        }
    }
    return reply;
}

StatusWith<std::vector<BsonObj>> LocalClient::find(std::string_view coll, BsonView filter,
                                                   BsonView sort, int64_t limit) {
    BsonBuilder b;
    b.appendString("find", coll).appendObject("filter", filter);
    if (!sort.isEmpty()) b.appendObject("sort", sort);
    if (limit > 0) b.appendInt64("limit", limit);
    b.appendInt64("batchSize", 100000);
    ASSIGN_OR_RETURN(BsonObj reply, runChecked("config", b.obj()));
    std::vector<BsonObj> docs;
    for (;;) {
        BsonView cursor = reply["cursor"].objValue();
        bson::BsonElement batch = cursor["firstBatch"];
        if (batch.eoo()) batch = cursor["nextBatch"];
        if (batch.isArray()) {
            for (const bson::BsonElement& d : batch.objValue()) docs.push_back(d.objValue().copy());
        }
        int64_t id = cursor["id"].numberLong();
        if (id == 0) break;
        BsonBuilder more;
        more.appendInt64("getMore", id).appendString("collection", coll);
        ASSIGN_OR_RETURN(reply, runChecked("config", more.obj()));
    }
    return docs;
}

StatusWith<std::optional<BsonObj>> LocalClient::findOne(std::string_view coll, BsonView filter) {
    ASSIGN_OR_RETURN(std::vector<BsonObj> docs, find(coll, filter, BsonView(), 1));
    if (docs.empty()) return std::optional<BsonObj>();
    return std::optional<BsonObj>(docs.front());
}

Status LocalClient::insert(std::string_view coll, BsonView doc) {
    BsonBuilder b;
    b.appendString("insert", coll);
    b.startArray("documents").appendObject("0", doc).end();
    return runChecked("config", b.obj()).getStatus();
}

StatusWith<int64_t> LocalClient::update(std::string_view coll, BsonView query, BsonView update,
                                        bool upsert, bool multi) {
    BsonBuilder b;
    b.appendString("update", coll);
    b.startArray("updates")
        .startObject("0")
        .appendObject("q", query)
        .appendObject("u", update)
        .appendBool("upsert", upsert)
        .appendBool("multi", multi)
        .end()
        .end();
    ASSIGN_OR_RETURN(BsonObj reply, runChecked("config", b.obj()));
    return reply["n"].numberLong();
}

StatusWith<int64_t> LocalClient::remove(std::string_view coll, BsonView query, bool multi) {
    BsonBuilder b;
    b.appendString("delete", coll);
    b.startArray("deletes")
        .startObject("0")
        .appendObject("q", query)
        .appendInt32("limit", multi ? 0 : 1)
        .end()
        .end();
    ASSIGN_OR_RETURN(BsonObj reply, runChecked("config", b.obj()));
    return reply["n"].numberLong();
}

Status LocalClient::createIndex(std::string_view coll, BsonView key, std::string_view name,
                                bool unique) {
    BsonBuilder b;
    b.appendString("createIndexes", coll);
    b.startArray("indexes").startObject("0").appendObject("key", key).appendString("name", name);
    if (unique) b.appendBool("unique", true);
    b.end().end();
    return runChecked("config", b.obj()).getStatus();
}

}  // namespace tessera::config
