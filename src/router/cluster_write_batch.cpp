#include "router/cluster_write_batch.h"

#include <algorithm>
#include <map>

#include "base/error_codes.h"
#include "command/error_labels.h"
#include "placement/targeter.h"
#include "query/update_paths.h"

namespace tessera::router {
namespace {

using bson::BsonType;

bool isSimpleCollation(bson::BsonView stmt) {
    bson::BsonElement c = stmt["collation"];
    if (c.eoo() || c.isNull() || !c.isObject()) return true;
    bson::BsonView obj = c.objValue();
    if (obj.isEmpty()) return true;
    bson::BsonElement locale = obj["locale"];
    return locale.type() == BsonType::String && locale.stringValue() == "simple";
}

void appendFieldsExcept(bson::BsonBuilder& b, bson::BsonView obj,
                        std::initializer_list<std::string_view> skip) {
    for (bson::BsonElement e : obj) {
        if (std::find(skip.begin(), skip.end(), e.fieldName()) != skip.end()) continue;
        if (isReplyMetadataField(e.fieldName())) continue;
        b.appendElement(e);
    }
}

}  // namespace

std::string_view writeCommandName(WriteKind kind) {
    switch (kind) {
        case WriteKind::kInsert:
            return "insert";
        case WriteKind::kUpdate:
            return "update";
        case WriteKind::kDelete:
            return "delete";
    }
    return "";
}

std::string_view writeStatementsField(WriteKind kind) {
    switch (kind) {
        case WriteKind::kInsert:
            return "documents";
        case WriteKind::kUpdate:
            return "updates";
        case WriteKind::kDelete:
            return "deletes";
    }
    return "";
}

bool isStaleCode(int code) { return code == 13388 || code == 249 || code == 343; }

bool updateMayChangeShardKey(const placement::ShardKeyPattern& pattern, bson::BsonElement u) {
    std::vector<std::string_view> paths;
    for (size_t i = 0; i < pattern.numFields(); ++i) paths.push_back(pattern.fieldPath(i));
    return query::updateMayModifyPaths(u, paths);
}

StatementTarget targetStatement(const placement::RoutingTable& table, WriteKind kind,
                                bson::BsonView stmt) {
    StatementTarget out;
    if (kind == WriteKind::kInsert) {
        auto r = placement::targetInsert(table, stmt);
        if (!r.isOK()) {
            out.mode = StatementTarget::Mode::kError;
            out.error = r.getStatus();
            return out;
        }
        out.shards = r.getValue().shards;
        return out;
    }
    bson::BsonElement q = stmt["q"];
    if (!q.isObject()) {
        out.mode = StatementTarget::Mode::kError;
        out.error =
            Status(ErrorCodes::TypeMismatch,
                   std::string("BSON field '") + std::string(writeCommandName(kind)) + "." +
                       std::string(writeStatementsField(kind)) + ".q' is missing or not an object");
        return out;
    }
    auto r = placement::targetWrite(table, q.objValue());
    if (!r.isOK()) {
        out.mode = StatementTarget::Mode::kError;
        out.error = r.getStatus();
        return out;
    }
    const placement::TargetingResult& t = r.getValue();
    bool simple = isSimpleCollation(stmt);
    bool multi =
        kind == WriteKind::kUpdate ? stmt["multi"].trueValue() : stmt["limit"].numberLong() == 0;
    if (multi) {
        out.shards = simple ? t.shards : table.shards();
        return out;
    }
    bool upsert = kind == WriteKind::kUpdate && stmt["upsert"].trueValue();
    bool exact = simple && t.kind == placement::TargetingKind::kExactKey && t.isSingleShard();
    bool keyChange =
        kind == WriteKind::kUpdate && updateMayChangeShardKey(table.shardKeyPattern(), stmt["u"]);
    if (exact && keyChange && stmt["u"].isObject() && !upsert) {
        // A replacement keeping the key (computed from the replacement alone, `_id` excepted)
        // needs no look at the stored document.
        bson::BsonView u = stmt["u"].objValue();
        bool opUpdate = !u.isEmpty() && u.firstElement().fieldName().substr(0, 1) == "$";
        bool keyHasId = false;
        for (size_t i = 0; i < table.shardKeyPattern().numFields(); ++i) {
            keyHasId = keyHasId || query::pathsOverlap(table.shardKeyPattern().fieldPath(i), "_id");
        }
        if (!opUpdate && (!keyHasId || u.hasField("_id")) && t.shardKey) {
            auto newKey = table.shardKeyPattern().extractShardKeyFromDoc(u);
            if (newKey.isOK() && newKey.getValue().binaryEqual(*t.shardKey)) keyChange = false;
        }
    }
    if (exact && !keyChange) {
        out.shards = t.shards;
        return out;
    }
    if (simple && t.isSingleShard() && !upsert && !keyChange) {
        out.shards = t.shards;  // only that shard may hold a match
        return out;
    }
    // An `_id` equality that is not an exact shard key (the key is not `_id`) is not broadcast:
    // `_id` is unique per shard only, so each shard could apply "one" write and the statement
    // would change several documents. The two-phase protocol picks exactly one.
    out.mode = StatementTarget::Mode::kWithoutShardKey;
    out.shards = simple ? t.shards : table.shards();
    return out;
}

namespace {

// Sub-batches being filled, one open per shard, each closed when the next statement would not
// fit its limits.
class SubBatchCutter {
  public:
    explicit SubBatchCutter(const SubBatchLimits& limits) : _limits(limits) {}

