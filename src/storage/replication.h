#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "storage/engine.h"

// How an engine takes part in a replication group (src/repl/README.md, "Plan"): every write of a
// replicated engine is one committed batch of the group's log, applied by every member — the
// one whose writer proposed it included — in log order.
namespace tessera::storage {

class CommitLog {
  public:
    virtual ~CommitLog() = default;
    // Returns once `batch` (a RocksDB WriteBatch's bytes) is committed by the group and written
    // here by applyCommitted(…, fromElsewhere = false) — or with the group's error, in which case
    // the batch may still commit later and then arrives as one from elsewhere.
    virtual Status commit(std::string_view batch) = 0;
};

// Every later write of `engine` goes through `log` (nullptr: written directly, as a single node
// does today). Set before writes begin.
void setCommitLog(Engine& engine, CommitLog* log);

// Writes a committed batch together with its log index, in one RocksDB write (without syncing
// RocksDB's WAL: the group's log is the journal). `fromElsewhere`: no writer of this engine
// waits for the batch (another member's, or one whose writer gave up), so the engine also brings
// its in-memory catalog, counts and clock up to it.
Status applyCommitted(Engine& engine, std::string_view batch, uint64_t logIndex,
                      bool fromElsewhere);

// The log index of the last batch applied (0: none); durable with it.
StatusWith<uint64_t> committedLogIndex(const Engine& engine);

}  // namespace tessera::storage
