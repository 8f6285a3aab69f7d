#include "command/exec/query_adapters.h"

#include "query/projection.h"
#include "query/sort.h"

namespace tessera::command::exec {

StatusWith<SortKeyFunctions> makeSortFunctions(
    bson::BsonView sortSpec, std::shared_ptr<const bson::StringComparator> collator) {
    ASSIGN_OR_RETURN(query::SortPattern pattern, query::SortPattern::parse(sortSpec));
    pattern.setCollator(std::move(collator));
    auto shared = std::make_shared<const query::SortPattern>(std::move(pattern));
    SortKeyFunctions fns;
    fns.keyOf = [shared](bson::BsonView doc) -> StatusWith<bson::BsonObj> {
        return shared->sortKey(doc);
    };
    fns.compare = [shared](bson::BsonView a, bson::BsonView b) {
        return shared->compareKeys(a, b);
    };
    return fns;
}

StatusWith<ProjectionStage::Fn> makeProjection(bson::BsonView spec) {
    ASSIGN_OR_RETURN(std::unique_ptr<query::Projection> parsed, query::Projection::parse(spec));
    std::shared_ptr<const query::Projection> projection(std::move(parsed));
    return ProjectionStage::Fn(
        [projection](bson::BsonView doc,
                     const query::MatchDetails& details) -> StatusWith<bson::BsonObj> {
            return projection->apply(doc, &details);
        });
}

}  // namespace tessera::command::exec
