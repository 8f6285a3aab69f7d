#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::storage {

// Computes the index keys of documents for one key pattern ({a: 1, "b.c": -1}) with MongoDB's
// semantics (btree_key_generator):
//  - dotted paths descend through embedded documents; an array on the path yields one key per
//    element (the index becomes "multikey"); a nested array at the end of a path is indexed as
//    the array value itself;
//  - a missing field is indexed as null; an empty array as undefined when it is the indexed
//    value, and as null when the path continues into it (as do non-document array elements);
//  - a numeric path component applied to an array selects that element (no expansion);
//  - several fields of a compound pattern may expand the same array (elements are paired), but
//    not different arrays: CannotIndexParallelArrays (171) "cannot index parallel arrays [b] [a]";
//  - a sparse index produces no key for a document that has none of the indexed fields.
// Keys are keystring encodings (component directions from the pattern), deduplicated, sorted.
class IndexKeyGenerator {
  public:
    // `keyPattern` must be valid (see validateKeyPattern).
    IndexKeyGenerator(bson::BsonView keyPattern, bool sparse);

    // Replaces *keys with the keys of `doc`; sets *multikey if an array was expanded. With
    // `values`, also fills one {field: value, ...} object per key (same order as *keys), for
    // duplicate-key reports.
    Status getKeys(bson::BsonView doc, std::vector<std::string>* keys, bool* multikey,
                   std::vector<bson::BsonObj>* values = nullptr) const;

    size_t numFields() const { return _fields.size(); }

  private:
    struct Field {
        std::string name;  // the dotted path as written in the pattern
        bool descending;
    };
    std::vector<Field> _fields;
    bool _sparse;
};

// CannotCreateIndex (67) unless every value is a non-zero number (1/-1 style); special index
// types ("hashed", "text", "2dsphere", ...) are not supported yet.
Status validateKeyPattern(bson::BsonView keyPattern);

// The default index name MongoDB derives from a key pattern: {a: 1, "b.c": -1} -> "a_1_b.c_-1".
std::string defaultIndexName(bson::BsonView keyPattern);

// MongoDB's rendering of a key for error messages: "{ a: 1, b: \"x\" }".
std::string formatKeyForMessage(bson::BsonView keyValue);

}  // namespace tessera::storage
