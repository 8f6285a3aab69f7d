#include "router/cluster_write_without_shard_key.h"

#include <algorithm>

#include "base/error_codes.h"
#include "bson/bson_builder.h"
#include "bson/compare.h"
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

StatusWith<TwoPhaseOutcome> runTwoPhaseWrite(const command::OperationContext& opCtx, Router& router,
                                             const CollectionRoutingInfo& info, std::string_view db,
                                             const TwoPhaseWrite& write) {
    invariant(info.isSharded());
    const placement::RoutingTable& table = *info.table;
    bson::BsonObj projection =
        twoPhaseProjection(table.shardKeyPattern(), write.sort, write.update.has_value());
    bson::BsonObj find =
        twoPhaseFindCommand(write.coll, write.filter, write.sort, projection,
                            write.collation.firstElement(), write.let.firstElement());
    TwoPhaseOutcome outcome;
    // A retryable statement also asks, in the same round, whether a shard executed it already.
    bson::BsonObj probe;
    if (!write.session.isEmpty()) {
        bson::BsonBuilder b;
        b.appendInt32("_shardsvrRetryableWriteStatus", 1);
        b.appendElements(write.session);
        b.appendInt32("stmtId", write.stmtId);
        probe = b.obj();
    }
    // A concurrent write may change the chosen document between the phases: try again a few
    // times (MongoDB retries until it succeeds or nothing matches).
    for (int attempt = 0; attempt < 10; ++attempt) {
        std::vector<ShardRequest> requests;
        for (const ShardId& s : write.shards) requests.push_back({s, attachVersion(find, info, s)});
        const size_t numFinds = requests.size();
        if (!probe.isEmpty()) {
            for (const ShardId& s : write.shards) requests.push_back({s, probe});
        }
        std::vector<ShardResponse> responses = sendToShards(opCtx, router, db, requests);
        std::optional<ShardId> executedOn;
        for (size_t i = numFinds; i < responses.size(); ++i) {
            const ShardResponse& r = responses[i];
            if (!r.status.isOK()) return r.status;
            TRY_STATUS(net::replyStatus(r.reply));
            if (r.reply["executed"].trueValue()) executedOn = r.shard;
        }
        responses.erase(responses.begin() + static_cast<std::ptrdiff_t>(numFinds), responses.end());
        std::vector<bson::BsonObj> docs;
        std::vector<ShardId> owners;
        for (const ShardResponse& r : responses) {
            if (!r.status.isOK()) return r.status;
            if (!r.reply["ok"].trueValue()) {
                if (isStaleCode(r.reply["code"].numberInt())) {
                    noteStaleError(router, r.reply);
                    outcome.stale = true;
                    return outcome;
                }
                return net::replyStatus(r.reply);
            }
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
            bson::BsonObj cmd = write.makeWriteCommand(write.filter, *executedOn);
            std::vector<ShardResponse> replayed =
                sendToShards(opCtx, router, db,
                             {ShardRequest{*executedOn, attachVersion(cmd, info, *executedOn)}});
            outcome.found = true;
            outcome.response = std::move(replayed.front());
            return outcome;
        }
        std::optional<size_t> pick = pickFirstMatch(docs, write.sort);
        if (!pick) return outcome;  // nothing matches anywhere
        const bson::BsonObj& doc = docs[*pick];
        const ShardId& owner = owners[*pick];
        // A retryable write the shard would accept only if the new key stayed on it: refused
        // here already. A non-retryable one is the shard's to refuse (IllegalOperation first,
        // in MongoDB's order of checks).
        bool retryable = !write.session.isEmpty();
        if (write.update && retryable && !write.callerMovesDocuments) {
            TRY_STATUS(checkShardKeyChange(table, doc, *write.update, write.arrayFilters, owner));
        }
        bson::BsonObj cmd = write.makeWriteCommand(filterWithId(write.filter, doc["_id"]), owner);
        std::vector<ShardResponse> wrote =
            sendToShards(opCtx, router, db, {ShardRequest{owner, attachVersion(cmd, info, owner)}});
        ShardResponse& r = wrote.front();
        if (r.status.isOK()) {
            int code = r.reply["ok"].trueValue() ? 0 : r.reply["code"].numberInt();
            bool staleItem = false;
            if (bson::BsonElement wes = r.reply["writeErrors"]; wes.isArray()) {
                for (bson::BsonElement we : wes.objValue()) {
                    if (we.isObject() && isStaleCode(we.objValue()["code"].numberInt())) {
                        staleItem = true;
                    }
                }
            }
            if (isStaleCode(code) || staleItem) {
                noteStaleError(router, r.reply);
                outcome.stale = true;
                return outcome;
            }
            if (code == 0 && write.matched(r.reply) == 0 && !r.reply.hasField("writeErrors")) {
                continue;  // changed under us: run both phases again
            }
        }
        outcome.found = true;
        outcome.response = std::move(r);
        return outcome;
    }
    return outcome;  // kept changing: report no match
}

}  // namespace tessera::router
