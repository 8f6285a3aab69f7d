#pragma once

// The config server's long-running DDL operations as coordinators (MongoDB's
// ShardingDDLCoordinator; docs/protocols/ddl-coordinators.md): one class per operation, on one
// small base. Each keeps its state in one document of config.system.coordinators
// (coordinator_state.h), written before each phase's side effects are made durable elsewhere, so
// that whoever takes it up again decides from the phase — and the catalog — to finish it or to
// undo it:
//
//   run()      the live operation, from its first phase to its reply;
//   recover()  the same operation resumed from its document after an interruption: a restart,
//              an attempt that failed midway, and (with replication) a new primary;
//   abandon()  after kMaxCoordinatorAttempts failed attempts: releases what it holds and leaves
//              its placement old or new, never both (docs/protocols/ddl-coordinators.md "When a
//              coordinator fails").
//
// ConfigServerImpl only takes the DDL locks, counts the attempts and backs off
// (runCoordinator, recoverCoordinator in coordinator_recovery.cpp); what each operation does is
// its class's: MoveRangeCoordinator (migrations), MovePrimaryCoordinator,
// RefineShardKeyCoordinator, and the placement DDL coordinators of shardCollection,
// dropCollection and dropDatabase. A shard's drain is no coordinator: its state is config.shards
// {draining} and the balancer's rounds its steps (ddl_shard_removal.cpp).

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::config {

class ConfigServerImpl;

// How a resumed coordinator ended.
enum class CoordinatorOutcome {
    kFinished,   // its operation took effect
    kAborted,    // undone: the placement is as before
    kAbandoned,  // failed kMaxCoordinatorAttempts times: released and forgotten
    kGone,       // its document was gone (another run settled it)
};

// Runs one best-effort step of abandoning a coordinator: its failure is logged, never stops the
// others.
using BestEffort = std::function<void(std::string_view what, const std::function<Status()>& step)>;

// What a coordinator runs under: the DDL lock of a collection, or of a whole database.
struct CoordinatorTarget {
    std::string name;  // a namespace, or a database
    bool database = false;
};

class Coordinator {
  public:
    virtual ~Coordinator() = default;
    Coordinator(const Coordinator&) = delete;
    Coordinator& operator=(const Coordinator&) = delete;

    // Its document's _id, and its type ("moveRange", "movePrimary", ...).
    virtual const std::string& id() const = 0;
    virtual std::string_view type() const = 0;
    virtual CoordinatorTarget target() const = 0;

    // The live operation, its document already written: the client's reply.
    virtual Status run() = 0;
    // Resumed from its document: what its phase and the catalog say — finish or undo it.
    virtual StatusWith<CoordinatorOutcome> recover() = 0;
    // Releases what it holds, each step on its own (its document is removed by the caller).
    virtual void abandon(const BestEffort& step) = 0;

    // The coordinator a document of config.system.coordinators describes; InvalidOptions for a
    // type this version does not know (left in place).
    static StatusWith<std::unique_ptr<Coordinator>> fromDocument(ConfigServerImpl& config,
                                                                 const bson::BsonObj& doc);
    // What a document locks, without parsing the rest of it (currentOp, recovery).
    static std::optional<CoordinatorTarget> targetOf(bson::BsonView doc);

  protected:
    explicit Coordinator(ConfigServerImpl& config) : _config(config) {}

    // Replaces its document with `doc` (a step: the failpoint coordinatorStepThrows may throw
    // here first).
    Status save(const bson::BsonObj& doc);
    // Removes its document: the operation is over.
    Status forget();

    ConfigServerImpl& _config;
};

}  // namespace tessera::config
