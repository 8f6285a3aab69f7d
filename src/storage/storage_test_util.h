#pragma once

// Helpers shared by the storage tests.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "bson/bson_obj.h"
#include "keystring/keystring.h"
#include "storage/collection_writer.h"
#include "storage/engine.h"
#include "storage/read_snapshot.h"

namespace tessera::storage::test {

// A fresh directory removed at destruction.
class TempDir {
  public:
    TempDir() {
        static std::atomic<int> counter{0};
        _path = std::filesystem::temp_directory_path() /
                ("tessera_storage_test_" + std::to_string(::getpid()) + "_" +
                 std::to_string(counter++));
        std::filesystem::remove_all(_path);
        std::filesystem::create_directories(_path);
    }
    ~TempDir() { std::filesystem::remove_all(_path); }
    std::string path() const { return _path.string(); }

  private:
    std::filesystem::path _path;
};

// A controllable wall clock for HybridLogicalClock, whole seconds since the epoch (its
// WallClock reads microseconds).
inline std::atomic<uint32_t>& fakeSeconds() {
    static std::atomic<uint32_t> secs{1'700'000'000};
    return secs;
}
inline uint64_t fakeWallClock() { return uint64_t{fakeSeconds().load()} * 1'000'000; }

inline bson::BsonObj J(std::string_view json) { return bson::fromJson(json); }

// The record key of {_id: <value of json {"v": ...}>}.
inline std::string idKey(std::string_view idJson) {
    bson::BsonObj o = J(std::string("{\"v\": ") + std::string(idJson) + "}");
    return keystring::encodeValue(o.firstElement());
}

// Encodes {"": v1, "": v2...} given as JSON array of values, with directions.
inline std::string indexKey(std::string_view valuesJson, std::vector<bool> descending = {}) {
    bson::BsonObj o = J(std::string("{\"v\": ") + std::string(valuesJson) + "}");
    keystring::Builder b;
    size_t i = 0;
    for (bson::BsonElement e : o.firstElement().objValue()) {
        b.append(e, i < descending.size() && descending[i]);
        ++i;
    }
    return b.release();
}

// What a reader of `e` sees, as text: every collection (name, id, indexes), its counts, and its
// documents at the latest state. Two engines that should be equal compare equal here.
inline std::string engineView(Engine& e) {
    std::string out;
    for (const std::string& db : e.listDatabases()) {
        for (const CollectionPtr& c : e.listCollections(db)) {
            out += c->ns() + " id=" + std::to_string(c->id) + " indexes=";
            for (const auto& index : c->indexes) out += index.name + ",";
            CollectionStats stats = e.stats(*c);
            out += " count=" + std::to_string(stats.count) +
                   " size=" + std::to_string(stats.dataSize) + "\n";
            auto snap = e.snapshot();
            auto cursor = snap->scan(*c, true);
            while (auto r = cursor->next()) out += "  " + r->doc.toJson() + "\n";
        }
    }
    return out;
}

class EngineTest : public ::testing::Test {
  protected:
    void SetUp() override {
        _clock.setWallClockForTest(&fakeWallClock);
        open();
    }
    void TearDown() override { engine.reset(); }

    void open(uint32_t historyWindow = 300) {
        EngineOptions options;
        options.dbpath = dir.path();
        options.clock = &_clock;
        options.blockCacheBytes = 16 << 20;
        options.historyWindowSeconds = historyWindow;
        auto sw = Engine::open(options);
        ASSERT_TRUE(sw.isOK()) << sw.getStatus().toString();
        engine = std::move(sw.getValue());
    }
    void reopen() {
        engine.reset();
        open();
    }

    CollectionPtr create(std::string_view ns) {
        auto sw = engine->createCollection(ns, bson::BsonObj());
        EXPECT_TRUE(sw.isOK()) << sw.getStatus().toString();
        return sw.isOK() ? sw.getValue() : nullptr;
    }
    std::unique_ptr<CollectionWriter> writerFor(std::string_view ns,
                                                const WriteUnit* unit = nullptr) {
        auto sw = engine->writer(engine->getCollection(ns), unit);
        EXPECT_TRUE(sw.isOK()) << sw.getStatus().toString();
        return std::move(sw.getValue());
    }
    Timestamp insert(std::string_view ns, std::string_view json) {
        auto w = writerFor(ns);
        auto sw = w->insert(J(json), WriteOptions{});
        EXPECT_TRUE(sw.isOK()) << sw.getStatus().toString();
        return sw.isOK() ? sw.getValue() : Timestamp();
    }
    // All documents (as JSON) visible in `snap` in record-key order.
    std::vector<std::string> scanAll(ReadSnapshot& snap, std::string_view ns, bool forward = true) {
        std::vector<std::string> out;
        auto cursor = snap.scan(*engine->getCollection(ns), forward);
        while (auto r = cursor->next()) out.push_back(r->doc.toJson());
        return out;
    }
    std::vector<std::string> scanAll(std::string_view ns, bool forward = true) {
        auto snap = engine->snapshot();
        return scanAll(*snap, ns, forward);
    }
    void advanceSeconds(uint32_t s) { fakeSeconds() += s; }

    TempDir dir;
    HybridLogicalClock _clock;
    std::unique_ptr<Engine> engine;
};

// update / remove of whatever version is stored now (tests that do not race other writers;
// NoSuchKey when there is none).
inline StatusWith<Timestamp> updateCurrent(CollectionWriter& w, std::string_view key,
                                           bson::BsonView doc, const WriteOptions& opts = {}) {
    std::optional<bson::BsonObj> current = w.current(key);
    if (!current) return Status(ErrorCodes::NoSuchKey, "the document no longer exists");
    return w.update(key, *current, doc, opts);
}
inline StatusWith<Timestamp> removeCurrent(CollectionWriter& w, std::string_view key,
                                           const WriteOptions& opts = {}) {
    std::optional<bson::BsonObj> current = w.current(key);
    if (!current) return Status(ErrorCodes::NoSuchKey, "the document no longer exists");
    return w.remove(key, *current, opts);
}

}  // namespace tessera::storage::test
