// OperationContext's storage access: in a transaction, its snapshot and writers; else the
// engine's.

#include "command/command.h"
#include "storage/engine.h"
#include "storage/prepared_transactions.h"
#include "storage/transaction.h"

namespace tessera::command {
namespace {

// A transaction's writer, lent to one statement (the transaction owns it and keeps it, with its
// collection's access lock, until it ends).
class BorrowedWriter final : public storage::CollectionWriter {
  public:
    explicit BorrowedWriter(storage::CollectionWriter* w) : _w(w) {}
    const storage::CollectionInfo& collection() const override { return _w->collection(); }
    StatusWith<Timestamp> insert(bson::BsonView doc, const storage::WriteOptions& o) override {
        return _w->insert(doc, o);
    }
    StatusWith<int64_t> insertBatch(const std::vector<bson::BsonView>& docs,
                                    const storage::WriteOptions& o, int64_t* skipped) override {
        return _w->insertBatch(docs, o, skipped);
    }
    StatusWith<int64_t> removeBatch(const std::vector<storage::Record>& records,
                                    const storage::WriteOptions& o, int64_t* skipped) override {
        return _w->removeBatch(records, o, skipped);
    }
    StatusWith<Timestamp> update(std::string_view recordKey, bson::BsonView expected,
                                 bson::BsonView newDoc, const storage::WriteOptions& o) override {
        return _w->update(recordKey, expected, newDoc, o);
    }
    StatusWith<Timestamp> remove(std::string_view recordKey, bson::BsonView expected,
                                 const storage::WriteOptions& o) override {
        return _w->remove(recordKey, expected, o);
    }
    std::unique_ptr<storage::ReadSnapshot> latest() override { return _w->latest(); }
    std::optional<bson::BsonObj> current(std::string_view recordKey) override {
        return _w->current(recordKey);
    }
    std::optional<storage::Record> currentById(const bson::BsonElement& id) override {
        return _w->currentById(id);
    }
    bool inTransaction() const override { return true; }
    bson::BsonObj duplicateKeyInfo() const override { return _w->duplicateKeyInfo(); }

  private:
    storage::CollectionWriter* _w;
};

}  // namespace

std::unique_ptr<storage::ReadSnapshot> OperationContext::snapshot() const {
    if (transaction) return transaction->snapshot();  // bound at the statement's checkout
    return service->engine->snapshot(readAtClusterTime, prepareReads);
}

Status OperationContext::readConflict() const {
    if (!prepareReads || !prepareReads->conflicted()) return Status::OK();
    return prepareReads->conflict();
}

StatusWith<std::unique_ptr<storage::CollectionWriter>> OperationContext::writer(
    const storage::CollectionPtr& coll) {
    if (!transaction) return service->engine->writer(coll, &writeUnit);
    ASSIGN_OR_RETURN(storage::CollectionWriter * w, transaction->writer(coll));
    return std::unique_ptr<storage::CollectionWriter>(std::make_unique<BorrowedWriter>(w));
}

}  // namespace tessera::command