    // Whether statement `i` of `bytes` fits the open sub-batch of `shard` (an empty one always).
    bool fits(const ShardId& shard, size_t bytes) const {
        auto it = _open.find(shard);
        if (it == _open.end()) return true;
        const Open& o = it->second;
        return o.batch.indexes.size() < _limits.maxStatements &&
               o.bytes + bytes <= _limits.maxBytes;
    }
    void add(const ShardId& shard, size_t i, size_t bytes) {
        if (!fits(shard, bytes)) close(shard);
        Open& o = _open[shard];
        o.batch.shard = shard;
        o.batch.indexes.push_back(i);
        o.bytes += bytes;
    }
    // Every sub-batch, the closed ones first, then the open ones in shard order.
    std::vector<SubBatch> finish() {
        for (auto& [shard, o] : _open) _closed.push_back(std::move(o.batch));
        _open.clear();
        return std::move(_closed);
    }

  private:
    struct Open {
        SubBatch batch;
        size_t bytes = 0;
    };
    void close(const ShardId& shard) {
        _closed.push_back(std::move(_open[shard].batch));
        _open.erase(shard);
    }
    const SubBatchLimits& _limits;
    std::map<ShardId, Open> _open;
    std::vector<SubBatch> _closed;
};

size_t statementCost(RoundStatements& statements, size_t i) {
    return statements.bytes(i) + SubBatchLimits::kStatementOverheadBytes;
}

class PrecomputedStatements final : public RoundStatements {
  public:
    explicit PrecomputedStatements(const std::vector<std::optional<StatementTarget>>& targets)
        : _targets(targets) {}
    size_t size() const override { return _targets.size(); }
    const StatementTarget* target(size_t i) override {
        return _targets[i] ? &*_targets[i] : nullptr;
    }
    size_t bytes(size_t) const override { return 0; }

