#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/failpoint.h"
#include "bson/bson_obj.h"

namespace tessera::command {

// MongoDB's `failCommand` failpoint (test commands only): makes chosen commands fail, hang or
// close the connection. Its data: {failCommands: [names], errorCode?, closeConnection?,
// errorLabels?, writeConcernError?, blockConnection?, blockTimeMS?, appName?}.
extern FailPoint failCommand;

struct FailCommandAction {
    bool closeConnection = false;
    std::optional<int> errorCode;
    // failCommand's `errorLabels`: when given (even []), the reply carries exactly these labels
    // instead of the ones the server would decide (MongoDB's semantics).
    std::optional<bson::BsonObj> errorLabels;
    bson::BsonObj writeConcernError;  // document, may be empty
    int blockTimeMS = 0;              // when blockConnection
};

// Evaluates failCommand for a command run by a client with `appName`; consumes one activation
// when it applies. Commands that drivers use for monitoring are never failed unless listed.
std::optional<FailCommandAction> evaluateFailCommand(std::string_view commandName,
                                                     std::string_view appName);

}  // namespace tessera::command
