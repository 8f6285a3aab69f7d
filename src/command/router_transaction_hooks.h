#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "txn/transaction_args.h"

namespace tessera::command {

struct OperationContext;

// The router's side of transactions (router/transaction_router.h), which the entry point hands
// each statement of a transaction on a router process.
class RouterTransactionHooks {
  public:
    virtual ~RouterTransactionHooks() = default;
    // Checks the router's session out for the statement (a second statement of the session
    // waits) and makes its transaction the one the statement's shard requests join: the
    // statement is the operation's (OperationContext::routerStatement). Errors:
    // TransactionTooOld, NoSuchTransaction, ... as on a shard.
    virtual Status beginStatement(OperationContext& opCtx, const txn::TransactionArgs& args,
                                  std::string_view commandName) = 0;
    // Ends the operation's statement: a failed statement aborts the transaction on every
    // participant. Called exactly once after a successful beginStatement.
    virtual void endStatement(OperationContext& opCtx, const Status& status) = 0;
    // commitTransaction / abortTransaction of the statement's transaction (run between
    // beginStatement and endStatement); `cmd` is the client's command.
    virtual Status commit(OperationContext& opCtx, bson::BsonView cmd,
                          bson::BsonBuilder& reply) = 0;
    virtual Status abort(OperationContext& opCtx, bson::BsonBuilder& reply) = 0;
    // Fields a successful reply of the statement carries (the recoveryToken), appended before
    // endStatement.
    virtual void appendToReply(OperationContext& opCtx, bson::BsonBuilder& reply) = 0;
    // endSessions / killSessions: forgets the session, aborting its unfinished transaction.
    virtual void endSession(const std::string& lsid) = 0;
    // killAllSessions: endSession of every session this router knows.
    virtual void killAll() = 0;
};

}  // namespace tessera::command
