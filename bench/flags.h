// Minimal command-line flags for the bench tools: `--name value`, `--name=value`, `--switch`.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tessera::bench {

class Flags {
  public:
    // `switches` are flags that take no value. Every other `--name` takes one.
    Flags(std::set<std::string> valued, std::set<std::string> switches)
        : _valued(std::move(valued)), _switches(std::move(switches)) {}

    // Returns false and fills *error on an unknown flag, a missing value or a stray argument.
    bool parse(int argc, const char* const* argv, std::string* error);

    bool has(const std::string& name) const { return _values.count(name) != 0; }
    std::string getString(const std::string& name, const std::string& fallback) const;
    // Returns false and fills *error when the value is not a non-negative integer / number.
    bool getUint(const std::string& name, uint64_t fallback, uint64_t* out,
                 std::string* error) const;
    bool getDouble(const std::string& name, double fallback, double* out, std::string* error) const;

  private:
    std::set<std::string> _valued;
    std::set<std::string> _switches;
    std::map<std::string, std::string> _values;
};

}  // namespace tessera::bench
