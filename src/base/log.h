#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::log {

enum class Severity { kDebug, kInfo, kWarning, kError, kFatal };

// Writes one line in MongoDB's structured log format to stderr and keeps it in an in-memory ring
// (served by `getLog`):
//   {"t":{"$date":"..."},"s":"I","c":"NETWORK","id":22943,"ctx":"conn1","msg":"...","attr":{...}}
// `attrJson` is a JSON object text ("{}" when empty); the caller renders it (e.g. with libbson's
// extended JSON) so this layer needs no BSON.
void write(Severity severity, std::string_view component, int id, std::string_view msg,
           std::string_view attrJson = "{}");

inline void info(std::string_view component, int id, std::string_view msg,
                 std::string_view attrJson = "{}") {
    write(Severity::kInfo, component, id, msg, attrJson);
}
inline void warning(std::string_view component, int id, std::string_view msg,
                    std::string_view attrJson = "{}") {
    write(Severity::kWarning, component, id, msg, attrJson);
}
inline void error(std::string_view component, int id, std::string_view msg,
                  std::string_view attrJson = "{}") {
    write(Severity::kError, component, id, msg, attrJson);
}

// Escapes `s` as the contents of a JSON string (no surrounding quotes).
std::string jsonEscape(std::string_view s);

// The most recent lines (at most 1024), oldest first, and how many were ever written.
struct RecentLines {
    std::vector<std::string> lines;
    long long totalLinesWritten = 0;
};
RecentLines recentLines();

// Startup warnings are kept apart, as `getLog: "startupWarnings"` serves them.
void startupWarning(std::string_view msg);
RecentLines startupWarnings();

// Suppresses debug lines unless verbose.
void setVerbose(bool verbose);
bool verbose();

}  // namespace tessera::log
