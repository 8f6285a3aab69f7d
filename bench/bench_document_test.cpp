#include "bench_document.h"

#include <gtest/gtest.h>

#include <set>

namespace tessera::bench {
namespace {

TEST(BenchDocumentTest, HasRequestedSizeAndFields) {
    ValueSource pad(4096);
    for (uint32_t size : {100u, 256u, 1024u, 4096u}) {
        bson_t doc;
        makeDocument(42, size, pad, &doc);
        EXPECT_EQ(doc.len, size);
        bson_iter_t it;
        ASSERT_TRUE(bson_iter_init_find(&it, &doc, "_id"));
        EXPECT_EQ(bson_iter_int64(&it), 42);
        ASSERT_TRUE(bson_iter_init_find(&it, &doc, "k"));
        EXPECT_EQ(bson_iter_int64(&it), secondaryKey(42));
        ASSERT_TRUE(bson_iter_init_find(&it, &doc, "pad"));
        uint32_t len = 0;
        const char* s = bson_iter_utf8(&it, &len);
        EXPECT_TRUE(bson_utf8_validate(s, len, false));
        bson_destroy(&doc);
    }
}

TEST(BenchDocumentTest, TinySizeGivesMinimalDocument) {
    ValueSource pad(8);
    bson_t doc;
    makeDocument(1, 8, pad, &doc);
    EXPECT_EQ(doc.len, minDocumentSize());
    bson_destroy(&doc);
}

TEST(BenchDocumentTest, SecondaryKeysAreDistinctAndNonNegative) {
    std::set<int64_t> keys;
    for (int64_t id = 0; id < 10000; ++id) {
        int64_t k = secondaryKey(id);
        EXPECT_GE(k, 0);
        keys.insert(k);
    }
    EXPECT_EQ(keys.size(), 10000u);
}

TEST(ValueSourceTest, SlicesArePrintableAndVary) {
    ValueSource v(64);
    EXPECT_EQ(v.slice(0).size(), 64u);
    EXPECT_NE(v.slice(0), v.slice(1));
    for (char c : v.slice(3)) {
        EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << c;
    }
}

}  // namespace
}  // namespace tessera::bench
