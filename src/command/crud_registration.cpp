#include "command/collation_util.h"
#include "command/crud_commands.h"
#include "command/registry.h"

namespace tessera::command {

void registerCrudCommands(CommandRegistry& registry) {
    installCollationSupport();
    registry.add(makeFindCommand());
    registry.add(makeGetMoreCommand());
    registry.add(makeKillCursorsCommand());
    registry.add(makeInsertCommand());
    registry.add(makeUpdateCommand());
    registry.add(makeDeleteCommand());
    registry.add(makeFindAndModifyCommand());
    registry.add(makeCountCommand());
    registry.add(makeDistinctCommand());
    registry.add(makeExplainCommand());
    registry.add(makeAggregateCommand());
    registry.add(makeCollStatsCommand());
    registry.add(makeBulkWriteCommand());
    registry.add(makeCollModCommand());
}

}  // namespace tessera::command
