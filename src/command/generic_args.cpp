#include "command/generic_args.h"

#include <algorithm>
#include <array>

#include "bson/bson_types.h"

namespace tessera::command {
namespace {

using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;

// MongoDB's API version 1 (the commands an apiStrict: true request may run).
constexpr std::array<std::string_view, 27> kApiVersion1 = {"abortTransaction",
                                                           "aggregate",
                                                           "authenticate",
                                                           "bulkWrite",
                                                           "collMod",
                                                           "commitTransaction",
                                                           "count",
                                                           "create",
                                                           "createIndexes",
                                                           "delete",
                                                           "distinct",
                                                           "drop",
                                                           "dropDatabase",
                                                           "dropIndexes",
                                                           "endSessions",
                                                           "find",
                                                           "findAndModify",
                                                           "getMore",
                                                           "hello",
                                                           "insert",
                                                           "killCursors",
                                                           "listCollections",
                                                           "listDatabases",
                                                           "listIndexes",
                                                           "ping",
                                                           "refreshSessions",
                                                           "update"};

Status refused(const GenericArgument& arg) {
    return Status(ErrorCodes::InvalidOptions, "The field '" + std::string(arg.name) + "' (" +
                                                  std::string(arg.meaning) +
                                                  ") is not supported by this Tessera version");
}

Status checkApiParameters(BsonView body, const Command& command) {
    BsonElement version = body["apiVersion"];
    BsonElement strict = body["apiStrict"];
    BsonElement deprecation = body["apiDeprecationErrors"];
    if (version.eoo()) {
        if (!strict.eoo()) return Status(4886600, "Provided apiStrict without passing apiVersion");
        if (!deprecation.eoo()) {
            return Status(4886600, "Provided apiDeprecationErrors without passing apiVersion");
        }
        return Status::OK();
    }
    if (version.type() != BsonType::String || version.stringValue() != "1") {
        return Status(ErrorCodes::APIVersionError, "API version must be \"1\"");
    }
    for (BsonElement e : {strict, deprecation}) {
        if (!e.eoo() && e.type() != BsonType::Bool) {
            return Status(ErrorCodes::TypeMismatch,
                          "BSON field '" + std::string(e.fieldName()) +
                              "' is the wrong type, expected type 'bool'");
        }
    }
    if (strict.trueValue() &&
        std::find(kApiVersion1.begin(), kApiVersion1.end(), command.name()) == kApiVersion1.end()) {
        return Status(ErrorCodes::APIStrictError,
                      "Provided apiStrict:true, but the command " + std::string(command.name()) +
                          " is not in API Version 1. Information on supported commands and "
                          "migrations in API Version 1 can be found at "
                          "https://dochub.mongodb.org/core/manual-versioned-api");
    }
    // No command of API version 1 is deprecated: apiDeprecationErrors never applies.
    return Status::OK();
}

Status checkReadConcern(BsonView body, const Command& command, ReadConcernLevel* level, bool causal,
                        bool snapshotReads) {
    *level = ReadConcernLevel::kLocal;
    BsonElement rc = body["readConcern"];
    if (rc.eoo()) return Status::OK();
    if (rc.type() != BsonType::Object) {
        return Status(ErrorCodes::TypeMismatch,
                      "BSON field 'readConcern' is the wrong type, expected type 'object'");
    }
    BsonElement levelField = rc.objValue()["level"];
    bool snapshot = snapshotReads && levelField.type() == BsonType::String &&
                    levelField.stringValue() == "snapshot";
    for (BsonElement e : rc.objValue()) {
        std::string_view f = e.fieldName();
        if (f == "level" || f == "provenance") continue;
        if (f == "afterClusterTime" && causal && e.type() == BsonType::Timestamp) continue;
        if (f == "afterClusterTime") {
            return Status(ErrorCodes::InvalidOptions,
                          "readConcern.afterClusterTime needs a cluster time, which a standalone "
                          "does not have: start it with --replSet NAME (a one-member replica "
                          "set) or connect to a router");
        }
        if (f == "atClusterTime" && snapshot) {
            if (e.type() != BsonType::Timestamp || e.timestampValue() == 0) {
                return Status(ErrorCodes::InvalidOptions,
                              "readConcern.atClusterTime must be a non-zero Timestamp");
            }
            if (rc.objValue().hasField("afterClusterTime")) {
                return Status(ErrorCodes::InvalidOptions,
                              "readConcern.atClusterTime and afterClusterTime cannot both be "
                              "given");
            }
            continue;
        }
        if (f == "atClusterTime") {
            return Status(ErrorCodes::InvalidOptions,
                          "readConcern.atClusterTime is only taken with level 'snapshot' inside "
                          "a transaction (startTransaction) by this Tessera version");
        }
        if (f == "afterOpTime") {
            return Status(ErrorCodes::InvalidOptions,
                          "readConcern.afterOpTime belongs to MongoDB's replication, which "
                          "Tessera does not implement");
        }
        return Status(40415,
                      "BSON field 'readConcern." + std::string(f) + "' is an unknown field.");
    }
    BsonElement l = rc.objValue()["level"];
    if (l.eoo()) return Status::OK();
    if (l.type() != BsonType::String) {
        return Status(ErrorCodes::TypeMismatch,
                      "BSON field 'readConcern.level' is the wrong type, expected type 'string'");
    }
    std::string_view name = l.stringValue();
    if (name == "local") return Status::OK();
    if (name == "available") {
        *level = ReadConcernLevel::kAvailable;
        return Status::OK();
    }
    if (name == "snapshot" && snapshotReads) {
        if (command.name() == "getMore" || command.name() == "killCursors") {
            // A snapshot session's driver sends its read concern with every command: a cursor
            // already reads at the time of its first batch, the session's snapshot time.
            return Status::OK();
        }
        if (!takesSnapshotReadConcern(command.name())) {
            return Status(ErrorCodes::InvalidOptions,
                          "Command " + std::string(command.name()) +
                              " does not support { readConcern: { level: \"snapshot\" } } "
                              "outside a transaction (find, aggregate and distinct do)");
        }
        *level = ReadConcernLevel::kSnapshot;
        return Status::OK();
    }
    if (name == "snapshot") {
        return Status(ErrorCodes::InvalidOptions,
                      "readConcern level 'snapshot' outside a transaction needs a cluster time: "
                      "a --replSet node, a shard or a router serves it, this process (a "
                      "standalone without --replSet, or the config server) does not; run the "
                      "read in a transaction (startTransaction) or use 'majority' or 'local'");
    }
    if (name != "majority" && name != "linearizable") {
        return Status(ErrorCodes::BadValue, "Enumeration value '" + std::string(name) +
                                                "' for field 'readConcern.level' is not a valid "
                                                "value.");
    }
    if (!takesReadConcern(command.name())) {
        return Status(ErrorCodes::InvalidOptions,
                      "Command " + std::string(command.name()) +
                          " does not support { readConcern: { level: \"" + std::string(name) +
                          "\" } }");
    }
    *level = name == "majority" ? ReadConcernLevel::kMajority : ReadConcernLevel::kLinearizable;
    return Status::OK();
}

Status checkWriteConcern(BsonView body, bool replicaSetMember) {
    BsonElement wc = body["writeConcern"];
    if (wc.eoo() || wc.isNull()) return Status::OK();
    if (wc.type() != BsonType::Object) {
        return Status(ErrorCodes::TypeMismatch, "BSON field 'writeConcern' is the wrong type '" +
                                                    std::string(bson::typeName(wc.type())) +
                                                    "', expected type 'object'");
    }
    for (BsonElement e : wc.objValue()) {
        std::string_view f = e.fieldName();
        if (f == "w") {
            if (e.isNumber()) {
                if (e.numberLong() < 0) {
                    return Status(ErrorCodes::FailedToParse, "w cannot be a negative value");
                }
                if (e.numberLong() > 1 && !replicaSetMember) {
                    return Status(
                        ErrorCodes::UnsatisfiableWriteConcern,
                        "Not enough data-bearing nodes: w: " + std::to_string(e.numberLong()) +
                            " asks for more members than a standalone has (one)");
                }
            } else if (e.type() == BsonType::String) {
                if (e.stringValue() != "majority") {
                    return Status(ErrorCodes::UnknownReplWriteConcern,
                                  "No write concern mode named '" + std::string(e.stringValue()) +
                                      "' found in replica set configuration");
                }
            } else if (e.type() == BsonType::Object) {
                return Status(ErrorCodes::UnknownReplWriteConcern,
                              "Tagged write concerns are not supported: there are no replica set "
                              "tags");
            } else {
                return Status(ErrorCodes::FailedToParse, "w has to be a number or string");
            }
        } else if (f == "j" || f == "fsync") {
            if (e.type() != BsonType::Bool && !e.isNumber()) {
                return Status(ErrorCodes::FailedToParse,
                              std::string(f) + " must be numeric or a boolean value");
            }
        } else if (f == "wtimeout" || f == "wtimeoutMS") {
            if (!e.isNumber())
                return Status(ErrorCodes::FailedToParse, "wtimeout must be a number");
        } else if (f != "provenance") {
            return Status(40415,
                          "BSON field 'writeConcern." + std::string(f) + "' is an unknown field.");
        }
    }
    return Status::OK();
}

Status checkReadPreference(BsonView body) {
    BsonElement rp = body["$readPreference"];
    if (rp.eoo() && body["$queryOptions"].isObject()) {
        rp = body["$queryOptions"].objValue()["$readPreference"];
    }
    if (rp.eoo()) return Status::OK();
    if (rp.type() != BsonType::Object) {
        return Status(ErrorCodes::TypeMismatch, "$readPreference must be an object");
    }
    BsonView pref = rp.objValue();
    BsonElement mode = pref["mode"];
    if (mode.type() != BsonType::String) {
        return Status(ErrorCodes::FailedToParse, "$readPreference needs a string 'mode'");
    }
    std::string_view m = mode.stringValue();
    if (m != "primary" && m != "primaryPreferred" && m != "secondary" &&
        m != "secondaryPreferred" && m != "nearest") {
        return Status(ErrorCodes::FailedToParse,
                      "Could not parse $readPreference mode '" + std::string(m) + "'");
    }
    if (m == "primary" && (pref.hasField("maxStalenessSeconds") || pref.hasField("tags"))) {
        return Status(ErrorCodes::BadValue,
                      "mode 'primary' does not allow tags or maxStalenessSeconds");
    }
    auto unsatisfiable = [&] {
        return Status(ErrorCodes::FailedToSatisfyReadPreference,
                      "Could not find host matching read preference " + pref.toJson() +
                          ": every Tessera shard is a single member, its primary (replication is "
                          "not implemented yet); use mode 'primary' or 'secondaryPreferred'");
    };
    if (m == "secondary") return unsatisfiable();
    if (m == "nearest" && pref["tags"].isArray()) {
        // The primary has no tags: only an empty tag set ({}) matches it.
        bool matches = pref["tags"].objValue().isEmpty();
        for (BsonElement t : pref["tags"].objValue()) {
            matches = matches || (t.isObject() && t.objValue().isEmpty());
        }
        if (!matches) return unsatisfiable();
    }
    return Status::OK();
}

}  // namespace

bool writeConcernWaitsForJournal(BsonView body) {
    BsonElement wc = body["writeConcern"];
    if (!wc.isObject()) return false;
    BsonView w = wc.objValue();
    return w["j"].trueValue() || w["fsync"].trueValue() || w["w"].type() == BsonType::String;
}

const std::vector<GenericArgument>& genericArguments() {
    using K = GenericArgKind;
    static const std::vector<GenericArgument> kArgs = {
        {"$db", K::kApplied, "the command's database"},
        {"lsid", K::kApplied, "the logical session: retryable writes, a router's cursors"},
        {"txnNumber", K::kApplied,
         "a retryable write's number, applied at most once (other commands: 50768)"},
        {"maxTimeMS", K::kApplied, "the operation's time limit"},
        {"comment", K::kApplied, "an annotation, written with the operation's slow-query log"},
        {"readConcern", K::kApplied, "levels local, available, majority, linearizable"},
        {"writeConcern", K::kApplied,
         "w 0, 1, majority or N members of a replica set, j, fsync, wtimeout"},
        {"$readPreference", K::kApplied,
         "the members a read may use: a replica set secondary serves reads that allow it; every "
         "shard is a primary"},
        {"$queryOptions", K::kApplied, "the legacy wrapper of $readPreference"},
        {"apiVersion", K::kApplied, "the Stable API version: \"1\""},
        {"apiStrict", K::kApplied, "only API version 1 commands"},
        {"apiDeprecationErrors", K::kApplied, "no API version 1 command is deprecated"},
        {"autocommit", K::kRefused, "a multi-document transaction"},
        {"startTransaction", K::kRefused, "a multi-document transaction"},
        {"shardVersion", K::kShardOnly, "the placement version a router attaches"},
        {"databaseVersion", K::kShardOnly, "the database version a router attaches"},
        {"$clusterTime", K::kRefused,
         "cluster time gossip (taken by routers, shards, the config server and serve --replSet; "
         "a plain standalone has no cluster time)"},
        {"stmtIds", K::kShardOnly,
         "the client's statement ids of a router's sub-batch of a retryable insert, update or "
         "delete"},
        {kReadAtClusterTimeField, K::kShardOnly,
         "the one cluster time a router reads every shard of a multi-shard read at"},
        {kRetryableWriteStatusField, K::kShardOnly,
         "a router's question, with a find, whether this shard executed a retryable statement"},
        {"$audit", K::kRefused, "audit metadata of MongoDB's processes"},
        {"$client", K::kRefused, "client metadata relayed by mongos"},
        {"mayBypassWriteBlocking", K::kRefused, "MongoDB's user write blocking"},
        {"$configServerState", K::kRefused, "MongoDB's config server gossip"},
        {"$configTime", K::kRefused, "MongoDB's config server gossip"},
        {"$topologyTime", K::kRefused, "MongoDB's config server gossip"},
        {"$gleStats", K::kRefused, "MongoDB's getLastError statistics"},
    };
    return kArgs;
}

const GenericArgument* findGenericArgument(std::string_view field) {
    // Looked up for every field of every request: a sorted index, binary-searched.
    static const std::vector<const GenericArgument*> kSorted = [] {
        std::vector<const GenericArgument*> v;
        for (const GenericArgument& arg : genericArguments()) v.push_back(&arg);
        std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->name < b->name; });
        return v;
    }();
    auto it =
        std::lower_bound(kSorted.begin(), kSorted.end(), field,
                         [](const GenericArgument* a, std::string_view f) { return a->name < f; });
    return it != kSorted.end() && (*it)->name == field ? *it : nullptr;
}

