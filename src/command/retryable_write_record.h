#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "command/command.h"
#include "command/retryable_statements.h"
#include "storage/write_observer.h"
#include "txn/transaction_table.h"

namespace tessera::command {

// The per-statement state of one retryable insert/update/delete on a shard: the operation's
// RetryableStatements (which statements an earlier attempt of the same txnNumber
// executed) and the write-unit observer that records each statement it executes in the
// statement's own document write batch (statementRecordKey), so the write and the proof
// that it ran are durable together: a crash in between cannot make a retry apply it twice.
class StatementRecorder final : public RetryableStatements, public storage::WriteObserver {
  public:
    StatementRecorder(std::string lsid, int64_t txnNumber, txn::ExecutedView executed)
        : _lsid(std::move(lsid)), _txnNumber(txnNumber), _executed(std::move(executed)) {}

    std::optional<StatementResult> executed(int32_t stmtId) const override;
    void beginStatement(int32_t stmtId, Kind kind, bool recordable) override;
    void endStatement(const Status& outcome) override;
    void onWrite(const storage::CollectionInfo&, Op op, bson::BsonView before, bson::BsonView after,
                 std::vector<std::pair<std::string, std::string>>* out) override;

    // The statements this attempt executed and recorded (for TransactionTable::finish).
    const txn::ExecutedStatements& newlyExecuted() const { return _new; }
    // Its single-document statements answered with WouldChangeOwningShard: their router moves
    // the document and records them (TransactionTable::finish's `moving`).
    const std::vector<txn::StmtId>& moving() const { return _moving; }

  private:
    struct Current {
        int32_t stmtId = 0;
        Kind kind = Kind::kInsert;
        bool recordable = false;
        std::optional<bson::BsonObj> result;  // of the statement's write, once it wrote
    };
    std::string _lsid;
    int64_t _txnNumber;
    txn::ExecutedView _executed;  // by earlier attempts
    txn::ExecutedStatements _new;
    std::vector<txn::StmtId> _moving;
    std::optional<Current> _current;
};

// findAndModify's record: its whole reply (kWholeCommand), rebuilt from the one document
// write it makes and written in that write's batch.
class FindAndModifyRecorder final : public storage::WriteObserver {
  public:
    using ReplyFn =
        std::function<bson::BsonObj(Op op, bson::BsonView before, bson::BsonView after)>;
    FindAndModifyRecorder(std::string lsid, int64_t txnNumber, ReplyFn reply)
        : _lsid(std::move(lsid)), _txnNumber(txnNumber), _reply(std::move(reply)) {}
    void onWrite(const storage::CollectionInfo&, Op op, bson::BsonView before, bson::BsonView after,
                 std::vector<std::pair<std::string, std::string>>* out) override;

  private:
    std::string _lsid;
    int64_t _txnNumber;
    ReplyFn _reply;
};

// A whole command's recorded reply as its retry is answered: with `ok: 1` when the record has
// no `ok` (FindAndModifyRecorder's records and a router's, which hold the result only).
bson::BsonObj replayedWholeReply(const bson::BsonObj& recorded);

// The recorder of a retryable findAndModify, or nullptr when its arguments do not parse (the
// command then fails before any write).
std::unique_ptr<FindAndModifyRecorder> findAndModifyRecorder(const CommandRequest& request,
                                                             std::string lsid, int64_t txnNumber);

}  // namespace tessera::command
