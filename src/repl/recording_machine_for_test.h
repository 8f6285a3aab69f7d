#pragma once

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "base/error_codes.h"
#include "repl/group.h"

namespace tessera::repl::testing {

// A state machine for the tests: the list of applied entries. Its snapshot is the whole list,
// so a member restored from one holds exactly what the snapshot's member held. It checks what
// the adapter promises: entries arrive at appliedIndex() + 1 (or later after a restore).
class RecordingMachine final : public StateMachine {
  public:
    LogIndex appliedIndex() const override {
        std::lock_guard lk(_m);
        return _applied;
    }
    void apply(LogIndex index, std::string_view entry) override {
        std::lock_guard lk(_m);
        if (index <= _applied) ++_outOfOrder;
        _applied = index;
        _entries.emplace_back(entry);
    }
    std::string snapshot(LogIndex index) override {
        std::lock_guard lk(_m);
        ++_snapshots;
        std::string out;
        for (const std::string& e : _entries) {
            std::uint32_t n = static_cast<std::uint32_t>(e.size());
            out.append(reinterpret_cast<const char*>(&n), sizeof(n));
            out += e;
        }
        return out;
    }
    Status restore(LogIndex index, std::string_view snapshot) override {
        std::lock_guard lk(_m);
        std::vector<std::string> entries;
        size_t pos = 0;
        while (pos < snapshot.size()) {
            std::uint32_t n;
            if (snapshot.size() - pos < sizeof(n)) return Status(ErrorCodes::InternalError, "bad");
            std::memcpy(&n, snapshot.data() + pos, sizeof(n));
            pos += sizeof(n);
            if (snapshot.size() - pos < n) return Status(ErrorCodes::InternalError, "bad");
            entries.emplace_back(snapshot.substr(pos, n));
            pos += n;
        }
        _entries = std::move(entries);
        _applied = index;
        ++_restores;
        return Status::OK();
    }

    std::vector<std::string> entries() const {
        std::lock_guard lk(_m);
        return _entries;
    }
    int outOfOrder() const {
        std::lock_guard lk(_m);
        return _outOfOrder;
    }
    int snapshots() const {
        std::lock_guard lk(_m);
        return _snapshots;
    }
    int restores() const {
        std::lock_guard lk(_m);
        return _restores;
    }

  private:
    mutable std::mutex _m;
    LogIndex _applied = 0;
    std::vector<std::string> _entries;
    int _outOfOrder = 0;
    int _snapshots = 0;
    int _restores = 0;
};

}  // namespace tessera::repl::testing
