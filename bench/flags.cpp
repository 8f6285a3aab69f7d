#include "flags.h"

#include <cerrno>
#include <cstdlib>

namespace tessera::bench {

bool Flags::parse(int argc, const char* const* argv, std::string* error) {
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0) {
            *error = "unexpected argument '" + arg + "'";
            return false;
        }
        std::string name = arg.substr(2);
        std::string value;
        bool inlineValue = false;
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            inlineValue = true;
        }
        if (_switches.count(name)) {
            if (inlineValue) {
                *error = "flag --" + name + " takes no value";
                return false;
            }
            _values[name] = "1";
        } else if (_valued.count(name)) {
            if (!inlineValue) {
                if (i + 1 >= argc) {
                    *error = "flag --" + name + " needs a value";
                    return false;
                }
                value = argv[++i];
            }
            _values[name] = value;
        } else {
            *error = "unknown flag --" + name;
            return false;
        }
    }
    return true;
}

std::string Flags::getString(const std::string& name, const std::string& fallback) const {
    auto it = _values.find(name);
    return it == _values.end() ? fallback : it->second;
}

bool Flags::getUint(const std::string& name, uint64_t fallback, uint64_t* out,
                    std::string* error) const {
    auto it = _values.find(name);
    if (it == _values.end()) {
        *out = fallback;
        return true;
    }
    const std::string& s = it->second;
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || s[0] == '-' || errno != 0 || end == nullptr || *end != '\0') {
        *error = "flag --" + name + " expects a non-negative integer, got '" + s + "'";
        return false;
    }
    *out = v;
    return true;
}

bool Flags::getDouble(const std::string& name, double fallback, double* out,
                      std::string* error) const {
    auto it = _values.find(name);
    if (it == _values.end()) {
        *out = fallback;
        return true;
    }
    const std::string& s = it->second;
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || errno != 0 || end == nullptr || *end != '\0' || !(v >= 0)) {
        *error = "flag --" + name + " expects a non-negative number, got '" + s + "'";
        return false;
    }
    *out = v;
    return true;
}

}  // namespace tessera::bench
