// $out and $merge: the pipeline stages that write.

#include <random>

#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "command/command.h"
#include "command/exec/pipeline_stage_list.h"
#include "command/exec/query_executor.h"
#include "command/exec/stage_subpipeline.h"
#include "command/write_ops_util.h"
#include "query/update_driver.h"
#include "storage/collection_writer.h"
#include "storage/engine.h"

namespace tessera::command::exec {

using bson::BsonType;

namespace {

bool isView(const storage::CollectionPtr& c) { return c && !c->options["viewOn"].eoo(); }

Status viewError(const std::string& ns) {
    return Status(ErrorCodes::CommandNotSupportedOnView,
                  "Namespace " + ns + " is a view, not a collection");
}

StatusWith<std::vector<bson::BsonObj>> drain(PlanStage* child, ExecContext& ctx) {
    std::vector<bson::BsonObj> docs;
    WorkingMember m;
    while (true) {
        ASSIGN_OR_RETURN(bool more, child->next(ctx, &m));
        if (!more) break;
        TRY_STATUS(ctx.checkForInterrupt());
        docs.push_back(m.doc);
    }
    return docs;
}

std::string randomSuffix() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static const char* kHex = "0123456789abcdef";
    std::string s;
    uint64_t r = rng();
    for (int i = 0; i < 12; ++i) s += kHex[(r >> (i * 4)) & 0xf];
    return s;
}

std::string dbOf(const std::string& ns) { return ns.substr(0, ns.find('.')); }

}  // namespace

StatusWith<bool> OutStage::doNext(ExecContext& ctx, WorkingMember*) {
    if (_done) return false;
    _done = true;
    TRY_STATUS(run(ctx));
    return false;
}

Status OutStage::run(ExecContext& ctx) {
    ASSIGN_OR_RETURN(std::vector<bson::BsonObj> docs, drain(_child.get(), ctx));
    storage::CollectionPtr target = _engine->getCollection(_target);
    if (isView(target)) return viewError(_target);
    std::string tmpNs = dbOf(_target) + ".tmp.agg_out." + randomSuffix();
    ASSIGN_OR_RETURN(storage::CollectionPtr tmp,
                     _engine->createCollection(tmpNs, bson::BsonView()));
    auto fail = [&](Status s) {
        (void)_engine->dropCollection(tmpNs);
        return s;
    };
    if (target) {
        std::vector<storage::IndexSpec> specs;
        for (const auto& ix : target->indexes) {
            if (ix.isIdIndex()) continue;
            storage::IndexSpec copy = ix;
            copy.multikey = false;
            copy.id = 0;
            specs.push_back(std::move(copy));
        }
        if (!specs.empty()) {
            auto created = _engine->createIndexes(tmpNs, specs);
            if (!created.isOK()) return fail(created.getStatus());
        }
        tmp = _engine->getCollection(tmpNs);
    }
    Status written = Status::OK();
    {
        // The writer must be gone before any DDL on the temporary collection.
        auto writer = _engine->writer(tmp);
        if (!writer.isOK()) return fail(writer.getStatus());
        for (const auto& d : docs) {
            bson::BsonObj doc = ensureIdFirst(d);
            written = query::validateStorableDocument(doc, true);
            if (!written.isOK()) break;
            auto sw = writer.getValue()->insert(doc, storage::WriteOptions{});
            if (!sw.isOK()) {
                written = Status(sw.getStatus().code(), "$out failed: " + sw.getStatus().reason());
                break;
            }
        }
    }
    if (!written.isOK()) return fail(written);
    Status renamed = _engine->renameCollection(tmpNs, _target, true);
    if (!renamed.isOK()) return fail(renamed);
    return Status::OK();
}

void OutStage::appendDetails(bson::BsonBuilder& b, bool) const { b.append("$out", _spec); }

StatusWith<bool> MergeStage::doNext(ExecContext& ctx, WorkingMember*) {
    if (_done) return false;
    _done = true;
    TRY_STATUS(run(ctx));
    return false;
}

