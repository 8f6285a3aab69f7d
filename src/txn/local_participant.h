#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/hlc.h"
#include "base/status.h"
#include "txn/session_transactions.h"

namespace tessera::txn {

// The coordinating shard's own part of a transaction, reached in process instead of through its
// network endpoint (docs/protocols/two-phase-commit.md): the same session checkout and state
// changes as prepareTransaction / commitTransaction / abortTransaction arriving from the network
// (command/transactions.h), without the hop. Also lists the transactions prepared on this shard
// whose decision is late (participant recovery).
class LocalParticipant {
  public:
    // `shardName` gives this shard's name in the cluster, empty while it is not known (then no
    // participant is local).
    LocalParticipant(txn::SessionTransactions& transactions, std::function<std::string()> shardName)
        : _transactions(transactions), _shardName(std::move(shardName)) {}

    std::string shardName() const { return _shardName(); }

    struct Prepared {
        Timestamp prepareTs;
        bool readOnly = false;  // it wrote nothing: finished at its prepare
    };
    // prepareTransaction of (lsid, txnNumber) here, written to the WAL, not synced: the
    // coordinator's decision follows it in the same log and is synced before any other
    // participant hears it, so the decision is never durable without this part.
    StatusWith<Prepared> prepare(const std::string& lsid, int64_t txnNumber,
                                 const std::string& coordinatorShard,
                                 const std::string& coordinatorHost);
    // commitTransaction {commitTimestamp} / abortTransaction of a transaction prepared here:
    // visible when it returns, written to the WAL, not synced. A transaction already finished
    // the same way answers OK again; one no longer known, NoSuchTransaction.
    Status commit(const std::string& lsid, int64_t txnNumber, Timestamp commitTs);
    Status abort(const std::string& lsid, int64_t txnNumber);

    // The transactions prepared here for longer than `age`, still undecided.
    std::vector<txn::SessionTransactions::PreparedTransaction> preparedLongerThan(
        std::chrono::milliseconds age);
    // Whether a prepared transaction committed here since the last call without being journaled
    // (SessionTransactions::takeUnsyncedCommits): the caller syncs the WAL.
    bool takeUnsyncedCommits() { return _transactions.takeUnsyncedCommits(); }
    void noteUnsyncedCommit() { _transactions.noteUnsyncedCommit(); }

  private:
    txn::SessionTransactions& _transactions;
    std::function<std::string()> _shardName;
};

}  // namespace tessera::txn
