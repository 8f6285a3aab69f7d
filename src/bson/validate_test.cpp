#include "bson/validate.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "bson/bson_builder.h"

namespace tessera::bson {
namespace {

Status validate(const std::string& bytes, int maxDepth = kMaxParseDepth) {
    return validateBson(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), maxDepth);
}

Status validateStructure(const std::string& bytes, int maxDepth = kMaxParseDepth) {
    return validateBsonStructure(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                 maxDepth);
}

// Touches every element of a document that passed validation (ASan/UBSan check the claim that
// it is safe to iterate).
size_t walk(BsonView doc) {
    size_t n = 0;
    for (BsonElement e : doc) {
        ++n;
        if (e.type() == BsonType::Object || e.type() == BsonType::Array) n += walk(e.objValue());
    }
    return n;
}

std::string nested(int depth) {
    // {a:{a:{...{}}}} with `depth` documents in total.
    BsonObj inner;
    for (int i = 1; i < depth; ++i) {
        BsonBuilder b;
        b.append("a", inner);
        inner = b.obj();
    }
    return std::string(inner.bytes());
}

TEST(ValidateBson, AcceptsValidDocuments) {
    BsonObj obj =
        fromJson(R"({"a": 1, "b": [1, {"c": "d"}], "e": {"$code": "x", "$scope": {"y": 1}}})");
    EXPECT_TRUE(validate(std::string(obj.bytes())).isOK());
    EXPECT_TRUE(validate(std::string("\x05\0\0\0\0", 5)).isOK());
}

TEST(ValidateBson, RejectsBadLengths) {
    EXPECT_TRUE(validate("").is(ErrorCodes::InvalidBSON));
    EXPECT_TRUE(validate(std::string("\x06\0\0\0\0", 5)).is(ErrorCodes::InvalidBSON));
    EXPECT_TRUE(validate(std::string("\xff\xff\xff\xff\0", 5)).is(ErrorCodes::InvalidBSON));
    // {a: "x"} with the string length claiming 100 bytes.
    std::string s = std::string(fromJson(R"({"a": "x"})").bytes());
    s[7] = 100;
    EXPECT_TRUE(validate(s).is(ErrorCodes::InvalidBSON));
}

TEST(ValidateBson, RejectsUnterminatedDocument) {
    // Found by bson_validate_fuzz: a last byte that is not the terminator.
    EXPECT_TRUE(validate(std::string("\x05\0\0\0\x98", 5)).is(ErrorCodes::InvalidBSON));
    EXPECT_TRUE(validate(std::string("\x06\0\0\0\x10\x98", 6)).is(ErrorCodes::InvalidBSON));
}

TEST(ValidateBson, RejectsUnknownTypeAndBadBool) {
    std::string s = std::string(fromJson(R"({"a": true})").bytes());
    s[4] = 0x42;
    EXPECT_TRUE(validate(s).is(ErrorCodes::InvalidBSON));
    s = std::string(fromJson(R"({"a": true})").bytes());
    s[7] = 2;
    EXPECT_TRUE(validate(s).is(ErrorCodes::InvalidBSON));
}

TEST(ValidateBson, DepthLimit) {
    EXPECT_TRUE(validate(nested(100), 100).isOK());
    EXPECT_TRUE(validate(nested(101), 100).is(ErrorCodes::Overflow));
    EXPECT_EQ(documentDepth(reinterpret_cast<const uint8_t*>(nested(7).data())), 7);
}

TEST(ValidateBson, HostileDeepNestingDoesNotRecurse) {
    // 1,000,000 well-formed levels of {"": {...}}: rejected as too deep, without native recursion.
    const int levels = 1000000;
    std::string s;
    s.reserve(7 * levels + 5);
    for (int i = 0; i < levels; ++i) {
        int32_t len = 5 + 7 * (levels - i);
        s.append(reinterpret_cast<const char*>(&len), 4);
        s.push_back(3);
        s.push_back('\0');
    }
    s.append("\x05\0\0\0\0", 5);
    s.append(levels, '\0');
    EXPECT_TRUE(validate(s).is(ErrorCodes::Overflow));
}

TEST(ValidateBsonStructure, AcceptsFieldNamesThatAreNotUtf8) {
    std::string s = std::string(fromJson(R"({"a": "xy"})").bytes());
    s[5] = static_cast<char>(0xff);  // the field name 'a' (libbson checks names, not values)
    EXPECT_TRUE(validate(s).is(ErrorCodes::InvalidBSON));
    EXPECT_TRUE(validateStructure(s).isOK());
}

TEST(ValidateBsonStructure, RejectsWhatMakesIterationUnsafe) {
    EXPECT_TRUE(validateStructure("").is(ErrorCodes::InvalidBSON));
    EXPECT_TRUE(validateStructure(std::string("\x06\0\0\0\0", 5)).is(ErrorCodes::InvalidBSON));
    EXPECT_TRUE(validateStructure(std::string("\x05\0\0\0\x98", 5)).is(ErrorCodes::InvalidBSON));
    std::string s = std::string(fromJson(R"({"a": "x"})").bytes());
    s[7] = 100;  // the string's length overruns the document
    EXPECT_TRUE(validateStructure(s).is(ErrorCodes::InvalidBSON));
    s = std::string(fromJson(R"({"a": true})").bytes());
    s[4] = 0x42;  // unknown type
    EXPECT_TRUE(validateStructure(s).is(ErrorCodes::InvalidBSON));
    EXPECT_TRUE(validateStructure(nested(101), 100).is(ErrorCodes::Overflow));
}

TEST(ValidateBsonStructure, IsImpliedByTheFullCheckAndKeepsIterationSafe) {
    std::string base = std::string(
        fromJson(R"({"a": [1, 2.5, {"b": "c"}], "s": "text", "o": {"p": {"q": null}}})").bytes());
    std::mt19937 rng(99);
    size_t structureOnly = 0, elements = 0;
    for (int i = 0; i < 20000; ++i) {
        std::string m = base;
        int edits = 1 + rng() % 3;
        for (int e = 0; e < edits; ++e) m[rng() % m.size()] = static_cast<char>(rng());
        const bool full = validate(m).isOK();
        const bool structure = validateStructure(m).isOK();
        if (full) {
            EXPECT_TRUE(structure);
        }
        if (structure && !full) ++structureOnly;
        if (structure) elements += walk(BsonView(reinterpret_cast<const uint8_t*>(m.data())));
    }
    EXPECT_GT(structureOnly, 0u);  // mutated name bytes: well-formed, not UTF-8
    EXPECT_GT(elements, 0u);
}

TEST(ValidateBson, RandomMutationsNeverCrash) {
    std::string base = std::string(
        fromJson(
            R"({"a": [1, 2.5, {"b": "c"}], "d": {"$binary": {"base64": "AQI=", "subType": "00"}},
                     "r": {"$regularExpression": {"pattern": "x", "options": ""}}})")
            .bytes());
    std::mt19937 rng(1234);
    for (int i = 0; i < 20000; ++i) {
        std::string m = base;
        int edits = 1 + rng() % 4;
        for (int e = 0; e < edits; ++e) m[rng() % m.size()] = static_cast<char>(rng());
        if (rng() % 5 == 0) m.resize(rng() % m.size());
        (void)validate(m);
    }
}

