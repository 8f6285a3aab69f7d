#pragma once

#include <string_view>

namespace tessera::command {

// The MongoDB version Tessera presents (buildInfo.version) and the wire versions consistent with
// it: 8.0 ⇔ maxWireVersion 25. Clients gate features on these, so they move together.
constexpr std::string_view kCompatibleMongoVersion = "8.0.0";
constexpr int kVersionArray[4] = {8, 0, 0, 0};
constexpr int kMinWireVersion = 0;
constexpr int kMaxWireVersion = 25;
constexpr std::string_view kFeatureCompatibilityVersion = "8.0";
// Tessera's own version.
constexpr std::string_view kTesseraVersion = "0.1.0";

constexpr int kMaxBsonObjectSize = 16 * 1024 * 1024;
constexpr int kMaxMessageSizeBytes = 48'000'000;
constexpr int kMaxWriteBatchSize = 100'000;

}  // namespace tessera::command
