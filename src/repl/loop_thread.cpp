#include "repl/loop_thread.h"

#include "base/log.h"

namespace tessera::repl {

std::shared_ptr<LoopThread> LoopThread::shared() {
    static Mutex mutex;
    static std::weak_ptr<LoopThread>* current = new std::weak_ptr<LoopThread>();
    MutexLock lk(mutex);
    std::shared_ptr<LoopThread> thread = current->lock();
    if (!thread) {
        thread = std::make_shared<LoopThread>();
        *current = thread;
    }
    return thread;
}

LoopThread::LoopThread() {
    if (int rv = uv_loop_init(&_loop); rv != 0) {
        log::error("REPL", 4300010, "Cannot start the replication loop",
                   std::string("{\"error\":\"") + uv_strerror(rv) + "\"}");
        std::abort();
    }
    _wake.data = this;
    uv_async_init(&_loop, &_wake, &LoopThread::onWake);
    _thread = std::thread([this] {
        uv_run(&_loop, UV_RUN_DEFAULT);  // until ~LoopThread closes the last handle
    });
}

LoopThread::~LoopThread() {
    post([this] { uv_close(reinterpret_cast<uv_handle_t*>(&_wake), nullptr); });
    {
        MutexLock lk(_mutex);
        _ending = true;
    }
    _thread.join();
    uv_loop_close(&_loop);
}

void LoopThread::post(std::function<void()> task) {
    MutexLock lk(_mutex);
    if (_ending) return;  // only the destructor's own task comes after this
    _queue.push_back(std::move(task));
    uv_async_send(&_wake);
}

void LoopThread::runSync(const std::function<void()>& task) {
    Mutex m;
    CondVar cv;
    bool done = false;
    post([&] {
        task();
        MutexLock lk(m);
        done = true;
        cv.notify_one();
    });
    UniqueLock lk(m);
    cv.wait(lk, [&] { return done; });
}

void LoopThread::onWake(uv_async_t* handle) {
    auto* self = static_cast<LoopThread*>(handle->data);
    std::vector<std::function<void()>> tasks;
    {
        MutexLock lk(self->_mutex);
        tasks.swap(self->_queue);
    }
    for (auto& task : tasks) task();
}

}  // namespace tessera::repl
