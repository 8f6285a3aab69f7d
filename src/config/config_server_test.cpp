// The config server on a real local storage engine, without shards: startup, the catalog
// commands that need no shard (split at a middle key, merge, balancer settings), error paths,
// and the recovery of a finished coordinator.
#include "config/config_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "bson/bson_builder.h"
#include "command/cursor_manager.h"
#include "command/registry.h"
#include "command/service_entry_point.h"
#include "config/catalog_docs.h"
#include "config/config_server_impl.h"
#include "config/coordinator_state.h"
#include "storage/engine.h"
#include "storage/storage_test_util.h"

namespace tessera::config {
namespace {

using bson::BsonObj;
using bson::fromJson;

class ConfigServerTest : public ::testing::Test {
  protected:
    void SetUp() override {
        storage::EngineOptions options;
        options.dbpath = _dir.path();
        options.blockCacheBytes = size_t{8} << 20;
        auto sw = storage::Engine::open(options);
        ASSERT_TRUE(sw.isOK()) << sw.getStatus().toString();
        engine = std::move(sw.getValue());
        cursors = std::make_unique<command::CursorManager>();
        command::registerAllCommands(registry);
        registerConfigServerCommands(registry);
        service.engine = engine.get();
        service.cursors = cursors.get();
        service.registry = &registry;
        service.host = "127.0.0.1:29100";
        service.port = 29100;
        service.role = command::ClusterRole::kConfig;
        startServer();
    }

    void startServer() {
        server = std::make_unique<ConfigServer>(service);
        service.roleState = server.get();
        Status s = server->startup();
        ASSERT_TRUE(s.isOK()) << s.toString();
    }

    void TearDown() override {
        server.reset();
        cursors.reset();
        engine.reset();
    }

    BsonObj run(std::string_view json, std::string_view db = "admin") {
        return command::ServiceEntryPoint(service).runCommand(db, fromJson(json), nullptr);
    }
    BsonObj ok(std::string_view json, std::string_view db = "admin") {
        BsonObj r = run(json, db);
        EXPECT_EQ(r["ok"].numberDouble(), 1.0) << json << " -> " << r.toJson();
        return r;
    }
    std::vector<BsonObj> find(std::string_view coll, std::string_view filter = "{}",
                              std::string_view sort = "{}") {
        bson::BsonBuilder b;
        b.appendString("find", coll)
            .appendObject("filter", fromJson(filter))
            .appendObject("sort", fromJson(sort));
        BsonObj r = command::ServiceEntryPoint(service).runCommand("config", b.obj(), nullptr);
        std::vector<BsonObj> out;
        for (const auto& d : r["cursor"].objValue()["firstBatch"].objValue()) {
            out.push_back(d.objValue().copy());
        }
        return out;
    }

    // A sharded collection db.c {a: 1} with chunks [MinKey, 0) 1|0 and [0, MaxKey) 1|1 on s0.
    placement::Uuid seedCollection() {
        CollectionRecord coll;
        coll.ns = "db.c";
        coll.gen = {bson::ObjectId::generate(), Timestamp::fromParts(10, 1)};
        coll.uuid = generateUuid();
        coll.key = fromJson(R"({"a": 1})");
        insert("collections", makeCollectionDoc(coll));
        ChunkRecord c1;
        c1.id = bson::ObjectId::generate();
        c1.min = fromJson(R"({"a": {"$minKey": 1}})");
        c1.max = fromJson(R"({"a": 0})");
        c1.shard = "s0";
        c1.major = 1;
        ChunkRecord c2 = c1;
        c2.id = bson::ObjectId::generate();
        c2.min = c1.max;
        c2.max = fromJson(R"({"a": {"$maxKey": 1}})");
        c2.minor = 1;
        insert("chunks", makeChunkDoc(c1, coll.uuid));
        insert("chunks", makeChunkDoc(c2, coll.uuid));
        return coll.uuid;
    }

    void insert(std::string_view coll, const BsonObj& doc) {
        bson::BsonBuilder b;
        b.appendString("insert", coll);
        b.startArray("documents").appendObject("0", doc).end();
        BsonObj r = command::ServiceEntryPoint(service).runCommand("config", b.obj(), nullptr);
        ASSERT_EQ(r["ok"].numberDouble(), 1.0) << r.toJson();
        ASSERT_FALSE(r.hasField("writeErrors")) << r.toJson();
    }

    std::unique_ptr<storage::Engine> engine;
    std::unique_ptr<command::CursorManager> cursors;
    command::CommandRegistry registry;
    command::ServiceContext service;
    std::unique_ptr<ConfigServer> server;

