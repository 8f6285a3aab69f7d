// Resuming, retrying and, as a last resort, abandoning the coordinators of
// config.system.coordinators (docs/protocols/ddl-coordinators.md): each
// document is resumed under the DDL locks its operation takes, so recovery runs next to new DDL
// on other namespaces; a step that throws or fails for a reason other than an unreachable shard
// counts as an attempt (counted in the document before it runs), and after
// kMaxCoordinatorAttempts the coordinator is abandoned — never a process that crashes at every
// restart on the same document.
#include <map>
#include <set>

#include "base/log.h"
#include "bson/bson_builder.h"
#include "config/config_server_impl.h"
#include "config/coordinator.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

TESSERA_FAIL_POINT_DEFINE(coordinatorStepThrows);

namespace {

// A busy lock means a live operation holds the namespace: its document is not orphaned (or will
// be looked at again in the next round).
constexpr std::chrono::seconds kLockWait{1};

std::string errorJson(const Status& s) {
    return "{\"code\":" + std::to_string(s.code()) + ",\"codeName\":\"" + s.codeName() +
           "\",\"errmsg\":\"" + log::jsonEscape(s.reason()) + "\"}";
}

BsonObj errorDoc(const Status& s) {
    BsonBuilder b;
    b.appendInt32("code", s.code()).append("codeName", s.codeName()).append("errmsg", s.reason());
    return b.obj();
}

// Runs `step`, turning an exception into its status.
template <typename Fn>
auto guarded(std::string_view what, Fn&& step) -> decltype(step()) {
    try {
        return step();
    } catch (...) {
        return statusFromCurrentException(what);
    }
}

}  // namespace

void ConfigServerImpl::coordinatorStep(std::string_view type) {
    auto fired = coordinatorStepThrows.shouldFailIf([&](const std::string& data) {
        if (data.empty()) return true;
        BsonView wanted(data.data());
        return wanted["type"].eoo() || wanted["type"].stringValue() == type;
    });
    if (fired) {
        throw std::runtime_error("failpoint coordinatorStepThrows: a " + std::string(type) +
                                 " coordinator step threw");
    }
}

StatusWith<CoordinatorOutcome> ConfigServerImpl::recoverCoordinator(const BsonObj& listed) {
    std::string id(listed["_id"].stringValue());
    // The locks first, then the document again: a live operation may have finished (and removed
    // it) while we waited.
    const std::optional<CoordinatorTarget> target = Coordinator::targetOf(listed);
    if (!target) {
        log::warning("SHARDING", 9122, "Unknown coordinator type; left in place",
                     "{\"id\":\"" + log::jsonEscape(id) + "\"}");
        return CoordinatorOutcome::kGone;
    }
    DdlLockManager::Guard lock;
    if (target->database) {
        ASSIGN_OR_RETURN(lock,
                         _ddlLocks.lockDatabase(target->name, "recovery of " + id, kLockWait));
    } else {
        ASSIGN_OR_RETURN(lock,
                         _ddlLocks.lockCollection(target->name, "recovery of " + id, kLockWait));
    }
    ASSIGN_OR_RETURN(auto current, _local.findOne("system.coordinators", idQuery(id)));
    if (!current) return CoordinatorOutcome::kGone;
    const BsonObj& doc = *current;
    const CoordinatorRecovery recovery = CoordinatorRecovery::of(doc);
    if (recovery.abandoning) {
        // Abandoning it was under way when the process stopped: only forget it now — whatever
        // that did is what may have stopped the process.
        TRY_STATUS(_local.remove("system.coordinators", idQuery(id), false).getStatus());
        log::warning("SHARDING", 9126, "Forgot a coordinator whose abandoning was interrupted",
                     "{\"id\":\"" + log::jsonEscape(id) + "\"}");
        return CoordinatorOutcome::kAbandoned;
    }
    if (recovery.attempts >= kMaxCoordinatorAttempts) {
        Status why = recovery.lastError.value_or(
            Status(ErrorCodes::InternalError, "the process stopped during every attempt"));
        abandonCoordinator(doc, why, recovery.attempts);
        return CoordinatorOutcome::kAbandoned;
    }
    // Counted before it runs: an attempt that takes the process down counts too.
    BsonBuilder inc;
    inc.startObject("$inc").appendInt32("recovery.attempts", 1).end();
    TRY_STATUS(_local.update("system.coordinators", idQuery(id), inc.obj(), false).getStatus());
    log::info("SHARDING", 9123, "Resuming an interrupted coordinator",
              "{\"id\":\"" + log::jsonEscape(id) +
                  "\",\"attempt\":" + std::to_string(recovery.attempts + 1) + "}");
    StatusWith<CoordinatorOutcome> outcome =
        guarded("coordinator " + id, [&]() -> StatusWith<CoordinatorOutcome> {
            coordinatorStep(doc["type"].stringValue());
            ASSIGN_OR_RETURN(std::unique_ptr<Coordinator> coordinator,
                             Coordinator::fromDocument(*this, doc));
            return coordinator->recover();
        });
    if (!outcome.isOK()) {
        const Status& s = outcome.getStatus();
        BsonBuilder u;
        u.startObject("$set").appendObject("recovery.lastError", errorDoc(s)).end();
        // An unreachable shard is not the coordinator's fault: not counted against it.
        if (isTransientCoordinatorError(s)) {
            u.startObject("$inc").appendInt32("recovery.attempts", -1).end();
        }
        auto saved = guarded("coordinator bookkeeping", [&] {
            return _local.update("system.coordinators", idQuery(id), u.obj(), false);
        });
        if (!saved.isOK()) {
            log::warning("SHARDING", 9127, "Could not record a coordinator's failed attempt",
                         "{\"id\":\"" + log::jsonEscape(id) +
                             "\",\"error\":" + errorJson(saved.getStatus()) + "}");
        }
    }
    return outcome;
}

