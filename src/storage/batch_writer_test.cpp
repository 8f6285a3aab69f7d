// CollectionWriter::insertBatch / removeBatch (a migration's bulk clone and range deletion), and
// the contract migrations rely on: observers run once a write holds its commit timestamp, so a
// protocol that registers an observer and then opens snapshotIncludingInFlight() misses no write.

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "base/mutex.h"
#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::idKey;
using test::J;

class BatchWriterTest : public test::EngineTest {};

TEST_F(BatchWriterTest, InsertBatchWritesAllInOneTimestampAndSkipsDuplicates) {
    auto coll = create("db.c");
    IndexSpec unique;
    unique.name = "u_1";
    unique.keyPattern = J(R"({"u": 1})");
    unique.unique = true;
    ASSERT_TRUE(engine->createIndexes("db.c", {unique}).isOK());
    auto w = writerFor("db.c");
    ASSERT_TRUE(w->insert(J(R"({"_id": 1, "u": 1})"), {}).isOK());
    std::vector<bson::BsonObj> docs = {J(R"({"_id": 1, "u": 100})"),  // _id taken
                                       J(R"({"_id": 2, "u": 2})"),
                                       J(R"({"_id": 3, "u": 2})"),  // u taken in the batch
                                       J(R"({"_id": 4, "u": 1})"),  // u taken in storage
                                       J(R"({"_id": 5, "u": 5})")};
    std::vector<bson::BsonView> views(docs.begin(), docs.end());
    int64_t skipped = 0;
    auto inserted = w->insertBatch(views, {}, &skipped);
    ASSERT_TRUE(inserted.isOK()) << inserted.getStatus().toString();
    EXPECT_EQ(inserted.getValue(), 2);
    EXPECT_EQ(skipped, 3);
    EXPECT_EQ(engine->stats(*engine->getCollection("db.c")).count, 3);
    auto snap = engine->snapshot();
    EXPECT_TRUE(snap->findByRecordKey(*coll, idKey("2")));
    EXPECT_TRUE(snap->findByRecordKey(*coll, idKey("5")));
    EXPECT_FALSE(snap->findByRecordKey(*coll, idKey("3")));
}

TEST_F(BatchWriterTest, RemoveBatchRemovesOnlyUnchangedVersions) {
    create("db.c");
    auto w = writerFor("db.c");
    for (int i = 0; i < 10; ++i) {
        ASSERT_TRUE(w->insert(J("{\"_id\": " + std::to_string(i) + ", \"v\": 0}"), {}).isOK());
    }
    std::vector<Record> records;
    for (int i = 0; i < 10; ++i) {
        records.push_back(
            {idKey(std::to_string(i)), J("{\"_id\": " + std::to_string(i) + ", \"v\": 0}")});
    }
    // Document 3 changed since it was read: left alone.
    records[3].doc = J(R"({"_id": 3, "v": "old"})");
    int64_t skipped = 0;
    auto removed = w->removeBatch(records, {}, &skipped);
    ASSERT_TRUE(removed.isOK());
    EXPECT_EQ(removed.getValue(), 9);
    EXPECT_EQ(skipped, 1);
    EXPECT_EQ(engine->stats(*engine->getCollection("db.c")).count, 1);
    EXPECT_EQ(scanAll("db.c").size(), 1u);
}

// The observer that a migration's donor registers: collects the _ids it is called for.
class CollectingObserver final : public WriteObserver {
  public:
    void onWrite(const CollectionInfo&, Op, bson::BsonView, bson::BsonView after,
                 std::vector<std::pair<std::string, std::string>>*) override {
        if (!active.load(std::memory_order_seq_cst)) return;
        MutexLock lk(mutex);
        seen.insert(after.getField("_id").numberLong());
    }
    std::atomic<bool> active{false};
    Mutex mutex;
    std::set<int64_t> seen;
};

// Writers insert without pause; meanwhile the observer is switched on and the snapshot opened
// right after. Every insert must be in the snapshot or observed — none falls in between.
TEST_F(BatchWriterTest, EveryWriteIsInTheSnapshotOrObserved) {
    auto coll = create("db.c");
    CollectingObserver observer;
    WriteUnit unit;
    unit.addObserver(&observer);
    std::atomic<bool> stop{false};
    std::atomic<int64_t> next{0};
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t) {
        writers.emplace_back([&] {
            auto w = writerFor("db.c", &unit);
            while (!stop.load()) {
                int64_t id = next.fetch_add(1);
                ASSERT_TRUE(w->insert(J("{\"_id\": " + std::to_string(id) + "}"), {}).isOK());
            }
        });
    }
    while (next.load() < 2000) std::this_thread::yield();
    observer.active.store(true, std::memory_order_seq_cst);
    auto snapshot = engine->snapshotIncludingInFlight();
    while (next.load() < 4000) std::this_thread::yield();
    stop = true;
    for (auto& t : writers) t.join();
    std::set<int64_t> inSnapshot;
    auto cursor = snapshot->scan(*coll);
    while (auto rec = cursor->next())
        inSnapshot.insert(rec->doc.view().getField("_id").numberLong());
    MutexLock lk(observer.mutex);
    int64_t written = static_cast<int64_t>(scanAll("db.c").size());
    int64_t missed = 0;
    for (int64_t id = 0; id < written; ++id) {
        if (!inSnapshot.count(id) && !observer.seen.count(id)) ++missed;
    }
    EXPECT_EQ(missed, 0) << "of " << written << " inserts";
}

}  // namespace
}  // namespace tessera::storage
