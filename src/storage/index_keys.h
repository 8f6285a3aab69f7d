#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "storage/catalog_types.h"

namespace tessera::storage {

// Collation support. The keys of an index with a collation (IndexSpec::spec has a `collation`
// document that is not {locale: "simple"}) hold, in place of every string and symbol (also
// those nested in documents and arrays), the string collationKey(s): a byte string whose binary
// order is the collation's order (ICU's sort key), as MongoDB does. Storage does not link ICU:
// the command layer installs the factory that makes key functions from collation documents
// (query::Collator) before any index is used.
using CollationKeyFn = std::function<std::string(std::string_view)>;
using CollationKeyFactory = std::function<StatusWith<CollationKeyFn>(bson::BsonView collation)>;
void setCollationKeyFactory(CollationKeyFactory factory);
// The key function for an index spec ({..., collation?}); an empty function for no collation or
// the simple one. Fails when no factory is installed or the factory rejects the document.
StatusWith<CollationKeyFn> collationKeyFnFor(bson::BsonView indexSpec);
// {"": value} with strings replaced by keyFn(string), recursively.
bson::BsonObj applyCollationKey(const bson::BsonElement& value, const CollationKeyFn& keyFn);

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
//
// Hashed indexes (one field of the pattern is "hashed": {a: "hashed"}, {a: 1, b: "hashed"}) follow
// MongoDB's ExpressionKeysPrivate::getHashKeys instead: exactly one key per document, whose hashed
// component is NumberLong(bson::hashElement(value)) (a missing field hashes as null; with a
// collation, strings are replaced by their collation keys before hashing) and whose other
// components are the values themselves. An array as the value of ANY field of the pattern, or
// anywhere along its path, fails with 16766 "Error: hashed indexes do not currently support array
// values. Found array at path: a" — hashed indexes are never multikey.
class IndexKeyGenerator {
  public:
    // `keyPattern` must be valid (see validateKeyPattern).
    IndexKeyGenerator(bson::BsonView keyPattern, bool sparse, CollationKeyFn collationKey = {});
    // For an index of the catalog: key pattern, sparse, and collation (from spec.spec).
    explicit IndexKeyGenerator(const IndexSpec& spec);

    // Replaces *keys with the keys of `doc`; sets *multikey if an array was expanded. With
    // `values`, also fills one {field: value, ...} object per key (same order as *keys), for
    // duplicate-key reports.
    Status getKeys(bson::BsonView doc, std::vector<std::string>* keys, bool* multikey,
                   std::vector<bson::BsonObj>* values = nullptr) const;

    size_t numFields() const { return _fields.size(); }
    bool isHashed() const { return _hashed; }

  private:
    Status getHashedKeys(bson::BsonView doc, std::vector<std::string>* keys,
                         std::vector<bson::BsonObj>* values) const;

    struct Field {
        std::string name;  // the dotted path as written in the pattern
        bool descending;
        bool hashed = false;
    };
    std::vector<Field> _fields;
    bool _hashed = false;  // some field is "hashed"
    bool _sparse;
    CollationKeyFn _collationKey;   // empty: binary strings
    Status _status = Status::OK();  // a collation that could not be set up fails getKeys
};

// CannotCreateIndex (67) unless every value is a non-zero number (1/-1 style) or "hashed";
// at most one field may be hashed (31303, as MongoDB). Other special index types ("text",
// "2dsphere", ...) are not supported yet (67).
Status validateKeyPattern(bson::BsonView keyPattern);

// True when some value of the (valid) key pattern is "hashed".
bool isHashedKeyPattern(bson::BsonView keyPattern);

// The option checks of a hashed index spec: not unique (16764, "Currently hashed indexes cannot
// guarantee uniqueness. Use a regular index."). OK for any other key pattern.
Status validateHashedIndexOptions(bson::BsonView keyPattern, bool unique);

// The default index name MongoDB derives from a key pattern: {a: 1, "b.c": -1} -> "a_1_b.c_-1".
std::string defaultIndexName(bson::BsonView keyPattern);

// MongoDB's rendering of a key for error messages: "{ a: 1, b: \"x\" }".
std::string formatKeyForMessage(bson::BsonView keyValue);

}  // namespace tessera::storage