void ConfigServerImpl::abandonCoordinator(const BsonObj& doc, const Status& why, int attempts) {
    const std::string id(doc["_id"].stringValue());
    const std::string_view type = doc["type"].stringValue();
    log::error("SHARDING", 9125, "Abandoning a coordinator that kept failing",
               "{\"id\":\"" + log::jsonEscape(id) + "\",\"attempts\":" + std::to_string(attempts) +
                   ",\"error\":" + errorJson(why) + "}");
    BsonBuilder mark;
    mark.startObject("$set").appendBool("recovery.abandoning", true).end();
    (void)guarded("coordinator bookkeeping", [&] {
        return _local.update("system.coordinators", idQuery(id), mark.obj(), false).getStatus();
    });
    // Release what it holds and leave the placement old or new, each step on its own: one that
    // fails does not stop the others.
    auto bestEffort = [&](std::string_view what, const std::function<Status()>& step) {
        Status s = guarded(what, step);
        if (!s.isOK()) {
            log::warning("SHARDING", 9128, "A step of abandoning a coordinator failed",
                         "{\"id\":\"" + log::jsonEscape(id) + "\",\"step\":\"" +
                             log::jsonEscape(what) + "\",\"error\":" + errorJson(s) + "}");
        }
    };
    auto coordinator =
        guarded("coordinator " + id, [&] { return Coordinator::fromDocument(*this, doc); });
    if (coordinator.isOK()) {
        coordinator.getValue()->abandon(bestEffort);
    } else {
        bestEffort("read the coordinator document", [&] { return coordinator.getStatus(); });
    }
    BsonBuilder details;
    details.append("coordinator", id)
        .appendElementAs(doc["phase"], "phase")
        .appendInt32("attempts", attempts)
        .appendObject("error", errorDoc(why));
    const std::optional<CoordinatorTarget> target = Coordinator::targetOf(doc);
    logChange(std::string(type) + ".abandoned", target ? target->name : id, details.obj());
    bestEffort("remove the coordinator document", [&] {
        return _local.remove("system.coordinators", idQuery(id), false).getStatus();
    });
}

Status ConfigServerImpl::runCoordinator(Coordinator& coordinator, DdlLockManager::Guard& lock) {
    const std::string id = coordinator.id();
    Status first = guarded("coordinator " + id, [&] { return coordinator.run(); });
    if (first.isOK()) return first;
    auto doc = guarded("coordinator bookkeeping",
                       [&] { return _local.findOne("system.coordinators", idQuery(id)); });
    if (doc.isOK() && !doc.getValue()) return first;  // it ended (aborted): its error is the reply
    // Interrupted midway: settled as recovery settles it, with its back-off, here — so the
    // client hears the outcome — while the background recovery may take it too (the locks
    // order them, the attempts are counted in the document).
    log::warning("SHARDING", 9124, "A coordinator failed midway; retrying it",
                 "{\"id\":\"" + log::jsonEscape(id) + "\",\"error\":" + errorJson(first) + "}");
    lock.release();
    Status last = first;
    for (int attempt = 1; attempt <= kMaxCoordinatorAttempts + 1; ++attempt) {
        if (!sleepUnlessShutdown(coordinatorBackoff(attempt))) break;
        auto current = guarded("coordinator bookkeeping",
                               [&] { return _local.findOne("system.coordinators", idQuery(id)); });
        if (!current.isOK()) {
            last = current.getStatus();
            continue;
        }
        if (!current.getValue()) return first;  // the background recovery settled it
        StatusWith<CoordinatorOutcome> outcome = recoverCoordinator(*current.getValue());
        if (!outcome.isOK()) {
            last = outcome.getStatus();
            continue;
        }
        switch (outcome.getValue()) {
            case CoordinatorOutcome::kFinished:
                return Status::OK();
            case CoordinatorOutcome::kAborted:
            case CoordinatorOutcome::kGone:
                return first;
            case CoordinatorOutcome::kAbandoned:
                return last.withContext(
                    "the operation failed " + std::to_string(kMaxCoordinatorAttempts) +
                    " times and was abandoned (its critical sections released, its placement "
                    "as the catalog says; see config.changelog)");
        }
    }
    return last.withContext(
        "the operation is still unfinished; the config server retries it in "
        "the background (currentOp lists it)");
}

