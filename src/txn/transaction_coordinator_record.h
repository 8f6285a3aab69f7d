#pragma once

// What the coordinator's files share (transaction_coordinator.cpp: coordination, staging,
// decision and delivery; transaction_coordinator_recovery.cpp: the recovery thread and
// currentOp): the persisted record of a coordination, the in-memory claim on it, and their
// constants. Included by those files only.

#include <algorithm>
#include <chrono>
#include <string>

#include "base/failpoint.h"
#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "txn/transaction_coordinator.h"

namespace tessera::txn {

// The recovery thread looks at the coordinations not settled every kRecoveryInterval, and at
// every record (what a crash left; done records to forget) at startup and every
// kFullScanInterval.
constexpr auto kRecoveryInterval = std::chrono::seconds(1);
constexpr auto kFullScanInterval = std::chrono::minutes(1);
// Threads delivering decisions (step 4): a delivery is one round trip and a participant's sync,
// so a few keep up with many concurrent commits.
constexpr int kDeliveryThreads = 4;
constexpr int64_t kForgetDoneAfterMs = 30LL * 60 * 1000;  // logicalSessionTimeoutMinutes
// Delivery rounds of a delivery thread before the recovery thread takes over.
constexpr int kDeliveryRounds = 3;

enum class Decision { kNone, kCommit, kAbort };

// The record of (lsid, txnNumber): the lsid's 16 bytes as they are (as the statement records of
// txn/session_records.h), the number zero-padded so that no key is a prefix of another.
inline std::string recordKey(const std::string& lsid, int64_t txnNumber) {
    std::string n = std::to_string(txnNumber);
    return std::string(TransactionCoordinator::kRecordPrefix) + lsid + "/" +
           std::string(20 - std::min<size_t>(20, n.size()), '0') + n;
}

// A participant's answer to a decision that means its part is finished: done, or no longer known
// (a prepared part is durable until its commit or abort is), or the session has gone on to a
// newer transaction (a prepared one holds the next back until it is decided).
inline bool finishedBy(const Status& st) {
    return st.isOK() || st.is(ErrorCodes::NoSuchTransaction) ||
           st.is(ErrorCodes::TransactionTooOld);
}

inline void hangAt(FailPoint& fp) { pauseWhileActive(fp, "TXN", 22220); }

struct TransactionCoordinator::Record {
    std::string key;
    std::string lsid;
    int64_t txnNumber = 0;
    std::vector<Participant> participants;
    Decision decision = Decision::kNone;
    Timestamp commitTs;
    std::vector<std::string> writers;  // shards of participants that prepared with writes
    std::string reason;                // why it aborted
    // The code the client hears for an abort: NoSuchTransaction (TransientTransactionError:
    // run the transaction again), or a participant's refusal that running it again cannot
    // change (OperationNotSupportedInTransaction: it created a collection, storage/transaction.h).
    int abortCode = static_cast<int>(ErrorCodes::NoSuchTransaction);
    // Written by stage(): the router prepares the participants and sends the decision;
    // undecided, it is resolved by preparing every participant again (never aborted blindly:
    // the router may have acknowledged the commit once every part was prepared).
    bool staged = false;
    bool done = false;
    bool localFinished = false;  // in memory: this shard's own part is committed or aborted

    bson::BsonObj toBson() const {
        bson::BsonBuilder b;
        b.appendBinary("lsid", 4, lsid);
        b.appendInt64("txnNumber", txnNumber);
        b.startArray("participants");
        for (size_t i = 0; i < participants.size(); ++i) {
            b.startObject(std::to_string(i));
            b.append("shard", participants[i].shard);
            b.append("host", participants[i].host);
            b.end();
        }
        b.end();
        if (decision != Decision::kNone) {
            b.append("decision", decision == Decision::kCommit ? "commit" : "abort");
        }
        if (decision == Decision::kCommit) {
            b.appendTimestamp("commitTimestamp", commitTs.value);
            b.startArray("writers");
            for (size_t i = 0; i < writers.size(); ++i) b.append(std::to_string(i), writers[i]);
            b.end();
        }
        if (!reason.empty()) b.append("reason", reason);
        if (staged) b.appendBool("staged", true);
        if (abortCode != static_cast<int>(ErrorCodes::NoSuchTransaction)) {
            b.appendInt32("abortCode", abortCode);
        }
        b.appendBool("done", done);
        b.appendDate("updatedAt", wallClockMillis());
        return b.obj();
    }

    static std::optional<Record> parse(const std::string& key, bson::BsonView doc) {
        Record r;
        r.key = key;
        if (doc["lsid"].type() != bson::BsonType::BinData || !doc["participants"].isArray()) {
            return std::nullopt;
        }
        r.lsid = std::string(doc["lsid"].binaryValue().data);
        r.txnNumber = doc["txnNumber"].numberLong();
        for (bson::BsonElement e : doc["participants"].objValue()) {
            if (!e.isObject()) return std::nullopt;
            r.participants.push_back({std::string(e.objValue()["shard"].stringValue()),
                                      std::string(e.objValue()["host"].stringValue())});
        }
        std::string_view decision =
            doc["decision"].type() == bson::BsonType::String ? doc["decision"].stringValue() : "";
        r.decision = decision == "commit"  ? Decision::kCommit
                     : decision == "abort" ? Decision::kAbort
                                           : Decision::kNone;
        if (r.decision == Decision::kCommit) {
            r.commitTs = Timestamp{doc["commitTimestamp"].timestampValue()};
            for (bson::BsonElement e : doc["writers"].objValue()) {
                r.writers.emplace_back(e.stringValue());
            }
        }
        if (doc["reason"].type() == bson::BsonType::String) {
            r.reason = std::string(doc["reason"].stringValue());
        }
        if (doc["abortCode"].isNumber()) r.abortCode = doc["abortCode"].numberInt();
        r.done = doc["done"].trueValue();
        r.staged = doc["staged"].trueValue();
        return r;
    }

    // Whether participant `shard` prepared with writes (the others finished at their prepare).
    bool wrote(const std::string& shard) const {
        return std::find(writers.begin(), writers.end(), shard) != writers.end();
    }

    // What the caller of a coordination hears once it is decided.
    Status outcome() const {
        if (decision == Decision::kCommit) return Status::OK();
        return Status(static_cast<ErrorCodes>(abortCode),
                      "Transaction " + std::to_string(txnNumber) + " was aborted: " + reason);
    }

    // {name: 1, lsid, txnNumber, autocommit: false, extra...}: a statement of the transaction.
    bson::BsonObj command(std::string_view name, bson::BsonView extra = bson::BsonView()) const {
        bson::BsonBuilder b;
        b.appendInt32(name, 1);
        b.startObject("lsid");
        b.appendBinary("id", 4, lsid);
        b.end();
        b.appendInt64("txnNumber", txnNumber);
        b.appendBool("autocommit", false);
        if (!extra.isEmpty()) {
            for (bson::BsonElement e : extra) b.appendElement(e);
        }
        return b.obj();
    }
};

struct TransactionCoordinator::Coordination {
    Mutex mutex;
    CondVar cv;
    bool finished GUARDED_BY(mutex) = false;
    bool givenUp GUARDED_BY(mutex) = false;  // unclaim(): no outcome, the waiters claim again
    Status outcome GUARDED_BY(mutex) = Status::OK();
    Timestamp commitTs GUARDED_BY(mutex);
};

}  // namespace tessera::txn
