#include "keystring/keystring.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "bson/bson_builder.h"
#include "bson/compare.h"

namespace tessera::keystring {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::Decimal128;

int sign(int c) { return c < 0 ? -1 : (c > 0 ? 1 : 0); }

int memcmpSign(const std::string& a, const std::string& b) {
    size_t n = std::min(a.size(), b.size());
    int c = n ? std::memcmp(a.data(), b.data(), n) : 0;
    if (c != 0) return sign(c);
    return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

BsonObj json(std::string_view s) { return bson::fromJson(s); }

// ---- raw builders for the types BsonBuilder has no appender for ----

void appendLE32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }

BsonObj rawElementDoc(bson::BsonType type, std::string_view value) {
    std::string doc;
    appendLE32(doc, 0);
    doc.push_back(static_cast<char>(type));
    doc.push_back(0);
    doc.append(value);
    doc.push_back(0);
    uint32_t len = static_cast<uint32_t>(doc.size());
    std::memcpy(doc.data(), &len, 4);
    return BsonObj::fromBytes(doc);
}

BsonObj dbPointer(std::string_view ns, uint8_t oidByte) {
    std::string v;
    appendLE32(v, static_cast<uint32_t>(ns.size() + 1));
    v.append(ns);
    v.push_back(0);
    v.append(12, static_cast<char>(oidByte));
    return rawElementDoc(bson::BsonType::DBPointer, v);
}

BsonObj codeWScope(std::string_view code, const BsonObj& scope) {
    std::string v;
    appendLE32(v, static_cast<uint32_t>(4 + 4 + code.size() + 1 + scope.size()));
    appendLE32(v, static_cast<uint32_t>(code.size() + 1));
    v.append(code);
    v.push_back(0);
    v.append(scope.bytes());
    return rawElementDoc(bson::BsonType::CodeWScope, v);
}

// ---- random BSON values ----

class ValueGenerator {
  public:
    explicit ValueGenerator(uint32_t seed) : _rng(seed) {}

    // A document {"": v}.
    BsonObj next() {
        BsonBuilder b;
        appendValue(b, "", 0);
        return b.obj();
    }

  private:
    size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(_rng); }
    template <typename T>
    const T& pickFrom(const std::vector<T>& v) {
        return v[pick(v.size())];
    }

    std::string randomString() {
        static const std::vector<std::string> kPool = {"",
                                                       "a",
                                                       std::string("a\0", 2),
                                                       std::string("a\0b", 3),
                                                       "ab",
                                                       "\xff",
                                                       "\xff\xff",
                                                       "a\xff",
                                                       std::string("\0", 1),
                                                       "b",
                                                       "abc",
                                                       "\x7f",
                                                       "\x80"};
        if (pick(2) == 0) return pickFrom(kPool);
        static const char kAlphabet[] = {'\0', 'a', 'b', '\x01', '\xff', '\x7f', '\x80'};
        std::string s;
        size_t len = pick(5);
        for (size_t i = 0; i < len; ++i) s.push_back(kAlphabet[pick(sizeof kAlphabet)]);
        return s;
    }

    std::string cstring() {  // no NUL
        static const std::vector<std::string> kPool = {"", "a", "ab", "b", "\xff", "a\xff", "x.y"};
        return pickFrom(kPool);
    }

