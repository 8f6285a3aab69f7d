// SessionTransactions::currentOps(): the open transactions of a shard or --replSet node, as
// currentOp reports them (current_op.h).

#include "base/mutex.h"
#include "storage/transaction.h"
#include "txn/session_transactions.h"

namespace tessera::txn {
namespace {

int64_t wallMillisAt(std::chrono::steady_clock::time_point t) {
    auto ago = std::chrono::steady_clock::now() - t;
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               (std::chrono::system_clock::now() - ago).time_since_epoch())
        .count();
}

}  // namespace

std::vector<bson::BsonObj> SessionTransactions::currentOps() {
    std::vector<std::shared_ptr<Session>> sessions = allSessions();
    std::vector<bson::BsonObj> ops;
    for (const std::shared_ptr<Session>& s : sessions) {
        // A statement holds the session checked out; a report never waits for one.
        bool active = !s->checkout.try_lock();
        if (!active) s->checkout.unlock();
        MutexLock lk(s->stateMutex);
        if (s->state != State::kInProgress && s->state != State::kPrepared) continue;
        bool prepared = s->state == State::kPrepared;
        bson::BsonBuilder b;
        b.append("type", active ? "op" : "idleSession");
        b.appendInt32("opid", s->opid);
        b.append("desc", active ? "transaction statement"
                                : (prepared ? "prepared transaction" : "inactive transaction"));
        b.appendBool("active", active);
        b.startObject("lsid").appendBinary("id", 4, s->lsid).end();
        b.startObject("transaction");
        b.startObject("parameters")
            .appendInt64("txnNumber", s->txnNumber)
            .appendBool("autocommit", false)
            .end();
        if (s->txn) b.appendTimestamp("readTimestamp", s->txn->readTimestamp().value);
        b.appendDate("startWallClockTime", wallMillisAt(s->started));
        b.appendInt64("timeOpenMicros", std::chrono::duration_cast<std::chrono::microseconds>(
                                            std::chrono::steady_clock::now() - s->started)
                                            .count());
        if (prepared) {
            // Never aborted by the lifetime limit: it waits for its coordinator's decision.
            b.appendTimestamp("prepareTimestamp", s->prepareTs.value);
            b.appendDate("prepareWallClockTime", wallMillisAt(s->preparedAt));
            if (!s->coordinatorShard.empty()) b.append("coordinator", s->coordinatorShard);
        } else {
            b.appendDate("expiryTime", wallMillisAt(s->started + kLifetimeLimit));
        }
        b.end();
        ops.push_back(b.obj());
    }
    return ops;
}

}  // namespace tessera::txn
