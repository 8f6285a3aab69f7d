// Engine::flush (the fsync command): memtables written out to data files.

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include "storage/rocks_engine.h"
#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::EngineTest;

uint64_t memtableEntries(Engine& engine) {
    auto& rocks = dynamic_cast<RocksEngine&>(engine);
    uint64_t n = 0;
    EXPECT_TRUE(
        rocks.db()->GetIntProperty(rocks.recordsCf(), "rocksdb.num-entries-active-mem-table", &n));
    return n;
}

TEST_F(EngineTest, FlushMovesEveryPendingWriteToDataFiles) {
    create("db.c");
    for (int i = 0; i < 100; ++i) insert("db.c", R"({"_id": )" + std::to_string(i) + "}");
    EXPECT_GT(memtableEntries(*engine), 0u);

    ASSERT_TRUE(engine->flush().isOK());
    EXPECT_EQ(memtableEntries(*engine), 0u);
    EXPECT_EQ(scanAll("db.c").size(), 100u);  // now read from the data files
    reopen();
    EXPECT_EQ(scanAll("db.c").size(), 100u);
}

}  // namespace
}  // namespace tessera::storage
