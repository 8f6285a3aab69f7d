#pragma once

#include "bson/bson_obj.h"

namespace tessera::bson {

// MongoDB's cross-type sort order (BSONElement::canonicalType): MinKey < Undefined/Null <
// numbers < strings/symbols < objects < arrays < BinData < ObjectId < bool < Date < Timestamp <
// Regex < DBPointer < Code < CodeWScope < MaxKey. Values of one canonical type compare by value;
// numbers compare by numeric value across int32/int64/double/decimal128 (NaN below all numbers).
int canonicalTypeOrder(BsonType t);

// Optional string comparison hook (collation); nullptr means binary comparison.
class StringComparator {
  public:
    virtual ~StringComparator() = default;
    virtual int compare(std::string_view a, std::string_view b) const = 0;
};

// <0, 0, >0 like memcmp. Compares values only (field names ignored).
int compareElementValues(const BsonElement& a, const BsonElement& b,
                         const StringComparator* strings = nullptr);
// Compares elements including their field names (as BSONElement::woCompare with names).
int compareElements(const BsonElement& a, const BsonElement& b,
                    const StringComparator* strings = nullptr);
// MongoDB's woCompare for documents: element by element (type order, field name, value), then
// the shorter document first.
int compareObjects(BsonView a, BsonView b, const StringComparator* strings = nullptr);

// Compares two numbers of any numeric BSON types exactly by value. NaN == NaN and NaN < all.
int compareNumbers(const BsonElement& a, const BsonElement& b);

struct BsonViewLess {
    bool operator()(BsonView a, BsonView b) const { return compareObjects(a, b) < 0; }
};

}  // namespace tessera::bson
