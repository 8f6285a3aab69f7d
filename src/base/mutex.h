#pragma once

// Mutexes whose contracts the compiler checks (clang's -Wthread-safety, as LevelDB and Abseil
// annotate theirs): a member declared `GUARDED_BY(_mutex)` may only be touched with `_mutex`
// held, a function declared `REQUIRES(_mutex)` only called with it held, one declared
// `EXCLUDES(_mutex)` only without. gcc ignores the annotations; the `tsan` preset builds with
// clang, -Wthread-safety -Werror (scripts/test.sh, phase "tsan").
//
//   mutable Mutex _mutex;
//   int _count GUARDED_BY(_mutex) = 0;
//   void bump() { MutexLock lk(_mutex); ++_count; }
//   void wait() { UniqueLock lk(_mutex); _changed.wait(lk, [&]() REQUIRES(_mutex) { ... }); }

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define TESSERA_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TESSERA_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) TESSERA_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY TESSERA_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) TESSERA_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) TESSERA_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) TESSERA_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) TESSERA_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) TESSERA_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) TESSERA_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) TESSERA_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) TESSERA_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) TESSERA_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) TESSERA_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) TESSERA_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) TESSERA_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) TESSERA_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define RETURN_CAPABILITY(x) TESSERA_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS TESSERA_THREAD_ANNOTATION(no_thread_safety_analysis)
#define ASSERT_CAPABILITY(x) TESSERA_THREAD_ANNOTATION(assert_capability(x))

namespace tessera {

// std::mutex with the annotations.
class CAPABILITY("mutex") Mutex {
  public:
    void lock() ACQUIRE() { _m.lock(); }
    void unlock() RELEASE() { _m.unlock(); }
    bool try_lock() TRY_ACQUIRE(true) { return _m.try_lock(); }
    // Tells the analysis the caller holds it, where a call path cannot say so itself (a
    // callback run under the lock by code the analysis does not see). No run-time check.
    void assertHeld() const ASSERT_CAPABILITY(this) {}
    // For CondVar only.
    std::mutex& native() { return _m; }

  private:
    std::mutex _m;
};

// std::shared_mutex with the annotations.
class CAPABILITY("shared mutex") SharedMutex {
  public:
    void lock() ACQUIRE() { _m.lock(); }
    void unlock() RELEASE() { _m.unlock(); }
    void lock_shared() ACQUIRE_SHARED() { _m.lock_shared(); }
    void unlock_shared() RELEASE_SHARED() { _m.unlock_shared(); }

  private:
    std::shared_mutex _m;
};

// A mutex whose acquisition can give up at a deadline (a session checked out by one operation
// at a time), with the annotations. Built from std::mutex and std::condition_variable rather than
// std::timed_mutex: libstdc++'s try_lock_until is pthread_mutex_clocklock, which ThreadSanitizer
// (clang 14) does not intercept — it then reports every unlock as "of an unlocked mutex" and sees
// none of the ordering the lock gives.
class CAPABILITY("mutex") TimedMutex {
  public:
    void lock() ACQUIRE() {
        std::unique_lock lk(_m);
        _released.wait(lk, [this] { return !_held; });
        _held = true;
    }
    void unlock() RELEASE() {
        {
            std::lock_guard lk(_m);
            _held = false;
        }
        _released.notify_one();
    }
    bool try_lock() TRY_ACQUIRE(true) {
        std::lock_guard lk(_m);
        if (_held) return false;
        _held = true;
        return true;
    }
    template <typename Clock, typename Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration>& t) TRY_ACQUIRE(true) {
        std::unique_lock lk(_m);
        if (!_released.wait_until(lk, t, [this] { return !_held; })) return false;
        _held = true;
        return true;
    }
    template <typename Rep, typename Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& d) TRY_ACQUIRE(true) {
        return try_lock_until(std::chrono::steady_clock::now() + d);
    }

  private:
    std::mutex _m;
    std::condition_variable _released;
    bool _held = false;  // guarded by _m
};

