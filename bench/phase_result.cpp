#include "phase_result.h"

#include <cstdio>

#include "base/log.h"

namespace tessera::bench {
namespace {

double micros(uint64_t nanos) { return static_cast<double>(nanos) / 1000.0; }

// Appends `value` formatted by `format` (one %.1f), if it was measured (negative: it was not).
void appendMeasured(std::string& out, const char* format, double value) {
    if (value < 0) return;
    char buf[64];
    std::snprintf(buf, sizeof(buf), format, value);
    out += buf;
}

}  // namespace

std::string formatText(const PhaseResult& r) {
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "%s %-6s %10.0f ops/s  p50 %8.1f us  p99 %8.1f us  max %9.1f us  "
                  "(ops %llu, errors %llu, %.1f s, %llu threads)",
                  r.tool.c_str(), r.phase.c_str(), r.opsPerSec(),
                  micros(r.latency.percentile(0.50)), micros(r.latency.percentile(0.99)),
                  micros(r.latency.max()), static_cast<unsigned long long>(r.ops),
                  static_cast<unsigned long long>(r.errors), r.seconds,
                  static_cast<unsigned long long>(r.threads));
    std::string out = buf;
    appendMeasured(out, "  server CPU %.1f us/op", r.serverCpuUsPerOp);
    appendMeasured(out, "  client CPU %.1f us/op", r.clientCpuUsPerOp);
    if (!r.firstError.empty()) {
        out += "\n  first error: " + r.firstError;
    }
    return out;
}

std::string formatJson(const PhaseResult& r) {
    char buf[640];
    std::snprintf(buf, sizeof(buf),
                  "{\"tool\":\"%s\",\"phase\":\"%s\",\"threads\":%llu,\"ops\":%llu,"
                  "\"errors\":%llu,\"seconds\":%.3f,\"ops_per_sec\":%.1f,\"p50_us\":%.1f,"
                  "\"p99_us\":%.1f,\"max_us\":%.1f,\"mean_us\":%.1f,\"bytes_per_op\":%llu",
                  log::jsonEscape(r.tool).c_str(), log::jsonEscape(r.phase).c_str(),
                  static_cast<unsigned long long>(r.threads),
                  static_cast<unsigned long long>(r.ops), static_cast<unsigned long long>(r.errors),
                  r.seconds, r.opsPerSec(), micros(r.latency.percentile(0.50)),
                  micros(r.latency.percentile(0.99)), micros(r.latency.max()),
                  r.latency.mean() / 1000.0, static_cast<unsigned long long>(r.bytesPerOp));
    std::string out = buf;
    appendMeasured(out, ",\"server_cpu_us_per_op\":%.1f", r.serverCpuUsPerOp);
    appendMeasured(out, ",\"client_cpu_us_per_op\":%.1f", r.clientCpuUsPerOp);
    if (!r.firstError.empty()) {
        out += ",\"first_error\":\"" + log::jsonEscape(r.firstError) + "\"";
    }
    out += "}";
    return out;
}

}  // namespace tessera::bench
