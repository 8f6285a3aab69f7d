#include "query/collator.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "query/matcher.h"
#include "query/planner.h"
#include "query/sort.h"
#include "query/test_util.h"

namespace tessera::query {
namespace {

using test::json;

CollatorPtr make(const char* spec) {
    auto c = Collator::parse(json(spec));
    EXPECT_TRUE(c.isOK()) << c.getStatus().toString();
    return c.isOK() ? c.getValue() : nullptr;
}

int sign(int c) { return c < 0 ? -1 : c > 0 ? 1 : 0; }

TEST(Collator, SimpleLocaleIsNoCollator) {
    auto c = Collator::parse(json(R"({"locale": "simple"})"));
    ASSERT_TRUE(c.isOK());
    EXPECT_EQ(c.getValue(), nullptr);
}

TEST(Collator, ValidationErrors) {
    auto bad = Collator::parse(json(R"({"locale": "xx_nope"})"));
    ASSERT_FALSE(bad.isOK());
    EXPECT_TRUE(bad.getStatus().is(ErrorCodes::BadValue));
    EXPECT_EQ(bad.getStatus().reason(), "Field 'locale' is invalid in: { locale: \"xx_nope\" }");

    auto missing = Collator::parse(json(R"({"strength": 2})"));
    ASSERT_FALSE(missing.isOK());
    EXPECT_EQ(missing.getStatus().code(), 40414);

    auto unknown = Collator::parse(json(R"({"locale": "en", "bogus": 1})"));
    ASSERT_FALSE(unknown.isOK());
    EXPECT_EQ(unknown.getStatus().code(), 40415);

    auto strength = Collator::parse(json(R"({"locale": "en", "strength": 6})"));
    ASSERT_FALSE(strength.isOK());
    EXPECT_EQ(strength.getStatus().code(), 51024);
    EXPECT_EQ(strength.getStatus().reason(),
              "BSON field 'strength' value must be <= 5, actual value '6'");

    auto caseFirst = Collator::parse(json(R"({"locale": "en", "caseFirst": "sideways"})"));
    ASSERT_FALSE(caseFirst.isOK());
    EXPECT_TRUE(caseFirst.getStatus().is(ErrorCodes::BadValue));

    auto type = Collator::parse(json(R"({"locale": "en", "caseLevel": 1})"));
    ASSERT_FALSE(type.isOK());
    EXPECT_TRUE(type.getStatus().is(ErrorCodes::TypeMismatch));

    auto arg = Collator::fromArgument(json(R"({"collation": 1})").firstElement());
    ASSERT_FALSE(arg.isOK());
    EXPECT_TRUE(arg.getStatus().is(ErrorCodes::TypeMismatch));
}

TEST(Collator, SpecHasDefaultsFilledIn) {
    auto c = make(R"({"locale": "en_US", "strength": 2})");
    ASSERT_TRUE(c);
    EXPECT_EQ(c->specObj().toJson(),
              json(R"({"locale": "en_US", "caseLevel": false, "caseFirst": "off", "strength": 2,
                       "numericOrdering": false, "alternate": "non-ignorable",
                       "maxVariable": "punct", "normalization": false, "backwards": false,
                       "version": "57.1"})")
                  .toJson());
    // fr_CA compares accents backwards by default.
    auto fr = make(R"({"locale": "fr_CA"})");
    ASSERT_TRUE(fr);
    EXPECT_TRUE(fr->spec().backwards);
}

TEST(Collator, Strengths) {
    auto s1 = make(R"({"locale": "en", "strength": 1})");
    auto s2 = make(R"({"locale": "en", "strength": 2})");
    auto s3 = make(R"({"locale": "en", "strength": 3})");
    // Primary: base letters only.
    EXPECT_EQ(s1->compare("cafe", "Café"), 0);
    // Secondary: accents count, case does not.
    EXPECT_EQ(s2->compare("cafe", "CAFE"), 0);
    EXPECT_NE(s2->compare("cafe", "café"), 0);
    // Tertiary: case counts too; lower case first in English.
    EXPECT_LT(s3->compare("a", "A"), 0);
    EXPECT_NE(s3->compare("cafe", "CAFE"), 0);
    // Alphabetical, not binary: "B" < "a" in bytes, but a < B.
    EXPECT_LT(s3->compare("a", "B"), 0);
    EXPECT_LT(std::string_view("B").compare("a"), 0);
}

TEST(Collator, CaseLevelAndCaseFirst) {
    // strength 1 + caseLevel: accents ignored, case significant.
    auto c = make(R"({"locale": "en", "strength": 1, "caseLevel": true})");
    EXPECT_EQ(c->compare("cafe", "café"), 0);
    EXPECT_NE(c->compare("cafe", "Cafe"), 0);
    auto upper = make(R"({"locale": "en", "caseFirst": "upper"})");
    EXPECT_LT(upper->compare("A", "a"), 0);
}

TEST(Collator, NumericOrdering) {
    auto plain = make(R"({"locale": "en"})");
    auto numeric = make(R"({"locale": "en", "numericOrdering": true})");
    EXPECT_LT(plain->compare("10", "9"), 0);
    EXPECT_GT(numeric->compare("10", "9"), 0);
    EXPECT_LT(numeric->compare("item2", "item10"), 0);
}

TEST(Collator, AlternateShifted) {
    auto plain = make(R"({"locale": "en", "strength": 1})");
    auto shifted = make(R"({"locale": "en", "strength": 1, "alternate": "shifted"})");
    EXPECT_NE(plain->compare("a b", "ab"), 0);
    EXPECT_EQ(shifted->compare("a b", "ab"), 0);
    EXPECT_EQ(shifted->compare("a-b", "ab"), 0);
    // maxVariable "space": punctuation is no longer ignorable.
    auto space = make(R"({"locale": "en", "strength": 1, "alternate": "shifted",
                          "maxVariable": "space"})");
    EXPECT_EQ(space->compare("a b", "ab"), 0);
    EXPECT_NE(space->compare("a-b", "ab"), 0);
}

