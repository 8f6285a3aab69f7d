#pragma once

// The phases of one request through ServiceEntryPoint::execute, in order (docs/protocols/
// request-lifecycle.md):
//
//   parse       command lookup, the transaction refusal, generic arguments, maxTimeMS,
//               session and transaction fields
//   admit       the cluster time (gossip, afterClusterTime), a snapshot read's time, the test
//               failpoints (failCommand, onPrimaryTransactionalWrite)
//   checkOut    a transaction statement's session (a participant's, or a router's)
//   run         the role's hooks, a replayed retryable write, the command itself (again for a
//               read that met a later commit, or a router's snapshot read a shard refused)
//   endStatement a transaction statement's outcome (a failed statement aborts it)
//   reply       the role's after-hook, the write concern (journal, writeConcernError), the
//               reply's labels and cluster time
//
// Each phase reads the role's RolePolicy and the request's Invocation; one that ends the
// request (an error, a closed connection, an inline request that would wait) says so in the
// Invocation and the phases after it do not run.

#include <chrono>
#include <optional>

#include "base/failpoint.h"
#include "command/command.h"
#include "command/error_labels.h"
#include "command/generic_args.h"
#include "command/role_policy.h"
#include "txn/session_transactions.h"
#include "txn/transaction_args.h"

namespace tessera::command {

// One request on its way through the phases.
class Invocation {
  public:
    Invocation(ServiceContext& service, CommandRequest& request, ClientState& client,
               bool inlineExecution);

    ServiceContext& service;
    // Of the service as it is now (main finishes setting it up after the entry point exists).
    const RolePolicy policy;
    CommandRequest& request;
    ClientState& client;
    const bool inlineExecution;  // on an io thread (ServiceEntryPoint::runInline)
    const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

    // parse
    Command* command = nullptr;
    OperationContext opCtx;
    ReadConcernLevel readConcern = ReadConcernLevel::kLocal;
    txn::TransactionArgs txnArgs;
    bool txnCommand = false;  // commitTransaction, abortTransaction, prepareTransaction
    LabelContext labels;      // error_labels.h: nothing written until run() starts

    // admit
    bson::BsonObj snapshotBody;       // a router's request at the time it picked for its shards
    bool routerSnapshotTime = false;  // the router picked it (the client named no atClusterTime)
    // The first statement of a router's transaction with afterClusterTime only: the time this
    // shard chose (txn::kTransactionReadTimestampField).
    std::optional<Timestamp> chosenReadTs;
    bson::BsonObj failCommandWriteConcernError;  // failCommand's, for a successful reply
    std::optional<bson::BsonObj> failCommandLabels;
    // failCommand acted on this request: its codes are this process's own, as the test meant
    // (a router's shutdown code is then not rewritten, withoutShutdownCodes).
    bool failCommandActed = false;
    bool closeAfterWrite = false;  // onPrimaryTransactionalWrite

    // checkOut
    txn::SessionTransactions::Checkout txnSession;
    bool routerStatement = false;

    // run
    Status status = Status::OK();
    bson::BsonBuilder reply;  // the command's fields, without `ok`

    // How the request ends. A phase that ends it early calls one of these.
    bool done() const { return _done; }
    // `reply` as it is (no labels, no cluster time): an error found while parsing.
    void endUnstamped(bson::BsonObj reply);
    // `reply` with its error labels and the role's cluster time fields (stamp()).
    void end(bson::BsonObj reply);
    void endWithError(const Status& status, bson::BsonView extra = bson::BsonView());
    // No reply: the connection closes (a test failpoint).
    void endClosingConnection();
    // Nothing was changed and the request would have waited on an io thread: the pool runs it.
    void endWouldBlock();

    std::optional<bson::BsonObj> result() { return std::move(_result); }
    bool closesConnection() const { return _closeConnection; }

    // The request's body at snapshot time `ts` (a router's snapshot read at the time it picked).
    void readSnapshotAt(Timestamp ts);

  private:
    // Error labels, the transaction read timestamp a shard chose, a router's atClusterTime, the
    // cluster time fields of the role.
    bson::BsonObj stamp(bson::BsonObj reply);

    bool _done = false;
    bool _closeConnection = false;
    std::optional<bson::BsonObj> _result;
};

void parse(Invocation& inv);
void admit(Invocation& inv);
void checkOut(Invocation& inv);
void run(Invocation& inv);
void endStatement(Invocation& inv);
void reply(Invocation& inv);

// MongoDB's test failpoint of retryable writes (entry_point_parse.cpp).
extern FailPoint onPrimaryTransactionalWrite;

// A read that may run again from the start: a command that takes a read concern (find, count,
// distinct, aggregate) and changes nothing (an aggregate without $out or $merge).
bool isRestartableRead(const CommandRequest& request);
// The writeConcernError a successful reply with `fields` gets: failCommand's, or the one of a
// write concern no one-member replica set can meet (unsatisfiableWriteConcernError); none when
// the reply has one already (a router's, from its shards).
std::optional<bson::BsonObj> writeConcernErrorFor(const Invocation& inv, bson::BsonView fields);
void appendWriteConcernError(const Invocation& inv, bson::BsonBuilder& reply,
                             const bson::BsonObj& concernError);

// The pieces of parse() the io thread's forwarding path (ServiceEntryPoint::tryForward) shares.
Status applyMaxTimeMS(bson::BsonView body, OperationContext& opCtx);
Status applySessionArgs(bson::BsonView body, OperationContext& opCtx);
// A client's $clusterTime advances this process's clock.
void observeClusterTime(bson::BsonView body);
// A router's time: its clock, which has seen every commit it acknowledged (never Timestamp(0)).
Timestamp routerTime();
// `reply` with operationTime and an (unsigned) $clusterTime.
bson::BsonObj withClusterTime(bson::BsonObj reply, Timestamp operationTime);
void countRequest(const CommandRequest& request);
void logSlow(std::chrono::steady_clock::time_point started, const CommandRequest& request,
             const Status& status);

}  // namespace tessera::command
