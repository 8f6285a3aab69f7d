#pragma once

#include <string>
#include <string_view>

#include "base/log.h"
#include "base/status.h"

namespace tessera {

// Runs one iteration of a background loop (a sweep, a ping, a reaper pass): an exception is
// logged with `component`/`logId` and the iteration ends — a thread's body never lets one out,
// which would end the process.
template <typename Fn>
void runLoggingExceptions(std::string_view component, int logId, std::string_view what, Fn&& fn) {
    try {
        fn();
    } catch (...) {
        Status failed = statusFromCurrentException(what);
        log::error(component, logId, "A background task failed; it goes on",
                   "{\"task\":\"" + log::jsonEscape(what) + "\",\"error\":\"" +
                       log::jsonEscape(failed.toString()) + "\"}");
    }
}

}  // namespace tessera