TEST(Collator, FrenchBackwards) {
    // Secondary differences are compared from the end of the string.
    auto fwd = make(R"({"locale": "fr", "backwards": false})");
    auto bwd = make(R"({"locale": "fr", "backwards": true})");
    EXPECT_LT(fwd->compare("coté", "côte"), 0);
    EXPECT_GT(bwd->compare("coté", "côte"), 0);
}

TEST(Collator, SortKeysOrderLikeCompare) {
    auto c = make(R"({"locale": "en", "strength": 2, "numericOrdering": true})");
    std::vector<std::string> words = {"b", "A", "a", "10", "9", "é", "e", "", "Z", "ab"};
    for (const auto& x : words) {
        for (const auto& y : words) {
            std::string kx = c->sortKey(x), ky = c->sortKey(y);
            EXPECT_EQ(sign(kx.compare(ky)), sign(c->compare(x, y))) << x << " vs " << y;
            EXPECT_EQ(kx.find('\0'), std::string::npos);
        }
    }
}

TEST(Collator, Equivalence) {
    auto a = make(R"({"locale": "en", "strength": 2})");
    auto b = make(R"({"locale": "en", "strength": 2, "caseLevel": false})");
    auto c = make(R"({"locale": "en"})");
    EXPECT_TRUE(Collator::equivalent(a.get(), b.get()));
    EXPECT_FALSE(Collator::equivalent(a.get(), c.get()));
    EXPECT_FALSE(Collator::equivalent(a.get(), nullptr));
    EXPECT_TRUE(Collator::equivalent(nullptr, nullptr));
}

TEST(CollatorMatcher, ComparisonsUseTheCollation) {
    auto ci = make(R"({"locale": "en", "strength": 2})");
    auto doc = json(R"({"name": "ALICE", "tags": ["Red", "GREEN"], "sub": {"x": "Foo"}})");
    auto matches = [&](const char* filter, CollatorPtr c) {
        auto m = Matcher::parse(json(filter), c);
        EXPECT_TRUE(m.isOK()) << m.getStatus().toString();
        return m.getValue()->matches(doc);
    };
    EXPECT_FALSE(matches(R"({"name": "alice"})", nullptr));
    EXPECT_TRUE(matches(R"({"name": "alice"})", ci));
    EXPECT_TRUE(matches(R"({"name": {"$eq": "Alice"}})", ci));
    EXPECT_FALSE(matches(R"({"name": {"$ne": "alice"}})", ci));
    EXPECT_TRUE(matches(R"({"name": {"$in": ["bob", "alice"]}})", ci));
    EXPECT_FALSE(matches(R"({"name": {"$nin": ["bob", "alice"]}})", ci));
    EXPECT_TRUE(matches(R"({"tags": "green"})", ci));
    EXPECT_TRUE(matches(R"({"tags": {"$elemMatch": {"$eq": "red"}}})", ci));
    EXPECT_TRUE(matches(R"({"sub": {"x": "foo"}})", ci));
    EXPECT_TRUE(matches(R"({"$or": [{"name": "x"}, {"name": "alice"}]})", ci));
    EXPECT_TRUE(matches(R"({"name": {"$not": {"$eq": "bob"}}})", ci));
    // Binary: "ALICE" < "b" but alphabetically "ALICE" < "b" too; "a" < "B" only by collation.
    EXPECT_FALSE(matches(R"({"name": {"$gt": "b"}})", ci));
    EXPECT_TRUE(matches(R"({"name": {"$lt": "B"}})", ci));
    EXPECT_TRUE(matches(R"({"name": {"$lte": "alice"}})", ci));
    // $regex stays binary.
    EXPECT_FALSE(matches(R"({"name": {"$regex": "^ali"}})", ci));
}

