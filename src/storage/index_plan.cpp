#include "storage/index_plan.h"

#include "bson/compare.h"
#include "storage/catalog_codec.h"
#include "storage/index_keys.h"

namespace tessera::storage {

Status planIndexes(std::vector<IndexSpec> specs, CollectionInfo* info,
                   std::vector<IndexSpec>* toBuild) {
    for (IndexSpec& spec : specs) {
        TRY_STATUS(validateKeyPattern(spec.keyPattern));
        TRY_STATUS(validateHashedIndexOptions(spec.keyPattern, spec.unique));
        if (spec.name.empty()) spec.name = defaultIndexName(spec.keyPattern);
        // {_id: "hashed"} is an ordinary (non-unique) hashed index, not the _id index.
        bool isId = spec.keyPattern.nFields() == 1 &&
                    spec.keyPattern.firstElement().fieldName() == "_id" &&
                    spec.keyPattern.firstElement().isNumber();
        if (isId) spec.unique = true;
        if (spec.name == "_id_" && !isId) {
            return Status(ErrorCodes::BadValue,
                          "The index name '_id_' is reserved for the _id index, which must have "
                          "key pattern {_id: 1}");
        }
        auto collationOf = [](const IndexSpec& s) {
            bson::BsonElement c = s.spec["collation"];
            return c.isObject() ? c.objValue() : bson::BsonView();
        };
        auto sameCollation = [&](const IndexSpec& a) {
            return bson::compareObjects(collationOf(a), collationOf(spec)) == 0;
        };
        auto sameOptions = [&](const IndexSpec& a) {
            return a.unique == spec.unique && a.sparse == spec.sparse && sameCollation(a);
        };
        bool skip = false;
        auto check = [&](const IndexSpec& existing) -> Status {
            bool sameName = existing.name == spec.name;
            bool sameKey = bson::compareObjects(existing.keyPattern, spec.keyPattern) == 0;
            if (sameName && sameKey) {
                if (!sameOptions(existing)) {
                    return Status(ErrorCodes::IndexOptionsConflict,
                                  "An existing index has the same name as the requested index "
                                  "but different options. Requested index: " +
                                      makeIndexSpecDoc(spec).toJson() +
                                      ", existing index: " + existing.spec.toJson());
                }
                skip = true;
            } else if (sameName) {
                return Status(ErrorCodes::IndexKeySpecsConflict,
                              "An existing index has the same name as the requested index. "
                              "When index names are not specified, they are auto generated and "
                              "can cause conflicts. Please refer to our documentation. Requested "
                              "index: " +
                                  makeIndexSpecDoc(spec).toJson() +
                                  ", existing index: " + existing.spec.toJson());
            } else if (sameKey && sameCollation(existing)) {
                return Status(ErrorCodes::IndexOptionsConflict,
                              "Index already exists with a different name: " + existing.name);
            }
            return Status::OK();
        };
        for (const IndexSpec& existing : info->indexes) TRY_STATUS(check(existing));
        for (const IndexSpec& pending : *toBuild) TRY_STATUS(check(pending));
        if (skip) continue;
        spec.multikey = false;
        spec.id = info->nextIndexId++;
        if (spec.spec.isEmpty()) spec.spec = makeIndexSpecDoc(spec);
        toBuild->push_back(std::move(spec));
    }
    return Status::OK();
}

}  // namespace tessera::storage
