#include "command/error_labels.h"

#include <gtest/gtest.h>

#include "base/error_codes.h"
#include "bson/bson_obj.h"

namespace tessera::command {
namespace {

bson::BsonObj J(std::string_view json) { return bson::fromJson(json); }

// A shard's or the config service's shutdown code never reaches a router's client as such:
// drivers would take it for the router shutting down and clear its connection pool.
TEST(RouterReplies, AShutdownCodeFromARemoteBecomesAReplStateChange) {
    for (int code : {11600, 91}) {
        bson::BsonObj reply = withoutShutdownCodes(
            J(R"({"ok": 0, "errmsg": "command _shardsvrReceiveRange on shard shard0: stopped",)"
              R"( "code": )" +
              std::to_string(code) +
              R"(, "codeName": "x", "errorLabels": ["RetryableWriteError"]})"));
        EXPECT_EQ(reply["code"].numberInt(), 11602) << code;
        EXPECT_EQ(reply["codeName"].stringValue(), "InterruptedDueToReplStateChange");
        EXPECT_EQ(reply["errmsg"].stringValue(),
                  "command _shardsvrReceiveRange on shard shard0: stopped");
        EXPECT_TRUE(reply["errorLabels"].isArray());
    }
    bson::BsonObj wce = withoutShutdownCodes(
        J(R"({"ok": 1, "n": 1, "writeConcernError": {"code": 91, "codeName": "ShutdownInProgress",)"
          R"( "errmsg": "shutting down"}})"));
    EXPECT_EQ(wce["n"].numberInt(), 1);
    EXPECT_EQ(wce["writeConcernError"].objValue()["code"].numberInt(), 11602);
    EXPECT_EQ(wce["writeConcernError"].objValue()["errmsg"].stringValue(), "shutting down");
}

TEST(RouterReplies, OtherRepliesPassUnchanged) {
    for (const char* json : {R"({"ok": 1})", R"({"ok": 0, "code": 11602, "errmsg": "x"})",
                             R"({"ok": 0, "code": 10107, "errmsg": "not primary"})",
                             R"({"ok": 1, "writeConcernError": {"code": 64, "errmsg": "w"}})"}) {
        bson::BsonObj in = J(json);
        EXPECT_EQ(withoutShutdownCodes(in).toJson(), in.toJson()) << json;
    }
}

}  // namespace
}  // namespace tessera::command