    Decimal128 randomDecimal() {
        static const std::vector<std::string> kPool = {"0",
                                                       "-0",
                                                       "1",
                                                       "1.0",
                                                       "1.00",
                                                       "1.1",
                                                       "1.10",
                                                       "-1.1",
                                                       "1E+10",
                                                       "10000000000",
                                                       "0.1",
                                                       "-0.1",
                                                       "NaN",
                                                       "Infinity",
                                                       "-Infinity",
                                                       "9007199254740993",
                                                       "-9007199254740993",
                                                       "9007199254740992",
                                                       "1E+400",
                                                       "-1E+400",
                                                       "1E-400",
                                                       "-1E-400",
                                                       "123456789012345",
                                                       "0.000123",
                                                       "9223372036854775807",
                                                       "-9223372036854775808",
                                                       "9223372036854775808",
                                                       "1E+308",
                                                       "1.7976931348623157E+308",
                                                       "2E+308",
                                                       "5E-324",
                                                       "4.9E-324",
                                                       "-5E-324",
                                                       "2147483647",
                                                       "2147483648",
                                                       "0.5",
                                                       "-0.5",
                                                       "1E+25",
                                                       "12345678901234567"};
        if (pick(2) == 0) return Decimal128::fromString(pickFrom(kPool));
        // Up to 15 significant digits: the oracle (long double) is exact enough for those.
        std::string s = pick(2) ? "-" : "";
        size_t digits = 1 + pick(15);
        for (size_t i = 0; i < digits; ++i) s.push_back(static_cast<char>('0' + pick(10)));
        int exp = static_cast<int>(pick(61)) - 30;
        if (pick(10) == 0) exp = static_cast<int>(pick(801)) - 400;
        s += "E" + std::to_string(exp);
        return Decimal128::fromString(s);
    }

    double randomDouble() {
        constexpr double kInf = std::numeric_limits<double>::infinity();
        static const std::vector<double> kPool = {0.0,
                                                  -0.0,
                                                  1.0,
                                                  -1.0,
                                                  0.5,
                                                  0.1,
                                                  -0.1,
                                                  1.1,
                                                  1.5,
                                                  2.0,
                                                  kInf,
                                                  -kInf,
                                                  std::numeric_limits<double>::quiet_NaN(),
                                                  9007199254740992.0,
                                                  9007199254740994.0,
                                                  -9007199254740992.0,
                                                  1e308,
                                                  std::numeric_limits<double>::max(),
                                                  -std::numeric_limits<double>::max(),
                                                  std::numeric_limits<double>::denorm_min(),
                                                  -std::numeric_limits<double>::denorm_min(),
                                                  std::numeric_limits<double>::min(),
                                                  1e-310,
                                                  9223372036854775808.0,
                                                  -9223372036854775808.0,
                                                  2147483647.0,
                                                  2147483648.0,
                                                  -2147483649.0,
                                                  1e10,
                                                  1e25,
                                                  123456789012345.0,
                                                  0.000123};
        if (pick(2) == 0) return pickFrom(kPool);
        switch (pick(3)) {
            case 0:
                return std::uniform_real_distribution<double>(-1000, 1000)(_rng);
            case 1:
                return static_cast<double>(static_cast<int64_t>(pick(2001)) - 1000);
            default: {
                uint64_t bits = _rng();
                bits = (bits << 32) ^ _rng();
                double d;
                std::memcpy(&d, &bits, 8);
                return d;
            }
        }
    }

    int64_t randomInt64() {
        static const std::vector<int64_t> kPool = {0,
                                                   1,
                                                   -1,
                                                   2,
                                                   std::numeric_limits<int64_t>::max(),
                                                   std::numeric_limits<int64_t>::min(),
                                                   std::numeric_limits<int64_t>::max() - 1,
                                                   std::numeric_limits<int64_t>::min() + 1,
                                                   (int64_t{1} << 53),
                                                   (int64_t{1} << 53) + 1,
                                                   (int64_t{1} << 53) - 1,
                                                   -(int64_t{1} << 53) - 1,
                                                   (int64_t{1} << 53) + 2,
                                                   (int64_t{1} << 62) + 1,
                                                   int64_t{10000000000},
                                                   2147483647,
                                                   2147483648,
                                                   9223372036854774784,
                                                   9223372036854775000};
        if (pick(2) == 0) return pickFrom(kPool);
        if (pick(2) == 0) return static_cast<int64_t>(pick(2001)) - 1000;
        return static_cast<int64_t>((static_cast<uint64_t>(_rng()) << 32) ^ _rng());
    }

