#include "query/update_paths.h"

#include <gtest/gtest.h>

#include <vector>

#include "bson/bson_obj.h"

namespace tessera::query {
namespace {

// `{"u": ...}` parsed and kept alive; the test looks at its `u` element.
bson::BsonElement u(const char* json) {
    static std::vector<bson::BsonObj> keep;
    keep.push_back(bson::fromJson(json));
    return keep.back()["u"];
}

TEST(UpdatePaths, Overlap) {
    EXPECT_TRUE(pathsOverlap("a", "a"));
    EXPECT_TRUE(pathsOverlap("a", "a.b"));
    EXPECT_TRUE(pathsOverlap("a.b.c", "a.b"));
    EXPECT_FALSE(pathsOverlap("a", "ab"));
    EXPECT_FALSE(pathsOverlap("a.b", "a.c"));
}

TEST(UpdatePaths, OperatorsThatWriteAKeyPath) {
    const std::vector<std::string_view> key = {"a.b", "k"};
    EXPECT_TRUE(updateMayModifyPaths(u(R"({"u": {"$set": {"a": 1}}})"), key));
    EXPECT_TRUE(updateMayModifyPaths(u(R"({"u": {"$inc": {"a.b": 1}}})"), key));
    EXPECT_TRUE(updateMayModifyPaths(u(R"({"u": {"$set": {"a.b.c": 1}}})"), key));
    EXPECT_TRUE(updateMayModifyPaths(u(R"({"u": {"$unset": {"k": ""}}})"), key));
    EXPECT_TRUE(updateMayModifyPaths(u(R"({"u": {"$rename": {"z": "a.b"}}})"), key));
    EXPECT_TRUE(updateMayModifyPaths(u(R"({"u": {"$rename": {"k": "z"}}})"), key));
    EXPECT_FALSE(updateMayModifyPaths(u(R"({"u": {"$set": {"a.c": 1, "ab": 2}}})"), key));
    EXPECT_FALSE(updateMayModifyPaths(u(R"({"u": {"$inc": {"n": 1}, "$push": {"l": 1}}})"), key));
    // Inside an array of a key path: the prefix decides.
    EXPECT_TRUE(updateMayModifyPaths(u(R"({"u": {"$set": {"a.$.b": 1}}})"), key));
    EXPECT_FALSE(updateMayModifyPaths(u(R"({"u": {"$set": {"l.$[x].k": 1}}})"), key));
}

TEST(UpdatePaths, ReplacementsAndPipelinesAlwaysMay) {
    const std::vector<std::string_view> key = {"k"};
    EXPECT_TRUE(updateMayModifyPaths(u(R"({"u": {"z": 1}})"), key));
    EXPECT_TRUE(updateMayModifyPaths(u(R"({"u": {}})"), key));
    EXPECT_TRUE(updateMayModifyPaths(u(R"({"u": [{"$set": {"z": 1}}]})"), key));
}

}  // namespace
}  // namespace tessera::query