namespace {

// The document matching `doc` on the `on` fields in `coll`, at the writer's latest state.
StatusWith<std::optional<storage::Record>> findMatch(const ExecContext& ctx,
                                                     storage::CollectionWriter& writer,
                                                     bson::BsonView filter) {
    storage::CollectionPtr coll = std::make_shared<storage::CollectionInfo>(writer.collection());
    QuerySpec spec;
    spec.filter = filter.copy();
    ASSIGN_OR_RETURN(auto matcher, query::Matcher::parse(spec.filter));
    bool sortProvided = false;
    ASSIGN_OR_RETURN(
        auto root,
        buildAccessPath(coll, spec, std::shared_ptr<const query::Matcher>(std::move(matcher)),
                        &sortProvided));
    auto snapshot = writer.latest();
    ExecContext sub;
    sub.opCtx = ctx.opCtx;
    sub.snapshot = snapshot.get();
    sub.collection = coll;
    WorkingMember m;
    ASSIGN_OR_RETURN(bool found, root->next(sub, &m));
    if (!found) return std::optional<storage::Record>();
    return std::optional<storage::Record>(storage::Record{m.recordKey, m.doc});
}

Status checkSameId(bson::BsonView existing, bson::BsonView replacement) {
    bson::BsonElement a = existing["_id"];
    bson::BsonElement b = replacement["_id"];
    if (!b.eoo() && bson::compareElementValues(a, b) != 0) {
        return Status(ErrorCodes::ImmutableField,
                      "$merge failed to update the matching document, did you attempt to modify "
                      "the _id or the shard key? :: caused by :: Performing an update on the path "
                      "'_id' would modify the immutable field '_id'");
    }
    return Status::OK();
}

// `doc` with the `_id` of `existing` first.
bson::BsonObj withId(bson::BsonView existing, bson::BsonView doc) {
    bson::BsonBuilder b;
    b.appendElement(existing["_id"]);
    for (auto f : doc) {
        if (f.fieldName() != "_id") b.appendElement(f);
    }
    return b.obj();
}

}  // namespace