// Holds a Mutex for its scope (std::lock_guard).
class SCOPED_CAPABILITY MutexLock {
  public:
    explicit MutexLock(Mutex& m) ACQUIRE(m) : _m(m) { _m.lock(); }
    ~MutexLock() RELEASE() { _m.unlock(); }
    MutexLock(const MutexLock&) = delete;
    MutexLock& operator=(const MutexLock&) = delete;

  private:
    Mutex& _m;
};

// Holds a Mutex for its scope, may let it go and take it again, and waits on a CondVar
// (std::unique_lock).
class SCOPED_CAPABILITY UniqueLock {
  public:
    explicit UniqueLock(Mutex& m) ACQUIRE(m) : _m(m), _held(true) { _m.lock(); }
    ~UniqueLock() RELEASE() {
        if (_held) _m.unlock();
    }
    UniqueLock(const UniqueLock&) = delete;
    UniqueLock& operator=(const UniqueLock&) = delete;
    void lock() ACQUIRE() {
        _m.lock();
        _held = true;
    }
    void unlock() RELEASE() {
        _held = false;
        _m.unlock();
    }
    Mutex& mutex() const { return _m; }

  private:
    Mutex& _m;
    bool _held;
};

// Holds a SharedMutex shared (std::shared_lock) or exclusively for its scope.
class SCOPED_CAPABILITY SharedLock {
  public:
    explicit SharedLock(SharedMutex& m) ACQUIRE_SHARED(m) : _m(m) { _m.lock_shared(); }
    ~SharedLock() RELEASE() { _m.unlock_shared(); }
    SharedLock(const SharedLock&) = delete;
    SharedLock& operator=(const SharedLock&) = delete;

  private:
    SharedMutex& _m;
};
class SCOPED_CAPABILITY ExclusiveLock {
  public:
    explicit ExclusiveLock(SharedMutex& m) ACQUIRE(m) : _m(m) { _m.lock(); }
    ~ExclusiveLock() RELEASE() { _m.unlock(); }
    ExclusiveLock(const ExclusiveLock&) = delete;
    ExclusiveLock& operator=(const ExclusiveLock&) = delete;

  private:
    SharedMutex& _m;
};

// std::condition_variable over a UniqueLock's Mutex. The predicate runs with the mutex held:
// annotate a lambda that reads guarded members `[&]() REQUIRES(mu) { ... }`.
class CondVar {
  public:
    void notify_one() { _cv.notify_one(); }
    void notify_all() { _cv.notify_all(); }

    void wait(UniqueLock& lk) {
        std::unique_lock<std::mutex> native(lk.mutex().native(), std::adopt_lock);
        _cv.wait(native);
        native.release();
    }
    template <typename Predicate>
    void wait(UniqueLock& lk, Predicate pred) {
        std::unique_lock<std::mutex> native(lk.mutex().native(), std::adopt_lock);
        _cv.wait(native, pred);
        native.release();
    }
    template <typename Clock, typename Duration>
    std::cv_status wait_until(UniqueLock& lk, const std::chrono::time_point<Clock, Duration>& t) {
        std::unique_lock<std::mutex> native(lk.mutex().native(), std::adopt_lock);
        std::cv_status s = _cv.wait_until(native, t);
        native.release();
        return s;
    }
    template <typename Clock, typename Duration, typename Predicate>
    bool wait_until(UniqueLock& lk, const std::chrono::time_point<Clock, Duration>& t,
                    Predicate pred) {
        std::unique_lock<std::mutex> native(lk.mutex().native(), std::adopt_lock);
        bool r = _cv.wait_until(native, t, pred);
        native.release();
        return r;
    }
    template <typename Rep, typename Period>
    std::cv_status wait_for(UniqueLock& lk, const std::chrono::duration<Rep, Period>& d) {
        return wait_until(lk, std::chrono::steady_clock::now() + d);
    }
    template <typename Rep, typename Period, typename Predicate>
    bool wait_for(UniqueLock& lk, const std::chrono::duration<Rep, Period>& d, Predicate pred) {
        return wait_until(lk, std::chrono::steady_clock::now() + d, pred);
    }

  private:
    std::condition_variable _cv;
};

}  // namespace tessera
