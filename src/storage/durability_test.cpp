// Crash safety (kill -9 of a writer process) and cross-process dbpath locking. The child runs
// this same test binary (fork + exec, so it starts with a clean RocksDB environment) with
// TESSERA_STORAGE_CHILD set, which selects the ChildProcess tests below.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::J;

const char* childMode() { return std::getenv("TESSERA_STORAGE_CHILD"); }
const char* childDir() { return std::getenv("TESSERA_STORAGE_DIR"); }

// Runs this binary with one test selected and the given mode; returns the pid.
pid_t spawnChild(const std::string& mode, const std::string& dir, const std::string& filter,
                 int stdoutFd = -1) {
    pid_t pid = ::fork();
    if (pid == 0) {
        if (stdoutFd >= 0) ::dup2(stdoutFd, 1);
        ::setenv("TESSERA_STORAGE_CHILD", mode.c_str(), 1);
        ::setenv("TESSERA_STORAGE_DIR", dir.c_str(), 1);
        std::string f = "--gtest_filter=" + filter;
        char* argv[] = {const_cast<char*>("/proc/self/exe"), f.data(), nullptr};
        ::execv("/proc/self/exe", argv);
        ::_exit(127);
    }
    return pid;
}

// Child: inserts documents with sync=true, printing each acknowledged _id, until killed.
TEST(ChildProcess, SyncWriter) {
    if (!childMode() || std::string(childMode()) != "writer") GTEST_SKIP();
    EngineOptions options;
    options.dbpath = childDir();
    auto engine = std::move(Engine::open(options).getValue());
    auto coll = engine->createCollection("db.c", bson::BsonObj()).getValue();
    IndexSpec a;
    a.name = "a_1";
    a.keyPattern = J(R"({"a": 1})");
    ASSERT_TRUE(engine->createIndexes("db.c", {a}).isOK());
    auto w = std::move(engine->writer(coll).getValue());
    for (int i = 0;; ++i) {
        std::string doc = "{\"_id\": " + std::to_string(i) + ", \"a\": " + std::to_string(i) +
                          ", \"pad\": \"" + std::string(200, 'p') + "\"}";
        auto sw = w->insert(J(doc), WriteOptions{.sync = true});
        if (!sw.isOK()) std::_Exit(3);
        std::string line = std::to_string(i) + "\n";
        if (::write(1, line.data(), line.size()) < 0) std::_Exit(4);
    }
}

// Child: tries to open a dbpath held by the parent; exits with the error code.
TEST(ChildProcess, OpenHeldDbpath) {
    if (!childMode() || std::string(childMode()) != "open") GTEST_SKIP();
    EngineOptions options;
    options.dbpath = childDir();
    auto sw = Engine::open(options);
    std::_Exit(sw.isOK() ? 0 : sw.getStatus().code() % 256);
}

TEST(Durability, SyncWritesSurviveKill9) {
    if (childMode()) GTEST_SKIP();
    test::TempDir dir;
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = spawnChild("writer", dir.path(), "ChildProcess.SyncWriter", fds[1]);
    ::close(fds[1]);
    // Read acknowledgements until enough documents are durable, then kill -9 mid-stream.
    int acked = -1;
    std::string buf;
    char chunk[4096];
    while (acked < 300) {
        ssize_t n = ::read(fds[0], chunk, sizeof chunk);
        ASSERT_GT(n, 0) << "child died early";
        buf.append(chunk, n);
        size_t nl;
        while ((nl = buf.find('\n')) != std::string::npos) {
            std::string line = buf.substr(0, nl);
            buf.erase(0, nl + 1);
            if (!line.empty() && line[0] >= '0' && line[0] <= '9') acked = std::stoi(line);
        }
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status));

    EngineOptions options;
    options.dbpath = dir.path();
    auto sw = Engine::open(options);
    ASSERT_TRUE(sw.isOK()) << sw.getStatus().toString();
    auto engine = std::move(sw.getValue());
    auto coll = engine->getCollection("db.c");
    ASSERT_TRUE(coll);
    ASSERT_EQ(coll->indexes.size(), 2u);
    auto snap = engine->snapshot();
    int64_t found = 0;
    auto cursor = snap->scan(*coll);
    while (auto r = cursor->next()) ++found;
    // Every acknowledged write is there; at most a few unacknowledged ones too.
    EXPECT_GE(found, acked + 1);
    for (int i = 0; i <= acked; ++i) {
        bson::BsonObj id = J("{\"_id\": " + std::to_string(i) + "}");
        ASSERT_TRUE(snap->findById(*coll, id.firstElement()).has_value()) << i;
    }
    // Counts and the index agree with the records.
    EXPECT_EQ(engine->stats(*coll).count, found);
    int64_t entries = 0;
    auto ix = snap->indexScan(*coll, coll->indexes[1], {});
    while (ix->next()) ++entries;
    EXPECT_EQ(entries, found);
}

TEST(Durability, SecondProcessGetsDBPathInUse) {
    if (childMode()) GTEST_SKIP();
    test::TempDir dir;
    EngineOptions options;
    options.dbpath = dir.path();
    auto engine = Engine::open(options);
    ASSERT_TRUE(engine.isOK());
    pid_t pid = spawnChild("open", dir.path(), "ChildProcess.OpenHeldDbpath");
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 98);
}

}  // namespace
}  // namespace tessera::storage
