// Fuzzes validateBson: any bytes must be classified without crashing; a document it accepts must
// then be safe for every reader (iteration, typed accessors, JSON, comparison, copying).

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "bson/bson_obj.h"
#include "bson/bson_types.h"
#include "bson/compare.h"
#include "bson/validate.h"

using namespace tessera;

namespace {

void check(bool cond) {
    if (!cond) std::abort();
}

void readValue(const bson::BsonElement& e) {
    using bson::BsonType;
    (void)e.toString();
    (void)e.trueValue();
    (void)bson::typeName(e.type());
    if (e.isNumber()) {
        (void)e.numberDouble();
        (void)e.numberLong();
        (void)e.numberInt();
        (void)e.isIntegral();
        check(bson::compareNumbers(e, e) == 0 || e.numberDouble() != e.numberDouble());
    }
    switch (e.type()) {
        case BsonType::String:
        case BsonType::Symbol:
        case BsonType::Code:
            (void)e.stringValue();
            break;
        case BsonType::BinData:
            (void)e.binaryValue();
            break;
        case BsonType::Regex:
            (void)e.regexValue();
            break;
        case BsonType::DBPointer:
            (void)e.dbPointerValue();
            break;
        case BsonType::ObjectId:
            (void)e.oidValue();
            break;
        case BsonType::Date:
            (void)e.dateValue();
            break;
        case BsonType::Timestamp:
            (void)e.timestampValue();
            break;
        case BsonType::Bool:
            (void)e.boolValue();
            break;
        case BsonType::Decimal128:
            (void)e.decimalValue();
            break;
        case BsonType::Double:
            (void)e.doubleValue();
            break;
        case BsonType::Int32:
            (void)e.int32Value();
            break;
        case BsonType::Int64:
            (void)e.int64Value();
            break;
        default:
            break;
    }
}

// Iterative walk (the validator bounds the depth, but the fuzzer should not depend on that for
// its own stack).
size_t walk(bson::BsonView root) {
    size_t elements = 0;
    std::vector<bson::BsonView> stack{root};
    while (!stack.empty()) {
        bson::BsonView doc = stack.back();
        stack.pop_back();
        size_t n = 0;
        for (const bson::BsonElement& e : doc) {
            ++n;
            readValue(e);
            check(doc.getField(e.fieldName()).raw() != nullptr);
            if (e.isObject() || e.isArray() || e.type() == bson::BsonType::CodeWScope) {
                stack.push_back(e.objValue());
            }
        }
        check(n == doc.nFields());
        elements += n;
    }
    return elements;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Status s = bson::validateBson(data, size, bson::kMaxParseDepth);
    Status shallow = bson::validateBson(data, size, bson::kMaxStoredDepth);
    // A stricter depth never accepts more.
    if (shallow.isOK()) check(s.isOK());
    if (!s.isOK()) {
        check(s.is(ErrorCodes::InvalidBSON) || s.is(ErrorCodes::Overflow));
        return 0;
    }
    // The validator's contract: exactly one document of exactly `size` bytes.
    bson::BsonView view(data);
    check(view.size() == size);
    check(bson::documentDepth(data) <= bson::kMaxParseDepth);
    walk(view);
    (void)view.toJson();
    (void)view.toCanonicalJson();
    check(bson::compareObjects(view, view) == 0);
    bson::BsonObj copy = view.copy();
    check(copy.binaryEqual(view));
    check(bson::compareObjects(copy, view) == 0);
    return 0;
}
