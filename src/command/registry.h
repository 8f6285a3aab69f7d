#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "command/command.h"

namespace tessera::command {

// Name → command. Lookup is exact (MongoDB's command names are case-sensitive; aliases cover
// the legacy spellings such as "ismaster").
class CommandRegistry {
  public:
    // A command of a name registered before replaces that one (and its aliases): a role's
    // command — a shard's currentOp — takes the place of the generic one.
    void add(std::unique_ptr<Command> command);
    // nullptr when unknown.
    Command* find(std::string_view name) const;
    std::vector<const Command*> all() const;

  private:
    std::vector<std::unique_ptr<Command>> _commands;
    std::map<std::string, Command*, std::less<>> _byName;
};

// Registers every command of a single-node server. Each family has its own registration
// function, defined next to its commands.
void registerAllCommands(CommandRegistry& registry);

void registerHandshakeCommands(CommandRegistry& registry);    // hello, ping, buildInfo, ...
void registerDiagnosticCommands(CommandRegistry& registry);   // serverStatus, getLog, ...
void registerReplSetCommands(CommandRegistry& registry);      // replSetGetStatus, rs.* helpers
void registerInitialSyncCommands(CommandRegistry& registry);  // _replSync*: a copy for a member
void registerTestCommands(CommandRegistry& registry);         // configureFailPoint
void registerDatabaseCommands(CommandRegistry& registry);    // listDatabases, dropDatabase, dbStats
void registerCollectionCommands(CommandRegistry& registry);  // create, drop, listCollections, ...
void registerIndexCommands(CommandRegistry& registry);       // createIndexes, listIndexes, ...
void registerSessionCommands(CommandRegistry& registry);     // endSessions, ...
void registerCurrentOpCommand(CommandRegistry& registry);    // currentOp (transactions)
void registerCrudCommands(CommandRegistry& registry);        // insert, find, update, delete, ...
void registerFsyncCommand(CommandRegistry& registry);        // fsync (flush to data files)

}  // namespace tessera::command
