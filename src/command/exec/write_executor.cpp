#include "command/exec/write_executor.h"

#include <charconv>

#include "command/collation_util.h"
#include "command/document_validation.h"
#include "command/exec/query_executor.h"
#include "query/matcher.h"
#include "query/update_driver.h"
#include "query/update_paths.h"

namespace tessera::command::exec {

namespace {

struct Target {
    std::string recordKey;
    std::optional<std::string> elemMatchKey;
};

// Record keys (and positional matches) of the documents a write statement targets, collected
// before any document is changed.
StatusWith<std::vector<Target>> collectTargets(const OperationContext& opCtx,
                                               storage::CollectionWriter& writer,
                                               std::shared_ptr<const query::Matcher> matcher,
                                               const QuerySpec& spec,
                                               std::unique_ptr<PlanExecutor>* execOut) {
    const storage::CollectionInfo& info = writer.collection();
    auto coll = std::make_shared<const storage::CollectionInfo>(info);
    ASSIGN_OR_RETURN(
        auto exec, buildQueryExecutor(writer.latest(), coll, info.ns(), spec, std::move(matcher)));
    std::vector<Target> targets;
    WorkingMember m;
    while (true) {
        ASSIGN_OR_RETURN(bool more, exec->next(opCtx, &m));
        if (!more) break;
        targets.push_back(Target{std::move(m.recordKey), m.details.elemMatchKey});
    }
    *execOut = std::move(exec);
    return targets;
}

Status positionalIndex(const std::optional<std::string>& key, query::ApplyContext* ctx) {
    if (!key) {
        return Status(ErrorCodes::BadValue,
                      "The positional operator did not find the match needed from the query.");
    }
    size_t idx = 0;
    auto [p, ec] = std::from_chars(key->data(), key->data() + key->size(), idx);
    if (ec != std::errc()) {
        return Status(ErrorCodes::BadValue,
                      "The positional operator did not find the match needed from the query.");
    }
    ctx->positionalIndex = idx;
    return Status::OK();
}

// {"a.b": 1, c: 2} (dotted paths from collectEqualities) as (path, value) pairs.
std::vector<std::pair<std::string, bson::BsonElement>> equalityPairs(bson::BsonView eqs) {
    std::vector<std::pair<std::string, bson::BsonElement>> out;
    for (auto e : eqs) out.emplace_back(std::string(e.fieldName()), e);
    return out;
}

// MongoDB's rules for an update that changes a sharded document's shard key
// (UpdateStatement::ownership): `after` is the new version, `keyChanged` whether its shard key
// differs from the stored version's (an upsert's new document: whether it is owned at all).
Status checkShardKeyRules(const UpdateStatement& stmt, bson::BsonView after, bool keyChanged) {
    if (!keyChanged) return Status::OK();
    if (stmt.multi) {
        return Status(ErrorCodes::InvalidOptions,
                      "Multi-update operations are not allowed when updating the shard key field.");
    }
    if (!stmt.retryableWrite) {
        return Status(ErrorCodes::IllegalOperation,
                      "Must run update to shard key field in a multi-statement transaction or with "
                      "retryWrites: true.");
    }
    if (stmt.ownership->owns(after)) return Status::OK();
    return Status(ErrorCodes::InvalidOptions,
                  "This update would move the document to another shard (its new " +
                      stmt.ownership->describeKey(after) +
                      "); moving a document between shards needs a multi-document transaction, "
                      "which this Tessera version does not support. Nothing was written: delete "
                      "the document and insert it with its new shard key instead.");
}

}  // namespace

StatusWith<query::UpdateDriver> parseUpdate(const UpdateStatement& stmt) {
    if (stmt.updateIsPipeline) {
        if (!stmt.arrayFilters.isEmpty()) {
            return Status(ErrorCodes::FailedToParse,
                          "arrayFilters may not be specified for pipeline-style updates");
        }
        return query::UpdateDriver::parsePipeline(stmt.update, stmt.let);
    }
    return query::UpdateDriver::parse(stmt.update, stmt.arrayFilters);
}

StatusWith<bson::BsonObj> buildUpsertDocument(const UpdateStatement& stmt) {
    ASSIGN_OR_RETURN(query::UpdateDriver driver, parseUpdate(stmt));
    ASSIGN_OR_RETURN(bson::BsonObj eqs, query::Matcher::collectEqualities(stmt.query));
    bson::BsonObj seed = query::UpdateDriver::seedFromEqualities(equalityPairs(eqs));
    bson::BsonObj out;
    query::ApplyContext ctx;
    ctx.isUpsertInsert = true;
    TRY_STATUS(driver.applyForUpsert(seed, &out, ctx));  // validates the result for storage
    return out;
}

Status executeUpdate(const OperationContext& opCtx, storage::CollectionWriter& writer,
                     const UpdateStatement& stmt, const storage::WriteOptions& wopts,
                     UpdateOutcome* outcome) {
    ASSIGN_OR_RETURN(query::UpdateDriver driver, parseUpdate(stmt));
    if (driver.isReplacement() && stmt.multi) {
        return Status(ErrorCodes::FailedToParse,
                      "multi update is not supported for replacement-style update");
    }
    QuerySpec spec;
    ASSIGN_OR_RETURN(spec.collator,
                     resolveCollation(stmt.collationArg.firstElement(), &writer.collection()));
    ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> parsed,
                     query::Matcher::parse(stmt.query, spec.collator, stmt.let));
    std::shared_ptr<const query::Matcher> matcher(std::move(parsed));

