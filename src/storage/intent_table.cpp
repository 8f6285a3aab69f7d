#include "storage/intent_table.h"

#include "base/mutex.h"
#include "storage/key_format.h"

namespace tessera::storage {

Status transactionWriteConflict() {
    return Status(ErrorCodes::WriteConflict,
                  "Write conflict during plan execution: this operation conflicted with another "
                  "operation. Please retry your operation or multi-document transaction.");
}

std::string IntentTable::tableKey(uint64_t collId, const std::string& lockKey) {
    std::string k;
    k.reserve(keys::kCollIdSize + lockKey.size());
    keys::appendBigEndian64(k, collId);
    k.append(lockKey);
    return k;
}

Status IntentTable::claim(uint64_t collId, const std::vector<std::string>& lockKeys, uint64_t txnId,
                          std::vector<std::string>* claimed) {
    MutexLock lk(_mutex);
    for (const std::string& lockKey : lockKeys) {
        auto it = _owners.find(tableKey(collId, lockKey));
        if (it != _owners.end() && it->second != txnId) return transactionWriteConflict();
    }
    for (const std::string& lockKey : lockKeys) {
        std::string key = tableKey(collId, lockKey);
        if (_owners.emplace(key, txnId).second) {
            claimed->push_back(std::move(key));
            _size.fetch_add(1, std::memory_order_relaxed);
        }
    }
    return Status::OK();
}

Status IntentTable::checkFree(uint64_t collId, const std::vector<std::string>& lockKeys) const {
    if (_size.load(std::memory_order_relaxed) == 0) return Status::OK();
    MutexLock lk(_mutex);
    for (const std::string& lockKey : lockKeys) {
        if (_owners.count(tableKey(collId, lockKey))) return transactionWriteConflict();
    }
    return Status::OK();
}

void IntentTable::restore(const std::vector<std::string>& claimed, uint64_t txnId) {
    MutexLock lk(_mutex);
    for (const std::string& key : claimed) {
        if (_owners.emplace(key, txnId).second) _size.fetch_add(1, std::memory_order_relaxed);
    }
}

void IntentTable::release(const std::vector<std::string>& claimed, uint64_t txnId) {
    if (claimed.empty()) return;
    MutexLock lk(_mutex);
    for (const std::string& key : claimed) {
        auto it = _owners.find(key);
        if (it != _owners.end() && it->second == txnId) {
            _owners.erase(it);
            _size.fetch_sub(1, std::memory_order_relaxed);
        }
    }
}

}  // namespace tessera::storage
