#pragma once

// currentOp: the operations in progress that a process tracks, as MongoDB's currentOp reports
// them. Every process but a router lists its sessions' open transactions (transactions.h); a
// shard adds its migrations, range deletions and the commits it coordinates (src/shard). Other
// commands in progress are not listed (README.md "Not done").

#include <memory>
#include <vector>

#include "base/status.h"
#include "bson/bson_element.h"
#include "bson/bson_obj.h"

namespace tessera::query {
class Matcher;
}

namespace tessera::command {

struct CommandRequest;

// currentOp's arguments: `idleSessions` (false: leave out the transactions between their
// statements, type "idleSession"), `$all` and `$ownOps` (without authentication every operation
// is the caller's own; an idle connection is not an operation here) and the generic arguments
// are carried out; every other field is a match filter on the reported operations, as MongoDB's.
class CurrentOpFilter {
  public:
    static StatusWith<CurrentOpFilter> parse(const CommandRequest& request);
    bool wants(const bson::BsonObj& op) const;

  private:
    std::shared_ptr<query::Matcher> _matcher;
    bool _idleSessions = true;
};

// The options of a $currentOp stage (mongosh's db.currentOp()), each a bool: `idleSessions` as
// the command's, `localOps` (a router's own operations: it lists none); `allUsers`,
// `idleConnections`, `idleCursors`, `backtrace`, `truncateOps` and `targetAllNodes` select
// nothing more here (every operation is the caller's own without authentication, idle
// connections and cursors are not listed operations, no report has a backtrace or is long
// enough to truncate, every listed operation is a primary's). Any other field: 40415.
struct CurrentOpStageOptions {
    bool idleSessions = true;
    bool localOps = false;
};
StatusWith<CurrentOpStageOptions> parseCurrentOpStage(const bson::BsonElement& spec);

}  // namespace tessera::command