TEST(CollatorSort, SortUsesTheCollation) {
    auto numeric = make(R"({"locale": "en", "numericOrdering": true})");
    auto pattern = SortPattern::parse(json(R"({"v": 1})"));
    ASSERT_TRUE(pattern.isOK());
    SortPattern p = pattern.getValue();
    std::vector<bson::BsonObj> docs = {json(R"({"v": "10"})"), json(R"({"v": "9"})"),
                                       json(R"({"v": "B"})"), json(R"({"v": "a"})")};
    p.sort(&docs);
    EXPECT_EQ(docs[0]["v"].stringValue(), "10");  // binary
    EXPECT_EQ(docs[2]["v"].stringValue(), "B");
    p.setCollator(numeric);
    p.sort(&docs);
    EXPECT_EQ(docs[0]["v"].stringValue(), "9");
    EXPECT_EQ(docs[1]["v"].stringValue(), "10");
    EXPECT_EQ(docs[2]["v"].stringValue(), "a");
    EXPECT_EQ(docs[3]["v"].stringValue(), "B");
    // Arrays: ascending uses the collation-smallest element.
    auto arr = json(R"({"v": ["b", "A", "c"]})");
    EXPECT_EQ(p.sortKey(arr).firstElement().stringValue(), "A");
}

TEST(CollatorPlanner, KeyFilterTransformsStringsAndDropsRegex) {
    auto ci = make(R"({"locale": "en", "strength": 2})");
    auto f = collationKeyFilter(
        json(R"({"a": "X", "b": {"$gt": "y", "$regex": "^y"}, "c": {"$regex": "z"},
                 "d": 5, "$and": [{"e": "Q"}], "$or": [{"f": 1}]})"),
        *ci);
    EXPECT_EQ(f["a"].stringValue(), ci->sortKey("x"));
    EXPECT_EQ(f["b"].objValue().nFields(), 1u);
    EXPECT_EQ(f["b"].objValue()["$gt"].stringValue(), ci->sortKey("Y"));
    EXPECT_TRUE(f["c"].eoo());
    EXPECT_EQ(f["d"].numberInt(), 5);
    EXPECT_EQ(f["$and"].objValue().firstElement().objValue()["e"].stringValue(), ci->sortKey("q"));
    EXPECT_TRUE(f["$or"].eoo());
}

TEST(CollatorPlanner, OnlyIndexesWithTheQueryCollationAreChosen) {
    IndexDescription id{"_id_", json(R"({"_id": 1})")};
    IndexDescription a{"a_1", json(R"({"a": 1})")};
    a.collationMatches = false;
    std::vector<IndexDescription> indexes = {id, a};
    auto plan = planQuery(json(R"({"a": "x"})"), json("{}"), json("{}"), indexes);
    ASSERT_TRUE(plan.isOK());
    EXPECT_TRUE(plan.getValue().collectionScan);
    // Hinted anyway: full bounds, no sort from the index.
    auto hinted =
        planQuery(json(R"({"a": "x"})"), json(R"({"a": 1})"), json(R"({"": "a_1"})"), indexes);
    ASSERT_TRUE(hinted.isOK());
    EXPECT_FALSE(hinted.getValue().collectionScan);
    EXPECT_FALSE(hinted.getValue().providesSort);
    EXPECT_EQ(hinted.getValue().bounds.fields[0][0].low.firstElement().type(),
              bson::BsonType::MinKey);
    // A string _id under another collation: no IDHACK; a number still uses it.
    indexes[0].collationMatches = false;
    auto idStr = planQuery(json(R"({"_id": "x"})"), json("{}"), json("{}"), indexes);
    EXPECT_FALSE(idStr.getValue().isIdPointLookup);
    auto idNum = planQuery(json(R"({"_id": 5})"), json("{}"), json("{}"), indexes);
    EXPECT_TRUE(idNum.getValue().isIdPointLookup);
}

}  // namespace
}  // namespace tessera::query
