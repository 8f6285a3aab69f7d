#include "config/router_notifier.h"

#include <chrono>

#include "base/log.h"
#include "base/wall_clock.h"
#include "bson/bson_builder.h"

namespace tessera::config {
namespace {

// A router pings config.mongos every 10 s: one silent for a minute is gone or cut off.
constexpr int64_t kLiveRouterMillis = 60 * 1000;

net::RemoteClientOptions notifierOptions() {
    net::RemoteClientOptions options;
    options.connectTimeout = std::chrono::milliseconds(1000);
    options.requestTimeout = std::chrono::milliseconds(2000);
    options.maxIdlePerHost = 2;
    return options;
}

}  // namespace

RouterNotifier::RouterNotifier(LocalClient& local)
    : _local(local),
      _remote(notifierOptions()),
      _queue([this](const cluster::PlacementChanges& changes) { send(changes); }) {}

void RouterNotifier::send(const cluster::PlacementChanges& changes) {
    bson::BsonBuilder live;
    live.startObject("ping").appendDate("$gte", wallClockMillis() - kLiveRouterMillis).end();
    auto routers = _local.find("mongos", live.obj());
    if (!routers.isOK()) return;  // the shards' stale errors correct the routers
    bson::BsonBuilder b;
    b.appendInt32("_routerPlacementChanged", 1);
    b.startArray("databases");
    int i = 0;
    for (const std::string& db : changes.databases) b.appendString(std::to_string(i++), db);
    b.end();
    b.startArray("collections");
    i = 0;
    for (const std::string& ns : changes.collections) b.appendString(std::to_string(i++), ns);
    b.end();
    bson::BsonObj cmd = b.obj();
    std::vector<net::RemoteCommand> sends;
    for (const bson::BsonObj& router : routers.getValue()) {
        bson::BsonElement host = router["_id"];
        if (host.type() == bson::BsonType::String) {
            sends.push_back({std::string(host.stringValue()), "admin", cmd});
        }
    }
    if (sends.empty()) return;
    auto replies = _remote.runCommands(sends);
    for (size_t k = 0; k < replies.size(); ++k) {
        Status s =
            replies[k].isOK() ? net::replyStatus(replies[k].getValue()) : replies[k].getStatus();
        if (!s.isOK()) {
            log::info("SHARDING", 9160, "A router missed a placement announcement",
                      "{\"router\":\"" + log::jsonEscape(sends[k].host) + "\",\"error\":\"" +
                          log::jsonEscape(s.toString()) + "\"}");
        }
    }
}

}  // namespace tessera::config
