#include "command/collation_util.h"

#include <mutex>

#include "storage/index_keys.h"

namespace tessera::command {

void installCollationSupport() {
    static std::once_flag once;
    std::call_once(once, [] {
        storage::setCollationKeyFactory(
            [](bson::BsonView spec) -> StatusWith<storage::CollationKeyFn> {
                ASSIGN_OR_RETURN(query::CollatorPtr collator, query::Collator::parse(spec));
                if (!collator) return storage::CollationKeyFn();
                return storage::CollationKeyFn(
                    [collator](std::string_view s) { return collator->sortKey(s); });
            });
    });
}

StatusWith<query::CollatorPtr> resolveCollation(const bson::BsonElement& argument,
                                                const storage::CollectionInfo* coll) {
    bool given = false;
    ASSIGN_OR_RETURN(query::CollatorPtr collator, query::Collator::fromArgument(argument, &given));
    if (given || coll == nullptr) return collator;
    bson::BsonElement def = coll->options["collation"];
    if (!def.isObject()) return query::CollatorPtr();
    return query::Collator::parse(def.objValue());
}

bson::BsonObj collationArgument(bson::BsonView body) {
    bson::BsonElement c = body["collation"];
    if (c.eoo()) return bson::BsonObj();
    bson::BsonBuilder b;
    b.appendElementAs(c, "collation");
    return b.obj();
}

query::CollatorPtr indexCollator(const storage::IndexSpec& index) {
    bson::BsonElement c = index.spec["collation"];
    if (!c.isObject()) return nullptr;
    auto parsed = query::Collator::parse(c.objValue());
    return parsed.isOK() ? parsed.getValue() : nullptr;
}

}  // namespace tessera::command
