#include "cli/serve_options.h"

#include <gtest/gtest.h>

namespace tessera::cli {
namespace {

TEST(ServeOptions, ParsesMongodSpellings) {
    auto opts = parseServeOptions({"--port", "27018", "--dbpath=/tmp/x", "--bind_ip", "0.0.0.0",
                                   "--setParameter", "enableTestCommands=1"});
    ASSERT_TRUE(opts.isOK()) << opts.getStatus().toString();
    EXPECT_EQ(opts.getValue().port, 27018);
    EXPECT_EQ(opts.getValue().dbpath, "/tmp/x");
    EXPECT_EQ(opts.getValue().bindIp, "0.0.0.0");
    EXPECT_TRUE(opts.getValue().enableTestCommands);
}

TEST(ServeOptions, ReplSetNamesASetOnServeAndShardOnly) {
    auto opts = parseServeOptions({"--dbpath", "d", "--replSet", "rs0/host:1,host:2"});
    ASSERT_TRUE(opts.isOK()) << opts.getStatus().toString();
    EXPECT_EQ(opts.getValue().replSet, "rs0");
    EXPECT_EQ(opts.getValue().replSetMembers, (std::vector<std::string>{"host:1", "host:2"}));
    EXPECT_TRUE(
        parseServeOptions({"--dbpath", "d", "--replSet", "rs0"}).getValue().replSetMembers.empty());
    for (std::string bad : {"rs0/host", "rs0/host:", "rs0/:1", "rs0/h:1,", "rs0/h:99999"}) {
        EXPECT_FALSE(parseServeOptions({"--dbpath", "d", "--replSet", bad}).isOK()) << bad;
    }
    EXPECT_FALSE(parseServeOptions({"--dbpath", "d", "--replSet", "/x"}).isOK());
    auto shard = parseServeOptions({"--dbpath", "d", "--replSet", "shard0/h:1,h:2,h:3"}, "shard");
    ASSERT_TRUE(shard.isOK()) << shard.getStatus().toString();
    EXPECT_EQ(shard.getValue().replSet, "shard0");
    EXPECT_EQ(shard.getValue().replSetMembers.size(), 3u);
    EXPECT_TRUE(parseServeOptions({"--dbpath", "d", "--replSet", "cfg/h:1,h:2"}, "config").isOK());
    EXPECT_FALSE(parseServeOptions({"--configdb", "cfg/h", "--port", "1"}, "router").isOK());
    EXPECT_FALSE(parseServeOptions({"--configdb", "h:1", "--replSet", "rs0"}, "router").isOK());
}

TEST(ServeOptions, RejectsBadInputWithClearMessages) {
    EXPECT_EQ(parseServeOptions({"--port", "1"}).getStatus().reason(), "--dbpath is required");
    EXPECT_NE(parseServeOptions({"--dbpath", "d", "--port", "70000"})
                  .getStatus()
                  .reason()
                  .find("invalid value for --port"),
              std::string::npos);
    EXPECT_NE(parseServeOptions({"--dbpath", "d", "--bogus"})
                  .getStatus()
                  .reason()
                  .find("unknown option '--bogus'"),
              std::string::npos);
    EXPECT_FALSE(parseServeOptions({"--dbpath"}).isOK());
}

TEST(ServeOptions, RoleSpecificOptions) {
    auto router =
        parseServeOptions({"--port", "27017", "--configdb", "cfg/127.0.0.1:27018"}, "router");
    ASSERT_TRUE(router.isOK()) << router.getStatus().toString();
    EXPECT_EQ(router.getValue().configdb, "cfg/127.0.0.1:27018");  // reached at its primary
    EXPECT_EQ(parseServeOptions({"--port", "1"}, "router").getStatus().reason(),
              "--configdb is required");
    auto up = parseServeOptions({"--dbpath", "d", "--shards", "3", "--routers=2"}, "up");
    ASSERT_TRUE(up.isOK()) << up.getStatus().toString();
    EXPECT_EQ(up.getValue().shards, 3);
    EXPECT_EQ(up.getValue().routers, 2);
    // Options of other roles are refused, not silently ignored.
    EXPECT_FALSE(parseServeOptions({"--dbpath", "d", "--shards", "3"}, "serve").isOK());
    EXPECT_FALSE(parseServeOptions({"--dbpath", "d", "--configdb", "h:1"}, "config").isOK());
}

// `tessera up --help` lists --workerThreads and --cacheSizeMB: they reach the children.
TEST(ServeOptions, UpPassesItsOptionsToTheChildren) {
    auto has = [](const std::vector<std::string>& args, const std::string& flag,
                  const std::string& value) {
        for (size_t i = 0; i + 1 < args.size(); ++i) {
            if (args[i] == flag) return args[i + 1] == value;
        }
        return false;
    };
    auto plain = parseServeOptions({"--dbpath", "d"}, "up").getValue();
    auto shard = upChildArguments(plain, "shard", 30003, "d/shard0", "127.0.0.1:30002");
    EXPECT_EQ(shard.front(), "shard");
    EXPECT_TRUE(has(shard, "--cacheSizeMB", "128"));  // the shards' small default
    EXPECT_TRUE(has(shard, "--configdb", "127.0.0.1:30002"));
    EXPECT_TRUE(has(shard, "--dbpath", "d/shard0"));
    auto config = upChildArguments(plain, "config", 30002, "d/config", "127.0.0.1:30002");
    EXPECT_FALSE(has(config, "--configdb", "127.0.0.1:30002"));
    for (const std::string& a : config) EXPECT_NE(a, "--workerThreads");

    auto tuned = parseServeOptions({"--dbpath", "d", "--workerThreads", "6", "--cacheSizeMB=512",
                                    "--enableTestCommands"},
                                   "up")
                     .getValue();
    for (const std::string role : {"config", "shard"}) {
        auto args = upChildArguments(tuned, role, 1, "d/x", "h:2");
        EXPECT_TRUE(has(args, "--workerThreads", "6")) << role;
        EXPECT_TRUE(has(args, "--cacheSizeMB", "512")) << role;
        EXPECT_EQ(args.back(), "--enableTestCommands") << role;
    }
    auto router = upChildArguments(tuned, "router", 30000, "", "h:2");
    EXPECT_TRUE(has(router, "--workerThreads", "6"));
    for (const std::string& a : router) EXPECT_NE(a, "--cacheSizeMB");  // a router stores nothing
    // Every child accepts what it is given.
    for (const std::string role : {"config", "shard", "router"}) {
        auto args = upChildArguments(tuned, role, 1, role == "router" ? "" : "d/x", "h:2");
        std::vector<std::string> rest(args.begin() + 1, args.end());
        EXPECT_TRUE(parseServeOptions(rest, role).isOK()) << role;
    }
}

}  // namespace
}  // namespace tessera::cli

