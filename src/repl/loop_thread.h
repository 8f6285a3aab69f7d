#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace tessera::repl {

// The one libuv loop, on a thread of its own, that runs every replication group of the
// process. libraft is single-threaded and parses addresses with strtok(3), whose hidden state
// two groups on two threads would share (tests run several members in one process), so all
// of them run here. Internal to src/repl.
class LoopThread {
  public:
    // The process's loop thread, started by its first user and stopped with its last.
    static std::shared_ptr<LoopThread> shared();

    LoopThread();
    ~LoopThread();  // every handle of its users must be closed; never on the loop thread
    LoopThread(const LoopThread&) = delete;
    LoopThread& operator=(const LoopThread&) = delete;

    uv_loop_t* loop() { return &_loop; }
    bool onLoopThread() const { return std::this_thread::get_id() == _thread.get_id(); }

    // Runs `task` on the loop thread, after every task posted before it.
    void post(std::function<void()> task);
    // Runs `task` on the loop thread and returns once it has run (not from the loop thread).
    void runSync(const std::function<void()>& task);

  private:
    static void onWake(uv_async_t* handle);

    uv_loop_t _loop{};
    uv_async_t _wake{};
    std::thread _thread;
    Mutex _mutex;
    std::vector<std::function<void()>> _queue GUARDED_BY(_mutex);
    bool _ending GUARDED_BY(_mutex) = false;
};

}  // namespace tessera::repl
