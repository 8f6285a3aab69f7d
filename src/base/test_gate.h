#pragma once

// For tests: a gate threads wait at until the test opens it (a latch), and the test can wait —
// with a deadline that only bounds a failure — until a number of threads are waiting there. An
// operation held at the gate is in flight for exactly as long as the test needs, with no clock
// deciding the outcome (no "sleep 300 ms and hope it is still running").

#include <chrono>

#include "base/mutex.h"

namespace tessera::test {

class Gate {
  public:
    // Waits until the gate is open.
    void wait() {
        UniqueLock lk(_mutex);
        ++_waiting;
        _changed.notify_all();
        _changed.wait(lk, [&]() REQUIRES(_mutex) { return _open; });
        --_waiting;
    }
    void open() {
        MutexLock lk(_mutex);
        _open = true;
        _changed.notify_all();
    }
    // Whether `n` threads were waiting at the gate at once before `limit` passed.
    bool awaitWaiters(int n, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
        UniqueLock lk(_mutex);
        return _changed.wait_for(lk, limit, [&]() REQUIRES(_mutex) { return _waiting >= n; });
    }
    int waiting() {
        MutexLock lk(_mutex);
        return _waiting;
    }

  private:
    Mutex _mutex;
    CondVar _changed;
    bool _open GUARDED_BY(_mutex) = false;
    int _waiting GUARDED_BY(_mutex) = 0;
};

}  // namespace tessera::test
