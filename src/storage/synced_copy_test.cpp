#include "storage/synced_copy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "storage/replication.h"
#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

namespace fs = std::filesystem;
using test::J;
using test::TempDir;

std::unique_ptr<Engine> openAt(const fs::path& dbpath) {
    EngineOptions options;
    options.dbpath = dbpath.string();
    options.blockCacheBytes = 16 << 20;
    auto opened = Engine::open(options);
    EXPECT_TRUE(opened.isOK()) << opened.getStatus().toString();
    return opened.isOK() ? std::move(opened.getValue()) : nullptr;
}

void insert(Engine& engine, std::string_view ns, int from, int to) {
    if (!engine.getCollection(ns)) {
        ASSERT_TRUE(engine.createCollection(ns, bson::BsonObj()).isOK());
    }
    auto w = engine.writer(engine.getCollection(ns), nullptr);
    ASSERT_TRUE(w.isOK());
    for (int i = from; i < to; ++i) {
        ASSERT_TRUE(w.getValue()->insert(J(R"({"_id": )" + std::to_string(i) + "}"), {}).isOK());
    }
}

// Copies the checkpoint's files the way an initial sync receives them.
void receive(const fs::path& checkpoint, const Checkpoint& listed, const fs::path& dbpath) {
    fs::create_directories(dbpath / kSyncedCopyDir);
    for (const CheckpointFile& f : listed.files) {
        fs::copy_file(checkpoint / f.name, dbpath / kSyncedCopyDir / f.name);
    }
}

class SyncedCopyTest : public ::testing::Test {
  protected:
    // A source database with `db.c` {_id: 0..99}, and its checkpoint.
    void SetUp() override {
        source = openAt(_dir.path() + "/source");
        ASSERT_TRUE(source);
        insert(*source, "db.c", 0, 100);
        auto made = createCheckpoint(*source, checkpointDir());
        ASSERT_TRUE(made.isOK()) << made.getStatus().toString();
        checkpoint = made.getValue();
    }
    fs::path checkpointDir() const { return fs::path(_dir.path()) / "checkpoint"; }
    fs::path member() const { return fs::path(_dir.path()) / "member"; }

    TempDir _dir;
    std::unique_ptr<Engine> source;
    Checkpoint checkpoint;
};

TEST_F(SyncedCopyTest, ACheckpointListsItsFilesWithTheirSizes) {
    ASSERT_FALSE(checkpoint.files.empty());
    for (const CheckpointFile& f : checkpoint.files) {
        EXPECT_EQ(f.name.find('/'), std::string::npos);
        EXPECT_EQ(fs::file_size(checkpointDir() / f.name), f.size) << f.name;
    }
}

TEST_F(SyncedCopyTest, ACompleteCopyReplacesTheDatabaseAndKeepsTheKeptFolders) {
    {
        auto own = openAt(member());
        insert(*own, "db.own", 0, 5);  // this member's old data: gone after the install
    }
    fs::create_directories(member() / "replication");
    std::ofstream(member() / "replication" / "log") << "kept";
    receive(checkpointDir(), checkpoint, member());
    ASSERT_TRUE(markSyncedCopyComplete(member()).isOK());

    auto installed = installSyncedCopy(member(), {"replication"});
    ASSERT_TRUE(installed.isOK()) << installed.getStatus().toString();
    EXPECT_TRUE(installed.getValue());
    EXPECT_FALSE(fs::exists(member() / kSyncedCopyDir));
    EXPECT_TRUE(fs::exists(member() / "replication" / "log"));
    auto engine = openAt(member());
    ASSERT_TRUE(engine);
    EXPECT_EQ(test::engineView(*engine), test::engineView(*source));
    EXPECT_EQ(engine->getCollection("db.own"), nullptr);
}

TEST_F(SyncedCopyTest, ACopyCutShortIsDeletedAndTheDatabaseStays) {
    {
        auto own = openAt(member());
        insert(*own, "db.own", 0, 5);
    }
    receive(checkpointDir(), checkpoint, member());  // no COMPLETE marker: the download stopped
    auto installed = installSyncedCopy(member(), {});
    ASSERT_TRUE(installed.isOK());
    EXPECT_FALSE(installed.getValue());
    EXPECT_FALSE(fs::exists(member() / kSyncedCopyDir));
    auto engine = openAt(member());
    ASSERT_TRUE(engine);
    EXPECT_NE(engine->getCollection("db.own"), nullptr);
    EXPECT_EQ(engine->getCollection("db.c"), nullptr);
}

// A crash in the middle of the swap: the old database removed and some of the copy's files moved
// in already. Installing again finishes the job.
TEST_F(SyncedCopyTest, AnInstallInterruptedAfterTheOldDatabaseWentFinishesOnTheNextStart) {
    {
        auto own = openAt(member());
        insert(*own, "db.own", 0, 5);
    }
    receive(checkpointDir(), checkpoint, member());
    ASSERT_TRUE(markSyncedCopyComplete(member()).isOK());
    for (const fs::directory_entry& e : fs::directory_iterator(member())) {
        if (e.path().filename() != kSyncedCopyDir) fs::remove_all(e.path());
    }
    std::ofstream(member() / kSyncedCopyDir / "OLD-REMOVED");
    const CheckpointFile& moved = checkpoint.files.front();
    fs::rename(member() / kSyncedCopyDir / moved.name, member() / moved.name);

    auto installed = installSyncedCopy(member(), {});
    ASSERT_TRUE(installed.isOK()) << installed.getStatus().toString();
    EXPECT_TRUE(installed.getValue());
    auto engine = openAt(member());
    ASSERT_TRUE(engine);
    EXPECT_EQ(test::engineView(*engine), test::engineView(*source));
}

TEST_F(SyncedCopyTest, AnEarlierRunsServedCheckpointsAreRemovedAtTheNextStart) {
    fs::create_directories(member() / kSyncSourceDir / "1-2");
    auto installed = installSyncedCopy(member(), {});
    ASSERT_TRUE(installed.isOK());
    EXPECT_FALSE(installed.getValue());
    EXPECT_FALSE(fs::exists(member() / kSyncSourceDir));
}

}  // namespace
}  // namespace tessera::storage