bool isGenericArgument(std::string_view field) { return findGenericArgument(field) != nullptr; }

bool takesSnapshotReadConcern(std::string_view name) {
    return name == "find" || name == "aggregate" || name == "distinct";
}

bool takesReadConcern(std::string_view name) {
    return name == "find" || name == "aggregate" || name == "count" || name == "distinct";
}

std::optional<bson::BsonObj> unsatisfiableWriteConcernError(BsonView body) {
    BsonElement wc = body["writeConcern"];
    if (!wc.isObject()) return std::nullopt;
    BsonElement w = wc.objValue()["w"];
    if (!w.isNumber() || w.numberLong() <= 1) return std::nullopt;
    bson::BsonBuilder b;
    b.appendInt32("code", static_cast<int>(ErrorCodes::UnsatisfiableWriteConcern));
    b.append("codeName", codeName(static_cast<int>(ErrorCodes::UnsatisfiableWriteConcern)));
    b.append("errmsg", "Not enough data-bearing nodes: w: " + std::to_string(w.numberLong()) +
                           " asks for more members than this replica set has (one; replication "
                           "is not implemented yet)");
    return b.obj();
}

Status checkGenericArguments(const CommandRequest& request, const Command& command,
                             const GenericArgsRules& rules, bool transactionStatement,
                             ReadConcernLevel* readConcern) {
    const ClusterRole role = rules.role;
    const bool gossipsClusterTime = rules.gossipsClusterTime;
    *readConcern = ReadConcernLevel::kLocal;
    BsonView body = request.body;
    for (BsonElement e : body) {
        const GenericArgument* arg = findGenericArgument(e.fieldName());
        if (!arg) continue;
        if (arg->kind == GenericArgKind::kShardOnly && role != ClusterRole::kShard) {
            return Status(ErrorCodes::InvalidOptions,
                          "The field '" + std::string(arg->name) + "' (" +
                              std::string(arg->meaning) +
                              ") is set by routers for their shards, never by a client");
        }
        if (arg->name == "stmtIds" && request.commandName != "insert" &&
            request.commandName != "update" && request.commandName != "delete") {
            return Status(ErrorCodes::InvalidOptions,
                          "stmtIds is only taken by insert, update and delete, not by " +
                              std::string(command.name()));
        }
        // Transactions have their own refusal (service_entry_point.cpp), made before this.
        // A one-member replica set gossips cluster time (service_entry_point.cpp).
        if (arg->kind == GenericArgKind::kRefused && arg->name != "autocommit" &&
            arg->name != "startTransaction" &&
            !(gossipsClusterTime && arg->name == "$clusterTime")) {
            return refused(*arg);
        }
    }
    TRY_STATUS(checkApiParameters(body, command));
    // A transaction's read concern is the transaction's (service_entry_point.cpp checks it).
    if (!transactionStatement) {
        TRY_STATUS(
            checkReadConcern(body, command, readConcern, gossipsClusterTime, rules.snapshotReads));
    }
    TRY_STATUS(checkWriteConcern(body, rules.replicaSetMember));
    if (role == ClusterRole::kRouter) TRY_STATUS(checkReadPreference(body));
    return Status::OK();
}

}  // namespace tessera::command