bool ConfigServerImpl::sleepUnlessShutdown(std::chrono::milliseconds total) {
    auto until = std::chrono::steady_clock::now() + total;
    while (!_shutdown.load()) {
        if (std::chrono::steady_clock::now() >= until) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

void ConfigServerImpl::recoverCoordinators() {
    // Every coordinator document is inserted by its operation under that operation's DDL locks
    // and removed before they are released, so a document found under those locks has no live
    // operation: it was interrupted (a crash, or a shard that failed during an abort or cleanup).
    // Looked for at startup and every 10 s; one that failed is tried again after its back-off.
    std::map<std::string, std::chrono::steady_clock::time_point> notBefore;
    while (!_shutdown.load()) {
        auto docs = guarded("coordinator recovery",
                            [&] { return _local.find("system.coordinators", BsonView()); });
        auto wake = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        std::set<std::string> listed;
        for (const BsonObj& doc : docs.isOK() ? docs.getValue() : std::vector<BsonObj>{}) {
            if (_shutdown.load()) return;
            std::string id(doc["_id"].stringValue());
            listed.insert(id);
            auto now = std::chrono::steady_clock::now();
            if (auto it = notBefore.find(id); it != notBefore.end() && it->second > now) {
                wake = std::min(wake, it->second);
                continue;
            }
            StatusWith<CoordinatorOutcome> outcome =
                guarded("coordinator recovery", [&] { return recoverCoordinator(doc); });
            if (outcome.isOK() || outcome.getStatus().is(ErrorCodes::LockBusy)) {
                notBefore.erase(id);
                continue;
            }
            const int attempts = CoordinatorRecovery::of(doc).attempts + 1;
            notBefore[id] = now + coordinatorBackoff(attempts);
            wake = std::min(wake, notBefore[id]);
            log::warning("SHARDING", 9121, "Coordinator recovery failed, will retry",
                         "{\"id\":\"" + log::jsonEscape(id) +
                             "\",\"error\":" + errorJson(outcome.getStatus()) + "}");
        }
        if (!docs.isOK()) wake = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        std::erase_if(notBefore, [&](const auto& e) { return !listed.count(e.first); });
        auto now = std::chrono::steady_clock::now();
        sleepUnlessShutdown(std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
            wake - now, std::chrono::steady_clock::duration(std::chrono::milliseconds(50)))));
    }
}

std::vector<BsonObj> ConfigServerImpl::coordinatorCurrentOps() {
    auto docs =
        guarded("currentOp", [&] { return _local.find("system.coordinators", BsonView()); });
    std::vector<BsonObj> ops;
    std::vector<std::string> keys;
    if (!docs.isOK()) return ops;
    for (const BsonObj& doc : docs.getValue()) {
        const std::string id(doc["_id"].stringValue());
        const std::string type(doc["type"].stringValue());
        const std::optional<CoordinatorTarget> target = Coordinator::targetOf(doc);
        keys.push_back(id);
        BsonBuilder b;
        b.append("type", "op")
            .appendInt32("opid", _coordinatorOpIds.idFor(id))
            .append("desc", type + " coordinator")
            .appendBool("active", true)
            .append("op", "command")
            .append("ns", target ? target->name : "")
            .append("coordinator", id);
        b.startObject("command").append(type, target ? target->name : "").end();
        if (doc["phase"].type() == bson::BsonType::String) {
            b.appendElementAs(doc["phase"], "currentPhase");
        }
        const CoordinatorRecovery recovery = CoordinatorRecovery::of(doc);
        b.appendInt32("attempts", recovery.attempts)
            .appendInt32("maxAttempts", kMaxCoordinatorAttempts);
        if (recovery.lastError) b.appendObject("lastError", errorDoc(*recovery.lastError));
        ops.push_back(b.obj());
    }
    // Drains: the persisted state is config.shards {draining}, the balancer its steps.
    auto shards = guarded("currentOp", [&] { return allShards(); });
    for (const ShardEntry& s : shards.isOK() ? shards.getValue() : std::vector<ShardEntry>{}) {
        if (!s.draining) continue;
        const std::string key = "drain-" + s.id;
        keys.push_back(key);
        BsonBuilder b;
        b.append("type", "op")
            .appendInt32("opid", _coordinatorOpIds.idFor(key))
            .append("desc", "shard draining")
            .appendBool("active", true)
            .append("shard", s.id)
            .append("state", s.drainFailed() ? "failed" : "ongoing")
            .appendInt32("attempts", s.drainingFailures)
            .appendInt32("maxAttempts", kMaxCoordinatorAttempts);
        auto entry = _local.findOne("shards", idQuery(s.id));
        if (entry.isOK() && entry.getValue() &&
            (*entry.getValue())["drainingLastError"].isObject()) {
            b.appendElementAs((*entry.getValue())["drainingLastError"], "lastError");
        }
        ops.push_back(b.obj());
    }
    _coordinatorOpIds.retainOnly(keys);
    return ops;
}

}  // namespace tessera::config