    void appendValue(BsonBuilder& b, std::string_view name, int depth) {
        int kinds = depth >= 2 ? 22 : 25;
        switch (pick(kinds)) {
            case 0:
                b.appendMinKey(name);
                return;
            case 1:
                b.appendMaxKey(name);
                return;
            case 2:
                b.appendNull(name);
                return;
            case 3:
                b.appendUndefined(name);
                return;
            case 4: {
                static const std::vector<int32_t> kPool = {0,
                                                           1,
                                                           -1,
                                                           2,
                                                           std::numeric_limits<int32_t>::max(),
                                                           std::numeric_limits<int32_t>::min()};
                b.appendInt32(name,
                              pick(2) ? pickFrom(kPool) : static_cast<int32_t>(pick(2001)) - 1000);
                return;
            }
            case 5:
            case 6:
                b.appendInt64(name, randomInt64());
                return;
            case 7:
            case 8:
                b.appendDouble(name, randomDouble());
                return;
            case 9:
            case 10:
                b.appendDecimal(name, randomDecimal());
                return;
            case 11:
            case 12:
                b.appendString(name, randomString());
                return;
            case 13:
                b.appendSymbol(name, randomString());
                return;
            case 14: {
                static const std::vector<uint8_t> kSubtypes = {0, 4, 0x80};
                std::string data;
                size_t len = pick(4);
                for (size_t i = 0; i < len; ++i) data.push_back("\x00\x01\xff"[pick(3)]);
                b.appendBinary(name, pickFrom(kSubtypes), data);
                return;
            }
            case 15: {
                bson::ObjectId oid;
                for (auto& byte : oid.bytes) byte = static_cast<uint8_t>("\x00\x01\xff"[pick(3)]);
                b.appendOid(name, oid);
                return;
            }
            case 16:
                b.appendBool(name, pick(2) == 1);
                return;
            case 17: {
                static const std::vector<int64_t> kPool = {0,
                                                           1,
                                                           -1,
                                                           std::numeric_limits<int64_t>::min(),
                                                           std::numeric_limits<int64_t>::max(),
                                                           1700000000000};
                b.appendDate(name, pick(2) ? pickFrom(kPool) : randomInt64());
                return;
            }
            case 18: {
                static const std::vector<uint64_t> kPool = {0,
                                                            1,
                                                            uint64_t{1} << 32,
                                                            (uint64_t{1} << 32) + 1,
                                                            ~uint64_t{0},
                                                            uint64_t{1} << 63};
                b.appendTimestamp(name, pickFrom(kPool));
                return;
            }
            case 19:
                b.appendRegex(name, cstring(), pick(2) ? "" : "i");
                return;
            case 20:
                b.appendElementAs(
                    dbPointer(pick(2) ? "db.c" : "db.cc", static_cast<uint8_t>(pick(2)))
                        .firstElement(),
                    name);
                return;
            case 21:
                b.appendCode(name, randomString());
                return;
            case 22: {  // CodeWScope (depth < 2 only)
                BsonBuilder scope;
                size_t n = pick(3);
                for (size_t i = 0; i < n; ++i) appendValue(scope, cstring(), depth + 1);
                b.appendElementAs(codeWScope(cstring(), scope.obj()).firstElement(), name);
                return;
            }
            case 23: {
                b.startObject(name);
                size_t n = pick(4);
                for (size_t i = 0; i < n; ++i) appendValue(b, cstring(), depth + 1);
                b.end();
                return;
            }
            default: {
                b.startArray(name);
                size_t n = pick(4);
                for (size_t i = 0; i < n; ++i) appendValue(b, std::to_string(i), depth + 1);
                b.end();
                return;
            }
        }
    }

    std::mt19937 _rng;
};

std::string enc(const BsonObj& doc, bool descending = false) {
    return encodeValue(doc.firstElement(), descending);
}

// ---- focused cases ----

