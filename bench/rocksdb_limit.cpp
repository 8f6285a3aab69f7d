// rocksdb_limit: the storage engine's ceiling for the bytes a Tessera benchmark moves.
//
// Phase "fillrandom": T threads Put() distinct 12-byte keys (4-byte prefix + 8-byte big-endian
// scrambled counter, so the insert order is random) with values of --value-size bytes, WAL on
// and sync=false — what an acknowledged w:1 write without j:true costs in RocksDB alone. Bounded
// by --seconds and --max-ops; the database is destroyed afterwards.
// Phase "fillsync": the same with sync=true — a j:true write; RocksDB's write groups let
// concurrent writers share one WAL fsync (the ceiling of a server's group commit).
// Phase "readrandom": a fresh database is bulk-loaded with --read-keys keys (the same working
// set as the load generator's preloaded documents) and flushed; then T threads Get() uniformly
// random existing keys. Measuring reads in the fill database instead would measure the fill's
// compaction debt (gigabytes of L0 files), not the read path.
// Both use 10-bit bloom filters and a --cache-mb block cache. Everything lives in a fresh
// temporary directory that is removed at exit.
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "flags.h"
#include "phase_runner.h"
#include "value_source.h"

namespace tessera::bench {
namespace {

constexpr const char* kUsage =
    "usage: rocksdb_limit [--threads 16] [--seconds 10] [--value-size 1024] [--max-ops N]\n"
    "                     [--read-keys 100000] [--dir PARENT] [--cache-mb 256] [--json]\n";
constexpr uint64_t kLoadBatch = 1000;

std::string makeKey(uint64_t i) {
    uint64_t k = scramble64(i);
    std::string key(12, '\0');
    key[0] = 't';
    key[1] = 'b';
    key[2] = 0;
    key[3] = 1;
    for (int b = 0; b < 8; ++b) {
        key[4 + b] = static_cast<char>((k >> (56 - 8 * b)) & 0xff);
    }
    return key;
}

// Opens a new database at `path`; on failure prints why and returns null.
std::unique_ptr<rocksdb::DB> openFresh(const rocksdb::Options& options, const std::string& path) {
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(options, path, &raw);
    if (!s.ok()) {
        std::cerr << "rocksdb_limit: open " << path << ": " << s.ToString() << "\n";
        return nullptr;
    }
    return std::unique_ptr<rocksdb::DB>(raw);
}

void destroy(std::unique_ptr<rocksdb::DB> db, const rocksdb::Options& options,
             const std::string& path) {
    db.reset();
    rocksdb::DestroyDB(path, options).PermitUncheckedError();
}

void print(const PhaseResult& r, bool json) {
    std::cout << formatText(r) << "\n";
    if (json) {
        std::cout << formatJson(r) << "\n";
    }
    std::cout.flush();
}

int run(int argc, char** argv) {
    Flags flags({"threads", "seconds", "value-size", "max-ops", "read-keys", "dir", "cache-mb"},
                {"json", "help"});
    std::string err;
    if (!flags.parse(argc, argv, &err)) {
        std::cerr << "rocksdb_limit: " << err << "\n" << kUsage;
        return 2;
    }
    if (flags.has("help")) {
        std::cout << kUsage;
        return 0;
    }
    uint64_t threads = 0, valueSize = 0, maxOps = 0, cacheMb = 0, readKeys = 0;
    double seconds = 0;
    if (!flags.getUint("threads", 16, &threads, &err) ||
        !flags.getUint("value-size", 1024, &valueSize, &err) ||
        !flags.getUint("max-ops", 100'000'000, &maxOps, &err) ||
        !flags.getUint("cache-mb", 256, &cacheMb, &err) ||
        !flags.getUint("read-keys", 100'000, &readKeys, &err) ||
        !flags.getDouble("seconds", 10, &seconds, &err)) {
        std::cerr << "rocksdb_limit: " << err << "\n" << kUsage;
        return 2;
    }
    if (threads == 0 || valueSize == 0 || readKeys == 0) {
        std::cerr << "rocksdb_limit: --threads, --value-size and --read-keys must be positive\n";
        return 2;
    }
    bool json = flags.has("json");

    std::string parent = flags.getString("dir", std::filesystem::temp_directory_path().string());
    std::string tmpl = parent + "/rocksdb_limit.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
        std::perror(("rocksdb_limit: mkdtemp in " + parent).c_str());
        return 1;
    }
    const std::string dir = tmpl;

    rocksdb::Options options;
    options.create_if_missing = true;
    options.IncreaseParallelism(
        static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = rocksdb::NewLRUCache(cacheMb << 20);
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

    ValueSource values(valueSize);
    rocksdb::WriteOptions wo;
    wo.sync = false;
    wo.disableWAL = false;
    int rc = 0;

    // fillrandom (w:1) and fillsync (j:true: every Put waits for its WAL fsync; concurrent
    // writers share one through RocksDB's write group, which is what group commit can reach).
    for (bool sync : {false, true}) {
        std::string name = sync ? "fillsync" : "fillrandom";
        auto db = openFresh(options, dir + "/" + name);
        if (!db) {
            std::filesystem::remove_all(dir);
            return 1;
        }
        rocksdb::WriteOptions fillOptions = wo;
        fillOptions.sync = sync;
        PhaseSpec fill{"rocksdb_limit", name, threads, seconds, maxOps, valueSize + 12, 1};
        PhaseResult r = runPhase(fill, [&](OpContext& ctx) {
            rocksdb::Status st =
                db->Put(fillOptions, makeKey(ctx.ticket), values.slice(ctx.ticket));
            if (!st.ok()) {
                ctx.error = st.ToString();
                return false;
            }
            return true;
        });
        destroy(std::move(db), options, dir + "/" + name);
        print(r, json);
        rc = r.errors > 0 || r.ops == 0 ? 1 : rc;
    }

    // readrandom over a bulk-loaded working set
    {
        auto db = openFresh(options, dir + "/read");
        if (!db) {
            std::filesystem::remove_all(dir);
            return 1;
        }
        uint64_t batches = (readKeys + kLoadBatch - 1) / kLoadBatch;
        PhaseSpec load{"rocksdb_limit", "load", threads, 300, batches, 0, 2};
        PhaseResult loaded = runPhase(load, [&](OpContext& ctx) {
            rocksdb::WriteBatch batch;
            uint64_t end = std::min(readKeys, (ctx.ticket + 1) * kLoadBatch);
            for (uint64_t i = ctx.ticket * kLoadBatch; i < end; ++i) {
                batch.Put(makeKey(i), values.slice(i)).PermitUncheckedError();
            }
            rocksdb::Status st = db->Write(wo, &batch);
            if (!st.ok()) {
                ctx.error = st.ToString();
                return false;
            }
            return true;
        });
        rocksdb::Status flushed = db->Flush(rocksdb::FlushOptions());
        if (loaded.errors > 0 || loaded.ops != batches || !flushed.ok()) {
            std::cerr << "rocksdb_limit: loading " << readKeys << " keys failed: "
                      << (loaded.firstError.empty() ? flushed.ToString() : loaded.firstError)
                      << "\n";
            destroy(std::move(db), options, dir + "/read");
            std::filesystem::remove_all(dir);
            return 1;
        }
        rocksdb::ReadOptions ro;
        PhaseSpec read{"rocksdb_limit", "readrandom", threads, seconds, maxOps, valueSize + 12, 3};
        PhaseResult r = runPhase(read, [&](OpContext& ctx) {
            rocksdb::PinnableSlice value;
            rocksdb::Status st =
                db->Get(ro, db->DefaultColumnFamily(), makeKey((*ctx.rng)() % readKeys), &value);
            if (!st.ok()) {
                ctx.error = st.ToString();
                return false;
            }
            if (value.size() != valueSize) {
                ctx.error = "wrong value size " + std::to_string(value.size());
                return false;
            }
            return true;
        });
        destroy(std::move(db), options, dir + "/read");
        print(r, json);
        std::cout << "  over " << readKeys << " keys bulk-loaded in " << loaded.seconds
                  << " s and flushed\n";
        rc = r.errors > 0 || r.ops == 0 ? 1 : rc;
    }

    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return rc;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) { return tessera::bench::run(argc, argv); }
