#pragma once

#include "command/registry.h"

// The command families of a router process; registerRouterCommands (router.h) calls them all.
namespace tessera::router {

// hello/isMaster (as a mongos: msg "isdbgrid"), ping, buildInfo, serverStatus, getLog,
// configureFailPoint, endSessions, ... — the generic commands that need no storage.
void registerRouterGenericCommands(command::CommandRegistry& registry);
// enableSharding, shardCollection, split, mergeChunks, moveChunk/moveRange, movePrimary,
// addShard, listShards, getShardMap, flushRouterConfig, getShardVersion, balancer*, and the
// `config` database passthrough.
void registerRouterAdminCommands(command::CommandRegistry& registry);
// create, drop, dropDatabase, listDatabases, listCollections, createIndexes, listIndexes,
// dropIndexes, collMod, dbStats, collStats ...
void registerRouterDdlCommands(command::CommandRegistry& registry);
// insert, update, delete, findAndModify, bulkWrite.
void registerClusterWriteCommands(command::CommandRegistry& registry);
// find, getMore, killCursors, count, distinct, aggregate, explain.
void registerClusterReadCommands(command::CommandRegistry& registry);

}  // namespace tessera::router