    spec.filter = stmt.query;
    spec.hint = stmt.hint;
    spec.sort = stmt.sort;
    if (!stmt.multi) spec.limit = 1;
    std::unique_ptr<PlanExecutor> exec;
    ASSIGN_OR_RETURN(std::vector<Target> targets,
                     collectTargets(opCtx, writer, matcher, spec, &exec));

    const bool checkKeys =
        stmt.ownership && query::updateMayModifyPaths(stmt.update, stmt.updateIsPipeline,
                                                      stmt.ownership->shardKeyPaths());
    if (checkKeys && stmt.multi) {
        // Every target first, so that a refused key change leaves nothing of the statement
        // written (the write lock keeps the targets as they are meanwhile).
        for (const Target& t : targets) {
            TRY_STATUS(opCtx.checkForInterrupt());
            auto doc = exec->snapshot()->findByRecordKey(writer.collection(), t.recordKey);
            if (!doc) continue;
            query::ApplyContext ctx;
            if (driver.usesPositional()) TRY_STATUS(positionalIndex(t.elemMatchKey, &ctx));
            bson::BsonObj updated;
            bool modified = false;
            TRY_STATUS(driver.apply(*doc, ctx, &updated, &modified));
            if (modified) {
                TRY_STATUS(checkShardKeyRules(stmt, updated,
                                              !stmt.ownership->sameShardKey(*doc, updated)));
            }
        }
    }

    for (const Target& t : targets) {
        TRY_STATUS(opCtx.checkForInterrupt());
        // The snapshot the targets came from still shows each target as it is now: the write
        // lock excludes other writers and this loop writes each record once.
        auto doc = exec->snapshot()->findByRecordKey(writer.collection(), t.recordKey);
        if (!doc) continue;
        query::ApplyContext ctx;
        if (driver.usesPositional()) TRY_STATUS(positionalIndex(t.elemMatchKey, &ctx));
        bson::BsonObj updated;
        bool modified = false;
        TRY_STATUS(driver.apply(*doc, ctx, &updated, &modified));
        if (modified && checkKeys && !stmt.multi) {
            TRY_STATUS(
                checkShardKeyRules(stmt, updated, !stmt.ownership->sameShardKey(*doc, updated)));
        }
        ++outcome->nMatched;
        if (stmt.wantPreImage) outcome->preImage = *doc;
        if (modified && stmt.validator) {
            bson::BsonView before = *doc;
            Status valid = stmt.validator->validate(updated, &before, &outcome->errorInfo);
            if (!valid.isOK()) {
                --outcome->nMatched;
                return valid;
            }
        }
        if (modified) {
            auto sw = writer.update(t.recordKey, updated, wopts);
            if (!sw.isOK()) {
                --outcome->nMatched;
                if (sw.getStatus().is(ErrorCodes::DuplicateKey)) {
                    outcome->errorInfo = writer.duplicateKeyInfo();
                }
                return sw.getStatus();
            }
            ++outcome->nModified;
        }
        if (stmt.wantPostImage) outcome->postImage = modified ? updated : *doc;
    }
    if (outcome->nMatched > 0 || !targets.empty() || !stmt.upsert) return Status::OK();

