#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::net {

// Where a command goes: one process ("host:port") or a replica set in MongoDB's form
// ("name/host1:port1,host2:port2"), which is reached at its primary.
struct ConnectionString {
    std::string setName;             // empty: one process
    std::vector<std::string> hosts;  // at least one "host:port"

    // FailedToParse on an empty set name, an empty member list or a member that is not
    // host:port.
    static StatusWith<ConnectionString> parse(std::string_view text);
    bool isReplicaSet() const { return !setName.empty(); }
    std::string toString() const;
};

// Whether `target` names a replica set ("name/…") rather than one process.
bool isReplicaSetTarget(std::string_view target);

// How long a command sent to a replica set waits for the set to have a primary (an election in
// progress) before it fails with FailedToSatisfyReadPreference, as mongos's
// defaultFindReplicaSetHostTimeoutMS does.
inline constexpr std::chrono::milliseconds kFindPrimaryTimeout{15000};

// Whether `cmd` carries `$readPreference: {mode: "primaryPreferred"}`: a read that a set's
// secondary may answer when the set has no primary.
bool prefersPrimary(bson::BsonView cmd);

// A reply code that says its member refused the command before running it because it is not the
// primary (NotWritablePrimary 10107, NotPrimaryNoSecondaryOk 13435, NotPrimaryOrSecondary
// 13436): the command may be sent to the new primary.
bool refusedAsNotPrimary(int code);
// A code after which the member may have stopped being primary while the command ran
// (InterruptedDueToReplStateChange 11602, PrimarySteppedDown 189, ShutdownInProgress 91,
// InterruptedAtShutdown 11600): the next command looks for the primary again; this one's outcome
// is unknown and is not sent again here.
bool primaryMayHaveChanged(int code);

// Whether `cmd` may be sent to a set's next primary even when its outcome on the last one is
// unknown (the connection broke after sending, or the primary stepped down while it ran): a
// retryable write — insert, update, delete, findAndModify or bulkWrite with a `txnNumber`, outside
// a transaction —, whose statements the set executes at most once (their records replicate with
// their writes, and a new primary answers a statement that already ran from its record).
bool safeToSendAgain(bson::BsonView cmd);

// Which member of each replica set this process talks to is that set's primary: learnt from the
// members' `hello` (a writable primary says so; a secondary names the primary it follows, which
// is asked next), forgotten when that member refuses a command as not primary, cannot be reached
// or was interrupted by a change of primary. One per process, so every client of the process
// (router → shards, config service → shards, shard → shard) shares one view. The clients
// (RemoteClient, AsyncRemoteClient) ask the members themselves; this only keeps what they
// learnt. Thread-safe.
class ReplicaSetMonitor {
  public:
    static ReplicaSetMonitor& get();

    // The primary last learnt for `target`, if any.
    std::optional<std::string> knownPrimary(std::string_view target) const;
    // The members to ask for the primary, the one a secondary last named first; then the seed
    // list and the members the set's hello replies listed. FailedToParse for a bad target.
    StatusWith<std::vector<std::string>> membersToAsk(std::string_view target);
    // What member `host` of `target` answered to hello. Returns `host` when it is the set's
    // writable primary (and remembers it). A reply of another set (a member reused elsewhere) is
    // ignored.
    std::optional<std::string> noteHello(std::string_view target, std::string_view host,
                                         bson::BsonView reply);
    // `host` refused or failed a command as `target`'s primary: it is no longer taken for it.
    void forgetPrimary(std::string_view target, std::string_view host);
    // After one attempt of `cmd` at `host`, taken for `target`'s primary: forgets that primary
    // when the attempt says it may no longer be (refused as not primary, unreachable,
    // interrupted), and answers whether the command goes to the next primary — when it certainly
    // did not run (refused, or never `sent`) or when running it twice is harmless
    // (safeToSendAgain). Anything else with an unknown outcome goes back to the caller.
    bool sendAgain(std::string_view target, std::string_view host,
                   const StatusWith<bson::BsonObj>& reply, bool sent, bson::BsonView cmd);

    // The error of a command that found no primary of `target` in time.
    static Status noPrimaryFound(std::string_view target, const Status& lastError);

  private:
    struct SetView {
        ConnectionString seeds;
        std::vector<std::string> members;    // seeds, then members learnt from hello's `hosts`
        std::optional<std::string> primary;  // a member that answered isWritablePrimary
        std::optional<std::string> named;    // the primary a secondary named, to ask first
    };
    StatusWith<SetView*> viewOf(std::string_view target) REQUIRES(_mutex);

    mutable Mutex _mutex;
    std::map<std::string, SetView, std::less<>> _sets GUARDED_BY(_mutex);
};

// The hello command a client sends a member to find the primary.
bson::BsonObj primaryDiscoveryHello();

}  // namespace tessera::net