  private:
    storage::test::TempDir _dir;  // removed when the fixture is destroyed
};

TEST_F(ConfigServerTest, StartupCreatesVersionOnceWithoutCurrentVersion) {
    auto docs = find("version");
    ASSERT_EQ(docs.size(), 1u);
    EXPECT_EQ(docs[0]["_id"].numberInt(), 1);
    EXPECT_EQ(docs[0]["clusterId"].type(), bson::BsonType::ObjectId);
    EXPECT_FALSE(docs[0].hasField("currentVersion"));
    bson::ObjectId id = docs[0]["clusterId"].oidValue();
    server.reset();
    startServer();
    docs = find("version");
    ASSERT_EQ(docs.size(), 1u);
    EXPECT_EQ(docs[0]["clusterId"].oidValue(), id);
}

TEST_F(ConfigServerTest, CommandsAreAdminOnly) {
    BsonObj r = run(R"({"_configsvrBalancerStatus": 1})", "test");
    EXPECT_EQ(r["code"].numberInt(), static_cast<int>(ErrorCodes::Unauthorized));
}

TEST_F(ConfigServerTest, BalancerStartStopPersistInSettings) {
    ok(R"({"_configsvrBalancerStop": 1})");
    auto docs = find("settings", R"({"_id": "balancer"})");
    ASSERT_EQ(docs.size(), 1u);
    EXPECT_TRUE(docs[0]["stopped"].boolValue());
    EXPECT_EQ(docs[0]["mode"].stringValue(), "off");
    BsonObj status = ok(R"({"_configsvrBalancerStatus": 1})");
    EXPECT_EQ(status["mode"].stringValue(), "off");
    // A round that began before the stop finishes; no new one starts (poll with a deadline).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (status["inBalancerRound"].boolValue() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        status = ok(R"({"_configsvrBalancerStatus": 1})");
    }
    EXPECT_FALSE(status["inBalancerRound"].boolValue());
    EXPECT_EQ(status["numBalancerRounds"].type(), bson::BsonType::Int64);
    ok(R"({"_configsvrBalancerStart": 1})");
    docs = find("settings", R"({"_id": "balancer"})");
    EXPECT_FALSE(docs[0]["stopped"].boolValue());
    EXPECT_EQ(ok(R"({"_configsvrBalancerStatus": 1})")["mode"].stringValue(), "full");
}

TEST_F(ConfigServerTest, CreateDatabaseErrors) {
    BsonObj r = run(R"({"_configsvrCreateDatabase": "admin"})");
    EXPECT_EQ(r["code"].numberInt(), static_cast<int>(ErrorCodes::InvalidOptions));
    r = run(R"({"_configsvrCreateDatabase": "test"})");
    EXPECT_EQ(r["code"].numberInt(), static_cast<int>(ErrorCodes::ShardNotFound));
    EXPECT_TRUE(find("databases").empty());
}

TEST_F(ConfigServerTest, CreateDatabaseIsIdempotentAndCaseSensitive) {
    placement::DatabaseVersion v(generateUuid(), Timestamp::fromParts(3, 1), 1);
    insert("databases", makeDatabaseDoc("Test", "s0", v));
    BsonObj r = ok(R"({"_configsvrCreateDatabase": "Test"})");
    EXPECT_EQ(r["database"].objValue()["primary"].stringValue(), "s0");
    r = run(R"({"_configsvrCreateDatabase": "test"})");
    EXPECT_EQ(r["code"].numberInt(), static_cast<int>(ErrorCodes::DatabaseDifferCase));
}

TEST_F(ConfigServerTest, AddShardFailsForUnreachableHost) {
    BsonObj r = run(R"({"_configsvrAddShard": "127.0.0.1:29199"})");
    EXPECT_EQ(r["ok"].numberDouble(), 0.0);
    EXPECT_TRUE(find("shards").empty());
    r = run(R"({"_configsvrAddShard": "nocolon"})");
    EXPECT_EQ(r["ok"].numberDouble(), 0.0);
}

TEST_F(ConfigServerTest, SplitAtMiddleThenMergeBack) {
    seedCollection();
    ok(R"({"_configsvrSplitChunk": "db.c", "middle": {"a": 50}})");
    auto chunks = find("chunks", "{}", R"({"min": 1})");
    ASSERT_EQ(chunks.size(), 3u);
    EXPECT_EQ(chunks[1]["max"].objValue()["a"].numberInt(), 50);
    // s0 owns the collection version 1|1: the split bumps the major (2|1, 2|2).
    EXPECT_EQ(Timestamp{chunks[1]["lastmod"].timestampValue()}, Timestamp::fromParts(2, 1));
    EXPECT_EQ(Timestamp{chunks[2]["lastmod"].timestampValue()}, Timestamp::fromParts(2, 2));
    EXPECT_EQ(find("changelog", R"({"what": "split"})").size(), 1u);

    // Splitting at an existing bound is refused.
    BsonObj r = run(R"({"_configsvrSplitChunk": "db.c", "middle": {"a": 50}})");
    EXPECT_EQ(r["ok"].numberDouble(), 0.0);
    // find on a ranged key needs the shard (unreachable here); hashed-only checks need none.
    r = run(R"({"_configsvrSplitChunk": "db.c", "middle": {"a": 1}, "find": {"a": 1}})");
    EXPECT_EQ(r["code"].numberInt(), static_cast<int>(ErrorCodes::BadValue));

    ok(R"({"_configsvrMergeChunks": "db.c", "bounds": [{"a": 0}, {"a": {"$maxKey": 1}}]})");
    chunks = find("chunks", "{}", R"({"min": 1})");
    ASSERT_EQ(chunks.size(), 2u);
    EXPECT_EQ(Timestamp{chunks[1]["lastmod"].timestampValue()}, Timestamp::fromParts(3, 0));
    EXPECT_EQ(find("changelog", R"({"what": "merge"})").size(), 1u);

    r = run(R"({"_configsvrMergeChunks": "db.c", "bounds": [{"a": 0}, {"a": 7}]})");
    EXPECT_EQ(r["code"].numberInt(), static_cast<int>(ErrorCodes::IllegalOperation));
    r = run(R"({"_configsvrSplitChunk": "db.none", "middle": {"a": 1}})");
    EXPECT_EQ(r["code"].numberInt(), static_cast<int>(ErrorCodes::NamespaceNotSharded));
}

// The balancer decides a merge from a snapshot of the chunks; a split that lands between the
// decision and the merge is the user's, and the stale decision must not undo it.
TEST_F(ConfigServerTest, MergeOfStaleDecisionLeavesALaterSplit) {
    seedCollection();
    auto chunks = find("chunks", "{}", R"({"min": 1})");
    ASSERT_EQ(chunks.size(), 2u);
    std::vector<bson::ObjectId> decided;
    for (const BsonObj& c : chunks) decided.push_back(c["_id"].oidValue());
    ok(R"({"_configsvrSplitChunk": "db.c", "middle": {"a": 50}})");
    const BsonObj lo = fromJson(R"({"a": {"$minKey": 1}})");
    const BsonObj hi = fromJson(R"({"a": {"$maxKey": 1}})");
    Status s = server->impl().mergeChunks("db.c", lo, hi, &decided);
    ASSERT_TRUE(s.isOK()) << s.toString();
    EXPECT_EQ(find("chunks").size(), 3u);
    EXPECT_TRUE(find("changelog", R"({"what": "merge"})").empty());
    // A decision taken on the current chunks merges them.
    decided.clear();
    for (const BsonObj& c : find("chunks")) decided.push_back(c["_id"].oidValue());
    s = server->impl().mergeChunks("db.c", lo, hi, &decided);
    ASSERT_TRUE(s.isOK()) << s.toString();
    EXPECT_EQ(find("chunks").size(), 1u);
}

TEST_F(ConfigServerTest, MoveRangeToUnknownShardFailsWithoutCoordinator) {
    seedCollection();
    BsonObj r = run(R"({"_configsvrMoveRange": "db.c", "min": {"a": 0}, "toShard": "nope"})");
    EXPECT_EQ(r["code"].numberInt(), static_cast<int>(ErrorCodes::ShardNotFound));
    EXPECT_TRUE(find("system.coordinators").empty());
    // The chunk is already on s0: a move there is a no-op (no shard contacted).
    insert("shards", makeShardDoc("s0", "127.0.0.1:29198", Timestamp::fromParts(1, 0)));
    ok(R"({"_configsvrMoveRange": "db.c", "min": {"a": 0}, "toShard": "s0"})");
    EXPECT_TRUE(find("system.coordinators").empty());
}

TEST_F(ConfigServerTest, RecoveryForgetsACleanedCoordinator) {
    server.reset();
    MoveRangeState s;
    s.ns = "db.c";
    s.min = fromJson(R"({"a": 0})");
    s.max = fromJson(R"({"a": 10})");
    s.id = moveRangeCoordinatorId(s.ns, s.min);
    s.from = "s0";
    s.to = "s1";
    s.phase = CoordinatorPhase::kCleaned;
    insert("system.coordinators", s.toBson());
    startServer();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!find("system.coordinators").empty() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(find("system.coordinators").empty());
}

// Every _configsvr* command that names a namespace or a database refuses a malformed one with
// InvalidNamespace (73) before it takes a lock: {_configsvrDropCollection: "keep"} once waited
// for minutes on the database lock it held itself. Each answers at once, and a well-formed DDL on
// the same names works afterwards.
TEST_F(ConfigServerTest, InternalCommandsRefuseMalformedNamesBeforeLocking) {
    const char* namespaceCommands[] = {
        R"({"_configsvrShardCollection": "%s", "key": {"a": 1}})",
        R"({"_configsvrSplitChunk": "%s", "middle": {"a": 1}})",
        R"({"_configsvrMergeChunks": "%s", "bounds": [{"a": 1}, {"a": 2}]})",
        R"({"_configsvrMoveRange": "%s", "min": {"a": 1}, "toShard": "s0"})",
        R"({"_configsvrDropCollection": "%s"})",
        R"({"_configsvrUpdateZoneKeyRange": "%s", "min": {"a": 1}, "max": {"a": 2}, "zone": null})",
        R"({"_configsvrRefineCollectionShardKey": "%s", "key": {"a": 1, "b": 1}})",
        R"({"_configsvrClearJumboFlag": "%s", "find": {"a": 1}})",
        R"({"_configsvrConfigureCollectionBalancing": "%s", "chunkSize": 1})",
        R"({"_configsvrBalancerCollectionStatus": "%s"})",
    };
    const char* databaseCommands[] = {
        R"({"_configsvrCreateDatabase": "%s"})",
        R"({"_configsvrMovePrimary": "%s", "to": "s0"})",
        R"({"_configsvrDropDatabase": "%s"})",
    };
    auto format = [](const char* json, const char* name) {
        std::string out(json);
        out.replace(out.find("%s"), 2, name);
        return out;
    };
    for (const char* cmd : namespaceCommands) {
        for (const char* bad : {"keep", "keep.", ".c", "", "a b.c", "k$.c", "keep.c$"}) {
            BsonObj r = run(format(cmd, bad));
            EXPECT_EQ(r["code"].numberInt(), static_cast<int>(ErrorCodes::InvalidNamespace))
                << format(cmd, bad) << " -> " << r.toJson();
        }
    }
    for (const char* cmd : databaseCommands) {
        for (const char* bad : {"a.b", "", "a b", "a$", "x/y"}) {
            BsonObj r = run(format(cmd, bad));
            EXPECT_EQ(r["code"].numberInt(), static_cast<int>(ErrorCodes::InvalidNamespace))
                << format(cmd, bad) << " -> " << r.toJson();
        }
    }
    // The locks were never taken: DDL on "keep" gets past its locks (no shard to put it on).
    EXPECT_EQ(run(R"({"_configsvrCreateDatabase": "keep"})")["code"].numberInt(),
              static_cast<int>(ErrorCodes::ShardNotFound));
    ok(R"({"_configsvrDropCollection": "keep.c"})");
}

// Declared arguments: a wrong type (14), a missing required field (40414) and an unknown field
// (40415) are refused with MongoDB's IDL errors.
TEST_F(ConfigServerTest, InternalCommandsCheckTheirDeclaredArguments) {
    auto code = [&](std::string_view json) { return run(json)["code"].numberInt(); };
    EXPECT_EQ(code(R"({"_configsvrShardCollection": "db.c", "key": 1})"), 14);
    EXPECT_EQ(code(R"({"_configsvrShardCollection": "db.c"})"), 40414);
    EXPECT_EQ(code(R"({"_configsvrShardCollection": "db.c", "key": {"a": 1}, "bogus": 1})"),
              40415);
    EXPECT_EQ(code(R"({"_configsvrMovePrimary": "db", "to": 5})"), 14);
    EXPECT_EQ(code(R"({"_configsvrAddShardToZone": "", "zone": "z"})"), 2);
    EXPECT_EQ(code(R"({"_configsvrUpdateZoneKeyRange": "db.c", "min": {}, "max": {}})"), 40414);
    EXPECT_EQ(code(R"({"_configsvrShardCollection": "db.c", "key": {"_id": "hashed"},
                       "numInitialChunks": 10000000})"),
              static_cast<int>(ErrorCodes::InvalidOptions));
    // Generic arguments are not the command's own: accepted.
    ok(R"({"_configsvrBalancerStatus": 1, "maxTimeMS": 1000, "comment": "x"})");
}

}  // namespace
}  // namespace tessera::config
