#include "txn/session_record_reaper.h"

#include "base/guarded.h"
#include "base/log.h"
#include "base/mutex.h"
#include "txn/session_records.h"

namespace tessera::txn {

SessionRecordReaper::SessionRecordReaper(TransactionTable& table, storage::Engine& engine,
                                         RunLocal runLocal, std::chrono::milliseconds idleLimit,
                                         std::chrono::milliseconds sweepEvery)
    : _table(table),
      _engine(engine),
      _runLocal(std::move(runLocal)),
      _idleLimit(idleLimit),
      _sweepEvery(sweepEvery) {}

SessionRecordReaper::~SessionRecordReaper() { stop(); }

void SessionRecordReaper::start() {
    MutexLock lk(_mutex);
    if (_thread.joinable() || _stopping) return;
    _thread = std::thread([this] {
        UniqueLock lk(_mutex);
        while (!_wake.wait_for(lk, _sweepEvery, [this]() REQUIRES(_mutex) { return _stopping; })) {
            lk.unlock();
            runLoggingExceptions("TXN", 22232, "session record sweep", [this] { sweep(); });
            lk.lock();
        }
    });
}

void SessionRecordReaper::stop() {
    {
        MutexLock lk(_mutex);
        _stopping = true;
    }
    _wake.notify_all();
    if (_thread.joinable()) _thread.join();
}

size_t SessionRecordReaper::sweepAt(TransactionTable::Clock::time_point now) {
    size_t n =
        _table.expireIdle(now - _idleLimit, [this](const std::string& lsid) { forget(lsid); });
    if (n > 0) {
        log::info("TXN", 22230, "Expired the retryable write records of idle sessions",
                  "{\"sessions\":" + std::to_string(n) + ",\"logicalSessionTimeoutMinutes\":" +
                      std::to_string(
                          std::chrono::duration_cast<std::chrono::minutes>(_idleLimit).count()) +
                      "}");
    }
    return n;
}

void SessionRecordReaper::forget(const std::string& lsid) {
    // A failure leaves a record that the next restart restores and a later sweep expires.
    Status statements = forgetStatementRecords(_engine, lsid);
    Status whole = _runLocal("config", transactionRecordDelete(lsid));
    if (!statements.isOK() || !whole.isOK()) {
        log::warning("TXN", 22231, "Could not delete an expired session's records",
                     "{\"error\":\"" +
                         log::jsonEscape((statements.isOK() ? whole : statements).toString()) +
                         "\"}");
    }
}

}  // namespace tessera::txn