Status MergeStage::run(ExecContext& ctx) {
    ASSIGN_OR_RETURN(std::vector<bson::BsonObj> docs, drain(_child.get(), ctx));
    const std::string& ns = _spec.targetNs;
    storage::CollectionPtr target = _engine->getCollection(ns);
    if (isView(target)) return viewError(ns);
    bool onId = _spec.on.size() == 1 && _spec.on[0] == "_id";
    if (!onId) {
        bool found = false;
        if (target) {
            for (const auto& ix : target->indexes) {
                if (!ix.unique && !ix.isIdIndex()) continue;
                std::vector<std::string> fields;
                for (auto k : ix.keyPattern) fields.emplace_back(k.fieldName());
                std::vector<std::string> on = _spec.on;
                std::sort(fields.begin(), fields.end());
                std::sort(on.begin(), on.end());
                if (fields == on) found = true;
            }
        }
        if (!found) {
            return Status(51183, "Cannot find index to verify that join fields will be unique");
        }
    }
    if (docs.empty()) return Status::OK();
    if (!target) {
        ASSIGN_OR_RETURN(target, getOrCreateCollection(*_engine, ns));
    }
    ASSIGN_OR_RETURN(auto writer, _engine->writer(target));
    // One source document; WriteConflict when the matched target changed under a concurrent
    // write (then the whole match is done again).
    auto mergeOne = [&](const bson::BsonObj& input) -> Status {
        bson::BsonObj doc = onId ? ensureIdFirst(input) : input;
        bson::BsonBuilder filter;
        for (const auto& f : _spec.on) {
            bson::BsonElement v = getNestedField(doc, f);
            if (v.eoo() || v.isNull() || v.type() == BsonType::Undefined ||
                v.type() == BsonType::Array) {
                return Status(51132, "$merge write error: 'on' field '" + f +
                                         "' cannot be missing, null, undefined or an array");
            }
            filter.startObject(f).appendElementAs(v, "$eq").end();
        }
        bson::BsonObj filterObj = filter.obj();
        ASSIGN_OR_RETURN(auto existing, findMatch(ctx, *writer, filterObj));
        if (!existing) {
            if (_spec.whenNotMatched == "discard") return Status::OK();
            if (_spec.whenNotMatched == "fail") {
                return Status(13113,
                              "$merge could not find a matching document in the target "
                              "collection for at least one document in the source collection");
            }
            bson::BsonObj toInsert = ensureIdFirst(doc);
            TRY_STATUS(query::validateStorableDocument(toInsert, true));
            auto sw = writer->insert(toInsert, storage::WriteOptions{});
            if (!sw.isOK()) return sw.getStatus();
            return Status::OK();
        }
        const std::string& wm = _spec.whenMatched;
        bson::BsonObj newDoc;
        if (wm == "keepExisting") {
            return Status::OK();
        } else if (wm == "fail") {
            // As MongoDB: the document is inserted and the insert's DuplicateKey error (with
            // keyPattern / keyValue) is the stage's error.
            bson::BsonBuilder pattern, value;
            for (const auto& f : _spec.on) {
                pattern.appendInt32(f, 1);
                value.appendElementAs(getNestedField(doc, f), f);
            }
            if (ctx.opCtx) {
                bson::BsonBuilder extra;
                extra.append("keyPattern", pattern.obj()).append("keyValue", value.obj());
                // The command's error reply carries these fields (OperationContext is the
                // command's own, non-const object).
                const_cast<OperationContext*>(ctx.opCtx)->errorExtraInfo = extra.obj();
            }
            return Status(ErrorCodes::DuplicateKey,
                          "$merge failed due to a DuplicateKey error :: caused by :: E11000 "
                          "duplicate key error collection: " +
                              ns + " dup key: " + filterObj.toJson());
        } else if (wm == "replace") {
            TRY_STATUS(checkSameId(existing->doc, doc));
            newDoc = withId(existing->doc, doc);
        } else if (wm == "merge") {
            TRY_STATUS(checkSameId(existing->doc, doc));
            bson::BsonBuilder b;
            for (auto f : existing->doc.view()) {
                bson::BsonElement n = doc[f.fieldName()];
                b.appendElement(n.eoo() ? f : n);
            }
            for (auto f : doc) {
                if (existing->doc.view()[f.fieldName()].eoo()) b.appendElement(f);
            }
            newDoc = b.obj();
        } else {  // pipeline
            std::map<std::string, bson::BsonObj> vars;
            {
                bson::BsonBuilder nb;
                nb.append("", doc);
                vars["new"] = nb.obj();
            }
            ASSIGN_OR_RETURN(auto letVars, evaluateLet(_spec.let, doc));
            for (auto& [k, v] : letVars) vars[k] = v;
            bson::BsonObj pipeline = substituteVariables(_spec.whenMatchedPipeline, true, vars);
            auto input = std::make_shared<std::vector<bson::BsonObj>>();
            input->push_back(existing->doc);
            ASSIGN_OR_RETURN(auto root, _factory(pipeline, input));
            WorkingMember m;
            ASSIGN_OR_RETURN(bool got, root->next(ctx, &m));
            if (!got) return Status::OK();
            TRY_STATUS(checkSameId(existing->doc, m.doc));
            newDoc = withId(existing->doc, m.doc);
        }
        TRY_STATUS(query::validateStorableDocument(newDoc, true));
        // First writer wins: a target changed since findMatch read it is looked up again.
        return writer->update(existing->recordKey, existing->doc, newDoc, storage::WriteOptions{})
            .getStatus();
        return Status::OK();
    };
    for (const auto& input : docs) {
        for (int attempt = 0;; ++attempt) {
            Status s = mergeOne(input);
            if (s.is(ErrorCodes::WriteConflict) && attempt < 10000) continue;
            TRY_STATUS(s);
            break;
        }
    }
    return Status::OK();
}

void MergeStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.append("$merge", _spec.specForExplain);
}

// ---- Parsers.

