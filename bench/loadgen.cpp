// tessera_loadgen: a closed-loop load generator for any MongoDB-compatible endpoint.
//
// Phases (each bounded by --seconds and --max-ops, run with --threads connections):
//   insert  insert_one of a new document (w:1 unless the URI says otherwise)
//   insert_j  the same with writeConcern {w: 1, j: true}: acknowledged once journaled
//   point   find {_id: <random existing id>} limit 1
//   update  update_one {_id: <random existing id>} {$inc: {n: 1}}
//   range   find {_id: {$gte: s, $lt: s + L}}, all L documents read
// Before point/update/range the collection is dropped and preloaded with --docs documents of
// --doc-size BSON bytes, _id 0..docs-1 (see bench_document.h). Inserts use _id from --docs up.
// With --server-pid P (a server on this machine) each phase also reports the server's CPU time
// per operation, from /proc/P/stat (all its threads) at the phase's start and end.
// Prints ops/s, p50 and p99 per phase, and one JSON line per phase with --json. Exit status:
// 0 all phases ran without errors, 1 some operation failed, 2 bad usage, 3 endpoint unreachable.
#include <mongoc/mongoc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_document.h"
#include "flags.h"
#include "phase_runner.h"

namespace tessera::bench {
namespace {

constexpr const char* kUsage =
    "usage: tessera_loadgen --uri URI [--threads 16]\n"
    "                       [--op insert|insert_j|point|update|range|all] [--server-pid P]\n"
    "                       [--seconds 10] [--docs 100000] [--doc-size 1024] [--range-len 100]\n"
    "                       [--max-ops N] [--db tessera_bench] [--coll docs] [--index-k]\n"
    "                       [--skip-preload] [--preload-seconds 120] [--timeout-ms 5000] "
    "[--json]\n";
constexpr uint64_t kPreloadBatch = 1000;

struct Config {
    std::string uri;
    std::string db;
    std::string coll;
    std::vector<std::string> ops;
    uint64_t threads = 16;
    double seconds = 10;
    double preloadSeconds = 120;
    uint64_t docs = 100000;
    uint64_t docSize = 1024;
    uint64_t rangeLen = 100;
    uint64_t maxOps = UINT64_MAX;
    uint64_t timeoutMs = 5000;
    uint64_t serverPid = 0;  // 0: not measured
    bool indexK = false;
    bool skipPreload = false;
    bool json = false;
};

// A bson_t on the stack that destroys itself.
struct ScopedBson {
    bson_t b;
    ScopedBson() { bson_init(&b); }
    ~ScopedBson() { bson_destroy(&b); }
    ScopedBson(const ScopedBson&) = delete;
    ScopedBson& operator=(const ScopedBson&) = delete;
    bson_t* get() { return &b; }
};

// One connection's handles, owned by one load thread at a time.
struct Connection {
    mongoc_client_pool_t* pool = nullptr;
    mongoc_client_t* client = nullptr;
    mongoc_collection_t* coll = nullptr;
    ~Connection() {
        if (coll) {
            mongoc_collection_destroy(coll);
        }
        if (client) {
            mongoc_client_pool_push(pool, client);
        }
    }
};

std::string errorText(const bson_error_t& e) {
    return std::string(e.message) + " (code " + std::to_string(e.code) + ")";
}

bool parseConfig(int argc, char** argv, Config* cfg, std::string* err) {
    Flags flags({"uri", "threads", "op", "seconds", "docs", "doc-size", "range-len", "max-ops",
                 "db", "coll", "preload-seconds", "timeout-ms", "server-pid"},
                {"json", "index-k", "skip-preload", "help"});
    if (!flags.parse(argc, argv, err)) {
        return false;
    }
    if (flags.has("help")) {
        std::cout << kUsage;
        std::exit(0);
    }
    if (!flags.has("uri")) {
        *err = "--uri is required";
        return false;
    }
    cfg->uri = flags.getString("uri", "");
    cfg->db = flags.getString("db", "tessera_bench");
    cfg->coll = flags.getString("coll", "docs");
    cfg->json = flags.has("json");
    cfg->indexK = flags.has("index-k");
    cfg->skipPreload = flags.has("skip-preload");
    if (!flags.getUint("threads", 16, &cfg->threads, err) ||
        !flags.getUint("docs", 100000, &cfg->docs, err) ||
        !flags.getUint("doc-size", 1024, &cfg->docSize, err) ||
        !flags.getUint("range-len", 100, &cfg->rangeLen, err) ||
        !flags.getUint("max-ops", UINT64_MAX, &cfg->maxOps, err) ||
        !flags.getUint("timeout-ms", 5000, &cfg->timeoutMs, err) ||
        !flags.getUint("server-pid", 0, &cfg->serverPid, err) ||
        !flags.getDouble("seconds", 10, &cfg->seconds, err) ||
        !flags.getDouble("preload-seconds", 120, &cfg->preloadSeconds, err)) {
        return false;
    }
    std::string op = flags.getString("op", "all");
    if (op == "all") {
        cfg->ops = {"point", "update", "range", "insert", "insert_j"};
    } else if (op == "insert" || op == "insert_j" || op == "point" || op == "update" ||
               op == "range") {
        cfg->ops = {op};
    } else {
        *err = "--op must be insert, insert_j, point, update, range or all, got '" + op + "'";
        return false;
    }
    if (cfg->threads == 0 || cfg->threads > 1024) {
        *err = "--threads must be in [1, 1024]";
        return false;
    }
    if (cfg->docSize > 16 * 1024 * 1024) {
        *err = "--doc-size must be at most 16 MiB";
        return false;
    }
    bool needsDocs = cfg->ops.size() > 1 || !cfg->ops[0].starts_with("insert");
    if (needsDocs && cfg->docs == 0) {
        *err = "--docs must be >= 1 for point/update/range phases";
        return false;
    }
    bool ranges = std::find(cfg->ops.begin(), cfg->ops.end(), "range") != cfg->ops.end();
    if (ranges && (cfg->rangeLen == 0 || cfg->rangeLen > cfg->docs)) {
        *err = "--range-len must be in [1, docs] for the range phase";
        return false;
    }
    return true;
}

class LoadGen {
  public:
    explicit LoadGen(Config cfg) : _cfg(std::move(cfg)), _pad(_cfg.docSize) {}
    ~LoadGen() {
        _connections.clear();
        if (_pool) {
            mongoc_client_pool_destroy(_pool);
        }
        if (_uri) {
            mongoc_uri_destroy(_uri);
        }
    }