namespace tessera::cli {
namespace {

TEST(ServeOptions, ReplSnapshotEntriesReachesEveryMemberThatStoresData) {
    auto parsed = parseServeOptions(
        {"--dbpath", "d", "--replSet", "rs0", "--setParameter", "replSnapshotEntries=64"});
    ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
    EXPECT_EQ(parsed.getValue().replSnapshotEntries, 64u);
    for (const std::string bad :
         {"replSnapshotEntries=8", "replSnapshotEntries=x", "replSnapshotEntries="}) {
        EXPECT_FALSE(parseServeOptions({"--dbpath", "d", "--setParameter", bad}).isOK()) << bad;
    }
    auto up = parseServeOptions({"--dbpath", "d", "--setParameter=replSnapshotEntries=100"}, "up");
    ASSERT_TRUE(up.isOK()) << up.getStatus().toString();
    auto passed = [](const std::vector<std::string>& args) {
        for (size_t i = 0; i + 1 < args.size(); ++i) {
            if (args[i] == "--setParameter" && args[i + 1] == "replSnapshotEntries=100")
                return true;
        }
        return false;
    };
    EXPECT_TRUE(passed(upChildArguments(up.getValue(), "shard", 1, "d/s", "h:2")));
    EXPECT_TRUE(passed(upChildArguments(up.getValue(), "config", 1, "d/c", "h:2")));
    EXPECT_FALSE(passed(upChildArguments(up.getValue(), "router", 1, "", "h:2")));
}

}  // namespace
}  // namespace tessera::cli
