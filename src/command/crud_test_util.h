#pragma once

// Test fixture for the CRUD commands: a real storage Engine in a temp dir, a cursor manager and
// the CRUD commands registered; run() executes a command the way the service entry point does.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "command/command.h"
#include "command/cursor_manager.h"
#include "command/registry.h"
#include "storage/engine.h"
#include "storage/storage_test_util.h"

namespace tessera::command::test {

inline bson::BsonObj J(std::string_view json) { return bson::fromJson(json); }

struct CommandResult {
    Status status;
    bson::BsonObj reply;
    bson::BsonObj errorExtraInfo;
    bool ok() const { return status.isOK(); }
};

class CrudFixture : public ::testing::Test {
  protected:
    void SetUp() override {
        storage::EngineOptions options;
        options.dbpath = _dir.path();
        options.blockCacheBytes = size_t{8} << 20;
        auto sw = storage::Engine::open(options);
        ASSERT_TRUE(sw.isOK()) << sw.getStatus().toString();
        engine = std::move(sw.getValue());
        cursors = std::make_unique<CursorManager>();
        registerCrudCommands(registry);
        service.engine = engine.get();
        service.cursors = cursors.get();
        service.registry = &registry;
        service.host = "localhost:27017";
        service.port = 27017;
    }

    void TearDown() override {
        cursors.reset();
        engine.reset();
    }

    CommandResult run(std::string_view json, std::vector<DocumentSequence> sequences = {},
                      std::string db = "test") {
        bson::BsonObj body = J(json);
        return runBody(body, std::move(sequences), std::move(db));
    }

    CommandResult runBody(const bson::BsonObj& body, std::vector<DocumentSequence> sequences = {},
                          std::string db = "test") {
        CommandRequest req;
        req.db = std::move(db);
        req.body = body;
        req.commandName = body.firstElement().fieldName();
        req.sequences = std::move(sequences);
        Command* cmd = registry.find(req.commandName);
        EXPECT_NE(cmd, nullptr) << req.commandName;
        if (cmd == nullptr) return {Status(ErrorCodes::CommandNotFound, "no command"), {}, {}};
        OperationContext opCtx;
        opCtx.service = &service;
        if (auto m = body["maxTimeMS"]; m.isNumber() && m.numberLong() > 0) {
            opCtx.deadline =
                std::chrono::steady_clock::now() + std::chrono::milliseconds(m.numberLong());
        }
        bson::BsonBuilder reply;
        Status s = cmd->run(opCtx, req, reply);
        return {s, reply.obj(), opCtx.errorExtraInfo};
    }

    // Runs a command that must succeed and returns its reply.
    bson::BsonObj ok(std::string_view json) {
        CommandResult r = run(json);
        EXPECT_TRUE(r.ok()) << json << " -> " << r.status.toString();
        return r.reply;
    }

    // Creates an index directly in storage (createIndexes is not a CRUD command).
    void createIndex(const std::string& ns, std::string_view keyJson, const std::string& name,
                     bool unique = false) {
        if (!engine->getCollection(ns)) {
            ASSERT_TRUE(engine->createCollection(ns, bson::BsonView()).isOK());
        }
        storage::IndexSpec spec;
        spec.name = name;
        spec.keyPattern = J(keyJson);
        spec.unique = unique;
        bson::BsonBuilder b;
        b.appendInt32("v", 2).append("key", spec.keyPattern).append("name", name);
        if (unique) b.append("unique", true);
        spec.spec = b.obj();
        auto sw = engine->createIndexes(ns, {spec});
        ASSERT_TRUE(sw.isOK()) << sw.getStatus().toString();
    }

    // All documents of a find (following getMores), as relaxed JSON strings.
    std::vector<std::string> findAll(std::string_view findJson);

    std::unique_ptr<storage::Engine> engine;
    std::unique_ptr<CursorManager> cursors;
    CommandRegistry registry;
    ServiceContext service;

  private:
    storage::test::TempDir _dir;  // removed when the fixture is destroyed
};

inline std::vector<std::string> CrudFixture::findAll(std::string_view findJson) {
    std::vector<std::string> out;
    bson::BsonObj reply = ok(findJson);
    bson::BsonView cursor = reply["cursor"].objValue();
    for (auto d : cursor["firstBatch"].objValue()) out.push_back(d.objValue().toJson());
    int64_t id = cursor["id"].numberLong();
    std::string coll(bson::BsonView(reply["cursor"].objValue())["ns"].stringValue());
    coll = coll.substr(coll.find('.') + 1);
    while (id != 0) {
        bson::BsonBuilder b;
        b.appendInt64("getMore", id).append("collection", coll);
        CommandResult r = runBody(b.obj());
        EXPECT_TRUE(r.ok()) << r.status.toString();
        if (!r.ok()) break;
        bson::BsonView c = r.reply["cursor"].objValue();
        for (auto d : c["nextBatch"].objValue()) out.push_back(d.objValue().toJson());
        id = c["id"].numberLong();
    }
    return out;
}

}  // namespace tessera::command::test