    int run() {
        if (int rc = connect(); rc != 0) {
            return rc;
        }
        bool needsDocs = _cfg.ops.size() > 1 || !_cfg.ops[0].starts_with("insert");
        if (!_cfg.skipPreload) {
            if (int rc = resetCollection(); rc != 0) {
                return rc;
            }
            if (needsDocs) {
                if (int rc = preload(); rc != 0) {
                    return rc;
                }
            }
        }
        int rc = 0;
        for (const auto& op : _cfg.ops) {
            double cpuBefore = serverCpuSeconds();
            double selfBefore = ownCpuSeconds();
            PhaseResult r = runOp(op);
            double cpuAfter = serverCpuSeconds();
            double selfAfter = ownCpuSeconds();
            if (cpuBefore >= 0 && cpuAfter >= 0 && r.ops > 0) {
                r.serverCpuUsPerOp = (cpuAfter - cpuBefore) * 1e6 / static_cast<double>(r.ops);
            }
            if (r.ops > 0) {
                r.clientCpuUsPerOp = (selfAfter - selfBefore) * 1e6 / static_cast<double>(r.ops);
            }
            std::cout << formatText(r) << "\n";
            if (_cfg.json) {
                std::cout << formatJson(r) << "\n";
            }
            std::cout.flush();
            if (r.errors > 0 || r.ops == 0) {
                rc = 1;
            }
        }
        return rc;
    }

  private:
    // This load generator's own CPU (all its threads): what the client side of an operation
    // costs on the same cores.
    static double ownCpuSeconds() {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        auto secs = [](const timeval& t) {
            return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6;
        };
        return secs(u.ru_utime) + secs(u.ru_stime);
    }

    // utime + stime of the server process (all threads), or -1 when not measured.
    double serverCpuSeconds() const {
        if (_cfg.serverPid == 0) return -1;
        std::ifstream in("/proc/" + std::to_string(_cfg.serverPid) + "/stat");
        std::string line;
        if (!std::getline(in, line)) return -1;
        // Fields after the command name (which may hold spaces): state is field 3, utime 14.
        auto close = line.rfind(')');
        if (close == std::string::npos) return -1;
        std::istringstream rest(line.substr(close + 2));
        std::string field;
        unsigned long long utime = 0, stime = 0;
        for (int i = 3; i <= 15 && rest >> field; ++i) {
            if (i == 14) utime = std::stoull(field);
            if (i == 15) stime = std::stoull(field);
        }
        return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
    }

