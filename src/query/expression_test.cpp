// Data-driven tests for the aggregation expression language (tests/query/expr/*.json) plus
// unit tests for Variables, `let`, accumulators and the Value API.
#include "query/expression.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "query/test_util.h"

namespace tessera::query {
namespace {

using bson::BsonObj;

// Each case: {"expr": <expression>, "doc": <$$ROOT>?, "let": {...}?, then one of
//   "result": <value>   (compared by exact BSON type and value),
//   "missing": true     (the result is missing),
//   "error": <code>     (parse or evaluation error code).
void runCaseFile(const std::string& file) {
    auto cases = test::loadCases("expr/" + file);
    ASSERT_FALSE(cases.empty()) << file;
    int i = 0;
    for (const BsonObj& c : cases) {
        SCOPED_TRACE(file + " case " + std::to_string(i++) + ": " + c.toJson());
        BsonObj doc = c["doc"].isObject() ? c["doc"].objValue().copy() : bson::fromJson("{}");
        Variables base;
        base.setNowMillis(1700000000000);
        ExpressionParseContext pctx;
        std::unique_ptr<Variables> letVars;
        if (c["let"].isObject()) {
            auto lv = Variables::fromLet(c["let"].objValue(), &base);
            ASSERT_TRUE(lv.isOK()) << lv.getStatus().toString();
            letVars = std::move(lv.getValue());
            pctx.defineAll(*letVars);
        }
        const Variables& vars = letVars ? *letVars : base;
        auto parsed = Expression::parse(c["expr"], pctx);
        StatusWith<Value> result = parsed.isOK() ? parsed.getValue()->evaluate(doc, vars)
                                                 : StatusWith<Value>(parsed.getStatus());
        if (!c["error"].eoo()) {
            ASSERT_FALSE(result.isOK()) << "expected error, got " << result.getValue().toString();
            EXPECT_EQ(result.getStatus().code(), c["error"].numberInt())
                << result.getStatus().toString();
            continue;
        }
        ASSERT_TRUE(result.isOK()) << result.getStatus().toString();
        if (c["missing"].trueValue()) {
            EXPECT_TRUE(result.getValue().missing()) << result.getValue().toString();
            continue;
        }
        Value expected = Value::fromElement(c["result"]);
        ASSERT_FALSE(expected.missing()) << "case has no result";
        EXPECT_TRUE(result.getValue().holder().binaryEqual(expected.holder()))
            << "got " << result.getValue().toString() << " ("
            << bson::typeName(result.getValue().type()) << "), want " << expected.toString() << " ("
            << bson::typeName(expected.type()) << ")";
    }
}

class ExprCases : public ::testing::TestWithParam<std::string> {};

TEST_P(ExprCases, Run) { runCaseFile(GetParam()); }

std::vector<std::string> caseFiles() {
    std::vector<std::string> out;
    for (const auto& e :
         std::filesystem::directory_iterator(std::string(TESSERA_QUERY_CASES_DIR) + "/expr")) {
        if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

INSTANTIATE_TEST_SUITE_P(Files, ExprCases, ::testing::ValuesIn(caseFiles()), [](const auto& info) {
    std::string n = info.param.substr(0, info.param.size() - 5);
    for (char& ch : n) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    return n;
});

TEST(ExpressionTest, CaseFilesExist) { EXPECT_GE(caseFiles().size(), 5u); }

TEST(ExpressionTest, ValueBasics) {
    Value m;
    EXPECT_TRUE(m.missing());
    EXPECT_TRUE(m.nullish());
    EXPECT_FALSE(m.truthy());
    Value i = Value::fromInt32(3);
    EXPECT_TRUE(i.isNumber());
    EXPECT_TRUE(i.truthy());
    bson::BsonBuilder b;
    i.appendTo(b, "x");
    m.appendTo(b, "y");
    EXPECT_EQ(b.obj().toJson(), "{ \"x\" : 3 }");
    EXPECT_LT(compareValues(m, Value::null()), 0);
}

TEST(ExpressionTest, UndefinedVariableFailsAtParse) {
    auto spec = test::json(R"({"e": "$$nope"})");
    auto r = Expression::parse(spec["e"], ExpressionParseContext());
    ASSERT_FALSE(r.isOK());
    EXPECT_EQ(r.getStatus().code(), 17276);
}

TEST(ExpressionTest, LetEvaluatesOnceAndSeesNow) {
    Variables base;
    base.setNowMillis(42);
    auto let =
        test::json(R"({"a": {"$add": [1, 2]}, "b": {"$multiply": ["$$a", 2]}, "n": "$$NOW"})");
    auto vars = Variables::fromLet(let, &base);
    ASSERT_TRUE(vars.isOK()) << vars.getStatus().toString();
    EXPECT_EQ(vars.getValue()->get("b")->element().numberInt(), 6);
    EXPECT_EQ(vars.getValue()->get("n")->element().dateValue(), 42);
    auto bad = Variables::fromLet(test::json(R"({"Upper": 1})"), &base);
    EXPECT_EQ(bad.getStatus().code(), 9);
}

TEST(ExpressionTest, RandIsUniformInUnitIntervalAndFreshEachTime) {
    auto spec = test::json(R"({"e": {"$rand": {}}, "bad": {"$rand": {"seed": 1}}})");
    auto r = Expression::parse(spec["e"], ExpressionParseContext());
    ASSERT_TRUE(r.isOK()) << r.getStatus().toString();
    Variables vars;
    std::set<double> seen;
    for (int i = 0; i < 20; ++i) {
        auto v = r.getValue()->evaluate(bson::BsonView(), vars);
        ASSERT_TRUE(v.isOK());
        double d = v.getValue().element().doubleValue();
        EXPECT_GE(d, 0.0);
        EXPECT_LT(d, 1.0);
        seen.insert(d);
    }
    EXPECT_GT(seen.size(), 1u);
    auto bad = Expression::parse(spec["bad"], ExpressionParseContext());
    ASSERT_TRUE(bad.isOK());
    EXPECT_EQ(bad.getValue()->evaluate(bson::BsonView(), vars).getStatus().code(), 3040501);
}

TEST(ExpressionTest, FieldPathAccessor) {
    auto spec = test::json(R"({"e": "$a.b"})");
    auto r = Expression::parse(spec["e"], ExpressionParseContext());
    ASSERT_TRUE(r.isOK());
    EXPECT_EQ(r.getValue()->fieldPath(), "a.b");
    EXPECT_FALSE(r.getValue()->isConstant());
}

Value acc(std::string_view op, const std::string& valuesJson) {
    auto a = Accumulator::make(op);
    EXPECT_TRUE(a.isOK());
    auto arr = test::json("{\"v\": " + valuesJson + "}");
    for (auto e : arr["v"].objValue())
        EXPECT_TRUE(a.getValue()->process(Value::fromElement(e)).isOK());
    return a.getValue()->finish();
}

TEST(AccumulatorTest, Basics) {
    EXPECT_EQ(acc("$sum", "[1, 2, \"x\", 3]").toString(), "6");
    EXPECT_EQ(acc("$sum", "[]").type(), bson::BsonType::Int32);
    EXPECT_EQ(acc("$sum", "[2147483647, 1]").type(), bson::BsonType::Int64);
    EXPECT_EQ(acc("$avg", "[1, 2]").toString(), "1.5");
    EXPECT_EQ(acc("$avg", "[\"a\"]").type(), bson::BsonType::Null);
    EXPECT_EQ(acc("$min", "[3, null, 1, 2]").toString(), "1");
    EXPECT_EQ(acc("$max", "[3, \"a\", 1]").toString(), "\"a\"");
    EXPECT_EQ(acc("$first", "[null, 2]").type(), bson::BsonType::Null);
    EXPECT_EQ(acc("$last", "[1, 2]").toString(), "2");
    EXPECT_EQ(acc("$push", "[1, 1, 2]").arrayView().nFields(), 3u);
    EXPECT_EQ(acc("$addToSet", "[1, 1.0, 2]").arrayView().nFields(), 2u);
    EXPECT_EQ(acc("$count", "[1, 1, 2]").toString(), "3");
    EXPECT_EQ(acc("$mergeObjects", "[{\"a\": 1}, null, {\"b\": 2, \"a\": 3}]").toString(),
              "{ \"a\" : 3, \"b\" : 2 }");
    EXPECT_EQ(acc("$stdDevPop", "[1, 3]").toString(), "1.0");
    EXPECT_EQ(acc("$stdDevSamp", "[1]").type(), bson::BsonType::Null);
    EXPECT_EQ(Accumulator::make("$foo").getStatus().code(), 15952);
}

TEST(AccumulatorTest, MergePartials) {
    auto a = std::move(Accumulator::make("$avg").getValue());
    auto b = std::move(Accumulator::make("$avg").getValue());
    ASSERT_TRUE(a->process(Value::fromInt32(1)).isOK());
    ASSERT_TRUE(b->process(Value::fromInt32(2)).isOK());
    ASSERT_TRUE(b->process(Value::fromInt32(3)).isOK());
    auto total = std::move(Accumulator::make("$avg").getValue());
    ASSERT_TRUE(total->mergePartial(a->partial()).isOK());
    ASSERT_TRUE(total->mergePartial(b->partial()).isOK());
    EXPECT_EQ(total->finish().toString(), "2.0");
    auto s1 = std::move(Accumulator::make("$stdDevPop").getValue());
    auto s2 = std::move(Accumulator::make("$stdDevPop").getValue());
    ASSERT_TRUE(s1->process(Value::fromInt32(1)).isOK());
    ASSERT_TRUE(s2->process(Value::fromInt32(3)).isOK());
    ASSERT_TRUE(s1->mergePartial(s2->partial()).isOK());
    EXPECT_EQ(s1->finish().toString(), "1.0");
}

}  // namespace
}  // namespace tessera::query

#include "query/matcher.h"

namespace tessera::query {
namespace {

// tests/query/expr/match/*.json: {"filter", "doc", "let"?, "match": bool} or {"error": code}.
TEST(ExprMatchTest, Cases) {
    auto cases = test::loadCases("expr/match/expr_match.json");
    ASSERT_FALSE(cases.empty());
    int i = 0;
    for (const bson::BsonObj& c : cases) {
        SCOPED_TRACE("case " + std::to_string(i++) + ": " + c.toJson());
        std::shared_ptr<const Variables> let;
        if (c["let"].isObject()) {
            auto lv = Variables::fromLet(c["let"].objValue());
            ASSERT_TRUE(lv.isOK());
            let = std::move(lv.getValue());
        }
        auto m = Matcher::parse(c["filter"].objValue(), nullptr, let);
        if (!c["error"].eoo()) {
            ASSERT_FALSE(m.isOK());
            EXPECT_EQ(m.getStatus().code(), c["error"].numberInt()) << m.getStatus().toString();
            continue;
        }
        ASSERT_TRUE(m.isOK()) << m.getStatus().toString();
        EXPECT_EQ(m.getValue()->matches(c["doc"].objValue()), c["match"].trueValue());
    }
}

}  // namespace
}  // namespace tessera::query

#include "query/update_driver.h"

namespace tessera::query {
namespace {

// tests/query/expr/update/pipeline_update.json: {"doc" | "upsert": seed, "u": [stages],
// "let"?, "result", "modified"?} or {"error": code}. Upsert results are compared without _id
// unless the seed has one.
TEST(PipelineUpdateTest, Cases) {
    auto cases = test::loadCases("expr/update/pipeline_update.json");
    ASSERT_FALSE(cases.empty());
    int i = 0;
    for (const bson::BsonObj& c : cases) {
        SCOPED_TRACE("case " + std::to_string(i++) + ": " + c.toJson());
        auto base = std::make_shared<Variables>();
        base->setNowMillis(1700000000000);
        std::shared_ptr<const Variables> let = base;
        if (c["let"].isObject()) {
            auto lv = Variables::fromLet(c["let"].objValue(), base.get());
            ASSERT_TRUE(lv.isOK());
            std::shared_ptr<Variables> owned(std::move(lv.getValue()));
            // Keep `base` alive alongside the child scope.
            let = std::shared_ptr<const Variables>(owned.get(), [owned, base](const Variables*) {});
        }
        auto driver = UpdateDriver::parse(c["u"], bson::BsonView(), let);
        Status st = driver.getStatus();
        bson::BsonObj out;
        bool modified = true;
        bool upsert = c["upsert"].isObject();
        if (st.isOK()) {
            ASSERT_EQ(driver.getValue().kind(), UpdateDriver::Kind::kPipeline);
            if (upsert) {
                st = driver.getValue().applyForUpsert(c["upsert"].objValue(), &out);
            } else {
                st = driver.getValue().apply(c["doc"].objValue(), ApplyContext(), &out, &modified);
            }
        }
        if (!c["error"].eoo()) {
            ASSERT_FALSE(st.isOK()) << out.toJson();
            EXPECT_EQ(st.code(), c["error"].numberInt()) << st.toString();
            continue;
        }
        ASSERT_TRUE(st.isOK()) << st.toString();
        bson::BsonObj got = out;
        if (upsert && !c["upsert"].objValue().hasField("_id")) {
            ASSERT_EQ(out.firstElement().fieldName(), "_id");
            bson::BsonBuilder b;
            for (auto e : out) {
                if (e.fieldName() != "_id") b.appendElement(e);
            }
            got = b.obj();
        }
        EXPECT_EQ(got.toJson(), c["result"].objValue().toJson());
        if (!c["modified"].eoo()) {
            EXPECT_EQ(modified, c["modified"].trueValue());
        }
    }
}

TEST(PipelineUpdateTest, ArrayFiltersRejectedAndDocumentFormsStillWork) {
    auto u = test::json(R"({"u": [{"$set": {"a": 1}}], "f": [{"x": 1}], "d": {"$set": {"a": 1}}})");
    auto r = UpdateDriver::parse(u["u"], u["f"].objValue(), nullptr);
    EXPECT_EQ(r.getStatus().code(), 9);
    auto d = UpdateDriver::parse(u["d"], bson::BsonView(), nullptr);
    ASSERT_TRUE(d.isOK());
    EXPECT_EQ(d.getValue().kind(), UpdateDriver::Kind::kOperators);
    auto n = test::json(R"({"u": 5})");
    EXPECT_EQ(UpdateDriver::parse(n["u"], bson::BsonView(), nullptr).getStatus().code(), 9);
}

}  // namespace
}  // namespace tessera::query
