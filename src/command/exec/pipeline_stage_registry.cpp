#include "command/exec/pipeline_stage_registry.h"

#include "command/exec/pipeline_stage_list.h"

namespace tessera::command::exec {

using bson::BsonType;

namespace {

// MongoDB stages that are not implemented yet: refused with NotImplemented, not as unknown.
constexpr StageDescriptor kNotYet[] = {
    {"$densify", {}},
    {"$fill", {}},
    {"$geoNear", {}},
    {"$listSessions", {}},
    {"$changeStream", {}},
    {"$setWindowFields", {}},
    {"$planCacheStats", {}},
    {"$search", {}},
    {"$searchMeta", {}},
    {"$changeStreamSplitLargeEvent", {}},
    {"$listSearchIndexes", {}},
    {"$shardedDataDistribution", {}},
    {"$vectorSearch", {}},
    {"$querySettings", {}},
    {"$listSampledQueries", {}},
};

const StageDescriptor* const kStages[] = {
    &stages::kMatch,
    &stages::kSort,
    &stages::kSkip,
    &stages::kLimit,
    &stages::kProject,
    &stages::kGroup,
    &stages::kCount,
    &stages::kUnwind,
    &stages::kCollStats,
    &stages::kAddFields,
    &stages::kSet,
    &stages::kUnset,
    &stages::kLookup,
    &stages::kOut,
    &stages::kMerge,
    &stages::kFacet,
    &stages::kBucket,
    &stages::kSortByCount,
    &stages::kReplaceRoot,
    &stages::kReplaceWith,
    &stages::kSample,
    &stages::kUnionWith,
    &stages::kIndexStats,
    &stages::kDocuments,
    &stages::kListLocalSessions,
    &stages::kCurrentOp,
    &stages::kBucketAuto,
    &stages::kRedact,
    &stages::kGraphLookup,
};

}  // namespace

const StageDescriptor* findStage(std::string_view name) {
    for (const StageDescriptor* d : kStages) {
        if (d->name == name) return d;
    }
    for (const StageDescriptor& d : kNotYet) {
        if (d.name == name) return &d;
    }
    return nullptr;
}

std::unique_ptr<PlanStage> stack(std::unique_ptr<PlanStage> input,
                                 std::unique_ptr<PlanStage> stage) {
    stage->setChild(std::move(input));
    return stage;
}

StatusWith<int64_t> positiveIntegerArg(const bson::BsonElement& e, int code,
                                       const std::string& what, bool allowZero) {
    if (!e.isNumber() || !e.isIntegral()) {
        return Status(code, "invalid argument to " + what + " stage: " + e.toString(false) +
                                " is not a valid integer");
    }
    int64_t v = e.numberLong();
    if (v < 0 || (!allowZero && v == 0)) {
        return Status(code, allowZero ? "invalid argument to " + what +
                                            " stage: Cannot skip a negative number of documents"
                                      : "the limit must be positive");
    }
    return v;
}

Status checkSortSpec(const bson::BsonElement& e) {
    if (e.type() != bson::BsonType::Object) {
        return Status(15973, "the $sort key specification must be an object");
    }
    if (e.objValue().isEmpty()) {
        return Status(15976, "$sort stage must have at least one sort key");
    }
    return Status::OK();
}

bool isCollectionlessNs(std::string_view ns) { return ns.ends_with(".$cmd.aggregate"); }

StatusWith<std::string> targetNamespace(const bson::BsonElement& e, const std::string& db,
                                        std::string_view stage, int typeCode) {
    std::string targetDb = db;
    std::string coll;
    if (e.type() == BsonType::String) {
        coll = std::string(e.stringValue());
    } else if (e.type() == BsonType::Object) {
        for (auto f : e.objValue()) {
            if ((f.fieldName() == "db" || f.fieldName() == "coll") &&
                f.type() != BsonType::String) {
                return Status(ErrorCodes::TypeMismatch, "BSON field '" + std::string(stage) + "." +
                                                            std::string(f.fieldName()) +
                                                            "' is the wrong type '" +
                                                            std::string(bson::typeName(f.type())) +
                                                            "', expected type 'string'");
            }
            if (f.fieldName() == "db") {
                targetDb = std::string(f.stringValue());
            } else if (f.fieldName() == "coll") {
                coll = std::string(f.stringValue());
            } else {
                return Status(40415, "BSON field '" + std::string(stage) + "." +
                                         std::string(f.fieldName()) + "' is an unknown field.");
            }
        }
        if (coll.empty()) {
            return Status(40414, "BSON field '" + std::string(stage) +
                                     ".coll' is missing but a "
                                     "required field");
        }
    } else {
        return Status(typeCode, std::string(stage) +
                                    " only supports a string or object argument, not " +
                                    std::string(bson::typeName(e.type())));
    }
    if (coll.empty() || coll.find('$') != std::string::npos || coll.find('\0') != coll.npos ||
        targetDb.empty()) {
        return Status(ErrorCodes::InvalidNamespace,
                      "Invalid " + std::string(stage) + " namespace: " + targetDb + "." + coll);
    }
    return targetDb + "." + coll;
}

}  // namespace tessera::command::exec
