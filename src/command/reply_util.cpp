#include "command/reply_util.h"

namespace tessera::command {

StatusWith<std::string> collectionName(const bson::BsonElement& first, std::string_view command) {
    if (first.type() != bson::BsonType::String) {
        return Status(ErrorCodes::InvalidNamespace,
                      "collection name has invalid type " + std::string(typeName(first.type())));
    }
    if (first.stringValue().empty()) {
        return Status(ErrorCodes::InvalidNamespace,
                      "Invalid namespace specified for " + std::string(command));
    }
    return std::string(first.stringValue());
}

void appendSingleBatchCursor(bson::BsonBuilder& reply, std::string_view ns,
                             const std::vector<bson::BsonObj>& batch) {
    reply.startObject("cursor");
    reply.appendInt64("id", 0);
    reply.append("ns", ns);
    reply.startArray("firstBatch");
    for (size_t i = 0; i < batch.size(); ++i) reply.appendObject(std::to_string(i), batch[i]);
    reply.end();
    reply.end();
}

Status expectType(const bson::BsonElement& e, bson::BsonType type, std::string_view command) {
    if (e.type() == type) return Status::OK();
    return Status(ErrorCodes::TypeMismatch,
                  "BSON field '" + std::string(command) + "." + std::string(e.fieldName()) +
                      "' is the wrong type '" + std::string(typeName(e.type())) +
                      "', expected type '" + std::string(typeName(type)) + "'");
}

StatusWith<bool> boolArgument(const bson::BsonElement& e, std::string_view command) {
    if (e.eoo()) return false;
    if (e.type() == bson::BsonType::Bool) return e.boolValue();
    if (e.isNumber()) return e.trueValue();
    return Status(ErrorCodes::TypeMismatch,
                  "BSON field '" + std::string(command) + "." + std::string(e.fieldName()) +
                      "' is the wrong type '" + std::string(typeName(e.type())) +
                      "', expected types '[bool, long, int, decimal, double]'");
}

void appendUuid(bson::BsonBuilder& b, std::string_view name, std::string_view uuid) {
    b.appendBinary(name, 4, uuid);
}

}  // namespace tessera::command