namespace {

using bson::BsonType;

StatusWith<std::unique_ptr<PlanStage>> parseOut(const StageParseContext& ctx,
                                                std::unique_ptr<PlanStage> input) {
    ASSIGN_OR_RETURN(std::string target, targetNamespace(ctx.spec(), ctx.db, "$out", 16990));
    bson::BsonBuilder sb;
    sb.appendElementAs(ctx.spec(), "$out");
    return stack(std::move(input), std::make_unique<OutStage>(ctx.pctx.engine, target, sb.obj()));
}

StatusWith<std::unique_ptr<PlanStage>> parseMerge(const StageParseContext& ctx,
                                                  std::unique_ptr<PlanStage> input) {
    const bson::BsonElement& st = ctx.spec();
    MergeStage::Spec spec;
    bson::BsonElement into, let;
    if (st.type() == BsonType::String) {
        into = st;
    } else if (st.type() == BsonType::Object) {
        spec.specForExplain = st.objValue().copy();
        for (auto f : st.objValue()) {
            std::string_view n = f.fieldName();
            if (n == "into") {
                into = f;
            } else if (n == "on") {
                if (f.type() == BsonType::String) {
                    spec.on.emplace_back(f.stringValue());
                } else if (f.type() == BsonType::Array) {
                    for (auto e : f.objValue()) {
                        if (e.type() != BsonType::String) {
                            return Status(51134,
                                          "Array elements of the 'on' field of $merge must "
                                          "be strings, but found " +
                                              std::string(bson::typeName(e.type())));
                        }
                        spec.on.emplace_back(e.stringValue());
                    }
                    if (spec.on.empty()) {
                        return Status(51187,
                                      "If explicitly specifying $merge 'on', must include at "
                                      "least one field");
                    }
                } else {
                    return Status(51186,
                                  "$merge 'on' field must be either a string or an array of "
                                  "strings, but found " +
                                      std::string(bson::typeName(f.type())));
                }
            } else if (n == "whenMatched") {
                if (f.type() == BsonType::Array) {
                    spec.whenMatched = "pipeline";
                    spec.whenMatchedPipeline = f.objValue().copy();
                } else if (f.type() == BsonType::String &&
                           (f.stringValue() == "replace" || f.stringValue() == "keepExisting" ||
                            f.stringValue() == "merge" || f.stringValue() == "fail")) {
                    spec.whenMatched = std::string(f.stringValue());
                } else if (f.type() == BsonType::String) {
                    return Status(ErrorCodes::BadValue,
                                  "Enumeration value '" + std::string(f.stringValue()) +
                                      "' for field '$merge.whenMatched' is not a valid value.");
                } else {
                    return Status(51191,
                                  "$merge 'whenMatched' field must be either a string or "
                                  "an array, but found " +
                                      std::string(bson::typeName(f.type())));
                }
            } else if (n == "whenNotMatched") {
                if (f.type() != BsonType::String) {
                    return Status(ErrorCodes::TypeMismatch,
                                  "BSON field '$merge.whenNotMatched' is the wrong type '" +
                                      std::string(bson::typeName(f.type())) +
                                      "', expected type 'string'");
                }
                std::string_view v = f.stringValue();
                if (v != "insert" && v != "discard" && v != "fail") {
                    return Status(ErrorCodes::BadValue,
                                  "Enumeration value '" + std::string(v) +
                                      "' for field '$merge.whenNotMatched' is not a valid "
                                      "value.");
                }
                spec.whenNotMatched = std::string(v);
            } else if (n == "let") {
                let = f;
            } else if (n == "targetCollectionVersion") {
                continue;
            } else {
                return Status(40415,
                              "BSON field '$merge." + std::string(n) + "' is an unknown field.");
            }
        }
        if (into.eoo()) {
            return Status(40414, "BSON field '$merge.into' is missing but a required field");
        }
    } else {
        return Status(51182, "$merge only supports a string or object argument, not " +
                                 std::string(bson::typeName(st.type())));
    }
    ASSIGN_OR_RETURN(spec.targetNs, targetNamespace(into, ctx.db, "$merge.into", 51178));
    if (spec.on.empty()) spec.on.push_back("_id");
    if (!let.eoo()) {
        if (spec.whenMatched != "pipeline") {
            return Status(51199, "Cannot use 'let' variables with 'whenMatched: " +
                                     spec.whenMatched + "' mode");
        }
        ASSIGN_OR_RETURN(spec.let, parseLet(let));
    }
    if (spec.whenMatched == "pipeline" && spec.whenNotMatched == "fail") {
        // Allowed, as MongoDB.
    }
    PipelineContext pctx = ctx.pctx;
    std::string ns = ctx.ns;
    auto factory = [pctx, ns](bson::BsonView pipeline,
                              std::shared_ptr<std::vector<bson::BsonObj>> matched)
        -> StatusWith<std::unique_ptr<PlanStage>> {
        return buildSubPipeline(pctx, nullptr, ns, BuildContext::kMergePipeline, std::move(matched),
                                pipeline);
    };
    if (spec.whenMatched == "pipeline") {
        std::map<std::string, bson::BsonObj> nulls;
        nulls["new"] = AggValue::null().holder;
        for (const auto& [name, e] : spec.let) nulls[name] = AggValue::null().holder;
        TRY_STATUS(factory(substituteVariables(spec.whenMatchedPipeline, true, nulls),
                           std::make_shared<std::vector<bson::BsonObj>>())
                       .getStatus());
    }
    return stack(std::move(input), std::make_unique<MergeStage>(ctx.pctx.engine, std::move(spec),
                                                                std::move(factory)));
}

}  // namespace

namespace stages {
const StageDescriptor kOut{"$out", {.writes = true, .allowedInFacet = false}, &parseOut};
const StageDescriptor kMerge{"$merge", {.writes = true, .allowedInFacet = false}, &parseMerge};
}  // namespace stages

}  // namespace tessera::command::exec
