#include "base/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <deque>
#include <mutex>

#include "base/mutex.h"

namespace tessera::log {
namespace {

constexpr size_t kMaxRecentLines = 1024;

struct Ring {
    Mutex mutex;
    std::deque<std::string> lines GUARDED_BY(mutex);
    long long total GUARDED_BY(mutex) = 0;

    void add(std::string line) {
        MutexLock lock(mutex);
        lines.push_back(std::move(line));
        if (lines.size() > kMaxRecentLines) lines.pop_front();
        ++total;
    }
    RecentLines snapshot() {
        MutexLock lock(mutex);
        return RecentLines{{lines.begin(), lines.end()}, total};
    }
};

Ring& recent() {
    static Ring ring;
    return ring;
}
Ring& warnings() {
    static Ring ring;
    return ring;
}
bool gVerbose = false;

char severityLetter(Severity s) {
    switch (s) {
        case Severity::kDebug:
            return 'D';
        case Severity::kInfo:
            return 'I';
        case Severity::kWarning:
            return 'W';
        case Severity::kError:
            return 'E';
        case Severity::kFatal:
            return 'F';
    }
    return 'I';
}

std::string isoNow() {
    auto now = std::chrono::system_clock::now();
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms.count()));
    return buf;
}

std::string formatLine(Severity severity, std::string_view component, int id, std::string_view msg,
                       std::string_view attrJson) {
    std::string line;
    line.reserve(128 + msg.size() + attrJson.size());
    line += "{\"t\":{\"$date\":\"";
    line += isoNow();
    line += "\"},\"s\":\"";
    line += severityLetter(severity);
    line += "\",\"c\":\"";
    line += jsonEscape(component);
    line += "\",\"id\":";
    line += std::to_string(id);
    line += ",\"msg\":\"";
    line += jsonEscape(msg);
    line += "\",\"attr\":";
    line += attrJson.empty() ? std::string_view("{}") : attrJson;
    line += "}";
    return line;
}

}  // namespace

std::string jsonEscape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (unsigned char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof(buf), "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out;
}

void write(Severity severity, std::string_view component, int id, std::string_view msg,
           std::string_view attrJson) {
    if (severity == Severity::kDebug && !gVerbose) return;
    std::string line = formatLine(severity, component, id, msg, attrJson);
    std::fprintf(stderr, "%s\n", line.c_str());
    recent().add(std::move(line));
}

RecentLines recentLines() { return recent().snapshot(); }

void startupWarning(std::string_view msg) {
    std::string line = formatLine(Severity::kWarning, "CONTROL", 22120, msg, "{}");
    std::fprintf(stderr, "%s\n", line.c_str());
    recent().add(line);
    warnings().add(std::move(line));
}

RecentLines startupWarnings() { return warnings().snapshot(); }

void setVerbose(bool v) { gVerbose = v; }
bool verbose() { return gVerbose; }

}  // namespace tessera::log
