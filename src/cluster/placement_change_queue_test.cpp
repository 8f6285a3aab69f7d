#include "cluster/placement_change_queue.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <vector>

namespace tessera::cluster {
namespace {

// While the handler holds the first batch, names added meanwhile wait and go together, once
// each, in the next; stop() waits for the batch in progress and nothing runs after it.
TEST(PlacementChangeQueue, NamesAddedDuringABatchGoTogetherInTheNext) {
    std::promise<void> firstStarted, releaseFirst, secondDone;
    std::shared_future<void> release = releaseFirst.get_future().share();
    std::mutex m;
    std::vector<PlacementChanges> batches;
    PlacementChangeQueue queue([&](const PlacementChanges& batch) {
        size_t n;
        {
            std::lock_guard lock(m);
            batches.push_back(batch);
            n = batches.size();
        }
        if (n == 1) {
            firstStarted.set_value();
            release.wait();
        } else if (n == 2) {
            secondDone.set_value();
        }
    });
    queue.add({{"db1"}, {}});
    firstStarted.get_future().wait();
    queue.add({{}, {"db1.a"}});
    queue.add({{"db2"}, {"db1.a", "db1.b"}});
    releaseFirst.set_value();
    secondDone.get_future().wait();
    queue.stop();
    queue.add({{"db3"}, {}});  // after stop: dropped
    std::lock_guard lock(m);
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_EQ(batches[0].databases, std::set<std::string>{"db1"});
    EXPECT_TRUE(batches[0].collections.empty());
    EXPECT_EQ(batches[1].databases, std::set<std::string>{"db2"});
    EXPECT_EQ(batches[1].collections, (std::set<std::string>{"db1.a", "db1.b"}));
}

}  // namespace
}  // namespace tessera::cluster