TEST(KeyString, NumbersEncodeByValueAcrossTypes) {
    BsonObj one = json(R"({"v": 1})");
    for (const char* other :
         {R"({"v": 1.0})", R"({"v": {"$numberLong": "1"}})", R"({"v": {"$numberDecimal": "1.00"}})",
          R"({"v": {"$numberDecimal": "1"}})", R"({"v": {"$numberDecimal": "0.1E1"}})"}) {
        EXPECT_EQ(enc(one), enc(json(other))) << other;
    }
    EXPECT_EQ(enc(json(R"({"v": -0.0})")), enc(json(R"({"v": 0})")));
    EXPECT_EQ(enc(json(R"({"v": {"$numberDecimal": "-0"}})")), enc(json(R"({"v": 0})")));
    EXPECT_EQ(enc(json(R"({"v": {"$numberDecimal": "1.10"}})")),
              enc(json(R"({"v": {"$numberDecimal": "1.1"}})")));
    EXPECT_EQ(enc(json(R"({"v": {"$numberDecimal": "1E+10"}})")),
              enc(json(R"({"v": {"$numberLong": "10000000000"}})")));
    EXPECT_EQ(enc(json(R"({"v": {"$numberLong": "9007199254740993"}})")),
              enc(json(R"({"v": {"$numberDecimal": "9007199254740993"}})")));
    EXPECT_EQ(enc(json(R"({"v": NaN})")), enc(json(R"({"v": {"$numberDecimal": "NaN"}})")));
    EXPECT_EQ(enc(json(R"({"v": Infinity})")),
              enc(json(R"({"v": {"$numberDecimal": "Infinity"}})")));
}

TEST(KeyString, NumbersOrderExactly) {
    // Strictly ascending, including values doubles cannot represent.
    std::vector<BsonObj> ascending = {
        json(R"({"v": NaN})"),
        json(R"({"v": -Infinity})"),
        json(R"({"v": {"$numberDecimal": "-1E+400"}})"),
        json(R"({"v": -1.7976931348623157e308})"),
        json(R"({"v": {"$numberLong": "-9223372036854775808"}})"),
        json(R"({"v": {"$numberLong": "-9007199254740993"}})"),
        json(R"({"v": -9007199254740992.0})"),
        json(R"({"v": -1})"),
        json(R"({"v": -5e-324})"),
        json(R"({"v": {"$numberDecimal": "-1E-400"}})"),
        json(R"({"v": 0})"),
        json(R"({"v": {"$numberDecimal": "1E-400"}})"),
        json(R"({"v": 5e-324})"),
        json(R"({"v": {"$numberDecimal": "0.1"}})"),
        json(R"({"v": 0.1})"),
        json(R"({"v": 1})"),
        json(R"({"v": {"$numberDecimal": "1.0000000000000000000000000000001"}})"),
        json(R"({"v": {"$numberDecimal": "1.0000000000000000000000000000002"}})"),
        json(R"({"v": 1.0000000000000002})"),
        json(R"({"v": 9007199254740992.0})"),
        json(R"({"v": {"$numberLong": "9007199254740993"}})"),
        json(R"({"v": {"$numberDecimal": "9007199254740993.5"}})"),
        json(R"({"v": 9007199254740994.0})"),
        json(R"({"v": {"$numberLong": "9223372036854775807"}})"),
        json(R"({"v": 9223372036854775808.0})"),
        json(R"({"v": {"$numberDecimal": "9223372036854775808.000000001"}})"),
        json(R"({"v": 1.7976931348623157e308})"),
        json(R"({"v": {"$numberDecimal": "1E+400"}})"),
        json(R"({"v": {"$numberDecimal": "1E+6000"}})"),
        json(R"({"v": Infinity})"),
    };
    for (size_t i = 0; i + 1 < ascending.size(); ++i) {
        for (bool desc : {false, true}) {
            int expected = desc ? 1 : -1;
            EXPECT_EQ(memcmpSign(enc(ascending[i], desc), enc(ascending[i + 1], desc)), expected)
                << ascending[i].toJson() << " vs " << ascending[i + 1].toJson();
        }
    }
}

