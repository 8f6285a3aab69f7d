#include "net/replica_set_monitor.h"

#include <algorithm>

#include "bson/bson_builder.h"
#include "net/remote_client.h"

namespace tessera::net {

StatusWith<ConnectionString> ConnectionString::parse(std::string_view text) {
    ConnectionString cs;
    std::string_view list = text;
    if (const size_t slash = text.find('/'); slash != std::string_view::npos) {
        cs.setName = std::string(text.substr(0, slash));
        if (cs.setName.empty()) {
            return Status(ErrorCodes::FailedToParse,
                          "a replica set connection string needs a set name before '/', got '" +
                              std::string(text) + "'");
        }
        list = text.substr(slash + 1);
    }
    for (bool more = !list.empty(); more;) {
        const size_t comma = list.find(',');
        std::string_view host = list.substr(0, comma);
        TRY_STATUS(parseHostAndPort(host).getStatus());  // an empty one too ("a:1,", "a:1,,b:2")
        cs.hosts.emplace_back(host);
        more = comma != std::string_view::npos;
        if (more) list = list.substr(comma + 1);
    }
    if (cs.hosts.empty()) {
        return Status(
            ErrorCodes::FailedToParse,
            "a connection string needs at least one host:port, got '" + std::string(text) + "'");
    }
    if (!cs.isReplicaSet() && cs.hosts.size() > 1) {
        return Status(ErrorCodes::FailedToParse,
                      "several hosts need a replica set name (name/h1:p1,h2:p2), got '" +
                          std::string(text) + "'");
    }
    return cs;
}

std::string ConnectionString::toString() const {
    std::string s = setName.empty() ? std::string() : setName + "/";
    for (size_t i = 0; i < hosts.size(); ++i) s += (i ? "," : "") + hosts[i];
    return s;
}

bool isReplicaSetTarget(std::string_view target) {
    return target.find('/') != std::string_view::npos;
}

bool refusedAsNotPrimary(int code) {
    return code == static_cast<int>(ErrorCodes::NotWritablePrimary) ||
           code == static_cast<int>(ErrorCodes::NotPrimaryNoSecondaryOk) ||
           code == static_cast<int>(ErrorCodes::NotPrimaryOrSecondary);
}

bool primaryMayHaveChanged(int code) {
    return code == static_cast<int>(ErrorCodes::InterruptedDueToReplStateChange) ||
           code == static_cast<int>(ErrorCodes::PrimarySteppedDown) ||
           code == static_cast<int>(ErrorCodes::ShutdownInProgress) ||
           code == static_cast<int>(ErrorCodes::InterruptedAtShutdown);
}

bool safeToSendAgain(bson::BsonView cmd) {
    const std::string_view name = cmd.firstElement().fieldName();
    const bool write = name == "insert" || name == "update" || name == "delete" ||
                       name == "findAndModify" || name == "findandmodify" || name == "bulkWrite";
    return write && cmd.hasField("txnNumber") && cmd.hasField("lsid") &&
           !cmd.hasField("autocommit");
}

ReplicaSetMonitor& ReplicaSetMonitor::get() {
    static ReplicaSetMonitor* monitor = new ReplicaSetMonitor();  // never destroyed: used at exit
    return *monitor;
}

StatusWith<ReplicaSetMonitor::SetView*> ReplicaSetMonitor::viewOf(std::string_view target) {
    if (auto it = _sets.find(target); it != _sets.end()) return &it->second;
    ASSIGN_OR_RETURN(ConnectionString seeds, ConnectionString::parse(target));
    if (!seeds.isReplicaSet()) {
        return Status(ErrorCodes::FailedToParse,
                      "'" + std::string(target) + "' is not a replica set connection string");
    }
    SetView view;
    view.members = seeds.hosts;
    view.seeds = std::move(seeds);
    return &_sets.emplace(std::string(target), std::move(view)).first->second;
}

std::optional<std::string> ReplicaSetMonitor::knownPrimary(std::string_view target) const {
    MutexLock lock(_mutex);
    auto it = _sets.find(target);
    return it == _sets.end() ? std::nullopt : it->second.primary;
}

StatusWith<std::vector<std::string>> ReplicaSetMonitor::membersToAsk(std::string_view target) {
    MutexLock lock(_mutex);
    ASSIGN_OR_RETURN(SetView * view, viewOf(target));
    std::vector<std::string> hosts;
    if (view->named) hosts.push_back(*view->named);
    for (const std::string& m : view->members) {
        if (std::find(hosts.begin(), hosts.end(), m) == hosts.end()) hosts.push_back(m);
    }
    return hosts;
}

std::optional<std::string> ReplicaSetMonitor::noteHello(std::string_view target,
                                                        std::string_view host,
                                                        bson::BsonView reply) {
    MutexLock lock(_mutex);
    auto found = viewOf(target);
    if (!found.isOK()) return std::nullopt;
    SetView& view = *found.getValue();
    bson::BsonElement setName = reply["setName"];
    if (setName.type() != bson::BsonType::String || setName.stringValue() != view.seeds.setName) {
        return std::nullopt;
    }
    if (bson::BsonElement hosts = reply["hosts"]; hosts.isArray()) {
        for (bson::BsonElement h : hosts.objValue()) {
            if (h.type() != bson::BsonType::String) continue;
            std::string member(h.stringValue());
            if (std::find(view.members.begin(), view.members.end(), member) == view.members.end()) {
                view.members.push_back(std::move(member));
            }
        }
    }
    if (reply["isWritablePrimary"].trueValue() || reply["ismaster"].trueValue()) {
        view.primary = std::string(host);
        view.named.reset();
        return view.primary;
    }
    if (bson::BsonElement primary = reply["primary"];
        primary.type() == bson::BsonType::String && primary.stringValue() != host) {
        view.named = std::string(primary.stringValue());
    }
    return std::nullopt;
}

void ReplicaSetMonitor::forgetPrimary(std::string_view target, std::string_view host) {
    MutexLock lock(_mutex);
    auto it = _sets.find(target);
    if (it == _sets.end()) return;
    if (it->second.primary == host) it->second.primary.reset();
    if (it->second.named == host) it->second.named.reset();
}

bool prefersPrimary(bson::BsonView cmd) {
    bson::BsonElement pref = cmd["$readPreference"];
    if (!pref.isObject()) return false;
    bson::BsonElement mode = pref.objValue()["mode"];
    return mode.type() == bson::BsonType::String && mode.stringValue() == "primaryPreferred";
}

bool ReplicaSetMonitor::sendAgain(std::string_view target, std::string_view host,
                                  const StatusWith<bson::BsonObj>& reply, bool sent,
                                  bson::BsonView cmd) {
    const int code = reply.isOK() ? replyStatus(reply.getValue()).code() : reply.getStatus().code();
    const bool refused = reply.isOK() && refusedAsNotPrimary(code);
    const bool unknown = !reply.isOK() || primaryMayHaveChanged(code);
    if (refused || unknown) forgetPrimary(target, host);
    return refused || (!reply.isOK() && !sent) || (unknown && safeToSendAgain(cmd));
}

Status ReplicaSetMonitor::noPrimaryFound(std::string_view target, const Status& lastError) {
    return Status(
        ErrorCodes::FailedToSatisfyReadPreference,
        "Could not find host matching read preference { mode: \"primary\" } for set " +
            std::string(target) +
            (lastError.isOK() ? std::string() : " (last error: " + lastError.reason() + ")"));
}

bson::BsonObj primaryDiscoveryHello() {
    bson::BsonBuilder b;
    b.append("hello", 1);
    return b.obj();
}

}  // namespace tessera::net