  private:
    const std::vector<std::optional<StatementTarget>>& _targets;
};

}  // namespace

RoundPlan planRound(RoundStatements& statements, size_t first, bool ordered,
                    const SubBatchLimits& limits) {
    RoundPlan plan;
    SubBatchCutter cutter(limits);
    using Mode = StatementTarget::Mode;
    const size_t n = statements.size();
    if (!ordered) {
        for (size_t i = first; i < n; ++i) {
            const StatementTarget* t = statements.target(i);
            if (!t) continue;
            switch (t->mode) {
                case Mode::kError:
                    plan.errors.push_back(i);
                    break;
                case Mode::kWithoutShardKey:
                    plan.withoutShardKey.push_back(i);
                    break;
                case Mode::kShards:
                    for (const ShardId& s : t->shards) {
                        cutter.add(s, i, statementCost(statements, i));
                    }
                    break;
            }
        }
        plan.batches = cutter.finish();
        return plan;
    }
    size_t i = first;
    const StatementTarget* head = nullptr;
    for (; i < n && !(head = statements.target(i)); ++i) {
    }
    if (!head) return plan;
    if (head->mode == Mode::kError) {
        plan.errors.push_back(i);
    } else if (head->mode == Mode::kWithoutShardKey) {
        plan.withoutShardKey.push_back(i);
    } else if (head->shards.size() != 1) {
        for (const ShardId& s : head->shards) cutter.add(s, i, statementCost(statements, i));
    } else {
        const ShardId shard = head->shards[0];
        for (; i < n; ++i) {
            const StatementTarget* t = statements.target(i);
            if (!t) continue;
            if (t->mode != Mode::kShards || t->shards.size() != 1 || t->shards[0] != shard) break;
            const size_t cost = statementCost(statements, i);
            if (!cutter.fits(shard, cost)) break;  // the rest of the run: the next round
            cutter.add(shard, i, cost);
        }
    }
    plan.batches = cutter.finish();
    return plan;
}

RoundPlan planRound(const std::vector<std::optional<StatementTarget>>& targets, bool ordered,
                    const SubBatchLimits& limits) {
    PrecomputedStatements statements(targets);
    return planRound(statements, 0, ordered, limits);
}

SubBatchOutcome WriteBatchMerger::addResponse(const SubBatch& batch, const ShardResponse& response,
                                              bool ordered, bool staleIsFinal) {
    SubBatchOutcome out;
    const std::vector<size_t>& idx = batch.indexes;
    auto failAll = [&](const Status& status, bson::BsonView extra) {
        out.sawError = true;
        for (size_t k = 0; k < idx.size(); ++k) {
            if (ordered && k > 0) {
                out.skipped.push_back(idx[k]);
                continue;
            }
            addError(idx[k], status, extra);
            out.completed.push_back(idx[k]);
        }
    };
    if (!response.status.isOK()) {
        failAll(response.status, {});
        return out;
    }
    bson::BsonView reply = response.reply;
    if (!reply["ok"].trueValue()) {
        int code = reply["code"].numberInt();
        if (isStaleCode(code) && !staleIsFinal) {
            out.sawStale = true;
            out.stale = idx;
            return out;
        }
        bson::BsonBuilder extra;
        appendFieldsExcept(extra, reply, {"code", "codeName", "errmsg", "errorLabels"});
        failAll(Status(code == 0 ? static_cast<int>(ErrorCodes::UnknownError) : code,
                       std::string(reply["errmsg"].type() == BsonType::String
                                       ? reply["errmsg"].stringValue()
                                       : "shard returned an error")),
                extra.obj());
        return out;
    }
    _n += reply["n"].numberLong();
    if (_kind == WriteKind::kUpdate) _nModified += reply["nModified"].numberLong();
    if (bson::BsonElement ups = reply["upserted"]; ups.isArray()) {
        for (bson::BsonElement u : ups.objValue()) {
            if (!u.isObject()) continue;
            size_t k = static_cast<size_t>(u.objValue()["index"].numberLong());
            if (k < idx.size()) addUpserted(idx[k], u.objValue()["_id"]);
        }
    }
    if (bson::BsonElement wce = reply["writeConcernError"]; wce.isObject()) {
        setWriteConcernError(wce.objValue());
    }
    // Sub-batch positions that failed, and whether the failure was stale.
    std::map<size_t, bool> failed;
    if (bson::BsonElement wes = reply["writeErrors"]; wes.isArray()) {
        for (bson::BsonElement we : wes.objValue()) {
            if (!we.isObject()) continue;
            bson::BsonView w = we.objValue();
            size_t k = static_cast<size_t>(w["index"].numberLong());
            if (k >= idx.size()) continue;
            bool stale = isStaleCode(w["code"].numberInt()) && !staleIsFinal;
            failed[k] = stale;
            if (stale) continue;
            bson::BsonBuilder fields;
            appendFieldsExcept(fields, w, {"index", "shard"});
            if (w["code"].numberInt() == static_cast<int>(ErrorCodes::WouldChangeOwningShard)) {
                // The shard that holds the document: the router's move records a retryable
                // write there (cluster_write_move.h); never sent to the client.
                fields.append("shard", response.shard);
            }
            _errors.push_back({idx[k], fields.obj()});
        }
    }
    std::optional<size_t> stopAt;  // ordered: the shard ran nothing after its first failure
    if (ordered && !failed.empty()) stopAt = failed.begin()->first;
    for (size_t k = 0; k < idx.size(); ++k) {
        auto f = failed.find(k);
        if (stopAt && k > *stopAt) {
            // Not run. After a stale failure they are retried; after a real one, never.
            if (failed.at(*stopAt)) {
                out.stale.push_back(idx[k]);
            } else {
                out.skipped.push_back(idx[k]);
            }
        } else if (f != failed.end() && f->second) {
            out.sawStale = true;
            out.stale.push_back(idx[k]);
        } else {
            if (f != failed.end()) out.sawError = true;
            out.completed.push_back(idx[k]);
        }
    }
    return out;
}

void WriteBatchMerger::addError(size_t index, const Status& status, bson::BsonView extraInfo) {
    bson::BsonBuilder b;
    b.appendInt32("code", status.code());
    for (bson::BsonElement e : extraInfo) {
        if (e.fieldName() == "index" || e.fieldName() == "code" || e.fieldName() == "errmsg") {
            continue;
        }
        b.appendElement(e);
    }
    b.append("errmsg", status.reason());
    _errors.push_back({index, b.obj()});
}

void WriteBatchMerger::addUpserted(size_t index, bson::BsonElement id) {
    bson::BsonBuilder b;
    if (id.eoo()) {
        b.appendNull("_id");
    } else {
        b.appendElementAs(id, "_id");
    }
    _upserted.emplace_back(index, b.obj());
}

void WriteBatchMerger::setWriteConcernError(bson::BsonView wce) {
    if (_writeConcernError.isEmpty()) _writeConcernError = wce.copy();
}

std::optional<size_t> WriteBatchMerger::firstErrorIndex() const {
    std::optional<size_t> first;
    for (const Error& e : _errors) {
        if (!first || e.index < *first) first = e.index;
    }
    return first;
}

void WriteBatchMerger::appendReply(bson::BsonBuilder& reply, bool ordered) const {
    reply.appendNumber("n", _n);
    if (_kind == WriteKind::kUpdate) reply.appendNumber("nModified", _nModified);
    auto upserted = _upserted;
    std::sort(upserted.begin(), upserted.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    if (!upserted.empty()) {
        reply.startArray("upserted");
        for (size_t i = 0; i < upserted.size(); ++i) {
            reply.startObject(std::to_string(i));
            reply.appendNumber("index", static_cast<int64_t>(upserted[i].first));
            reply.appendElements(upserted[i].second);
            reply.end();
        }
        reply.end();
    }
    std::vector<const Error*> errors;
    for (const Error& e : _errors) errors.push_back(&e);
    std::stable_sort(errors.begin(), errors.end(),
                     [](const Error* a, const Error* b) { return a->index < b->index; });
    // A statement broadcast to several shards may fail on more than one: report it once.
    errors.erase(std::unique(errors.begin(), errors.end(),
                             [](const Error* a, const Error* b) { return a->index == b->index; }),
                 errors.end());
    if (ordered && errors.size() > 1) errors.resize(1);
    if (!errors.empty()) {
        reply.startArray("writeErrors");
        for (size_t i = 0; i < errors.size(); ++i) {
            reply.startObject(std::to_string(i));
            reply.appendNumber("index", static_cast<int64_t>(errors[i]->index));
            reply.appendElements(errors[i]->fields);
            reply.end();
        }
        reply.end();
    }
    if (!_writeConcernError.isEmpty()) reply.append("writeConcernError", _writeConcernError);
}

bool isReplyMetadataField(std::string_view name) {
    return name == "ok" || name == "$clusterTime" || name == "operationTime" ||
           name == "$configTime" || name == "$topologyTime" || name == "$gleStats" ||
           name == "lastCommittedOpTime" || name == "$configServerState";
}

bson::BsonObj buildSubCommand(bson::BsonView body, std::string_view field,
                              const std::vector<bson::BsonView>& stmts, bool ordered,
                              const std::vector<size_t>& clientIndexes) {
    bson::BsonBuilder b;
    bool first = true;
    for (bson::BsonElement e : body) {
        std::string_view name = e.fieldName();
        if (first) {
            b.appendElement(e);
            b.startArray(field);
            for (size_t i = 0; i < stmts.size(); ++i) b.append(std::to_string(i), stmts[i]);
            b.end();
            b.append("ordered", ordered);
            first = false;
            continue;
        }
        if (name == field || name == "ordered" || name == "$db" || name == "shardVersion" ||
            name == "databaseVersion" || name == "stmtIds" || name == "$clusterTime") {
            continue;
        }
        b.appendElement(e);
    }
    if (!body["txnNumber"].eoo()) {
        // The ids of the client's statements; a body that has ids of its own (the per-op
        // commands of the router's bulkWrite) maps the indexes through them.
        invariant(clientIndexes.empty() || clientIndexes.size() == stmts.size());
        bson::BsonArrayBuilder ids;
        for (size_t k = 0; k < stmts.size(); ++k) {
            ids.append(clientStatementId(body, clientIndexes.empty() ? k : clientIndexes[k]));
        }
        b.appendArray("stmtIds", ids.arr());
    }
    return b.obj();
}

int32_t clientStatementId(bson::BsonView body, size_t index) {
    if (bson::BsonElement given = body["stmtIds"]; given.isArray()) {
        size_t k = 0;
        for (bson::BsonElement e : given.objValue()) {
            if (k++ == index) return e.numberInt();
        }
    }
    return static_cast<int32_t>(index);
}

std::optional<Status> WriteBatchMerger::firstRetriableError() const {
    for (const Error& e : _errors) {
        int code = e.fields["code"].numberInt();
        if (command::isRetriableErrorCode(code)) {
            bson::BsonElement msg = e.fields["errmsg"];
            return Status(code, std::string(msg.type() == BsonType::String ? msg.stringValue()
                                                                           : "retriable error"));
        }
    }
    return std::nullopt;
}

}  // namespace tessera::router
