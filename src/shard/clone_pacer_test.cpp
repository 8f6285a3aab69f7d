#include "shard/clone_pacer.h"

#include <gtest/gtest.h>

namespace tessera::shard {
namespace {

TEST(ClonePacerTest, SlowsDownAboveTheBudgetAndRecoversBelowIt) {
    ClonePacer pacer(3.0);
    EXPECT_EQ(pacer.next(1000).count(), 0);  // the "before" measurement: budget 3 ms
    EXPECT_EQ(pacer.budgetMicros(), 3000);
    EXPECT_EQ(pacer.next(2500).count(), 0);  // within the budget: full rate
    EXPECT_EQ(pacer.next(9000).count(), 5);  // above: pause, doubling
    EXPECT_EQ(pacer.next(9000).count(), 10);
    for (int i = 0; i < 10; ++i) pacer.next(90000);
    EXPECT_EQ(pacer.next(90000).count(), 500) << "bounded";
    EXPECT_EQ(pacer.next(100).count(), 250);  // the foreground recovered: halving to zero
    for (int i = 0; i < 10; ++i) pacer.next(100);
    EXPECT_EQ(pacer.next(100).count(), 0);
}

TEST(ClonePacerTest, AnIdleShardGetsTheFloorAsBudget) {
    ClonePacer pacer(3.0, 2000);
    pacer.next(0);
    EXPECT_EQ(pacer.budgetMicros(), 2000);
    EXPECT_EQ(pacer.next(1500).count(), 0);
}

}  // namespace
}  // namespace tessera::shard
