// migration_limit: the physical limit of moving one range between two shards on this machine —
// what RocksDB alone needs to read the range's bytes from one database and write them into
// another, the work a migration cannot avoid (bench/migration.sh compares Tessera's migrations
// with it).
//
// A fresh database A is bulk-loaded with --bytes of --value-size values under sorted keys (a
// range is a contiguous key range: collections are clustered by their shard key) and flushed.
// Then, timed: "scan" iterates A; "copy" iterates A and writes the pairs into a fresh database B
// in --batch-bytes write batches (WAL on, sync=false, as the recipient's ingest), then flushes
// B. Prints MB/s of both. Everything lives in a temporary directory removed at exit.
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "flags.h"
#include "value_source.h"

namespace tessera::bench {
namespace {

constexpr const char* kUsage =
    "usage: migration_limit [--bytes 134217728] [--value-size 340] [--batch-bytes 8388608]\n"
    "                       [--dir PARENT] [--json]\n";

std::string makeKey(uint64_t i) {
    std::string key(12, '\0');
    key[0] = 'm';
    for (int b = 0; b < 8; ++b) key[4 + b] = static_cast<char>((i >> (56 - 8 * b)) & 0xff);
    return key;
}

std::unique_ptr<rocksdb::DB> open(const rocksdb::Options& options, const std::string& path) {
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(options, path, &raw);
    if (!s.ok()) {
        std::cerr << "migration_limit: open " << path << ": " << s.ToString() << "\n";
        return nullptr;
    }
    return std::unique_ptr<rocksdb::DB>(raw);
}

double secondsSince(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int run(int argc, char** argv) {
    Flags flags({"bytes", "value-size", "batch-bytes", "dir"}, {"json", "help"});
    std::string err;
    if (!flags.parse(argc, argv, &err)) {
        std::cerr << "migration_limit: " << err << "\n" << kUsage;
        return 2;
    }
    if (flags.has("help")) {
        std::cout << kUsage;
        return 0;
    }
    uint64_t bytes = 0, valueSize = 0, batchBytes = 0;
    if (!flags.getUint("bytes", 128ull << 20, &bytes, &err) ||
        !flags.getUint("value-size", 340, &valueSize, &err) ||
        !flags.getUint("batch-bytes", 8ull << 20, &batchBytes, &err) || valueSize == 0 ||
        batchBytes == 0) {
        std::cerr << "migration_limit: " << (err.empty() ? "sizes must be positive" : err) << "\n"
                  << kUsage;
        return 2;
    }
    std::string parent = flags.getString("dir", std::filesystem::temp_directory_path().string());
    std::string tmpl = parent + "/migration_limit.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
        std::perror("migration_limit: mkdtemp");
        return 1;
    }
    const std::string dir = tmpl;
    rocksdb::Options options;
    options.create_if_missing = true;
    options.IncreaseParallelism(2);
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = rocksdb::NewLRUCache(256 << 20);
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

    ValueSource values(valueSize);
    const uint64_t n = bytes / valueSize;
    int rc = 0;
    {
        auto a = open(options, dir + "/a");
        auto b = open(options, dir + "/b");
        if (!a || !b) return 1;
        rocksdb::WriteOptions wo;
        rocksdb::WriteBatch load;
        for (uint64_t i = 0; i < n; ++i) {
            load.Put(makeKey(i), values.slice(i)).PermitUncheckedError();
            if (load.GetDataSize() >= batchBytes) {
                if (!a->Write(wo, &load).ok()) rc = 1;
                load.Clear();
            }
        }
        if (!a->Write(wo, &load).ok() || !a->Flush(rocksdb::FlushOptions()).ok()) rc = 1;

        auto scanStart = std::chrono::steady_clock::now();
        uint64_t scanned = 0;
        {
            std::unique_ptr<rocksdb::Iterator> it(a->NewIterator(rocksdb::ReadOptions()));
            for (it->SeekToFirst(); it->Valid(); it->Next()) scanned += it->value().size();
        }
        double scanSeconds = secondsSince(scanStart);

        auto copyStart = std::chrono::steady_clock::now();
        uint64_t copied = 0;
        {
            std::unique_ptr<rocksdb::Iterator> it(a->NewIterator(rocksdb::ReadOptions()));
            rocksdb::WriteBatch batch;
            for (it->SeekToFirst(); it->Valid(); it->Next()) {
                batch.Put(it->key(), it->value()).PermitUncheckedError();
                copied += it->value().size();
                if (batch.GetDataSize() >= batchBytes) {
                    if (!b->Write(wo, &batch).ok()) rc = 1;
                    batch.Clear();
                }
            }
            if (!b->Write(wo, &batch).ok()) rc = 1;
            if (!b->Flush(rocksdb::FlushOptions()).ok()) rc = 1;
        }
        double copySeconds = secondsSince(copyStart);
        double mb = static_cast<double>(copied) / (1 << 20);
        std::printf("migration_limit scan: %.1f MB in %.3f s = %.1f MB/s\n",
                    static_cast<double>(scanned) / (1 << 20), scanSeconds,
                    static_cast<double>(scanned) / (1 << 20) / scanSeconds);
        std::printf("migration_limit copy: %.1f MB (%llu values of %llu B) in %.3f s = %.1f MB/s\n",
                    mb, static_cast<unsigned long long>(n),
                    static_cast<unsigned long long>(valueSize), copySeconds, mb / copySeconds);
        if (flags.has("json")) {
            std::printf(
                "{\"tool\":\"migration_limit\",\"mb\":%.3f,\"scanSeconds\":%.4f,"
                "\"copySeconds\":%.4f,\"copyMBps\":%.2f}\n",
                mb, scanSeconds, copySeconds, mb / copySeconds);
        }
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return rc;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) { return tessera::bench::run(argc, argv); }
