#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "command/command.h"
#include "storage/collection_writer.h"

namespace tessera::shard {

// The value of the storage side record a retryable write makes in its document write's own
// batch — {txnNum, reply} with `reply` exactly what the command answers for that write — or
// nullopt when the reply does not follow from one document write (several statements, other
// commands, a reply field the record cannot reproduce): that reply is persisted after the
// command instead. `commandName` is the canonical name (findandmodify → findAndModify).
//
// A write that writes nothing (no match, no change, an error before the write) calls no value
// function and so records nothing: retried, it does the same.
std::optional<storage::SideRecordScope::ValueFn> singleWriteRecordFn(
    const command::OperationContext& opCtx, const command::CommandRequest& request,
    std::string_view commandName, int64_t txnNumber);

}  // namespace tessera::shard
