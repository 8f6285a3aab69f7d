#include "txn/transaction_args.h"

#include <array>
#include <string>

namespace tessera::txn {

bool allowedInTransaction(std::string_view name) {
    static constexpr std::array<std::string_view, 17> kAllowed = {
        "find",
        "getMore",
        "killCursors",
        "aggregate",
        "distinct",
        "insert",
        "update",
        "delete",
        "findAndModify",
        "findandmodify",
        "commitTransaction",
        "abortTransaction",
        "prepareTransaction",
        "bulkWrite",
        "create",  // transaction_ddl.h
        "createIndexes",
        "_shardsvrRecordRetryableWrite",  // a shard's; src/shard/transaction_commands.cpp
    };
    for (std::string_view n : kAllowed) {
        if (n == name) return true;
    }
    return false;
}

bool isTransactionEndCommand(std::string_view name) {
    return name == "commitTransaction" || name == "abortTransaction" ||
           name == "prepareTransaction";
}

StatusWith<TransactionArgs> parseTransactionArgs(bson::BsonView body, std::string_view commandName,
                                                 bool hasLsid) {
    TransactionArgs args;
    bson::BsonElement autocommit = body["autocommit"];
    bson::BsonElement start = body["startTransaction"];
    bool txnCommand = isTransactionEndCommand(commandName);
    if (autocommit.eoo()) {
        if (!start.eoo()) {
            return Status(ErrorCodes::InvalidOptions,
                          "'startTransaction' requires 'autocommit' to be false");
        }
        if (txnCommand) {
            return Status(
                ErrorCodes::InvalidOptions,
                std::string(commandName) + " must be run within a transaction (autocommit: false)");
        }
        return args;
    }
    if (autocommit.type() != bson::BsonType::Bool || autocommit.boolValue()) {
        return Status(ErrorCodes::InvalidOptions, "Specifying autocommit=true is not allowed.");
    }
    if (!hasLsid || !body.hasField("txnNumber")) {
        return Status(ErrorCodes::InvalidOptions,
                      "'autocommit' is only allowed with a session (lsid) and a txnNumber");
    }
    args.statement = true;
    if (!start.eoo()) {
        if (start.type() != bson::BsonType::Bool || !start.boolValue()) {
            return Status(ErrorCodes::InvalidOptions,
                          "'startTransaction' must be true when present");
        }
        args.start = true;
    }
    if (!allowedInTransaction(commandName)) {
        return Status(
            ErrorCodes::OperationNotSupportedInTransaction,
            "Cannot run '" + std::string(commandName) + "' in a multi-document transaction.");
    }
    if (args.start && txnCommand) {
        return Status(ErrorCodes::InvalidOptions,
                      std::string(commandName) + " cannot start a transaction");
    }
    if (body.hasField("writeConcern") && !txnCommand) {
        return Status(ErrorCodes::InvalidOptions,
                      "Cannot set a write concern on a statement of a multi-document transaction; "
                      "set it on commitTransaction or abortTransaction");
    }
    bson::BsonElement rc = body["readConcern"];
    if (!rc.eoo()) {
        if (!args.start) {
            return Status(ErrorCodes::InvalidOptions,
                          "Only the first command in a transaction may specify a readConcern");
        }
        if (!rc.isObject()) {
            return Status(ErrorCodes::TypeMismatch,
                          "BSON field 'readConcern' is the wrong type, expected type 'object'");
        }
        std::string_view level = "local";
        for (bson::BsonElement e : rc.objValue()) {
            if (e.fieldName() == "level" && e.type() == bson::BsonType::String) {
                level = e.stringValue();
            } else if (e.fieldName() == "afterClusterTime" &&
                       e.type() == bson::BsonType::Timestamp) {
                // A node waited for it before the transaction begins (execute); a router reads
                // at or after it.
                args.afterClusterTime = Timestamp{e.timestampValue()};
            } else if (e.fieldName() == "atClusterTime" && e.type() == bson::BsonType::Timestamp) {
                args.atClusterTime = Timestamp{e.timestampValue()};
            } else if (e.fieldName() != "provenance") {
                return Status(ErrorCodes::InvalidOptions,
                              "readConcern." + std::string(e.fieldName()) +
                                  " is not supported in a transaction by this Tessera version");
            }
        }
        if (level != "local" && level != "majority" && level != "snapshot") {
            return Status(ErrorCodes::InvalidOptions,
                          "The readConcern level must be either 'local', 'majority' or "
                          "'snapshot' in a multi-document transaction");
        }
        args.readConcernLocal = level == "local";
        if (args.atClusterTime && level != "snapshot") {
            return Status(ErrorCodes::InvalidOptions,
                          "readConcern.atClusterTime is only valid with level 'snapshot'");
        }
    }
    return args;
}

}  // namespace tessera::txn
