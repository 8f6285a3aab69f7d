#pragma once

// Logical sessions (lsid): how long one nobody uses is kept — its transactions, its retryable
// writes' records (MongoDB's logicalSessionTimeoutMinutes, which hello reports).

#include <chrono>

namespace tessera::txn {

constexpr int kLogicalSessionTimeoutMinutes = 30;
constexpr std::chrono::minutes kLogicalSessionTimeout{kLogicalSessionTimeoutMinutes};

}  // namespace tessera::txn
