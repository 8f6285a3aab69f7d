#include "storage/catalog_types.h"

#include "bson/compare.h"

namespace tessera::storage {

const IndexSpec* CollectionInfo::findIndex(std::string_view indexName) const {
    for (const auto& index : indexes) {
        if (index.name == indexName) return &index;
    }
    return nullptr;
}

const IndexSpec* CollectionInfo::findIndexByKeyPattern(bson::BsonView keyPattern) const {
    // compareObjects compares field names too; {a: 1} and {a: 1.0} are the same pattern.
    for (const auto& index : indexes) {
        if (bson::compareObjects(index.keyPattern, keyPattern) == 0) return &index;
    }
    return nullptr;
}

}  // namespace tessera::storage