    int connect() {
        bson_error_t error;
        _uri = mongoc_uri_new_with_error(_cfg.uri.c_str(), &error);
        if (!_uri) {
            std::cerr << "tessera_loadgen: invalid --uri '" << _cfg.uri << "': " << error.message
                      << "\n";
            return 2;
        }
        auto timeout = static_cast<int32_t>(_cfg.timeoutMs);
        if (!mongoc_uri_has_option(_uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS)) {
            mongoc_uri_set_option_as_int32(_uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, timeout);
        }
        if (!mongoc_uri_has_option(_uri, MONGOC_URI_CONNECTTIMEOUTMS)) {
            mongoc_uri_set_option_as_int32(_uri, MONGOC_URI_CONNECTTIMEOUTMS, timeout);
        }
        if (!mongoc_uri_has_option(_uri, MONGOC_URI_APPNAME)) {
            mongoc_uri_set_appname(_uri, "tessera_loadgen");
        }
        _pool = mongoc_client_pool_new_with_error(_uri, &error);
        if (!_pool) {
            std::cerr << "tessera_loadgen: cannot create client pool: " << error.message << "\n";
            return 2;
        }
        mongoc_client_pool_set_error_api(_pool, MONGOC_ERROR_API_VERSION_2);
        mongoc_client_pool_max_size(_pool, static_cast<uint32_t>(_cfg.threads));

        // One connection per load thread, each proven with a ping before any clock starts.
        for (uint64_t t = 0; t < _cfg.threads; ++t) {
            auto c = std::make_unique<Connection>();
            c->pool = _pool;
            c->client = mongoc_client_pool_pop(_pool);
            c->coll = mongoc_client_get_collection(c->client, _cfg.db.c_str(), _cfg.coll.c_str());
            ScopedBson ping;
            BSON_APPEND_INT32(ping.get(), "ping", 1);
            if (!mongoc_client_command_simple(c->client, "admin", ping.get(), nullptr, nullptr,
                                              &error)) {
                std::cerr << "tessera_loadgen: cannot reach " << _cfg.uri << ": "
                          << errorText(error) << "\n";
                return 3;
            }
            _connections.push_back(std::move(c));
        }
        return 0;
    }

    int resetCollection() {
        bson_error_t error;
        mongoc_collection_t* coll = _connections[0]->coll;
        if (!mongoc_collection_drop(coll, &error) && error.code != 26 &&
            std::string(error.message).find("ns not found") == std::string::npos) {
            std::cerr << "tessera_loadgen: drop " << _cfg.db << "." << _cfg.coll << ": "
                      << errorText(error) << "\n";
            return 1;
        }
        if (_cfg.indexK) {
            ScopedBson cmd;
            bson_t indexes, index, key;
            BSON_APPEND_UTF8(cmd.get(), "createIndexes", _cfg.coll.c_str());
            BSON_APPEND_ARRAY_BEGIN(cmd.get(), "indexes", &indexes);
            BSON_APPEND_DOCUMENT_BEGIN(&indexes, "0", &index);
            BSON_APPEND_DOCUMENT_BEGIN(&index, "key", &key);
            BSON_APPEND_INT32(&key, "k", 1);
            bson_append_document_end(&index, &key);
            BSON_APPEND_UTF8(&index, "name", "k_1");
            bson_append_document_end(&indexes, &index);
            bson_append_array_end(cmd.get(), &indexes);
            if (!mongoc_client_command_simple(_connections[0]->client, _cfg.db.c_str(), cmd.get(),
                                              nullptr, nullptr, &error)) {
                std::cerr << "tessera_loadgen: createIndexes k_1: " << errorText(error) << "\n";
                return 1;
            }
        }
        return 0;
    }

