#include "command/command_args.h"

#include <algorithm>
#include <utility>

#include "command/generic_args.h"
#include "command/namespace_util.h"

namespace tessera::command {
namespace {

using bson::BsonElement;
using bson::BsonType;

std::string_view expectedTypeName(ArgKind kind) {
    switch (kind) {
        case ArgKind::kAny:
            return "any";
        case ArgKind::kString:
        case ArgKind::kNonEmptyString:
        case ArgKind::kNamespace:
        case ArgKind::kDatabase:
            return "string";
        case ArgKind::kObject:
            return "object";
        case ArgKind::kArray:
            return "array";
        case ArgKind::kBool:
            return "bool";
        case ArgKind::kNumber:
            return "number";
        case ArgKind::kStringOrNull:
            return "string or null";
        case ArgKind::kBoolOrNumber:
            return "bool";
    }
    return "any";
}

bool hasKind(const BsonElement& e, ArgKind kind) {
    switch (kind) {
        case ArgKind::kAny:
            return true;
        case ArgKind::kString:
        case ArgKind::kNonEmptyString:
        case ArgKind::kNamespace:
        case ArgKind::kDatabase:
            return e.type() == BsonType::String;
        case ArgKind::kObject:
            return e.isObject();
        case ArgKind::kArray:
            return e.isArray();
        case ArgKind::kBool:
            return e.type() == BsonType::Bool;
        case ArgKind::kNumber:
            return e.isNumber();
        case ArgKind::kStringOrNull:
            return e.type() == BsonType::String || e.isNull();
        case ArgKind::kBoolOrNumber:
            return e.type() == BsonType::Bool || e.isNumber();
    }
    return false;
}

std::string fieldPath(const CommandArgsSpec& spec, std::string_view field) {
    return std::string(spec.command) + "." + std::string(field);
}

// The value checks a kind adds to its type.
Status checkValue(const CommandArgsSpec& spec, std::string_view field, const BsonElement& e,
                  ArgKind kind) {
    switch (kind) {
        case ArgKind::kNonEmptyString:
            if (e.stringValue().empty()) {
                return Status(ErrorCodes::BadValue,
                              "BSON field '" + fieldPath(spec, field) + "' must not be empty");
            }
            return Status::OK();
        case ArgKind::kNamespace:
            return parseValidNamespace(e.stringValue()).getStatus();
        case ArgKind::kDatabase:
            return validateDatabaseName(e.stringValue());
        default:
            return Status::OK();
    }
}

Status checkField(const CommandArgsSpec& spec, std::string_view field, const BsonElement& e,
                  ArgKind kind) {
    if (!hasKind(e, kind)) {
        return Status(ErrorCodes::TypeMismatch,
                      "BSON field '" + fieldPath(spec, field) + "' is the wrong type '" +
                          std::string(bson::typeName(e.type())) + "', expected type '" +
                          std::string(expectedTypeName(kind)) + "'");
    }
    return checkValue(spec, field, e, kind);
}

}  // namespace

StatusWith<CommandArgs> CommandArgs::parse(const CommandArgsSpec& spec,
                                           const CommandRequest& request) {
    CommandArgs args;
    args._spec = &spec;
    args._body = request.body;
    const BsonElement first = request.firstElement();
    TRY_STATUS(checkField(spec, spec.command, first, spec.target));
    if (first.type() == BsonType::String) args._target = std::string(first.stringValue());
    bool isFirst = true;
    for (const BsonElement& e : request.body) {
        if (std::exchange(isFirst, false)) continue;
        std::string_view name = e.fieldName();
        auto declared = std::find_if(spec.fields.begin(), spec.fields.end(),
                                     [&](const ArgSpec& a) { return a.name == name; });
        if (declared == spec.fields.end()) {
            if (isGenericArgument(name)) continue;
            return Status(40415, "BSON field '" + fieldPath(spec, name) + "' is an unknown field.");
        }
        TRY_STATUS(checkField(spec, name, e, declared->kind));
    }
    for (const ArgSpec& a : spec.fields) {
        if (a.required && request.body[a.name].eoo()) {
            return Status(40414, "BSON field '" + fieldPath(spec, a.name) +
                                     "' is missing but a required field");
        }
    }
    return args;
}

BsonElement CommandArgs::operator[](std::string_view name) const {
    invariant(std::any_of(_spec->fields.begin(), _spec->fields.end(),
                          [&](const ArgSpec& a) { return a.name == name; }));
    return _body[name];
}

std::optional<std::string> CommandArgs::optString(std::string_view name) const {
    BsonElement e = (*this)[name];
    if (e.type() != BsonType::String) return std::nullopt;
    return std::string(e.stringValue());
}

std::optional<bson::BsonObj> CommandArgs::optObject(std::string_view name) const {
    BsonElement e = (*this)[name];
    if (!e.isObject()) return std::nullopt;
    return e.objValue().copy();
}

}  // namespace tessera::command
