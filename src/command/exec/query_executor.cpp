#include "command/exec/query_executor.h"

#include <algorithm>

#include "bson/bson_builder.h"
#include "command/collation_util.h"
#include "command/exec/query_adapters.h"
#include "command/exec/query_stages.h"
#include "command/exec/scan_stages.h"
#include "command/exec/transform_stages.h"
#include "query/planner.h"

namespace tessera::command::exec {

using bson::BsonType;

StatusWith<bson::BsonObj> parseHint(const bson::BsonElement& hint) {
    bson::BsonBuilder b;
    if (hint.eoo()) return b.obj();
    if (hint.type() == BsonType::String) {
        b.append("$hint", hint.stringValue());
        return b.obj();
    }
    if (hint.type() == BsonType::Object) return hint.objValue().copy();
    return Status(ErrorCodes::FailedToParse, "hint must be a string or an object, not " +
                                                 std::string(bson::typeName(hint.type())));
}

std::optional<bson::BsonObj> idHackValue(bson::BsonView filter) {
    if (filter.nFields() != 1) return std::nullopt;
    bson::BsonElement e = filter.firstElement();
    if (e.fieldName() != "_id") return std::nullopt;
    switch (e.type()) {
        case BsonType::Array:
        case BsonType::Regex:
        case BsonType::Undefined:
        case BsonType::MinKey:
        case BsonType::MaxKey:
            return std::nullopt;
        case BsonType::Object: {
            // {_id: {$eq: v}} and other operators go through the general path; a plain
            // embedded document is an exact value.
            for (auto f : e.objValue()) {
                if (!f.fieldName().empty() && f.fieldName()[0] == '$') return std::nullopt;
            }
            break;
        }
        default:
            break;
    }
    bson::BsonBuilder b;
    b.appendElementAs(e, "");
    return b.obj();
}

namespace {

// "[1, 1]", "(MinKey, 5)", as explain prints intervals.
std::string intervalString(const query::Interval& i) {
    std::string s = i.lowInclusive ? "[" : "(";
    s += i.low.firstElement().toString(false);
    s += ", ";
    s += i.high.firstElement().toString(false);
    s += i.highInclusive ? "]" : ")";
    return s;
}

bson::BsonObj boundsForExplain(bson::BsonView keyPattern, const query::IndexBounds& bounds) {
    bson::BsonBuilder b;
    size_t i = 0;
    for (auto e : keyPattern) {
        b.startArray(e.fieldName());
        if (i < bounds.fields.size()) {
            size_t j = 0;
            for (const auto& interval : bounds.fields[i]) {
                b.append(std::to_string(j++), intervalString(interval));
            }
        }
        b.end();
        ++i;
    }
    return b.obj();
}

}  // namespace

StatusWith<std::unique_ptr<PlanStage>> buildAccessPath(
    const storage::CollectionPtr& coll, const QuerySpec& spec,
    std::shared_ptr<const query::Matcher> matcher, bool* sortProvided) {
    *sortProvided = spec.sort.isEmpty();
    if (!coll) {
        *sortProvided = true;
        return std::unique_ptr<PlanStage>(
            std::make_unique<VectorSourceStage>(std::vector<bson::BsonObj>{}, "EOF"));
    }
    std::vector<query::IndexDescription> indexes;
    for (const storage::IndexSpec& ix : coll->indexes) {
        indexes.push_back(
            query::IndexDescription{ix.name, ix.keyPattern, ix.unique, ix.sparse, ix.multikey});
        // The _id index is the record keyspace: always binary.
        query::CollatorPtr ixCollator = ix.isIdIndex() ? nullptr : indexCollator(ix);
        indexes.back().collationMatches =
            query::Collator::equivalent(ixCollator.get(), spec.collator.get());
    }
    // With a collation, bounds are computed over collation keys (the strings of a collated
    // index's keys).
    bson::BsonObj planFilter =
        spec.collator ? query::collationKeyFilter(spec.filter, *spec.collator) : spec.filter;
    ASSIGN_OR_RETURN(query::QueryPlan plan,
                     query::planQuery(planFilter, spec.sort, spec.hint, indexes));
    *sortProvided = plan.providesSort || spec.sort.isEmpty();

    std::unique_ptr<PlanStage> scan;
    if (plan.isIdPointLookup && !plan.bounds.fields.empty() && plan.bounds.fields[0].size() == 1) {
        scan = std::make_unique<IdHackStage>(plan.bounds.fields[0][0].low);
        *sortProvided = true;  // at most one document
        // The lookup is exact for {_id: v}: no filter needed (MongoDB's IDHACK has none).
        if (idHackValue(spec.filter) && !spec.collator) return scan;
    } else if (plan.collectionScan) {
        scan = std::make_unique<CollScanStage>(plan.forward);
    } else {
        const storage::IndexSpec* index = coll->findIndex(plan.indexName);
        if (index == nullptr) {
            return Status(ErrorCodes::InternalError,
                          "planner chose unknown index " + plan.indexName);
        }
        std::vector<storage::KeyRange> ranges;
        for (const auto& r : query::encodeKeyRanges(index->keyPattern, plan.bounds)) {
            ranges.push_back(storage::KeyRange{r.low, r.lowInclusive, r.high, r.highInclusive});
        }
        if (!plan.forward) std::reverse(ranges.begin(), ranges.end());
        storage::IndexSpec ixCopy = *index;
        ixCopy.multikey = ixCopy.multikey || plan.multikey;
        auto ixscan =
            std::make_unique<IndexScanStage>(std::move(ixCopy), std::move(ranges), plan.forward,
                                             boundsForExplain(index->keyPattern, plan.bounds));
        scan = std::make_unique<FetchStage>();
        scan->setChild(std::move(ixscan));
    }
    if (!spec.filter.isEmpty()) {
        auto filter = std::make_unique<FilterStage>(std::move(matcher));
        filter->setChild(std::move(scan));
        scan = std::move(filter);
    }
    return scan;
}

std::optional<bson::BsonElement> pointLookupId(const QuerySpec& spec) {
    if (spec.collator || !spec.sort.isEmpty() || !spec.projection.isEmpty() || spec.skip != 0 ||
        !spec.hint.isEmpty() || spec.filter.nFields() != 1) {
        return std::nullopt;
    }
    bson::BsonElement id = spec.filter.firstElement();
    if (id.fieldName() != "_id" || !query::isIdHackValue(id) || !idHackValue(spec.filter)) {
        return std::nullopt;
    }
    return id;
}

StatusWith<std::optional<bson::BsonObj>> runPointLookup(OperationContext& opCtx,
                                                        storage::ReadSnapshot& snapshot,
                                                        const storage::CollectionInfo& coll,
                                                        std::string_view ns, bson::BsonElement id) {
    ASSIGN_OR_RETURN(std::shared_ptr<const OwnershipFilter> ownership, opCtx.ownershipFilter(ns));
    std::optional<storage::Record> rec = snapshot.findById(coll, id);
    if (!rec) TRY_STATUS(opCtx.readConflict());
    if (!rec || (ownership && !ownership->owns(rec->doc))) return std::optional<bson::BsonObj>();
    return std::optional<bson::BsonObj>(std::move(rec->doc));
}

StatusWith<std::unique_ptr<PlanExecutor>> buildQueryExecutor(
    std::unique_ptr<storage::ReadSnapshot> snapshot, storage::CollectionPtr coll, std::string ns,
    const QuerySpec& spec) {
    ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher,
                     query::Matcher::parse(spec.filter, spec.collator, spec.let));
    return buildQueryExecutor(std::move(snapshot), std::move(coll), std::move(ns), spec,
                              std::shared_ptr<const query::Matcher>(std::move(matcher)));
}

