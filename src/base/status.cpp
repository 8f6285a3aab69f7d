#include "base/status.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <stdexcept>

namespace tessera {

std::string codeName(int code) {
    switch (code) {
#define TESSERA_CODE_NAME_CASE(name, value) \
    case value:                             \
        return #name;
        TESSERA_ERROR_CODES(TESSERA_CODE_NAME_CASE)
#undef TESSERA_CODE_NAME_CASE
    }
    return "Location" + std::to_string(code);
}

Status::Status(int code, std::string reason) : _code(code), _reason(std::move(reason)) {}

std::string Status::codeName() const { return tessera::codeName(_code); }

std::string Status::toString() const {
    if (isOK()) return "OK";
    return codeName() + ": " + _reason;
}

Status Status::withContext(std::string_view prefix) const {
    if (isOK()) return *this;
    return Status(_code, std::string(prefix) + " :: caused by :: " + _reason);
}

Status statusFromCurrentException(std::string_view context) {
    const std::string where = context.empty() ? std::string() : " in " + std::string(context);
    try {
        throw;
    } catch (const std::bad_alloc&) {
        return Status(ErrorCodes::ExceededMemoryLimit,
                      "out of memory" + where +
                          ": the operation needed more memory than the "
                          "process could allocate");
    } catch (const std::length_error& e) {
        return Status(ErrorCodes::ExceededMemoryLimit,
                      "the operation asked for more memory than a container can hold" + where +
                          " (" + e.what() + ")");
    } catch (const std::exception& e) {
        return Status(ErrorCodes::InternalError, "unexpected exception" + where + ": " + e.what());
    } catch (...) {
        return Status(ErrorCodes::InternalError, "unexpected exception" + where);
    }
}

void invariantFailed(const char* expr, const char* file, int line) {
    std::fprintf(stderr, "Invariant failure %s at %s:%d\n", expr, file, line);
    std::fflush(stderr);
    std::abort();
}

}  // namespace tessera
