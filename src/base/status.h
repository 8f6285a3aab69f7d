#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "base/error_codes.h"

namespace tessera {

// The outcome of an operation: OK, or a MongoDB error code with a message. Drivers branch on the
// code, so errors that reach a client must carry MongoDB's number for the situation.
class [[nodiscard]] Status {
  public:
    static Status OK() { return Status(); }

    Status() = default;
    Status(ErrorCodes code, std::string reason)
        : Status(static_cast<int>(code), std::move(reason)) {}
    // For MongoDB's numbered assertion codes that have no name (codeName() gives "Location<N>").
    Status(int code, std::string reason);

    bool isOK() const { return _code == 0; }
    int code() const { return _code; }
    ErrorCodes errorCode() const { return static_cast<ErrorCodes>(_code); }
    bool is(ErrorCodes c) const { return _code == static_cast<int>(c); }
    const std::string& reason() const { return _reason; }
    std::string codeName() const;
    // "CodeName: reason", for logs and test failure messages.
    std::string toString() const;

    // Returns this status with `prefix` prepended to the reason (no-op when OK).
    Status withContext(std::string_view prefix) const;

  private:
    int _code = 0;
    std::string _reason;
};

// A value or an error status. Accessing value() on an error is a bug (invariant).
template <typename T>
class [[nodiscard]] StatusWith {
  public:
    StatusWith(T value) : _value(std::move(value)) {}
    StatusWith(Status status);
    StatusWith(ErrorCodes code, std::string reason) : StatusWith(Status(code, std::move(reason))) {}

    bool isOK() const { return _status.isOK(); }
    const Status& getStatus() const { return _status; }
    T& getValue() &;
    const T& getValue() const&;
    T&& getValue() &&;

  private:
    Status _status;
    std::optional<T> _value;
};

[[noreturn]] void invariantFailed(const char* expr, const char* file, int line);

// The status of the exception being handled (call it only inside a catch block): running out of
// memory (std::bad_alloc, or std::length_error from a container asked for more than it can hold)
// is ExceededMemoryLimit (146) — never "unexpected exception" (1) — and anything else is
// InternalError naming `context` and the exception. The one place exceptions become statuses at
// a module, thread or command boundary.
Status statusFromCurrentException(std::string_view context);

}  // namespace tessera

// invariant(cond): for conditions that only a bug can violate. Kills the process; never reachable
// from user input.
#define invariant(expr)                                                     \
    do {                                                                    \
        if (!(expr)) ::tessera::invariantFailed(#expr, __FILE__, __LINE__); \
    } while (0)

#define TESSERA_CONCAT_INNER(a, b) a##b
#define TESSERA_CONCAT(a, b) TESSERA_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if it is not OK.
#define TRY_STATUS(expr)                           \
    do {                                           \
        ::tessera::Status _tryStatus = (expr);     \
        if (!_tryStatus.isOK()) return _tryStatus; \
    } while (0)

// ASSIGN_OR_RETURN(auto x, makeX()): unwraps a StatusWith or returns its error status.
#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(TESSERA_CONCAT(_sw, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(sw, lhs, expr) \
    auto sw = (expr);                        \
    if (!sw.isOK()) return sw.getStatus();   \
    lhs = std::move(sw).getValue()

namespace tessera {

template <typename T>
StatusWith<T>::StatusWith(Status status) : _status(std::move(status)) {
    invariant(!_status.isOK());
}

template <typename T>
T& StatusWith<T>::getValue() & {
    invariant(_value.has_value());
    return *_value;
}

template <typename T>
const T& StatusWith<T>::getValue() const& {
    invariant(_value.has_value());
    return *_value;
}

template <typename T>
T&& StatusWith<T>::getValue() && {
    invariant(_value.has_value());
    return std::move(*_value);
}

}  // namespace tessera
