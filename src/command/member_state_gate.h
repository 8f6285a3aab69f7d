#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "command/command.h"

// Which commands a replica set member serves when it is not the writable primary — MongoDB's
// Command::secondaryAllowed, as one table (member_state_gate.cpp) instead of a flag on every
// command: a secondary refuses writes with NotWritablePrimary (10107) and reads whose client did
// not allow a secondary (a read preference other than `primary`) with NotPrimaryNoSecondaryOk
// (13435); both carry the labels that make drivers retry on the new primary.
namespace tessera::command {

enum class SecondaryAllowed {
    kAlways,  // the handshake, diagnostics, the replica set's own commands, cursors' ends
    kOptIn,   // reads: with a read preference that allows a secondary
    kNever,   // writes, DDL, transactions, anything else
};

SecondaryAllowed secondaryAllowed(const CommandRequest& request);

// The refusal of `request` on a member that is not the writable primary, or OK. Only requests of
// client connections are gated: the server's own in-process commands (ServiceEntryPoint::
// runCommand without a client — a new primary's step-up loading and repairing its role's state
// before clients may write) pass, and their writes are refused by the engine's commit log on a
// member that does not lead.
Status checkMemberState(const ServiceContext& service, const CommandRequest& request,
                        const ClientState& client);

// A write command whose statement failed because this member stopped being the primary
// (NotWritablePrimary, InterruptedDueToReplStateChange among its writeErrors) fails as a whole
// with that error, as MongoDB's interrupted operation does, so that drivers see a retryable error
// instead of a statement's: a retryable write's retry then skips the statements that did run.
std::optional<Status> replStateChangeOf(bson::BsonView reply);

// The command names the table lists (each must be a registered command: a test checks it).
std::vector<std::string_view> secondaryTableNames();

}  // namespace tessera::command