TEST(KeyString, TypeOrderFollowsTheOracle) {
    // Undefined sorts below null (canonical ranks 0 and 5), as compareElementValues says.
    std::vector<BsonObj> ascending = {
        json(R"({"v": {"$minKey": 1}})"),
        json(R"({"v": {"$undefined": true}})"),
        json(R"({"v": null})"),
        json(R"({"v": 5})"),
        json(R"({"v": ""})"),
        json(R"({"v": {}})"),
        json(R"({"v": []})"),
        json(R"({"v": {"$binary": {"base64": "", "subType": "00"}}})"),
        json(R"({"v": {"$oid": "000000000000000000000000"}})"),
        json(R"({"v": false})"),
        json(R"({"v": {"$date": {"$numberLong": "-5"}}})"),
        json(R"({"v": {"$timestamp": {"t": 0, "i": 0}}})"),
        json(R"({"v": {"$regularExpression": {"pattern": "", "options": ""}}})"),
        json(R"({"v": {"$maxKey": 1}})"),
    };
    for (size_t i = 0; i + 1 < ascending.size(); ++i) {
        EXPECT_EQ(memcmpSign(enc(ascending[i]), enc(ascending[i + 1])), -1)
            << ascending[i].toJson();
        EXPECT_LT(bson::compareElementValues(ascending[i].firstElement(),
                                             ascending[i + 1].firstElement()),
                  0);
    }
}

TEST(KeyString, StringsWithNulAreSelfDelimiting) {
    auto s = [](std::string_view v) {
        BsonBuilder b;
        b.appendString("", v);
        return b.obj();
    };
    std::vector<BsonObj> ascending = {s(""),
                                      s(std::string("\0", 1)),
                                      s(std::string("\0\0", 2)),
                                      s("\x01"),
                                      s("a"),
                                      s(std::string("a\0", 2)),
                                      s(std::string("a\0a", 3)),
                                      s("a\x01"),
                                      s("ab"),
                                      s("\xff")};
    for (size_t i = 0; i + 1 < ascending.size(); ++i) {
        EXPECT_EQ(memcmpSign(enc(ascending[i]), enc(ascending[i + 1])), -1) << i;
        EXPECT_EQ(memcmpSign(enc(ascending[i], true), enc(ascending[i + 1], true)), 1) << i;
    }
    // Compound: ("a", "z") < ("a\0", "") even though "a" is a prefix of "a\0".
    Builder k1, k2;
    k1.append(s("a").firstElement()).append(s("z").firstElement());
    k2.append(s(std::string("a\0", 2)).firstElement()).append(s("").firstElement());
    EXPECT_EQ(memcmpSign(k1.key(), k2.key()), -1);
}

TEST(KeyString, DecodeChoosesTheSmallestFittingNumberType) {
    auto decoded = [](const char* j) {
        auto sw = decode(enc(json(j)), {false});
        EXPECT_TRUE(sw.isOK()) << sw.getStatus().toString();
        return sw.getValue().firstElement().type();
    };
    EXPECT_EQ(decoded(R"({"v": 3.0})"), bson::BsonType::Int32);
    EXPECT_EQ(decoded(R"({"v": {"$numberLong": "5000000000"}})"), bson::BsonType::Int64);
    EXPECT_EQ(decoded(R"({"v": {"$numberLong": "9007199254740993"}})"), bson::BsonType::Int64);
    EXPECT_EQ(decoded(R"({"v": 2.5})"), bson::BsonType::Double);
    EXPECT_EQ(decoded(R"({"v": 1e300})"), bson::BsonType::Double);
    EXPECT_EQ(decoded(R"({"v": {"$numberDecimal": "0.1"}})"), bson::BsonType::Decimal128);
    EXPECT_EQ(decoded(R"({"v": {"$numberDecimal": "2.50"}})"), bson::BsonType::Double);
    EXPECT_EQ(decoded(R"({"v": {"$symbol": "x"}})"), bson::BsonType::String);
    auto dec = decode(
        enc(json(R"({"v": {"$numberDecimal": "1.0000000000000000000000000000001"}})")), {false});
    ASSERT_TRUE(dec.isOK());
    EXPECT_EQ(dec.getValue().firstElement().decimalValue().toString(),
              "1.0000000000000000000000000000001");
}