    // Inserts _id 0..docs-1 in unordered batches, spread over the load threads.
    int preload() {
        uint64_t batches = (_cfg.docs + kPreloadBatch - 1) / kPreloadBatch;
        PhaseSpec spec{"tessera_loadgen",
                       "preload",
                       _cfg.threads,
                       _cfg.preloadSeconds,
                       batches,
                       _cfg.docSize * kPreloadBatch,
                       7};
        PhaseResult r = runPhase(spec, [&](OpContext& ctx) {
            mongoc_collection_t* coll = _connections[ctx.thread]->coll;
            ScopedBson opts;
            BSON_APPEND_BOOL(opts.get(), "ordered", false);
            mongoc_bulk_operation_t* bulk =
                mongoc_collection_create_bulk_operation_with_opts(coll, opts.get());
            uint64_t first = ctx.ticket * kPreloadBatch;
            uint64_t last = std::min(_cfg.docs, first + kPreloadBatch);
            for (uint64_t id = first; id < last; ++id) {
                bson_t doc;
                makeDocument(static_cast<int64_t>(id), static_cast<uint32_t>(_cfg.docSize), _pad,
                             &doc);
                mongoc_bulk_operation_insert(bulk, &doc);
                bson_destroy(&doc);
            }
            bson_error_t error;
            ScopedBson reply;
            bool ok = mongoc_bulk_operation_execute(bulk, reply.get(), &error) != 0;
            mongoc_bulk_operation_destroy(bulk);
            if (!ok) {
                ctx.error = errorText(error);
            }
            return ok;
        });
        uint64_t batchesDone = r.ops;
        std::fprintf(
            stdout, "tessera_loadgen preload: %llu docs of %llu B in %.1f s (%.0f docs/s)\n",
            static_cast<unsigned long long>(std::min(_cfg.docs, batchesDone * kPreloadBatch)),
            static_cast<unsigned long long>(_cfg.docSize), r.seconds,
            r.seconds > 0 ? std::min(_cfg.docs, batchesDone * kPreloadBatch) / r.seconds : 0.0);
        if (_cfg.json) {
            std::cout << formatJson(r) << "\n";
        }
        if (r.errors > 0 || batchesDone < batches) {
            std::cerr << "tessera_loadgen: preload incomplete (" << batchesDone << "/" << batches
                      << " batches"
                      << (r.firstError.empty() ? ", out of time" : ", " + r.firstError) << ")\n";
            return 1;
        }
        return 0;
    }

    PhaseResult runOp(const std::string& op) {
        PhaseSpec spec{"tessera_loadgen", op, _cfg.threads, _cfg.seconds, _cfg.maxOps,
                       _cfg.docSize,      11};
        if (op == "insert") {
            return runPhase(spec, [&](OpContext& ctx) { return insertOne(ctx, false); });
        }
        if (op == "insert_j") {
            return runPhase(spec, [&](OpContext& ctx) { return insertOne(ctx, true); });
        }
        if (op == "point") {
            return runPhase(spec, [&](OpContext& ctx) { return pointRead(ctx); });
        }
        if (op == "update") {
            return runPhase(spec, [&](OpContext& ctx) { return updateOne(ctx); });
        }
        spec.bytesPerOp = _cfg.docSize * _cfg.rangeLen;
        return runPhase(spec, [&](OpContext& ctx) { return rangeScan(ctx); });
    }

    // `journaled`: writeConcern {w: 1, j: true}. Its _ids start far above the w:1 phase's.
    bool insertOne(OpContext& ctx, bool journaled) {
        constexpr int64_t kJournaledIdBase = int64_t{1} << 40;
        bson_t doc;
        makeDocument(
            static_cast<int64_t>(_cfg.docs + ctx.ticket) + (journaled ? kJournaledIdBase : 0),
            static_cast<uint32_t>(_cfg.docSize), _pad, &doc);
        bson_error_t error;
        ScopedBson opts;
        if (journaled) {
            mongoc_write_concern_t* wc = mongoc_write_concern_new();
            mongoc_write_concern_set_w(wc, 1);
            mongoc_write_concern_set_journal(wc, true);
            mongoc_write_concern_append(wc, opts.get());
            mongoc_write_concern_destroy(wc);
        }
        bool ok = mongoc_collection_insert_one(_connections[ctx.thread]->coll, &doc,
                                               journaled ? opts.get() : nullptr, nullptr, &error);
        bson_destroy(&doc);
        if (!ok) {
            ctx.error = "insert: " + errorText(error);
        }
        return ok;
    }

    bool pointRead(OpContext& ctx) {
        auto id = static_cast<int64_t>((*ctx.rng)() % _cfg.docs);
        ScopedBson filter, opts;
        BSON_APPEND_INT64(filter.get(), "_id", id);
        BSON_APPEND_INT64(opts.get(), "limit", 1);
        BSON_APPEND_BOOL(opts.get(), "singleBatch", true);
        uint64_t n = 0;
        if (!drain(ctx, filter.get(), opts.get(), &n)) {
            return false;
        }
        if (n != 1) {
            ctx.error = "point read of _id " + std::to_string(id) + " returned " +
                        std::to_string(n) + " documents";
            return false;
        }
        return true;
    }