StatusWith<std::unique_ptr<PlanExecutor>> buildQueryExecutor(
    std::unique_ptr<storage::ReadSnapshot> snapshot, storage::CollectionPtr coll, std::string ns,
    const QuerySpec& spec, std::shared_ptr<const query::Matcher> matcher) {
    // Parse everything before building so that errors do not depend on the data.
    std::optional<SortKeyFunctions> sortFns;
    if (!spec.sort.isEmpty()) {
        ASSIGN_OR_RETURN(sortFns, makeSortFunctions(spec.sort, spec.collator));
    }
    std::optional<ProjectionStage::Fn> projection;
    if (!spec.projection.isEmpty()) {
        ASSIGN_OR_RETURN(projection, makeProjection(spec.projection));
    }
    bool sortProvided = false;
    ASSIGN_OR_RETURN(std::unique_ptr<PlanStage> root,
                     buildAccessPath(coll, spec, std::move(matcher), &sortProvided));
    auto stack = [&root](std::unique_ptr<PlanStage> stage) {
        stage->setChild(std::move(root));
        root = std::move(stage);
    };
    if (sortFns && !sortProvided) {
        int64_t topK = spec.limit ? *spec.limit + spec.skip : 0;
        stack(std::make_unique<SortStage>(std::move(*sortFns), spec.sort, topK));
    }
    if (spec.skip > 0) stack(std::make_unique<SkipStage>(spec.skip));
    if (spec.limit) stack(std::make_unique<LimitStage>(*spec.limit));
    if (projection)
        stack(std::make_unique<ProjectionStage>(std::move(*projection), spec.projection));
    return std::make_unique<PlanExecutor>(std::move(snapshot), std::move(coll), std::move(root),
                                          std::move(ns));
}

}  // namespace tessera::command::exec
