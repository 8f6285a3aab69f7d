// $jsonSchema: data-driven cases (tests/query/json_schema/cases.json) plus error details and the
// matcher integration.
//   {"schema": {...}, "doc": {...}, "match": true|false}
//   {"schema": {...}, "error": <code>, "errmsg": "<substring>"?}
#include "query/json_schema.h"

#include <gtest/gtest.h>

#include "query/matcher.h"
#include "query/test_util.h"

namespace tessera::query {
namespace {

TEST(JsonSchemaCases, AllPass) {
    auto cases = test::loadCases("json_schema/cases.json");
    ASSERT_GT(cases.size(), 50u);
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto& c = cases[i];
        SCOPED_TRACE("case " + std::to_string(i) + ": " + c.toJson());
        ASSERT_TRUE(c["schema"].isObject());
        auto parsed = JsonSchema::parse(c["schema"].objValue());
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
        bson::BsonView doc = c["doc"].objValue();
        bool expected = c["match"].boolValue();
        EXPECT_EQ(parsed.getValue()->matches(doc), expected);
        // explainFailure agrees with matches().
        bson::BsonObj details = parsed.getValue()->explainFailure(doc);
        EXPECT_EQ(details["schemaRulesNotSatisfied"].objValue().isEmpty(), expected)
            << details.toJson();
        // And so does the filter {$jsonSchema: ...}.
        bson::BsonBuilder f;
        f.append("$jsonSchema", c["schema"].objValue());
        auto matcher = Matcher::parse(f.obj());
        ASSERT_TRUE(matcher.isOK()) << matcher.getStatus().toString();
        EXPECT_EQ(matcher.getValue()->matches(doc), expected);
    }
}

TEST(JsonSchema, FailureDetailsFollowMongoShape) {
    auto schema = JsonSchema::parse(test::json(
        R"({"required": ["name", "age"], "properties": {"name": {"bsonType": "string"}}})"));
    ASSERT_TRUE(schema.isOK());
    bson::BsonObj d = schema.getValue()->explainFailure(test::json(R"({"name": 5})"));
    EXPECT_EQ(d["operatorName"].stringValue(), "$jsonSchema");
    bson::BsonView rules = d["schemaRulesNotSatisfied"].objValue();
    ASSERT_EQ(rules.nFields(), 2u) << d.toJson();
    bson::BsonView required = rules["0"].objValue();
    EXPECT_EQ(required["operatorName"].stringValue(), "required");
    EXPECT_EQ(required["missingProperties"].objValue().toJson(),
              test::json(R"({"0": "age"})").toJson());
    bson::BsonView props = rules["1"].objValue();
    EXPECT_EQ(props["operatorName"].stringValue(), "properties");
    bson::BsonView p0 = props["propertiesNotSatisfied"].objValue()["0"].objValue();
    EXPECT_EQ(p0["propertyName"].stringValue(), "name");
    bson::BsonView detail = p0["details"].objValue()["0"].objValue();
    EXPECT_EQ(detail["operatorName"].stringValue(), "bsonType");
    EXPECT_EQ(detail["reason"].stringValue(), "type did not match");
    EXPECT_EQ(detail["consideredValue"].numberInt(), 5);
    EXPECT_EQ(detail["consideredType"].stringValue(), "int");
}

TEST(JsonSchema, FilterCombinesWithOtherPredicates) {
    auto m = Matcher::parse(
        test::json(R"({"a": 1, "$jsonSchema": {"properties": {"b": {"bsonType": "string"}}}})"));
    ASSERT_TRUE(m.isOK()) << m.getStatus().toString();
    EXPECT_TRUE(m.getValue()->matches(test::json(R"({"a": 1, "b": "x"})")));
    EXPECT_FALSE(m.getValue()->matches(test::json(R"({"a": 2, "b": "x"})")));
    EXPECT_FALSE(m.getValue()->matches(test::json(R"({"a": 1, "b": 2})")));
    auto bad = Matcher::parse(test::json(R"({"$jsonSchema": 1})"));
    ASSERT_FALSE(bad.isOK());
    EXPECT_EQ(bad.getStatus().code(), static_cast<int>(ErrorCodes::TypeMismatch));
    auto unknown = Matcher::parse(test::json(R"({"$jsonSchema": {"nope": 1}})"));
    ASSERT_FALSE(unknown.isOK());
    EXPECT_EQ(unknown.getStatus().code(), static_cast<int>(ErrorCodes::FailedToParse));
}

}  // namespace
}  // namespace tessera::query
