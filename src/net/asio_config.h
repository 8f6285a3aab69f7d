#pragma once

// Include asio through this header so every translation unit agrees on its configuration.
#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif
#ifndef ASIO_NO_DEPRECATED
#define ASIO_NO_DEPRECATED
#endif
// asio 1.22 only enables co_await on clang with libc++'s <experimental/coroutine>; clang 14 with
// libstdc++'s <coroutine> (the fuzz/sanitizer build) works too.
#if !defined(ASIO_HAS_CO_AWAIT) && defined(__clang__) && defined(__cpp_impl_coroutine)
#if __cpp_impl_coroutine >= 201902 && __has_include(<coroutine>)
#define ASIO_HAS_CO_AWAIT 1
#endif
#endif

#include <asio.hpp>