// {<name>: 1} with raw name bytes.
std::string docWithName(const std::string& name) {
    std::string body;
    body += '\x10';
    body += name;
    body += '\0';
    body += std::string("\x01\0\0\0", 4);
    body += '\0';
    int32_t len = static_cast<int32_t>(body.size() + 4);
    std::string out(reinterpret_cast<const char*>(&len), 4);
    return out + body;
}

TEST(ValidateBson, FieldNamesMustBeUtf8) {
    auto ok = [](const std::string& name) {
        std::string d = docWithName(name);
        return validateBson(reinterpret_cast<const uint8_t*>(d.data()), d.size()).isOK();
    };
    EXPECT_TRUE(ok("plain"));
    EXPECT_TRUE(ok("a-long-ascii-name-past-the-eight-byte-words"));
    EXPECT_TRUE(ok("caf\xc3\xa9"));                    // é
    EXPECT_TRUE(ok("\xe2\x82\xac-euro-after-ascii"));  // €
    EXPECT_TRUE(ok("12345678\xf0\x9f\x98\x80"));       // U+1F600 right after a word
    EXPECT_FALSE(ok("\xc0\xaf"));                      // overlong '/'
    EXPECT_FALSE(ok("\xe0\x80\xaf"));                  // overlong, 3 bytes
    EXPECT_FALSE(ok("\xed\xa0\x80"));                  // a surrogate (U+D800)
    EXPECT_FALSE(ok("\xf4\x90\x80\x80"));              // above U+10FFFF
    EXPECT_FALSE(ok("abcdefg\xc3"));                   // truncated at the end
    EXPECT_FALSE(ok("\x80"));                          // a lone continuation byte
    EXPECT_FALSE(ok("abcdefgh\xff"));
    // Values are taken as they are (as mongod, and libbson's bson_validate before).
    std::string s = std::string(fromJson(R"({"a": "xy"})").bytes());
    s[11] = static_cast<char>(0xff);
    EXPECT_TRUE(validateBson(reinterpret_cast<const uint8_t*>(s.data()), s.size()).isOK());
}

}  // namespace
}  // namespace tessera::bson
