#pragma once

#include <memory>

#include "command/command.h"

// Factories of the CRUD and query commands (one file each); registerCrudCommands() adds them.
namespace tessera::command {

std::unique_ptr<Command> makeFindCommand();
std::unique_ptr<Command> makeGetMoreCommand();
std::unique_ptr<Command> makeKillCursorsCommand();
std::unique_ptr<Command> makeInsertCommand();
std::unique_ptr<Command> makeUpdateCommand();
std::unique_ptr<Command> makeDeleteCommand();
std::unique_ptr<Command> makeFindAndModifyCommand();
std::unique_ptr<Command> makeCountCommand();
std::unique_ptr<Command> makeDistinctCommand();
std::unique_ptr<Command> makeExplainCommand();
std::unique_ptr<Command> makeAggregateCommand();
std::unique_ptr<Command> makeCollStatsCommand();
std::unique_ptr<Command> makeBulkWriteCommand();
std::unique_ptr<Command> makeCollModCommand();

}  // namespace tessera::command
