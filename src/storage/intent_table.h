#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"

namespace tessera::storage {

// Which open transaction holds each key it has written and not yet committed or aborted: the
// write-write exclusion between a transaction's intents (kept in its own batch, invisible to
// everyone else) and every other writer. Keys are a writer's lock keys (a record key, a unique
// index value: RocksCollectionWriter::lockKeys) under the collection id, and every check or
// claim happens with those keys' KeyLocks held, so "check the table, then write or claim" is
// atomic per key.
//
// - A transaction claims each key before it writes it; a key another transaction holds is a
//   WriteConflict (first writer wins; the transaction reports it, MongoDB's
//   TransientTransactionError, and the application retries the whole transaction).
// - A writer outside any transaction that finds a key held gets a WriteConflict too, which the
//   command layer retries with a backoff (exec/write_executor.cpp) until the transaction ended.
// - A transaction releases its keys after its commit batch is written (so a writer that then
//   looks finds the committed version) or when it aborts.
// Thread-safe. Checks cost one relaxed load while no transaction holds anything.
class IntentTable {
  public:
    // Claims `lockKeys` of collection `collId` for transaction `txnId`, appending the keys it
    // newly claimed (table keys, for release) to *claimed. WriteConflict if another transaction
    // holds one of them.
    Status claim(uint64_t collId, const std::vector<std::string>& lockKeys, uint64_t txnId,
                 std::vector<std::string>* claimed);
    // WriteConflict if any transaction holds one of the keys.
    Status checkFree(uint64_t collId, const std::vector<std::string>& lockKeys) const;
    // Claims table keys (as `claim` appended them) for `txnId` again: a prepared transaction
    // recovered after a restart, before anything else runs.
    void restore(const std::vector<std::string>& claimed, uint64_t txnId);
    // Releases keys `txnId` claimed.
    void release(const std::vector<std::string>& claimed, uint64_t txnId);
    size_t sizeForTest() const { return _size.load(); }

  private:
    static std::string tableKey(uint64_t collId, const std::string& lockKey);

    mutable Mutex _mutex;
    std::unordered_map<std::string, uint64_t> _owners GUARDED_BY(_mutex);
    std::atomic<size_t> _size{0};
};

// The WriteConflict every transactional conflict reports (MongoDB's wording).
Status transactionWriteConflict();

}  // namespace tessera::storage