    // Upsert: nothing matched.
    ASSIGN_OR_RETURN(bson::BsonObj eqs, query::Matcher::collectEqualities(stmt.query));
    bson::BsonObj seed = query::UpdateDriver::seedFromEqualities(equalityPairs(eqs));
    bson::BsonObj newDoc;
    query::ApplyContext ctx;
    ctx.isUpsertInsert = true;
    TRY_STATUS(driver.applyForUpsert(seed, &newDoc, ctx));  // validates the result for storage
    if (stmt.ownership) {
        // The router sends an upsert to the owner of its query's shard key; only an update that
        // sets the key elsewhere makes a document this shard does not own.
        TRY_STATUS(checkShardKeyRules(stmt, newDoc, !stmt.ownership->owns(newDoc)));
    }
    if (stmt.validator) {
        TRY_STATUS(stmt.validator->validate(newDoc, nullptr, &outcome->errorInfo));
    }
    auto sw = writer.insert(newDoc, wopts);
    if (!sw.isOK()) {
        if (sw.getStatus().is(ErrorCodes::DuplicateKey)) {
            outcome->errorInfo = writer.duplicateKeyInfo();
        }
        return sw.getStatus();
    }
    bson::BsonBuilder idHolder;
    idHolder.appendElementAs(newDoc["_id"], "");
    outcome->upsertedId = idHolder.obj();
    if (stmt.wantPostImage) outcome->postImage = newDoc;
    return Status::OK();
}

Status executeDelete(const OperationContext& opCtx, storage::CollectionWriter& writer,
                     const DeleteStatement& stmt, const storage::WriteOptions& wopts,
                     int64_t* nDeleted, std::optional<bson::BsonObj>* preImage) {
    *nDeleted = 0;
    ASSIGN_OR_RETURN(query::CollatorPtr collator,
                     resolveCollation(stmt.collationArg.firstElement(), &writer.collection()));
    ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> parsed,
                     query::Matcher::parse(stmt.query, collator, stmt.let));
    QuerySpec spec;
    spec.collator = collator;
    spec.filter = stmt.query;
    spec.hint = stmt.hint;
    spec.sort = stmt.sort;
    if (!stmt.multi) spec.limit = 1;
    std::unique_ptr<PlanExecutor> exec;
    ASSIGN_OR_RETURN(
        std::vector<Target> targets,
        collectTargets(opCtx, writer, std::shared_ptr<const query::Matcher>(std::move(parsed)),
                       spec, &exec));
    for (const Target& t : targets) {
        TRY_STATUS(opCtx.checkForInterrupt());
        if (preImage) {
            auto doc = exec->snapshot()->findByRecordKey(writer.collection(), t.recordKey);
            if (!doc) continue;
            *preImage = std::move(*doc);
        }
        auto sw = writer.remove(t.recordKey, wopts);
        if (!sw.isOK()) {
            if (sw.getStatus().is(ErrorCodes::NoSuchKey)) continue;
            return sw.getStatus();
        }
        ++*nDeleted;
    }
    return Status::OK();
}

}  // namespace tessera::command::exec
