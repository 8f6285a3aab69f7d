// Database-level commands: listDatabases, dropDatabase, dbStats.

#include "command/registry.h"
#include "command/reply_util.h"
#include "query/matcher.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

struct DatabaseTotals {
    int64_t collections = 0;
    int64_t objects = 0;
    int64_t dataSize = 0;
    int64_t storageSize = 0;
    int64_t indexes = 0;
    int64_t indexSize = 0;
};

// With `opCtx` (dbStats), a shard's collections count only what the shard owns (when it keeps
// that apart, O(1): OwnershipFilter::ownedTotals).
DatabaseTotals totalsFor(storage::Engine& engine, std::string_view db,
                         OperationContext* opCtx = nullptr) {
    DatabaseTotals t;
    for (const storage::CollectionPtr& coll : engine.listCollections(db)) {
        storage::CollectionStats s = engine.stats(*coll);
        if (opCtx) {
            auto filter = opCtx->ownershipFilter(coll->ns());
            if (filter.isOK() && filter.getValue()) {
                if (auto owned = filter.getValue()->ownedTotals(engine, *coll)) {
                    s.count = owned->count;
                    s.dataSize = owned->bytes;
                }
            }
        }
        ++t.collections;
        t.objects += s.count;
        t.dataSize += s.dataSize;
        t.storageSize += s.storageSize;
        t.indexes += static_cast<int64_t>(coll->indexes.size());
        for (const auto& [name, size] : s.indexSizes) t.indexSize += size;
    }
    return t;
}

class ListDatabasesCommand : public Command {
  public:
    std::string_view name() const override { return "listDatabases"; }
    bool adminOnly() const override { return true; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        storage::Engine& engine = *opCtx.service->engine;
        ASSIGN_OR_RETURN(bool nameOnly, boolArgument(request.body["nameOnly"], "listDatabases"));
        bson::BsonElement filter = request.body["filter"];
        if (!filter.eoo() && !filter.isObject()) {
            return expectType(filter, bson::BsonType::Object, "listDatabases");
        }
        // The filter may only use name, sizeOnDisk and empty; it is applied to the entries.
        std::unique_ptr<query::Matcher> matcher;
        if (filter.isObject()) {
            ASSIGN_OR_RETURN(matcher, query::Matcher::parse(filter.objValue()));
        }
        int64_t totalSize = 0;
        reply.startArray("databases");
        size_t i = 0;
        for (const std::string& db : engine.listDatabases()) {
            bson::BsonBuilder entry;
            entry.append("name", db);
            int64_t size = engine.approximateDiskBytes(db);
            if (!nameOnly) {
                entry.appendInt64("sizeOnDisk", size);
                entry.appendBool("empty", totalsFor(engine, db).objects == 0);
            }
            bson::BsonObj doc = entry.obj();
            if (matcher && !matcher->matches(doc)) continue;
            totalSize += size;
            reply.appendObject(std::to_string(i++), doc);
        }
        reply.end();
        if (!nameOnly) {
            reply.appendInt64("totalSize", totalSize);
            reply.appendInt64("totalSizeMb", totalSize / (1024 * 1024));
        }
        return Status::OK();
    }
};

class DropDatabaseCommand : public Command {
  public:
    std::string_view name() const override { return "dropDatabase"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        if (request.db == "admin" || request.db == "local" || request.db == "config") {
            return Status(ErrorCodes::IllegalOperation,
                          "Dropping the '" + request.db + "' database is prohibited.");
        }
        TRY_STATUS(opCtx.service->engine->dropDatabase(request.db));
        reply.append("dropped", request.db);
        return Status::OK();
    }
};

class DbStatsCommand : public Command {
  public:
    std::string_view name() const override { return "dbStats"; }
    std::vector<std::string_view> aliases() const override { return {"dbstats"}; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        double scale = 1;
        if (request.body["scale"].isNumber()) {
            scale = request.body["scale"].numberDouble();
            if (scale <= 0)
                return Status(ErrorCodes::BadValue, "Scale factor must be greater than zero");
        }
        DatabaseTotals t = totalsFor(*opCtx.service->engine, request.db, &opCtx);
        reply.append("db", request.db);
        reply.appendInt64("collections", t.collections);
        reply.appendInt64("views", 0);
        reply.appendInt64("objects", t.objects);
        reply.appendDouble("avgObjSize", t.objects ? double(t.dataSize) / t.objects : 0.0);
        reply.appendDouble("dataSize", t.dataSize / scale);
        reply.appendDouble("storageSize", t.storageSize / scale);
        reply.appendInt64("indexes", t.indexes);
        reply.appendDouble("indexSize", t.indexSize / scale);
        reply.appendDouble("totalSize", (t.storageSize + t.indexSize) / scale);
        reply.appendDouble("scaleFactor", scale);
        return Status::OK();
    }
};

}  // namespace

void registerDatabaseCommands(CommandRegistry& registry) {
    registry.add(std::make_unique<ListDatabasesCommand>());
    registry.add(std::make_unique<DropDatabaseCommand>());
    registry.add(std::make_unique<DbStatsCommand>());
}

}  // namespace tessera::command