TEST(KeyString, DecodeRejectsGarbage) {
    EXPECT_FALSE(decode(std::string("\x01", 1), {false}).isOK());
    EXPECT_FALSE(decode(std::string("\x28"
                                    "abc",
                                    4),
                        {false})
                     .isOK());  // unterminated string
    std::string key = enc(json(R"({"v": 1})"));
    EXPECT_FALSE(decode(key, {true}).isOK());                // wrong direction
    EXPECT_FALSE(decode(key + key, {false}).isOK());         // trailing bytes
    EXPECT_FALSE(decode(key.substr(0, 5), {false}).isOK());  // truncated
    EXPECT_FALSE(componentLength("").isOK());
}

TEST(KeyString, MinMaxKeyAppenders) {
    EXPECT_EQ(Builder().appendMinKey().key(), enc(json(R"({"v": {"$minKey": 1}})")));
    EXPECT_EQ(Builder().appendMaxKey(true).key(), enc(json(R"({"v": {"$maxKey": 1}})"), true));
    // Descending MaxKey sorts first, descending MinKey last.
    std::string v = enc(json(R"({"v": "x"})"), true);
    EXPECT_LT(Builder().appendMaxKey(true).key(), v);
    EXPECT_GT(Builder().appendMinKey(true).key(), v);
}

TEST(KeyString, PrefixSuccessor) {
    EXPECT_EQ(prefixSuccessor("abc"), "abd");
    EXPECT_EQ(prefixSuccessor(std::string("ab\xff\xff")), "ac");
    EXPECT_EQ(prefixSuccessor("\xff\xff"), "");
    EXPECT_EQ(prefixSuccessor(""), "");
    // Every key that starts with the encoding of 5 lies in [enc(5), successor).
    std::string five = enc(json(R"({"v": 5})"));
    std::string succ = prefixSuccessor(five);
    Builder withMore;
    withMore.appendEncoded(five).append(json(R"({"v": {"$maxKey": 1}})").firstElement());
    EXPECT_LT(withMore.key(), succ);
    EXPECT_LT(succ, enc(json(R"({"v": 5.0000001})")));
}

// ---- properties ----

class KeyStringProperty : public ::testing::Test {
  protected:
    void SetUp() override {
        ValueGenerator gen(20240607);
        for (int i = 0; i < 3000; ++i) _pool.push_back(gen.next());
    }
    std::vector<BsonObj> _pool;
};

TEST_F(KeyStringProperty, MemcmpOrderMatchesCompareElementValues) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<size_t> pick(0, _pool.size() - 1);
    std::vector<std::string> asc, desc;
    for (const auto& v : _pool) {
        asc.push_back(enc(v));
        desc.push_back(enc(v, true));
    }
    int failures = 0;
    for (int n = 0; n < 100000 && failures < 10; ++n) {
        size_t i = pick(rng), j = pick(rng);
        int expected =
            sign(bson::compareElementValues(_pool[i].firstElement(), _pool[j].firstElement()));
        int gotAsc = memcmpSign(asc[i], asc[j]);
        int gotDesc = memcmpSign(desc[i], desc[j]);
        if (gotAsc != expected || gotDesc != -expected) {
            ++failures;
            ADD_FAILURE() << _pool[i].toJson() << " vs " << _pool[j].toJson() << ": expected "
                          << expected << ", asc " << gotAsc << ", desc " << gotDesc;
        }
    }
}

