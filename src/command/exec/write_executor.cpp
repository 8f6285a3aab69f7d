#include "command/exec/write_executor.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <thread>

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
    std::optional<bson::BsonObj> doc;  // the version the scan matched, when it fetched it
};

// Internal retries of one statement after WriteConflicts (a concurrent write changed a target
// first): each conflict re-reads the document, so the count only bounds a pathological loop.
constexpr int kMaxWriteConflictRetries = 10000;

// A short wait between conflict retries, growing with their number (at most ~1 ms).
void backoff(int attempt) {
    if (attempt < 4) {
        std::this_thread::yield();
    } else {
        std::this_thread::sleep_for(std::chrono::microseconds(std::min(attempt, 1000)));
    }
}

// What a statement that may not wait answers a WriteConflict it would wait out
// (UpdateStatement::deferConflicts): the pool runs the command again.
Status deferredConflict() {
    return Status(ErrorCodes::InlineWouldBlock, "a transaction holds the document");
}

// Record keys (and positional matches) of the documents a write statement targets, collected
// before any document is changed.
StatusWith<std::vector<Target>> collectTargets(const OperationContext& opCtx,
                                               storage::CollectionWriter& writer,
                                               std::shared_ptr<const query::Matcher> matcher,
                                               const QuerySpec& spec,
                                               std::unique_ptr<PlanExecutor>* execOut) {
    const storage::CollectionInfo& info = writer.collection();
    if (std::optional<bson::BsonElement> id = pointLookupId(spec)) {
        // MongoDB's IDHACK: one lookup, no planner, and through the writer's own readers, which
        // the write's check of the latest version then reuses.
        ASSIGN_OR_RETURN(std::shared_ptr<const OwnershipFilter> ownership,
                         const_cast<OperationContext&>(opCtx).ownershipFilter(info.ns()));
        std::vector<Target> targets;
        std::optional<storage::Record> rec = writer.currentById(*id);
        if (rec && (!ownership || ownership->owns(rec->doc))) {
            targets.push_back(Target{std::move(rec->recordKey), std::nullopt, std::move(rec->doc)});
        }
        execOut->reset();  // every target carries its document
        return targets;
    }
    auto coll = std::make_shared<const storage::CollectionInfo>(info);
    ASSIGN_OR_RETURN(
        auto exec, buildQueryExecutor(writer.latest(), coll, info.ns(), spec, std::move(matcher)));
    std::vector<Target> targets;
    WorkingMember m;
    while (true) {
        ASSIGN_OR_RETURN(bool more, exec->next(opCtx, &m));
        if (!more) break;
        Target t{std::move(m.recordKey), m.details.elemMatchKey, std::nullopt};
        if (m.hasDoc) t.doc = std::move(m.doc);
        targets.push_back(std::move(t));
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
// (UpdateStatement::ownership): `after` is the new version of `before` (empty for an upsert's
// new document), `keyChanged` whether its shard key differs from the stored version's (an
// upsert's new document: whether it is owned at all). A document another shard would own is
// the router's to move: WouldChangeOwningShard with the images in outcome->errorInfo.
Status checkShardKeyRules(const UpdateStatement& stmt, bson::BsonView before, bson::BsonView after,
                          bool keyChanged, UpdateOutcome* outcome) {
    if (!keyChanged) return Status::OK();
    if (!stmt.multi && !stmt.retryableWrite && !stmt.inTransaction) {
        return Status(ErrorCodes::IllegalOperation,
                      "Must run update to shard key field in a multi-statement transaction or with "
                      "retryWrites: true.");
    }
    if (stmt.ownership->owns(after)) {
        if (stmt.multi && !stmt.routerMovesDocuments) {
            return Status(ErrorCodes::InvalidOptions,
                          "Multi-update operations are not allowed when updating the shard key "
                          "field.");
        }
        return Status::OK();
    }
    if (!stmt.routerMovesDocuments) {
        return Status(ErrorCodes::InvalidOptions,
                      "This update would move the document to another shard (its new " +
                          stmt.ownership->describeKey(after) +
                          "); only a router moves a document between shards: run the update "
                          "through a router. Nothing was written.");
    }
    bson::BsonBuilder info;
    bson::BsonArrayBuilder docs;
    bson::BsonBuilder one;
    if (!before.isEmpty()) one.appendObject("pre", before);
    one.appendObject("post", after);
    docs.append(one.obj());
    info.appendArray("documents", docs.arr());
    outcome->errorInfo = info.obj();
    return Status(ErrorCodes::WouldChangeOwningShard,
                  "This update would move the document to another shard (its new " +
                      stmt.ownership->describeKey(after) + ")");
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

namespace {

// The version of target `t` to write from: the one the scan matched, else read from `snapshot`
// (nullopt: it vanished; never because of a prepared transaction the read could not wait for —
// that is the operation's error).
StatusWith<std::optional<bson::BsonObj>> targetVersion(const OperationContext& opCtx, Target& t,
                                                       PlanExecutor* exec,
                                                       const storage::CollectionInfo& coll) {
    if (t.doc || !exec) return std::move(t.doc);
    std::optional<bson::BsonObj> doc = exec->snapshot()->findByRecordKey(coll, t.recordKey);
    if (!doc) TRY_STATUS(opCtx.readConflict());
    return doc;
}

// After a WriteConflict on `recordKey`: its latest version if it still matches the statement's
// filter (with the positional match in *elemMatchKey), else nullopt.
std::optional<bson::BsonObj> rematch(storage::CollectionWriter& writer,
                                     const query::Matcher& matcher, std::string_view recordKey,
                                     std::optional<std::string>* elemMatchKey) {
    std::optional<bson::BsonObj> doc = writer.current(recordKey);
    if (!doc) return std::nullopt;
    query::MatchDetails details;
    if (!matcher.matches(*doc, &details)) return std::nullopt;
    *elemMatchKey = details.elemMatchKey;
    return doc;
}

enum class TargetResult { kWritten, kUnchanged, kGone };

// Updates one target, first writer wins: when a concurrent write changed the document after the
// scan (WriteConflict), its latest version is matched against the filter again and updated if it
// still matches; kGone when it no longer exists or matches.
StatusWith<TargetResult> updateTarget(
    const OperationContext& opCtx, storage::CollectionWriter& writer, const UpdateStatement& stmt,
    const query::UpdateDriver& driver, const query::Matcher& matcher, bool checkKeys, Target t,
    bson::BsonObj doc, const storage::WriteOptions& wopts, UpdateOutcome* outcome) {
    std::optional<std::string> elemMatchKey = t.elemMatchKey;
    for (int attempt = 0;; ++attempt) {
        TRY_STATUS(opCtx.checkForInterrupt());
        query::ApplyContext ctx;
        if (driver.usesPositional()) TRY_STATUS(positionalIndex(elemMatchKey, &ctx));
        bson::BsonObj updated;
        bool modified = false;
        TRY_STATUS(driver.apply(doc, ctx, &updated, &modified));
        if (modified && checkKeys) {
            TRY_STATUS(checkShardKeyRules(stmt, doc, updated,
                                          !stmt.ownership->sameShardKey(doc, updated), outcome));
        }
        if (modified && stmt.validator) {
            bson::BsonView before = doc;
            TRY_STATUS(stmt.validator->validate(updated, &before, &outcome->errorInfo));
        }
        if (!modified) {
            ++outcome->nMatched;
            if (stmt.wantPreImage) outcome->preImage = doc;
            if (stmt.wantPostImage) outcome->postImage = doc;
            return TargetResult::kUnchanged;
        }
        auto sw = writer.update(t.recordKey, doc, updated, wopts);
        if (sw.isOK()) {
            ++outcome->nMatched;
            ++outcome->nModified;
            if (stmt.wantPreImage) outcome->preImage = doc;
            if (stmt.wantPostImage) outcome->postImage = std::move(updated);
            return TargetResult::kWritten;
        }
        if (sw.getStatus().is(ErrorCodes::NoSuchKey)) return TargetResult::kGone;
        // In a transaction a conflict aborts it (the snapshot cannot be re-read to a newer one).
        if (!sw.getStatus().is(ErrorCodes::WriteConflict) || attempt >= kMaxWriteConflictRetries ||
            writer.inTransaction()) {
            if (sw.getStatus().is(ErrorCodes::DuplicateKey)) {
                outcome->errorInfo = writer.duplicateKeyInfo();
            }
            return sw.getStatus();
        }
        if (stmt.deferConflicts && outcome->nMatched == 0) return deferredConflict();
        backoff(attempt);
        std::optional<bson::BsonObj> latest = rematch(writer, matcher, t.recordKey, &elemMatchKey);
        if (!latest) return TargetResult::kGone;
        doc = std::move(*latest);
    }
}

}  // namespace

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
    const bool checkKeys =
        stmt.ownership && query::updateMayModifyPaths(stmt.update, stmt.updateIsPipeline,
                                                      stmt.ownership->shardKeyPaths());

    // A single-document statement whose target vanished under a concurrent write looks for its
    // document again (MongoDB retries the whole write on a conflict); an upsert whose insert lost
    // a race for a unique key too, and then updates the winner's document.
    for (int round = 0;; ++round) {
        std::unique_ptr<PlanExecutor> exec;
        ASSIGN_OR_RETURN(std::vector<Target> targets,
                         collectTargets(opCtx, writer, matcher, spec, &exec));
        if (checkKeys && stmt.multi) {
            // Every target first, so that a refused key change leaves nothing of the statement
            // written (a concurrent change meanwhile is still checked at its write). When one
            // document would move, the router moves them all: every changed one is reported.
            bson::BsonArrayBuilder changed;
            bool moves = false;
            for (Target& t : targets) {
                TRY_STATUS(opCtx.checkForInterrupt());
                std::optional<bson::BsonObj> doc = t.doc;  // a copy: the loop below takes it
                if (!doc) {
                    ASSIGN_OR_RETURN(doc, targetVersion(opCtx, t, exec.get(), writer.collection()));
                }
                if (!doc) continue;
                query::ApplyContext ctx;
                if (driver.usesPositional()) TRY_STATUS(positionalIndex(t.elemMatchKey, &ctx));
                bson::BsonObj updated;
                bool modified = false;
                TRY_STATUS(driver.apply(*doc, ctx, &updated, &modified));
                if (!modified) continue;
                UpdateOutcome probe;
                Status rules = checkShardKeyRules(
                    stmt, *doc, updated, !stmt.ownership->sameShardKey(*doc, updated), &probe);
                if (!rules.isOK() && !rules.is(ErrorCodes::WouldChangeOwningShard)) return rules;
                moves = moves || !rules.isOK();
                if (stmt.routerMovesDocuments && changed.count() < kMaxMovedDocuments + 1) {
                    bson::BsonBuilder one;
                    one.appendObject("pre", *doc);
                    one.appendObject("post", updated);
                    changed.append(one.obj());
                }
            }
            if (moves) {
                if (changed.count() > kMaxMovedDocuments) {
                    return Status(ErrorCodes::InvalidOptions,
                                  "This update would move documents to another shard and changes "
                                  "more than " +
                                      std::to_string(kMaxMovedDocuments) +
                                      " documents; a router moves at most that many in one "
                                      "transaction. Update fewer documents at a time.");
                }
                bson::BsonBuilder info;
                info.appendArray("documents", changed.arr());
                info.appendInt64("matched", static_cast<int64_t>(targets.size()));
                outcome->errorInfo = info.obj();
                return Status(ErrorCodes::WouldChangeOwningShard,
                              "This update would move documents to another shard");
            }
        }
        bool vanished = false;
        for (Target& t : targets) {
            TRY_STATUS(opCtx.checkForInterrupt());
            ASSIGN_OR_RETURN(std::optional<bson::BsonObj> doc,
                             targetVersion(opCtx, t, exec.get(), writer.collection()));
            if (!doc) {
                vanished = true;
                continue;
            }
            ASSIGN_OR_RETURN(TargetResult r,
                             updateTarget(opCtx, writer, stmt, driver, *matcher, checkKeys, t,
                                          std::move(*doc), wopts, outcome));
            vanished = vanished || r == TargetResult::kGone;
        }
        if (outcome->nMatched > 0) return Status::OK();
        if (!targets.empty()) {
            // Every target went under concurrent writes: a single-document statement looks again.
            if (stmt.multi || !vanished || round >= kMaxWriteConflictRetries) return Status::OK();
            if (stmt.deferConflicts) return deferredConflict();
            backoff(round);
            continue;
        }
        if (!stmt.upsert) return Status::OK();

        // Upsert: nothing matched.
        ASSIGN_OR_RETURN(bson::BsonObj eqs, query::Matcher::collectEqualities(stmt.query));
        bson::BsonObj seed = query::UpdateDriver::seedFromEqualities(equalityPairs(eqs));
        bson::BsonObj newDoc;
        query::ApplyContext ctx;
        ctx.isUpsertInsert = true;
        TRY_STATUS(driver.applyForUpsert(seed, &newDoc, ctx));  // validates it for storage
        if (stmt.ownership) {
            // The router sends an upsert to the owner of its query's shard key; only an update
            // that sets the key elsewhere makes a document this shard does not own.
            TRY_STATUS(checkShardKeyRules(stmt, bson::BsonView(), newDoc,
                                          !stmt.ownership->owns(newDoc), outcome));
        }
        if (stmt.validator) {
            TRY_STATUS(stmt.validator->validate(newDoc, nullptr, &outcome->errorInfo));
        }
        auto sw = writer.insert(newDoc, wopts);
        if (!sw.isOK()) {
            if (sw.getStatus().is(ErrorCodes::WriteConflict) && !writer.inTransaction() &&
                round < kMaxWriteConflictRetries) {
                if (stmt.deferConflicts) return deferredConflict();
                backoff(round);  // a transaction holds the key: look again once it ended
                continue;
            }
            if (sw.getStatus().is(ErrorCodes::DuplicateKey)) {
                // A concurrent upsert inserted the document first: update it instead, once (as
                // MongoDB retries an upsert on a duplicate key of its own query).
                if (round == 0) continue;
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
}

Status executeDelete(const OperationContext& opCtx, storage::CollectionWriter& writer,
                     const DeleteStatement& stmt, const storage::WriteOptions& wopts,
                     int64_t* nDeleted, std::optional<bson::BsonObj>* preImage) {
    *nDeleted = 0;
    ASSIGN_OR_RETURN(query::CollatorPtr collator,
                     resolveCollation(stmt.collationArg.firstElement(), &writer.collection()));
    ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> parsed,
                     query::Matcher::parse(stmt.query, collator, stmt.let));
    std::shared_ptr<const query::Matcher> matcher(std::move(parsed));
    QuerySpec spec;
    spec.collator = collator;
    spec.filter = stmt.query;
    spec.hint = stmt.hint;
    spec.sort = stmt.sort;
    if (!stmt.multi) spec.limit = 1;
    for (int round = 0;; ++round) {
        std::unique_ptr<PlanExecutor> exec;
        ASSIGN_OR_RETURN(std::vector<Target> targets,
                         collectTargets(opCtx, writer, matcher, spec, &exec));
        bool vanished = false;
        for (Target& t : targets) {
            TRY_STATUS(opCtx.checkForInterrupt());
            ASSIGN_OR_RETURN(std::optional<bson::BsonObj> doc,
                             targetVersion(opCtx, t, exec.get(), writer.collection()));
            std::optional<std::string> ignored;
            for (int attempt = 0; doc; ++attempt) {
                auto sw = writer.remove(t.recordKey, *doc, wopts);
                if (sw.isOK()) {
                    ++*nDeleted;
                    if (preImage) *preImage = std::move(*doc);
                    break;
                }
                if (sw.getStatus().is(ErrorCodes::NoSuchKey)) {
                    doc.reset();
                    break;
                }
                if (!sw.getStatus().is(ErrorCodes::WriteConflict) ||
                    attempt >= kMaxWriteConflictRetries || writer.inTransaction()) {
                    return sw.getStatus();
                }
                if (stmt.deferConflicts && *nDeleted == 0) return deferredConflict();
                backoff(attempt);
                TRY_STATUS(opCtx.checkForInterrupt());
                doc = rematch(writer, *matcher, t.recordKey, &ignored);
            }
            vanished = vanished || !doc;
        }
        if (*nDeleted > 0 || stmt.multi || !vanished || round >= kMaxWriteConflictRetries) {
            return Status::OK();
        }
        if (stmt.deferConflicts) return deferredConflict();
        backoff(round);  // the one document went under a concurrent write: look again
    }
}

}  // namespace tessera::command::exec
