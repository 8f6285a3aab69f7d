// API-level tests of the update engine (the data-driven semantics are in update_cases_test.cpp).
#include "query/update_driver.h"

#include <gtest/gtest.h>

#include <string>

#include "bson/bson_builder.h"
#include "query/test_util.h"
#include "query/update_arithmetic.h"
#include "query/update_predicate.h"

namespace tessera::query {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;
using test::json;

BsonObj applyOk(const std::string& doc, const std::string& update, bool* modified = nullptr,
                ApplyContext ctx = {}) {
    auto driver = UpdateDriver::parse(json(update), BsonObj());
    EXPECT_TRUE(driver.isOK()) << driver.getStatus().toString();
    if (!driver.isOK()) return BsonObj();
    BsonObj out;
    bool mod = false;
    Status s = driver.getValue().apply(json(doc), ctx, &out, &mod);
    EXPECT_TRUE(s.isOK()) << s.toString();
    if (modified) *modified = mod;
    return out;
}

TEST(UpdateDriver, KindAndPositional) {
    auto repl = UpdateDriver::parse(json(R"({"a": 1})"));
    ASSERT_TRUE(repl.isOK());
    EXPECT_TRUE(repl.getValue().isReplacement());
    auto ops = UpdateDriver::parse(json(R"({"$set": {"a.$.b": 1}})"));
    ASSERT_TRUE(ops.isOK());
    EXPECT_EQ(ops.getValue().kind(), UpdateDriver::Kind::kOperators);
    EXPECT_TRUE(ops.getValue().usesPositional());
    auto plain = UpdateDriver::parse(json(R"({"$set": {"a.b": 1}})"));
    ASSERT_TRUE(plain.isOK());
    EXPECT_FALSE(plain.getValue().usesPositional());
}

TEST(UpdateDriver, DriverIsReusableAcrossDocuments) {
    auto driver = UpdateDriver::parse(json(R"({"$inc": {"n": 1}, "$push": {"l": "x"}})"));
    ASSERT_TRUE(driver.isOK());
    BsonObj out;
    bool modified = false;
    for (int i = 0; i < 3; ++i) {
        BsonBuilder b;
        b.append("_id", i).append("n", i);
        ASSERT_TRUE(driver.getValue().apply(b.obj(), {}, &out, &modified).isOK());
        EXPECT_TRUE(modified);
        EXPECT_EQ(out["n"].int32Value(), i + 1);
        EXPECT_EQ(out["l"].objValue().nFields(), 1u);
    }
}

TEST(UpdateDriver, CurrentDateUsesContextClockOncePerUpdate) {
    int calls = 0;
    ApplyContext ctx;
    ctx.nowMillis = [&] {
        ++calls;
        return int64_t{42000};
    };
    BsonObj out =
        applyOk(R"({"_id": 1})", R"({"$currentDate": {"a": true, "b": true}})", nullptr, ctx);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(out["a"].dateValue(), 42000);
    EXPECT_EQ(out["b"].dateValue(), 42000);
}

TEST(UpdateDriver, CurrentDateDefaultsToSystemClock) {
    bool modified = false;
    BsonObj out =
        applyOk(R"({"_id": 1})", R"({"$currentDate": {"d": true, "t": {"%type": "timestamp"}}})",
                &modified);
    EXPECT_TRUE(modified);
    EXPECT_GT(out["d"].dateValue(), int64_t{1600000000000});
    EXPECT_GT(out["t"].timestampValue() >> 32, uint64_t{1600000000});
}

TEST(UpdateDriver, UpsertGeneratesObjectIdFirst) {
    auto driver = UpdateDriver::parse(json(R"({"$set": {"b": 1}})"));
    ASSERT_TRUE(driver.isOK());
    BsonObj out;
    ASSERT_TRUE(driver.getValue().applyForUpsert(json(R"({"a": 1})"), &out).isOK());
    EXPECT_EQ(out.firstElement().fieldName(), "_id");
    EXPECT_EQ(out.firstElement().type(), bson::BsonType::ObjectId);
    EXPECT_EQ(out["a"].int32Value(), 1);
    EXPECT_EQ(out["b"].int32Value(), 1);
}

TEST(UpdateDriver, UpsertReplacementWithoutAnyId) {
    auto driver = UpdateDriver::parse(json(R"({"x": 1})"));
    ASSERT_TRUE(driver.isOK());
    BsonObj out;
    ASSERT_TRUE(driver.getValue().applyForUpsert(BsonObj(), &out).isOK());
    EXPECT_EQ(out.firstElement().type(), bson::BsonType::ObjectId);
    EXPECT_EQ(out.nFields(), 2u);
}

TEST(UpdateDriver, SeedFromEqualities) {
    BsonObj q = json(R"({"a": {"b": 1}, "c": "x", "d": [1, 2], "e": 5})");
    std::vector<std::pair<std::string, bson::BsonElement>> eqs = {
        {"a.b", q["a"].objValue()["b"]},
        {"c", q["c"]},
        {"x.y.z", q["d"]},
        {"x.w", q["e"]},
        {"c.d", q["e"]},  // conflicts with "c": skipped
    };
    BsonObj seed = UpdateDriver::seedFromEqualities(eqs);
    EXPECT_EQ(seed, json(R"({"a": {"b": 1}, "c": "x", "x": {"y": {"z": [1, 2]}, "w": 5}})"))
        << seed.toJson();
    EXPECT_EQ(UpdateDriver::seedFromEqualities({}), BsonObj());
}

TEST(UpdateDriver, NoOpReturnsInputBytes) {
    BsonObj doc = json(R"({"_id": 1, "a": [1, 2], "b": {"c": 1}})");
    auto driver = UpdateDriver::parse(json(R"({"$set": {"b.c": 1}, "$addToSet": {"a": 2}})"));
    ASSERT_TRUE(driver.isOK());
    BsonObj out;
    bool modified = true;
    ASSERT_TRUE(driver.getValue().apply(doc, {}, &out, &modified).isOK());
    EXPECT_FALSE(modified);
    EXPECT_EQ(out, doc);
}

TEST(UpdateDriver, ResultTooLarge) {
    std::string big(9 * 1024 * 1024, 'x');
    BsonBuilder doc;
    doc.append("_id", 1).append("a", big);
    BsonBuilder upd;
    upd.startObject("$set").append("b", big).end();
    auto driver = UpdateDriver::parse(upd.obj());
    ASSERT_TRUE(driver.isOK());
    BsonObj out;
    bool modified;
    Status s = driver.getValue().apply(doc.obj(), {}, &out, &modified);
    EXPECT_EQ(s.code(), 17419) << s.toString();
}

TEST(UpdateDriver, TooDeepResult) {
    std::string path = "a";
    for (int i = 0; i < 100; ++i) path += ".a";
    BsonBuilder upd;
    upd.startObject("$set").append(path, 1).end();
    auto driver = UpdateDriver::parse(upd.obj());
    ASSERT_TRUE(driver.isOK());
    BsonObj out;
    bool modified;
    Status s = driver.getValue().apply(json(R"({"_id": 1})"), {}, &out, &modified);
    EXPECT_EQ(s.code(), 15) << s.toString();
}

TEST(ValidateStorableDocument, Rules) {
    EXPECT_TRUE(validateStorableDocument(json(R"({"_id": 1, "a": {"$b": 1}})")).isOK());
    EXPECT_EQ(validateStorableDocument(json(R"({"_id": [1]})")).code(), 53);
    EXPECT_EQ(validateStorableDocument(json(R"({"_id": [1]})")).reason(),
              "The '_id' value cannot be of type array");
    EXPECT_EQ(validateStorableDocument(json(R"({"_id": {"$regex": "a", "$options": ""}})")).code(),
              53);
    EXPECT_EQ(validateStorableDocument(json(R"({"_id": {"%x": 1}})")).code(), 52);
    EXPECT_EQ(validateStorableDocument(json(R"({"%x": 1})")).code(), 52);
    EXPECT_TRUE(validateStorableDocument(json(R"({"%x": 1})"), true).isOK());
    EXPECT_TRUE(validateStorableDocument(json(R"({"_id": {"a": 1}})")).isOK());

    // 100 levels are fine, 101 are not.
    auto nested = [](int depth) {
        BsonObj inner;
        for (int i = 1; i < depth; ++i) {
            BsonBuilder b;
            b.append("a", inner);
            inner = b.obj();
        }
        return inner;
    };
    EXPECT_TRUE(validateStorableDocument(nested(100)).isOK());
    EXPECT_EQ(validateStorableDocument(nested(101)).code(), 15);

    std::string big(16 * 1024 * 1024, 'x');
    BsonBuilder b;
    b.append("a", big);
    EXPECT_EQ(validateStorableDocument(b.obj()).code(), 10334);
}

TEST(UpdateArithmetic, DecimalAddAndMul) {
    using bson::Decimal128;
    auto d = [](const char* s) { return Decimal128::fromString(s); };
    EXPECT_EQ(decimalAdd(d("1.1"), d("2.2")).toString(), "3.3");
    EXPECT_EQ(decimalAdd(d("1"), d("-1")).toString(), "0");
    EXPECT_EQ(decimalAdd(d("1E+10"), d("1")).toString(), "10000000001");
    EXPECT_EQ(decimalMul(d("1.5"), d("-2")).toString(), "-3.0");
    EXPECT_EQ(decimalMul(d("0.1"), d("0.1")).toString(), "0.01");
    EXPECT_TRUE(decimalAdd(d("NaN"), d("1")).isNaN());
    EXPECT_TRUE(decimalAdd(d("Infinity"), d("-Infinity")).isNaN());
    EXPECT_TRUE(decimalMul(d("Infinity"), d("2")).isInfinite());
    // 34 significant digits: 9999...9 (34 nines) + 1 rounds to 1.000...E+34.
    std::string nines(34, '9');
    EXPECT_EQ(decimalAdd(d(nines.c_str()), d("1")).toString(),
              "1.000000000000000000000000000000000E+34");
    // Rounding half to even when digits are dropped.
    std::string big = "1" + std::string(33, '0');                     // 10^33, 34 digits
    EXPECT_EQ(decimalAdd(d(big.c_str()), d("0.5")).toString(), big);  // ties to even: down
    std::string odd = "1" + std::string(32, '0') + "1";
    std::string up = "1" + std::string(32, '0') + "2";
    EXPECT_EQ(decimalAdd(d(odd.c_str()), d("0.5")).toString(), up);  // ties to even: up
    EXPECT_EQ(decimalAdd(d(big.c_str()), d("0.51")).toString(), "1" + std::string(32, '0') + "1");
}

TEST(UpdatePredicate, FallbackMatcherBasics) {
    auto parse = [](const char* filter) {
        auto p = DocPredicate::parseFallback(json(filter));
        EXPECT_TRUE(p.isOK()) << p.getStatus().toString();
        return std::move(p.getValue());
    };
    EXPECT_TRUE(parse(R"({"a": 1})")->matches(json(R"({"a": [2, 1]})")));
    EXPECT_FALSE(parse(R"({"a": 1})")->matches(json(R"({"a": 2})")));
    EXPECT_TRUE(parse(R"({"a": null})")->matches(json(R"({})")));
    EXPECT_TRUE(parse(R"({"a.b": {"$gt": 1}})")->matches(json(R"({"a": [{"b": 0}, {"b": 5}]})")));
    EXPECT_FALSE(parse(R"({"a": {"$gt": 1}})")->matches(json(R"({"a": "x"})")));
    EXPECT_TRUE(parse(R"({"a": {"$in": [1, 2]}})")->matches(json(R"({"a": 2})")));
    EXPECT_TRUE(parse(R"({"a": {"$nin": [1, 2]}})")->matches(json(R"({"a": 3})")));
    EXPECT_TRUE(parse(R"({"a": {"$exists": false}})")->matches(json(R"({"b": 3})")));
    EXPECT_TRUE(parse(R"({"a": {"$ne": 1}})")->matches(json(R"({"a": [2, 3]})")));
    EXPECT_FALSE(parse(R"({"a": {"$ne": 1}})")->matches(json(R"({"a": [1, 3]})")));
    EXPECT_TRUE(parse(R"({"$or": [{"a": 1}, {"b": 1}]})")->matches(json(R"({"b": 1})")));
    EXPECT_TRUE(parse(R"({"a": {"$elemMatch": {"x": 1, "y": 2}}})")
                    ->matches(json(R"({"a": [{"x": 1, "y": 2}]})")));
    EXPECT_FALSE(parse(R"({"a": {"$elemMatch": {"x": 1, "y": 2}}})")
                     ->matches(json(R"({"a": [{"x": 1}, {"y": 2}]})")));
    EXPECT_TRUE(parse(R"({"a": {"$size": 2}})")->matches(json(R"({"a": [1, 2]})")));
    EXPECT_TRUE(parse(R"({"a": {"$not": {"$gt": 5}}})")->matches(json(R"({"a": 1})")));
    EXPECT_FALSE(DocPredicate::parseFallback(json(R"({"a": {"$foo": 1}})")).isOK());
}

TEST(UpdatePredicate, PullPredicateForms) {
    BsonObj args = json(R"({"eq": 2, "cond": {"$lt": 3}, "query": {"x": 1}})");
    BsonObj values = json(R"({"n": 2, "m": 2.0, "s": "2", "o": {"x": 1, "y": 2}, "p": {"y": 2}})");
    auto eq = PullPredicate::parse(args["eq"]);
    ASSERT_TRUE(eq.isOK());
    EXPECT_TRUE(eq.getValue()->matches(values["n"]));
    EXPECT_TRUE(eq.getValue()->matches(values["m"]));
    EXPECT_FALSE(eq.getValue()->matches(values["s"]));
    auto cond = PullPredicate::parse(args["cond"]);
    ASSERT_TRUE(cond.isOK());
    EXPECT_TRUE(cond.getValue()->matches(values["n"]));
    EXPECT_FALSE(cond.getValue()->matches(values["s"]));
    auto query = PullPredicate::parse(args["query"]);
    ASSERT_TRUE(query.isOK());
    EXPECT_TRUE(query.getValue()->matches(values["o"]));
    EXPECT_FALSE(query.getValue()->matches(values["p"]));
    EXPECT_FALSE(query.getValue()->matches(values["n"]));
}

}  // namespace
}  // namespace tessera::query
