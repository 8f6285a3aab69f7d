#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "command/namespace_util.h"

namespace tessera::command {

// The collection a command acts on: the string value of its first field (e.g. {find: "c"}).
// InvalidNamespace (73) when it is not a non-empty string.
StatusWith<std::string> collectionName(const bson::BsonElement& first, std::string_view command);

// Appends `cursor: {id, ns, firstBatch: [...]}` with every document of `batch`.
void appendSingleBatchCursor(bson::BsonBuilder& reply, std::string_view ns,
                             const std::vector<bson::BsonObj>& batch);

// Type-checked field accessors for command arguments, with MongoDB's TypeMismatch (14) message:
// "BSON field 'create.capped' is the wrong type 'string', expected type 'bool'".
Status expectType(const bson::BsonElement& e, bson::BsonType type, std::string_view command);
StatusWith<bool> boolArgument(const bson::BsonElement& e, std::string_view command);

// 16 raw bytes as BinData subtype 4 (UUID).
void appendUuid(bson::BsonBuilder& b, std::string_view name, std::string_view uuid);

}  // namespace tessera::command
