// View resolution: a view is a collection entry whose options carry `viewOn` and `pipeline`;
// reading it runs the stacked pipelines of every view down to the backing collection.

#include "command/exec/pipeline.h"
#include "storage/engine.h"
#include "storage/transaction.h"

namespace tessera::command::exec {

using bson::BsonType;

bool isView(const storage::CollectionInfo& coll) { return !coll.options["viewOn"].eoo(); }

StatusWith<ResolvedNamespace> resolveNamespace(const storage::Engine& engine, const std::string& ns,
                                               const storage::Transaction* transaction) {
    auto lookup = [&](const std::string& name) {
        storage::CollectionPtr created =
            transaction ? transaction->createdCollection(name) : nullptr;
        return created ? created : engine.getCollection(name);
    };
    ResolvedNamespace r;
    r.ns = ns;
    r.coll = lookup(ns);
    std::vector<std::vector<bson::BsonObj>> layers;  // outermost view first
    int depth = 0;
    while (r.coll && isView(*r.coll)) {
        if (++depth > 20) {
            return Status(ErrorCodes::ViewDepthLimitExceeded,
                          "View depth too deep or view cycle detected. Maximum depth is 20");
        }
        r.isView = true;
        std::vector<bson::BsonObj> stages;
        bson::BsonElement p = r.coll->options["pipeline"];
        if (p.type() == BsonType::Array) {
            for (auto s : p.objValue()) stages.push_back(s.objValue().copy());
        }
        layers.push_back(std::move(stages));
        r.ns = r.coll->db + "." + std::string(r.coll->options["viewOn"].stringValue());
        r.coll = lookup(r.ns);
    }
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
        r.pipeline.insert(r.pipeline.end(), it->begin(), it->end());
    }
    return r;
}

bson::BsonObj pipelineArray(const std::vector<bson::BsonObj>& stages) {
    bson::BsonArrayBuilder arr;
    for (const auto& s : stages) arr.append(s);
    return arr.arr();
}

Status viewWriteError(const std::string& ns) {
    return Status(ErrorCodes::CommandNotSupportedOnView,
                  "Namespace " + ns + " is a view, not a collection");
}

}  // namespace tessera::command::exec
