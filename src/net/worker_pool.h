#pragma once

#include <exception>
#include <type_traits>
#include <utility>

#include "net/asio_config.h"

namespace tessera::net {

// Runs `fn` on `pool` and resumes the awaiting coroutine on its own executor with the result,
// without blocking the io thread meanwhile. `fn` must not throw (wrap it if it may) and must
// return a value (not void). The caller's io executor is kept busy (work-tracked) until the result
// is delivered, so the io_context cannot run out of work while a command is in flight.
template <typename Fn>
asio::awaitable<std::invoke_result_t<Fn&>> runOnPool(asio::thread_pool& pool, Fn fn) {
    using Result = std::invoke_result_t<Fn&>;
    static_assert(!std::is_void_v<Result>);
    auto initiation = [&pool, fn = std::move(fn)](auto completion) mutable {
        auto work = asio::make_work_guard(asio::get_associated_executor(completion));
        asio::post(pool, [completion = std::move(completion), work = std::move(work),
                          fn = std::move(fn)]() mutable {
            Result result = fn();
            auto executor = work.get_executor();
            asio::post(executor,
                       [completion = std::move(completion), result = std::move(result)]() mutable {
                           std::move(completion)(std::move(result));
                       });
            work.reset();
        });
    };
    co_return co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(Result)>(
        std::move(initiation), asio::use_awaitable);
}

}  // namespace tessera::net
