// Data-driven matcher semantics: every tests/query/match_*.json file holds an array of cases
//   {"doc": {...}, "filter": {...}, "match": true|false, "elemMatchKey": "1"?}
//   {"filter": {...}, "error": <code>, "errmsg": "<substring>"?}
// Field names starting with '%' are read as '$' (see test_util.h).
#include <gtest/gtest.h>

#include <filesystem>

#include "query/matcher.h"
#include "query/test_util.h"

namespace tessera::query {
namespace {

std::vector<std::string> matchCaseFiles() {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(TESSERA_QUERY_CASES_DIR)) {
        auto name = entry.path().filename().string();
        if (name.rfind("match_", 0) == 0 && entry.path().extension() == ".json") {
            files.push_back(name);
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

TEST(MatcherCases, AllFilesPass) {
    auto files = matchCaseFiles();
    ASSERT_FALSE(files.empty());
    size_t total = 0;
    for (const auto& file : files) {
        auto raw = test::readFile(std::string(TESSERA_QUERY_CASES_DIR) + "/" + file);
        auto whole = bson::BsonObj::fromJson(raw);
        if (!whole.isOK()) {
            ADD_FAILURE() << file << ": " << whole.getStatus().toString();
            continue;
        }
        auto cases = test::loadCases(file);
        EXPECT_FALSE(cases.empty()) << file;
        for (size_t i = 0; i < cases.size(); ++i) {
            const auto& c = cases[i];
            SCOPED_TRACE(file + " case " + std::to_string(i) + ": " + c.toJson());
            ++total;
            auto filter = c["filter"];
            ASSERT_TRUE(filter.isObject());
            auto parsed = Matcher::parse(filter.objValue());
            if (c.hasField("error")) {
                ASSERT_FALSE(parsed.isOK()) << "expected a parse error";
                EXPECT_EQ(parsed.getStatus().code(), c["error"].numberInt())
                    << parsed.getStatus().toString();
                if (c.hasField("errmsg")) {
                    EXPECT_NE(parsed.getStatus().reason().find(c["errmsg"].stringValue()),
                              std::string::npos)
                        << parsed.getStatus().toString();
                }
                continue;
            }
            ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
            ASSERT_TRUE(c["doc"].isObject());
            MatchDetails details;
            bool got = parsed.getValue()->matches(c["doc"].objValue(), &details);
            EXPECT_EQ(got, c["match"].boolValue());
            if (c.hasField("elemMatchKey")) {
                if (c["elemMatchKey"].isNull()) {
                    EXPECT_FALSE(details.elemMatchKey.has_value());
                } else {
                    ASSERT_TRUE(details.elemMatchKey.has_value());
                    EXPECT_EQ(*details.elemMatchKey, c["elemMatchKey"].stringValue());
                }
            }
        }
    }
    std::cout << "[ matcher cases ] " << total << " cases in " << files.size() << " files\n";
}

}  // namespace
}  // namespace tessera::query