TEST_F(KeyStringProperty, CompoundKeysCompareComponentByComponent) {
    std::mt19937 rng(11);
    std::uniform_int_distribution<size_t> pick(0, _pool.size() - 1);
    int failures = 0;
    for (int n = 0; n < 100000 && failures < 10; ++n) {
        size_t width = 1 + rng() % 3;
        std::vector<bool> dirs;
        for (size_t c = 0; c < width; ++c) dirs.push_back(rng() % 2 == 0);
        Builder a, b;
        int expected = 0;
        std::string desc;
        for (size_t c = 0; c < width; ++c) {
            // Often share a component so that later components decide.
            size_t i = pick(rng);
            size_t j = rng() % 3 == 0 ? i : pick(rng);
            a.append(_pool[i].firstElement(), dirs[c]);
            b.append(_pool[j].firstElement(), dirs[c]);
            if (expected == 0) {
                expected = sign(
                    bson::compareElementValues(_pool[i].firstElement(), _pool[j].firstElement()));
                if (dirs[c]) expected = -expected;
            }
            desc +=
                _pool[i].toJson() + (dirs[c] ? " desc" : " asc") + " | " + _pool[j].toJson() + "; ";
        }
        if (memcmpSign(a.key(), b.key()) != expected) {
            ++failures;
            ADD_FAILURE() << desc << " expected " << expected;
        }
    }
}

TEST_F(KeyStringProperty, DecodeInvertsEncode) {
    std::mt19937 rng(3);
    for (const auto& v : _pool) {
        for (bool d : {false, true}) {
            auto sw = decode(enc(v, d), {d});
            ASSERT_TRUE(sw.isOK()) << v.toJson() << ": " << sw.getStatus().toString();
            EXPECT_EQ(bson::compareElementValues(sw.getValue().firstElement(), v.firstElement()), 0)
                << v.toJson() << " decoded as " << sw.getValue().toJson();
            // Re-encoding the decoded value gives the same bytes.
            EXPECT_EQ(enc(sw.getValue(), d), enc(v, d)) << v.toJson();
        }
    }
    // Compound keys decode to {"": v1, "": v2, ...} and split with componentLength.
    for (int n = 0; n < 2000; ++n) {
        size_t width = 1 + rng() % 3;
        std::vector<bool> dirs;
        std::vector<size_t> picks;
        Builder k;
        for (size_t c = 0; c < width; ++c) {
            dirs.push_back(rng() % 2 == 0);
            picks.push_back(rng() % _pool.size());
            k.append(_pool[picks[c]].firstElement(), dirs[c]);
        }
        auto sw = decode(k.key(), dirs);
        ASSERT_TRUE(sw.isOK()) << sw.getStatus().toString();
        size_t c = 0;
        std::string_view rest = k.key();
        for (const BsonElement& e : sw.getValue()) {
            EXPECT_EQ(e.fieldName(), "");
            EXPECT_EQ(bson::compareElementValues(e, _pool[picks[c]].firstElement()), 0);
            auto len = componentLength(rest);
            ASSERT_TRUE(len.isOK());
            EXPECT_EQ(std::string(rest.substr(0, len.getValue())), enc(_pool[picks[c]], dirs[c]));
            rest.remove_prefix(len.getValue());
            ++c;
        }
        EXPECT_EQ(c, width);
        EXPECT_TRUE(rest.empty());
    }
}

// Decoding arbitrary bytes (e.g. a corrupted key) returns an error or a value, never crashes.
TEST_F(KeyStringProperty, DecodeSurvivesCorruptedKeys) {
    std::mt19937 rng(99);
    int decoded = 0;
    for (int n = 0; n < 20000; ++n) {
        bool desc = rng() % 2 == 0;
        std::string key = enc(_pool[rng() % _pool.size()], desc);
        switch (rng() % 3) {
            case 0:
                key[rng() % key.size()] = static_cast<char>(rng());
                break;
            case 1:
                key.resize(rng() % key.size());
                break;
            default:
                key.insert(rng() % (key.size() + 1), 1, static_cast<char>(rng()));
                break;
        }
        auto sw = decode(key, {desc});
        if (!sw.isOK()) continue;
        ++decoded;
        EXPECT_TRUE(componentLength(key).isOK());
    }
    EXPECT_GT(decoded, 0);
}

}  // namespace
}  // namespace tessera::keystring
