#include "base/op_id.h"

#include <gtest/gtest.h>

#include <set>

namespace tessera {
namespace {

TEST(OpId, IdsArePositiveAndDistinct) {
    std::set<int32_t> seen;
    for (int i = 0; i < 1000; ++i) {
        int32_t id = nextOpId();
        EXPECT_GT(id, 0);
        EXPECT_TRUE(seen.insert(id).second);
    }
}

TEST(KeyedOpIds, AKeyKeepsItsIdWhileListed) {
    KeyedOpIds ids;
    int32_t a = ids.idFor("a");
    int32_t b = ids.idFor("b");
    EXPECT_NE(a, b);
    EXPECT_EQ(ids.idFor("a"), a);
    ids.retainOnly({"a"});
    EXPECT_EQ(ids.idFor("a"), a);
    EXPECT_NE(ids.idFor("b"), b);  // b ended and a new operation took its key
}

}  // namespace
}  // namespace tessera
