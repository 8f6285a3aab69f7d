// Data-driven update semantics: every tests/query/update/*.json file holds an array of cases
//   {"doc": {...}, "update": {...}, "arrayFilters": [...]?, "positionalIndex": n?,
//    "insert": true?  (apply with isUpsertInsert), "upsert": true? (applyForUpsert, doc = seed),
//    "expected": {...}, "modified": bool?}      -- the result must be byte-identical to expected
//   {..., "error": <code>, "errmsg": "<substring>"?}  -- parse or apply fails with that code
// Field names starting with '%' are read as '$' (see test_util.h). $currentDate uses a fixed
// clock: 2023-11-14T22:13:20Z (1700000000000 ms) and Timestamp(1700000000, 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "query/test_util.h"
#include "query/update_driver.h"

namespace tessera::query {
namespace {

constexpr int64_t kFixedMillis = 1700000000000;
constexpr uint64_t kFixedTimestamp = (uint64_t{1700000000} << 32) | 1;

std::string casesDir() { return std::string(TESSERA_QUERY_CASES_DIR) + "/update"; }

std::vector<std::string> caseFiles() {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(casesDir())) {
        if (entry.path().extension() == ".json") files.push_back(entry.path().filename());
    }
    std::sort(files.begin(), files.end());
    return files;
}

// Runs one case; returns a failure description or "" on success.
std::string runCase(const bson::BsonObj& c) {
    bson::BsonObj doc = c["doc"].isObject() ? c["doc"].objValue().copy() : bson::BsonObj();
    bson::BsonObj update = c["update"].objValue().copy();
    bson::BsonObj filters =
        c["arrayFilters"].isArray() ? c["arrayFilters"].objValue().copy() : bson::BsonObj();
    bool wantError = c.hasField("error");

    auto parsed = UpdateDriver::parse(update, filters);
    Status status = parsed.getStatus();
    bson::BsonObj out;
    bool modified = false;
    if (status.isOK()) {
        ApplyContext ctx;
        if (c.hasField("positionalIndex")) {
            ctx.positionalIndex = static_cast<size_t>(c["positionalIndex"].numberLong());
        }
        ctx.isUpsertInsert = c["insert"].trueValue();
        ctx.nowMillis = [] { return kFixedMillis; };
        ctx.nowTimestamp = [] { return kFixedTimestamp; };
        if (c["upsert"].trueValue()) {
            status = parsed.getValue().applyForUpsert(doc, &out, ctx);
            modified = true;
        } else {
            status = parsed.getValue().apply(doc, ctx, &out, &modified);
        }
    }
    if (wantError) {
        if (status.isOK())
            return "expected error " + c["error"].toString() + ", got " + out.toJson();
        if (status.code() != c["error"].numberInt()) return "wrong error: " + status.toString();
        if (c.hasField("errmsg") &&
            status.reason().find(c["errmsg"].stringValue()) == std::string::npos) {
            return "wrong message: " + status.toString();
        }
        return "";
    }
    if (!status.isOK()) return "unexpected error: " + status.toString();
    bson::BsonObj expected = c["expected"].objValue().copy();
    if (!out.binaryEqual(expected)) {
        return "result " + out.toCanonicalJson() + "\n   expected " + expected.toCanonicalJson();
    }
    bool wantModified =
        c.hasField("modified") ? c["modified"].trueValue() : !expected.binaryEqual(doc);
    if (modified != wantModified) return "modified = " + std::to_string(modified);
    return "";
}

TEST(UpdateCases, AllFilesPass) {
    auto files = caseFiles();
    ASSERT_FALSE(files.empty());
    size_t total = 0;
    for (const auto& file : files) {
        auto raw = test::readFile(casesDir() + "/" + file);
        auto whole = bson::BsonObj::fromJson(raw);
        if (!whole.isOK()) {
            ADD_FAILURE() << file << ": " << whole.getStatus().toString();
            continue;
        }
        size_t i = 0;
        for (bson::BsonElement e : whole.getValue()) {
            bson::BsonObj c = test::rewriteDollars(e.objValue());
            ++total;
            std::string failure = runCase(c);
            EXPECT_EQ(failure, "")
                << file << " case " << i << " " << (c.hasField("name") ? c["name"].toString() : "")
                << "\n  " << c.toJson();
            ++i;
        }
    }
    EXPECT_GE(total, 150u);
}

}  // namespace
}  // namespace tessera::query
