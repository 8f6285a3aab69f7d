#include "router/cluster_write_without_shard_key.h"

#include <algorithm>

#include "base/error_codes.h"
#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "command/generic_args.h"
#include "placement/shard_key_pattern.h"
#include "query/matcher.h"
#include "query/update_driver.h"
#include "router/cluster_write_batch.h"

namespace tessera::router {
namespace {

bool isPrefixPath(std::string_view a, std::string_view b) {  // a is b or a parent of b
    return b.substr(0, a.size()) == a && (b.size() == a.size() || b[a.size()] == '.');
}

const bson::BsonObj& nullHolder() {
    static const bson::BsonObj obj = [] {
        bson::BsonBuilder b;
        b.appendNull("");
        return b.obj();
    }();
    return obj;
}

bson::BsonElement sortValue(bson::BsonView doc, std::string_view path) {
    bson::BsonElement e = placement::extractPathOrArray(doc, path);
    return e.eoo() ? nullHolder().firstElement() : e;
}

}  // namespace

bson::BsonObj twoPhaseProjection(const placement::ShardKeyPattern& pattern, bson::BsonView sort,
                                 bool wholeDocument) {
    if (wholeDocument) return bson::BsonObj();
    std::vector<std::string> paths{"_id"};
    for (size_t i = 0; i < pattern.numFields(); ++i) paths.push_back(pattern.fieldPath(i));
    for (bson::BsonElement e : sort) {
        if (e.isObject()) continue;  // {$meta: ...}
        paths.emplace_back(e.fieldName());
    }
    // Keep the shortest of overlapping paths (a projection with "a" and "a.b" is a collision).
    std::vector<std::string> kept;
    for (const std::string& p : paths) {
        bool covered = false;
        for (const std::string& q : paths) {
            if (q != p && isPrefixPath(q, p)) covered = true;
        }
        if (!covered && std::find(kept.begin(), kept.end(), p) == kept.end()) kept.push_back(p);
    }
    bson::BsonBuilder b;
    for (const std::string& p : kept) b.appendInt32(p, 1);
    return b.obj();
}

bson::BsonObj twoPhaseFindCommand(std::string_view coll, bson::BsonView filter, bson::BsonView sort,
                                  bson::BsonView projection, bson::BsonElement collation,
                                  bson::BsonElement let) {
    bson::BsonBuilder b;
    b.append("find", coll);
    b.append("filter", filter);
    if (!sort.isEmpty()) b.append("sort", sort);
    if (!projection.isEmpty()) b.append("projection", projection);
    b.appendInt64("limit", 1);
    b.append("singleBatch", true);
    if (collation && !collation.isNull()) b.appendElementAs(collation, "collation");
    if (let && !let.isNull()) b.appendElementAs(let, "let");
    return b.obj();
}

std::optional<size_t> pickFirstMatch(const std::vector<bson::BsonObj>& docs, bson::BsonView sort) {
    if (docs.empty()) return std::nullopt;
    size_t best = 0;
    for (size_t i = 1; i < docs.size(); ++i) {
        int cmp = 0;
        for (bson::BsonElement s : sort) {
            if (s.isObject()) continue;
            int c = bson::compareElementValues(sortValue(docs[i], s.fieldName()),
                                               sortValue(docs[best], s.fieldName()));
            if (c != 0) {
                cmp = s.numberDouble() < 0 ? -c : c;
                break;
            }
        }
        if (cmp < 0) best = i;
    }
    return best;
}

bson::BsonObj filterWithId(bson::BsonView filter, bson::BsonElement id) {
    bson::BsonBuilder b;
    b.startObject("_id").appendElementAs(id, "$eq").end();
    b.startArray("$and");
    b.append("0", filter);
    b.end();
    return b.obj();
}

Status checkShardKeyChange(const placement::RoutingTable& table, bson::BsonView doc,
                           bson::BsonElement u, bson::BsonView arrayFilters, const ShardId& owner) {
    auto driver = query::UpdateDriver::parse(u, arrayFilters, nullptr);
    if (!driver.isOK() || driver.getValue().usesPositional()) return Status::OK();
    bson::BsonObj out;
    bool modified = false;
    if (!driver.getValue().apply(doc, query::ApplyContext{}, &out, &modified).isOK()) {
        return Status::OK();  // the shard reports the same error
    }
    if (!modified) return Status::OK();
    const placement::ShardKeyPattern& pattern = table.shardKeyPattern();
    auto oldKey = pattern.extractShardKeyFromDoc(doc);
    auto newKey = pattern.extractShardKeyFromDoc(out);
    if (!newKey.isOK()) return newKey.getStatus();
    if (oldKey.isOK() && oldKey.getValue().binaryEqual(newKey.getValue())) return Status::OK();
    const placement::Chunk& chunk = table.findChunk(newKey.getValue());
    if (chunk.shard == owner) return Status::OK();
    // The same refusal as the shard's (command/exec/write_executor.cpp), made before anything
    // is sent.
    return Status(ErrorCodes::InvalidOptions,
                  "This update would move the document from shard '" + owner + "' to shard '" +
                      chunk.shard + "' (its new shard key " + newKey.getValue().toJson() +
                      "); document shard key value updates that cause the doc to move "
                      "shards must be sent with write batch of size 1. Nothing was written.");
}

StatusWith<UpsertTarget> targetUpsertInsert(const placement::RoutingTable& table,
                                            bson::BsonView filter, bson::BsonElement u,
                                            bson::BsonView arrayFilters) {
    ASSIGN_OR_RETURN(auto driver, query::UpdateDriver::parse(u, arrayFilters, nullptr));
    ASSIGN_OR_RETURN(bson::BsonObj eqs, query::Matcher::collectEqualities(filter));
    std::vector<std::pair<std::string, bson::BsonElement>> pairs;
    for (bson::BsonElement e : eqs) pairs.emplace_back(std::string(e.fieldName()), e);
    bson::BsonObj seed = query::UpdateDriver::seedFromEqualities(pairs);
    UpsertTarget out;
    query::ApplyContext ctx;
    ctx.isUpsertInsert = true;
    TRY_STATUS(driver.applyForUpsert(seed, &out.document, ctx));
    ASSIGN_OR_RETURN(bson::BsonObj key,
                     table.shardKeyPattern().extractShardKeyFromDoc(out.document));
    out.shard = table.findChunk(key).shard;
    // The shard must build the same document: its `_id` is pinned by the filter, or added to it
    // (adding it to a filter that already has an `_id` equality would match `_id` twice).
    out.filter = eqs.hasField("_id") ? bson::BsonObj(filter.copy())
                                     : filterWithId(filter, out.document["_id"]);
    return out;
}

bson::BsonObj sessionFields(bson::BsonView body) {
    bson::BsonBuilder b;
    // A transaction's statement is not a retryable write: nothing to ask the shards.
    if (!body["txnNumber"].eoo() && !body["lsid"].eoo() && body["autocommit"].eoo()) {
        b.appendElement(body["lsid"]);
        b.appendElement(body["txnNumber"]);
    }
    return b.obj();
}

bson::BsonObj objectFieldOf(bson::BsonView body, std::string_view name) {
    bson::BsonElement e = body[name];
    if (!e.isObject()) return bson::BsonObj();
    bson::BsonBuilder b;
    b.appendElement(e);
    return b.obj();
}

TwoPhaseWrite statementTwoPhaseWrite(bson::BsonView body, std::string_view field, std::string coll,
                                     bson::BsonView stmt, size_t index,
                                     std::vector<ShardId> shards) {
    TwoPhaseWrite write;
    write.coll = std::move(coll);
    write.filter = stmt["q"].objValue().copy();
    if (stmt["sort"].isObject()) write.sort = stmt["sort"].objValue().copy();
    write.collation = objectFieldOf(stmt, "collation");
    write.let = objectFieldOf(body, "let");
    write.shards = std::move(shards);
    write.makeWriteCommand = [body, field, stmt, index](bson::BsonView filter, const ShardId&) {
        bson::BsonBuilder s;
        s.append("q", filter);
        for (bson::BsonElement e : stmt) {
            if (e.fieldName() != "q") s.appendElement(e);
        }
        bson::BsonObj rewritten = s.obj();
        return buildSubCommand(body, field, {rewritten}, true, {index});
    };
    write.matched = [](bson::BsonView r) { return r["n"].numberLong(); };
    write.session = sessionFields(body);
    write.stmtId = clientStatementId(body, index);
    return write;
}

TwoPhaseSteps::TwoPhaseSteps(const CollectionRoutingInfo& info, const TwoPhaseWrite& write)
    : _info(info), _write(write) {
    invariant(info.isSharded());
    bson::BsonObj projection =
        twoPhaseProjection(info.table->shardKeyPattern(), write.sort, write.update.has_value());
    bson::BsonObj find =
        twoPhaseFindCommand(write.coll, write.filter, write.sort, projection,
                            write.collation.firstElement(), write.let.firstElement());
    if (write.session.isEmpty()) {
        _find = std::move(find);
        return;
    }
    // A retryable statement: each find also asks whether its shard executed it already.
    bson::BsonBuilder b;
    b.appendElements(find);
    b.startObject(command::kRetryableWriteStatusField)
        .appendElement(write.session["lsid"])
        .appendInt64("txnNumber", write.session["txnNumber"].numberLong())
        .appendInt32("stmtId", write.stmtId)
        .end();
    _find = b.obj();
}

std::vector<ShardRequest> TwoPhaseSteps::readRound() const {
    std::vector<ShardRequest> requests;
    for (const ShardId& s : _write.shards) requests.push_back({s, attachVersion(_find, _info, s)});
    return requests;
}

StatusWith<TwoPhaseSteps::AfterRead> TwoPhaseSteps::afterRead(
    Router& router, const std::vector<ShardResponse>& responses) {
    invariant(responses.size() == _write.shards.size());
    AfterRead next;
    _replaying = false;
    std::optional<ShardId> executedOn;
    std::vector<bson::BsonObj> docs;
    std::vector<ShardId> owners;
    for (const ShardResponse& r : responses) {
        if (!r.status.isOK()) return r.status;
        if (!r.reply["ok"].trueValue()) {
            if (isStaleCode(r.reply["code"].numberInt())) {
                noteStaleError(router, r.reply);
                next.stale = true;
                return next;
            }
            return net::replyStatus(r.reply);
        }
        if (r.reply[command::kRetryableWriteExecutedField].trueValue()) executedOn = r.shard;
        bson::BsonElement cursor = r.reply["cursor"];
        if (!cursor.isObject()) continue;
        bson::BsonElement batch = cursor.objValue()["firstBatch"];
        if (!batch.isArray()) continue;
        for (bson::BsonElement d : batch.objValue()) {
            if (!d.isObject()) continue;
            docs.push_back(d.objValue().copy());
            owners.push_back(r.shard);
            break;
        }
    }
    if (executedOn) {
        // A retry of a statement that shard applied: it answers from its record.
        bson::BsonObj cmd = _write.makeWriteCommand(_write.filter, *executedOn);
        next.write = ShardRequest{*executedOn, attachVersion(cmd, _info, *executedOn)};
        _replaying = true;
        return next;
    }
    std::optional<size_t> pick = pickFirstMatch(docs, _write.sort);
    if (!pick) return next;  // nothing matches anywhere
    const bson::BsonObj& doc = docs[*pick];
    const ShardId& owner = owners[*pick];
    // A retryable write the shard would accept only if the new key stayed on it: refused here
    // already. A non-retryable one is the shard's to refuse (IllegalOperation first, in
    // MongoDB's order of checks).
    bool retryable = !_write.session.isEmpty();
    if (_write.update && retryable && !_write.callerMovesDocuments) {
        TRY_STATUS(
            checkShardKeyChange(*_info.table, doc, *_write.update, _write.arrayFilters, owner));
    }
    bson::BsonObj cmd = _write.makeWriteCommand(filterWithId(_write.filter, doc["_id"]), owner);
    next.write = ShardRequest{owner, attachVersion(cmd, _info, owner)};
    return next;
}

TwoPhaseSteps::AfterWrite TwoPhaseSteps::afterWrite(Router& router, const ShardResponse& r) const {
    if (_replaying || !r.status.isOK()) return AfterWrite::kDone;  // a replay is the answer
    int code = r.reply["ok"].trueValue() ? 0 : r.reply["code"].numberInt();
    bool staleItem = false;
    if (bson::BsonElement wes = r.reply["writeErrors"]; wes.isArray()) {
        for (bson::BsonElement we : wes.objValue()) {
            if (we.isObject() && isStaleCode(we.objValue()["code"].numberInt())) staleItem = true;
        }
    }
    if (isStaleCode(code) || staleItem) {
        noteStaleError(router, r.reply);
        return AfterWrite::kStale;
    }
    if (code == 0 && _write.matched(r.reply) == 0 && !r.reply.hasField("writeErrors")) {
        return AfterWrite::kChanged;
    }
    return AfterWrite::kDone;
}

StatusWith<TwoPhaseOutcome> runTwoPhaseWrite(const command::OperationContext& opCtx, Router& router,
                                             const CollectionRoutingInfo& info, std::string_view db,
                                             const TwoPhaseWrite& write) {
    TwoPhaseSteps steps(info, write);
    TwoPhaseOutcome outcome;
    for (int attempt = 0; attempt < kTwoPhaseAttempts; ++attempt) {
        std::vector<ShardResponse> responses = sendToShards(opCtx, router, db, steps.readRound());
        ASSIGN_OR_RETURN(TwoPhaseSteps::AfterRead next, steps.afterRead(router, responses));
        if (next.stale) {
            outcome.stale = true;
            return outcome;
        }
        if (!next.write) return outcome;  // nothing matches anywhere
        std::vector<ShardResponse> wrote = sendToShards(opCtx, router, db, {*next.write});
        switch (steps.afterWrite(router, wrote.front())) {
            case TwoPhaseSteps::AfterWrite::kStale:
                outcome.stale = true;
                return outcome;
            case TwoPhaseSteps::AfterWrite::kChanged:
                continue;  // changed under us: run both phases again
            case TwoPhaseSteps::AfterWrite::kDone:
                outcome.found = true;
                outcome.response = std::move(wrote.front());
                return outcome;
        }
    }
    return outcome;  // kept changing: report no match
}

}  // namespace tessera::router
