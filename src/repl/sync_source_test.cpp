#include "repl/sync_source.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error_codes.h"
#include "storage/storage_test_util.h"

namespace tessera::repl {
namespace {

namespace fs = std::filesystem;
using storage::test::J;
using storage::test::TempDir;

class SyncSourceTest : public ::testing::Test {
  protected:
    void SetUp() override {
        storage::EngineOptions options;
        options.dbpath = _dir.path();
        options.blockCacheBytes = 16 << 20;
        auto opened = storage::Engine::open(options);
        ASSERT_TRUE(opened.isOK()) << opened.getStatus().toString();
        engine = std::move(opened.getValue());
        ASSERT_TRUE(engine->createCollection("db.c", bson::BsonObj()).isOK());
        auto w = engine->writer(engine->getCollection("db.c"), nullptr);
        ASSERT_TRUE(w.isOK());
        for (int i = 0; i < 50; ++i) {
            ASSERT_TRUE(
                w.getValue()->insert(J(R"({"_id": )" + std::to_string(i) + "}"), {}).isOK());
        }
        source = std::make_unique<SyncSource>(*engine, _dir.path());
    }
    fs::path copyDir(const std::string& id) const {
        return fs::path(_dir.path()) / storage::kSyncSourceDir / id;
    }

    TempDir _dir;
    std::unique_ptr<storage::Engine> engine;
    std::unique_ptr<SyncSource> source;
};

TEST_F(SyncSourceTest, ACopyIsReadFileByFileAndEndingItRemovesIt) {
    auto copy = source->start();
    ASSERT_TRUE(copy.isOK()) << copy.getStatus().toString();
    ASSERT_FALSE(copy.getValue().checkpoint.files.empty());
    for (const storage::CheckpointFile& f : copy.getValue().checkpoint.files) {
        std::ifstream in(copyDir(copy.getValue().id) / f.name, std::ios::binary);
        std::string expected((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
        std::string got;
        while (got.size() < f.size) {
            auto chunk = source->read(copy.getValue().id, f.name, got.size(), 100);
            ASSERT_TRUE(chunk.isOK()) << chunk.getStatus().toString();
            ASSERT_FALSE(chunk.getValue().empty()) << f.name << " ended early";
            EXPECT_LE(chunk.getValue().size(), 100u);
            got += chunk.getValue();
        }
        EXPECT_EQ(got, expected) << f.name;
        auto past = source->read(copy.getValue().id, f.name, f.size, 100);
        ASSERT_TRUE(past.isOK());
        EXPECT_TRUE(past.getValue().empty()) << "nothing past a file's end";
    }
    source->end(copy.getValue().id);
    EXPECT_FALSE(fs::exists(copyDir(copy.getValue().id)));
    EXPECT_EQ(source->read(copy.getValue().id, copy.getValue().checkpoint.files[0].name, 0, 10)
                  .getStatus()
                  .code(),
              static_cast<int>(ErrorCodes::NoSuchKey));
}

TEST_F(SyncSourceTest, OnlyTheFilesACopyListsCanBeRead) {
    auto copy = source->start();
    ASSERT_TRUE(copy.isOK());
    for (const std::string name : {"../CURRENT", "/etc/passwd", "missing.sst", ""}) {
        EXPECT_EQ(source->read(copy.getValue().id, name, 0, 10).getStatus().code(),
                  static_cast<int>(ErrorCodes::NoSuchKey))
            << name;
    }
    EXPECT_EQ(source->read("no-such-copy", "CURRENT", 0, 10).getStatus().code(),
              static_cast<int>(ErrorCodes::NoSuchKey));
}

TEST_F(SyncSourceTest, AtMostTwoCopiesAreServedAtOnce) {
    auto first = source->start();
    auto second = source->start();
    ASSERT_TRUE(first.isOK());
    ASSERT_TRUE(second.isOK());
    EXPECT_NE(first.getValue().id, second.getValue().id);
    EXPECT_EQ(source->start().getStatus().code(),
              static_cast<int>(ErrorCodes::ExceededMemoryLimit));
    source->end(first.getValue().id);
    EXPECT_TRUE(source->start().isOK());
}

TEST_F(SyncSourceTest, TheCopiesGoWithTheSource) {
    auto copy = source->start();
    ASSERT_TRUE(copy.isOK());
    source.reset();
    EXPECT_FALSE(fs::exists(fs::path(_dir.path()) / storage::kSyncSourceDir));
}

}  // namespace
}  // namespace tessera::repl
