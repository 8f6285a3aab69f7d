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
    EXPECT_EQ(router.getValue().configdb, "127.0.0.1:27018");
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

}  // namespace
}  // namespace tessera::cli
