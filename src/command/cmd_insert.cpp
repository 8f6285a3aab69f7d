#include <algorithm>
#include <chrono>
#include <thread>

#include "command/crud_commands.h"
#include "command/document_validation.h"
#include "command/reply_util.h"
#include "command/retryable_statements.h"
#include "command/write_ops_util.h"
#include "query/update_driver.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

// insert: {insert: "c", documents: [...] | kind-1 `documents`, ordered?, writeConcern?,
// bypassDocumentValidation?} → {n, writeErrors?}.
class InsertCommand final : public Command {
  public:
    std::string_view name() const override { return "insert"; }
    bool supportsRetryableWrite() const override { return true; }
    // A small batch into an existing collection: one bounded write per document.
    bool runsInline(const ServiceContext& service, const CommandRequest& request) const override {
        if (!isExistingCollection(service, request.db, request.firstElement())) return false;
        if (const DocumentSequence* seq = request.sequence("documents")) {
            return seq->documents.size() <= kMaxInlineStatements;
        }
        bson::BsonElement docs = request.body["documents"];
        return docs.isArray() && docs.objValue().nFields() <= kMaxInlineStatements;
    }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(std::string coll, collectionName(request.firstElement(), "insert"));
        ASSIGN_OR_RETURN(auto docs, writeStatements(request, "documents"));
        ASSIGN_OR_RETURN(bool ordered, parseOrdered(request.body, "insert"));
        const storage::WriteOptions wopts;  // a journal write concern: awaitJournal, after run()
        ASSIGN_OR_RETURN(bool bypass,
                         boolArgument(request.body["bypassDocumentValidation"], "insert"));
        std::string ns = request.db + "." + coll;

        // Validate (and give every document its _id) before touching storage, so that an
        // invalid batch does not create the collection.
        std::vector<bson::BsonObj> prepared(docs.size());
        std::vector<WriteError> errors;
        std::vector<bool> valid(docs.size(), false);
        for (size_t i = 0; i < docs.size(); ++i) {
            prepared[i] = ensureIdFirst(docs[i]);
            Status s = query::validateStorableDocument(prepared[i], /*allowTopLevelDollar=*/true);
            if (!s.isOK()) {
                errors.push_back(WriteError{static_cast<int64_t>(i), s, {}});
                if (ordered) break;
                continue;
            }
            valid[i] = true;
        }

        int64_t n = 0;
        size_t stopAt =
            ordered && !errors.empty() ? static_cast<size_t>(errors.front().index) : docs.size();
        // A retryable write's statements that an earlier attempt executed are answered from
        // their record, not inserted again (retryable_statements.h).
        RetryableStatements* retryable = opCtx.statements;
        std::vector<int32_t> stmtIds;
        std::vector<int32_t> retried;
        if (retryable) {
            ASSIGN_OR_RETURN(stmtIds, statementIds(request, docs.size()));
            for (size_t i = 0; i < stopAt; ++i) {
                if (!valid[i]) continue;
                if (auto done = retryable->executed(stmtIds[i])) {
                    n += done->n;
                    retried.push_back(stmtIds[i]);
                    valid[i] = false;  // settled
                }
            }
        }
        bool anyValid = false;
        for (size_t i = 0; i < stopAt; ++i) anyValid = anyValid || valid[i];
        if (anyValid) {
            ASSIGN_OR_RETURN(storage::CollectionPtr collPtr, getOrCreateCollection(opCtx, ns));
            ASSIGN_OR_RETURN(auto writer, opCtx.writer(collPtr));
            ASSIGN_OR_RETURN(auto validator,
                             DocumentValidator::forWrites(writer->collection(), bypass));
            // On a shard, a sharded collection takes only documents the shard owns: a router
            // sends each insert to its key's owner (and a stale one is refused by the version
            // check), so this refuses a direct insert that would be an invisible orphan.
            ASSIGN_OR_RETURN(auto ownership, opCtx.ownershipFilter(ns));
            std::vector<WriteError> storageErrors;
            for (size_t i = 0; i < stopAt; ++i) {
                if (!valid[i]) continue;
                if (ownership && !ownership->owns(prepared[i])) {
                    storageErrors.push_back(
                        WriteError{static_cast<int64_t>(i),
                                   Status(ErrorCodes::InvalidOptions,
                                          "This shard does not own the document's " +
                                              ownership->describeKey(prepared[i]) +
                                              ": insert it through a router"),
                                   {}});
                    if (ordered) {
                        errors.clear();
                        break;
                    }
                    continue;
                }
                if (validator) {
                    bson::BsonObj errInfo;
                    Status v = validator->validate(prepared[i], nullptr, &errInfo);
                    if (!v.isOK()) {
                        storageErrors.push_back(WriteError{static_cast<int64_t>(i), v, errInfo});
                        if (ordered) {
                            errors.clear();
                            break;
                        }
                        continue;
                    }
                }
                if (retryable) {
                    retryable->beginStatement(stmtIds[i], RetryableStatements::Kind::kInsert, true);
                }
                auto sw = writer->insert(prepared[i], wopts);
                // A transaction holds this _id or unique value (intent_table.h): wait for it to
                // end, as MongoDB's insert waits for the transaction's document lock.
                for (int attempt = 1; !sw.isOK() && sw.getStatus().is(ErrorCodes::WriteConflict) &&
                                      !writer->inTransaction() && attempt < 10000;
                     ++attempt) {
                    if (opCtx.inlineExecution && n == 0 && i == 0) {
                        return Status(ErrorCodes::InlineWouldBlock, "a transaction holds the key");
                    }
                    std::this_thread::sleep_for(std::chrono::microseconds(std::min(attempt, 1000)));
                    TRY_STATUS(opCtx.checkForInterrupt());
                    sw = writer->insert(prepared[i], wopts);
                }
                if (retryable) retryable->endStatement(sw.getStatus());
                if (sw.isOK()) {
                    ++n;
                    continue;
                }
                storageErrors.push_back(makeWriteError(i, sw.getStatus(), writer.get()));
                if (ordered) {
                    // An ordered batch stops at its first error, validation or storage.
                    errors.clear();
                    break;
                }
            }
            errors.insert(errors.end(), storageErrors.begin(), storageErrors.end());
            std::sort(errors.begin(), errors.end(),
                      [](const WriteError& a, const WriteError& b) { return a.index < b.index; });
        }
        reply.appendNumber("n", n);
        appendRetriedStatementIds(reply, retried);
        appendWriteErrors(reply, errors);
        return Status::OK();
    }
};

}  // namespace

std::unique_ptr<Command> makeInsertCommand() { return std::make_unique<InsertCommand>(); }

}  // namespace tessera::command
