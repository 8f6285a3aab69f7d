#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/command.h"

namespace tessera::command {

// Declared arguments of a command (MongoDB declares them in IDL files): each command lists its
// fields once, and parsing checks the request against the list before the command looks
// anything up or takes any lock. The cluster's internal commands (`_configsvr*`) use it, so that
// a malformed request gets MongoDB's error and changes nothing:
//  - the first field (the command's target) by its kind: a namespace ("db.coll", 73
//    InvalidNamespace by parseValidNamespace), a database name (73), a shard id or a string
//    (non-empty, TypeMismatch 14), or anything (the `1` of `{_configsvrBalancerStatus: 1}`);
//  - a declared field of the wrong type: TypeMismatch (14) "BSON field 'cmd.f' is the wrong type
//    'string', expected type 'object'";
//  - a required field missing: 40414 "BSON field 'cmd.f' is missing but a required field";
//  - a field neither declared nor generic (generic_args.h): 40415 "BSON field 'cmd.f' is an
//    unknown field.".
enum class ArgKind {
    kAny,
    kString,
    kNonEmptyString,  // a shard id, a host, a zone name
    kNamespace,       // "db.coll", valid
    kDatabase,        // a valid database name
    kObject,
    kArray,
    kBool,
    kNumber,        // any numeric type
    kStringOrNull,  // e.g. updateZoneKeyRange's zone (null removes)
    kBoolOrNumber,  // flags that drivers send as 1 or true
};

struct ArgSpec {
    std::string_view name;
    ArgKind kind = ArgKind::kAny;
    bool required = false;
};

struct CommandArgsSpec {
    std::string_view command;
    ArgKind target = ArgKind::kAny;  // the first field's value
    std::vector<ArgSpec> fields;
};

// A request whose arguments passed its spec. Views into the request: valid while it is.
class CommandArgs {
  public:
    static StatusWith<CommandArgs> parse(const CommandArgsSpec& spec,
                                         const CommandRequest& request);

    // The first field's value as a string (empty for kAny targets that are not strings).
    const std::string& target() const { return _target; }
    // A declared field (eoo() when absent). Asking for an undeclared one is a bug.
    bson::BsonElement operator[](std::string_view name) const;
    bool has(std::string_view name) const { return !(*this)[name].eoo(); }
    std::optional<std::string> optString(std::string_view name) const;
    std::optional<bson::BsonObj> optObject(std::string_view name) const;
    bool flag(std::string_view name) const { return (*this)[name].trueValue(); }
    // The whole request body (for code that reads the declared fields itself).
    bson::BsonView body() const { return _body; }

  private:
    const CommandArgsSpec* _spec = nullptr;
    bson::BsonView _body;
    std::string _target;
};

}  // namespace tessera::command