    bool updateOne(OpContext& ctx) {
        auto id = static_cast<int64_t>((*ctx.rng)() % _cfg.docs);
        ScopedBson filter, update, reply;
        bson_t inc;
        BSON_APPEND_INT64(filter.get(), "_id", id);
        BSON_APPEND_DOCUMENT_BEGIN(update.get(), "$inc", &inc);
        BSON_APPEND_INT32(&inc, "n", 1);
        bson_append_document_end(update.get(), &inc);
        bson_error_t error;
        if (!mongoc_collection_update_one(_connections[ctx.thread]->coll, filter.get(),
                                          update.get(), nullptr, reply.get(), &error)) {
            ctx.error = "update: " + errorText(error);
            return false;
        }
        bson_iter_t it;
        if (bson_iter_init_find(&it, reply.get(), "matchedCount") && bson_iter_as_int64(&it) != 1) {
            ctx.error = "update of _id " + std::to_string(id) + " matched " +
                        std::to_string(bson_iter_as_int64(&it)) + " documents";
            return false;
        }
        return true;
    }

    bool rangeScan(OpContext& ctx) {
        uint64_t start = (*ctx.rng)() % (_cfg.docs - _cfg.rangeLen + 1);
        ScopedBson filter, opts;
        bson_t range;
        BSON_APPEND_DOCUMENT_BEGIN(filter.get(), "_id", &range);
        BSON_APPEND_INT64(&range, "$gte", static_cast<int64_t>(start));
        BSON_APPEND_INT64(&range, "$lt", static_cast<int64_t>(start + _cfg.rangeLen));
        bson_append_document_end(filter.get(), &range);
        // limit lets the server close the cursor with the first batch (no empty getMore) for
        // the common sizes; ranges over 1000 documents exercise getMore.
        BSON_APPEND_INT64(opts.get(), "limit", static_cast<int64_t>(_cfg.rangeLen));
        BSON_APPEND_INT64(opts.get(), "batchSize",
                          static_cast<int64_t>(std::min<uint64_t>(_cfg.rangeLen, 1000)));
        uint64_t n = 0;
        if (!drain(ctx, filter.get(), opts.get(), &n)) {
            return false;
        }
        if (n != _cfg.rangeLen) {
            ctx.error = "range scan from _id " + std::to_string(start) + " returned " +
                        std::to_string(n) + " documents, expected " + std::to_string(_cfg.rangeLen);
            return false;
        }
        return true;
    }

    // Runs a find and reads every document; *count gets how many.
    bool drain(OpContext& ctx, const bson_t* filter, const bson_t* opts, uint64_t* count) {
        mongoc_cursor_t* cursor =
            mongoc_collection_find_with_opts(_connections[ctx.thread]->coll, filter, opts, nullptr);
        const bson_t* doc = nullptr;
        uint64_t n = 0;
        while (mongoc_cursor_next(cursor, &doc)) {
            ++n;
        }
        bson_error_t error;
        bool failed = mongoc_cursor_error(cursor, &error);
        mongoc_cursor_destroy(cursor);
        if (failed) {
            ctx.error = "find: " + errorText(error);
            return false;
        }
        *count = n;
        return true;
    }

    Config _cfg;
    ValueSource _pad;
    mongoc_uri_t* _uri = nullptr;
    mongoc_client_pool_t* _pool = nullptr;
    std::vector<std::unique_ptr<Connection>> _connections;
};

// The default handler prints mongoc's DEBUG chatter (monitor retries); keep warnings and worse.
void quietLog(mongoc_log_level_t level, const char* domain, const char* message, void*) {
    if (level <= MONGOC_LOG_LEVEL_WARNING) {
        std::fprintf(stderr, "mongoc %s: %s\n", domain, message);
    }
}

int run(int argc, char** argv) {
    Config cfg;
    std::string err;
    if (!parseConfig(argc, argv, &cfg, &err)) {
        std::cerr << "tessera_loadgen: " << err << "\n" << kUsage;
        return 2;
    }
    mongoc_log_set_handler(quietLog, nullptr);
    mongoc_init();
    int rc;
    {
        LoadGen gen(std::move(cfg));
        rc = gen.run();
    }
    mongoc_cleanup();
    return rc;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) { return tessera::bench::run(argc, argv); }
