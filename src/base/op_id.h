#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/mutex.h"

namespace tessera {

// Operation ids: the `opid` every currentOp entry carries (MongoDB's OperationId; a router shows
// "<shard>:<opid>"), the id killOp takes. One process-wide sequence of positive 32-bit ids.
int32_t nextOpId();

// Stable ids for operations known by a key rather than by an object that could hold one (a
// tracked range, a coordinator's record, a persisted coordinator document): the id a key got
// when it was first listed is kept while it is listed. Thread-safe.
class KeyedOpIds {
  public:
    int32_t idFor(const std::string& key);
    // Forgets every key not in `listed` (the operations that ended since the last listing).
    void retainOnly(const std::vector<std::string>& listed);

  private:
    Mutex _mutex;
    std::map<std::string, int32_t> _ids GUARDED_BY(_mutex);
};

}  // namespace tessera
