#include "storage/wal_sync_group.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace tessera::storage {
namespace {

// A sync that blocks until the test opens the gate, so that the test decides who arrives
// while a sync runs.
class GatedSync {
  public:
    Status operator()() {
        int n = ++_started;
        UniqueLock lock(_mutex);
        _cv.wait(lock, [&]() REQUIRES(_mutex) { return _opened >= n; });
        return _fail ? Status(ErrorCodes::InternalError, "disk gone") : Status::OK();
    }
    void open(int upTo) {
        {
            MutexLock lock(_mutex);
            _opened = upTo;
        }
        _cv.notify_all();
    }
    int started() const { return _started; }
    void failFromNowOn() { _fail = true; }

  private:
    std::atomic<int> _started{0};
    std::atomic<bool> _fail{false};
    Mutex _mutex;
    CondVar _cv;
    int _opened = 0;
};

template <typename Pred>
void pollUntil(Pred pred) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!pred()) {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "condition never became true";
        std::this_thread::yield();
    }
}

TEST(WalSyncGroup, WaitersThatArriveDuringASyncShareTheNextOne) {
    GatedSync gate;
    WalSyncGroup group([&] { return gate(); });
    auto first = std::async(std::launch::async, [&] { return group.wait(); });
    pollUntil([&] { return gate.started() == 1; });

    // Ten writers finish their writes while sync 1 runs: it may not cover them.
    std::vector<std::future<Status>> late;
    for (int i = 0; i < 10; ++i) {
        late.push_back(std::async(std::launch::async, [&] { return group.wait(); }));
    }
    pollUntil([&] { return group.waiters() == 11; });
    gate.open(1);
    EXPECT_TRUE(first.get().isOK());
    // One of the ten runs sync 2 for all of them; none returns before it finished.
    pollUntil([&] { return gate.started() == 2; });
    for (auto& f : late) {
        EXPECT_EQ(f.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
    }
    gate.open(2);
    for (auto& f : late) EXPECT_TRUE(f.get().isOK());
    EXPECT_EQ(group.syncs(), 2u);
    EXPECT_EQ(gate.started(), 2);
}

TEST(WalSyncGroup, AFailedSyncFailsTheWaitersItCovered) {
    GatedSync gate;
    gate.failFromNowOn();
    gate.open(100);
    WalSyncGroup group([&] { return gate(); });
    Status s = group.wait();
    EXPECT_EQ(s.code(), static_cast<int>(ErrorCodes::InternalError));
    EXPECT_EQ(group.syncs(), 1u);
}

}  // namespace
}  // namespace tessera::storage
