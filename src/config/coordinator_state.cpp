#include "config/coordinator_state.h"

#include <algorithm>

#include "bson/bson_builder.h"

namespace tessera::config {

using bson::BsonType;

std::string_view phaseName(CoordinatorPhase phase) {
    switch (phase) {
        case CoordinatorPhase::kStart:
            return "start";
        case CoordinatorPhase::kCloning:
            return "cloning";
        case CoordinatorPhase::kCriticalSection:
            return "criticalSection";
        case CoordinatorPhase::kCommitted:
            return "committed";
        case CoordinatorPhase::kCleaned:
            return "cleaned";
    }
    return "start";
}

StatusWith<CoordinatorPhase> parsePhase(std::string_view name) {
    for (auto p :
         {CoordinatorPhase::kStart, CoordinatorPhase::kCloning, CoordinatorPhase::kCriticalSection,
          CoordinatorPhase::kCommitted, CoordinatorPhase::kCleaned}) {
        if (phaseName(p) == name) return p;
    }
    return Status(ErrorCodes::FailedToParse,
                  "unknown coordinator phase '" + std::string(name) + "'");
}

namespace {

StatusWith<std::string> stringField(bson::BsonView doc, std::string_view name) {
    if (doc[name].type() != BsonType::String) {
        return Status(ErrorCodes::FailedToParse, "coordinator document without string '" +
                                                     std::string(name) + "': " + doc.toJson());
    }
    return std::string(doc[name].stringValue());
}

}  // namespace

bson::BsonObj MoveRangeState::toBson() const {
    bson::BsonBuilder b;
    b.appendString("_id", id)
        .appendString("type", "moveRange")
        .appendString("ns", ns)
        .appendObject("min", min)
        .appendObject("max", max)
        .appendString("from", from)
        .appendString("to", to)
        .appendString("phase", phaseName(phase))
        .appendBool("waitForDelete", waitForDelete)
        .appendString("migrationId", migrationId);
    return b.obj();
}

StatusWith<MoveRangeState> MoveRangeState::parse(bson::BsonView doc) {
    MoveRangeState s;
    ASSIGN_OR_RETURN(s.id, stringField(doc, "_id"));
    ASSIGN_OR_RETURN(std::string type, stringField(doc, "type"));
    if (type != "moveRange") return Status(ErrorCodes::FailedToParse, "not a moveRange document");
    ASSIGN_OR_RETURN(s.ns, stringField(doc, "ns"));
    ASSIGN_OR_RETURN(s.from, stringField(doc, "from"));
    ASSIGN_OR_RETURN(s.to, stringField(doc, "to"));
    ASSIGN_OR_RETURN(std::string phase, stringField(doc, "phase"));
    ASSIGN_OR_RETURN(s.phase, parsePhase(phase));
    if (!doc["min"].isObject() || !doc["max"].isObject()) {
        return Status(ErrorCodes::FailedToParse, "moveRange document without min/max");
    }
    s.min = doc["min"].objValue().copy();
    s.max = doc["max"].objValue().copy();
    s.waitForDelete = doc["waitForDelete"].trueValue();
    if (doc["migrationId"].type() == BsonType::String) {
        s.migrationId = std::string(doc["migrationId"].stringValue());
    }
    return s;
}

std::string moveRangeCoordinatorId(std::string_view ns, bson::BsonView min) {
    return "moveRange-" + std::string(ns) + "-" + min.toJson();
}

bson::BsonObj MovePrimaryState::toBson() const {
    bson::BsonBuilder b;
    b.appendString("_id", id)
        .appendString("type", "movePrimary")
        .appendString("db", db)
        .appendString("from", from)
        .appendString("to", to)
        .appendString("phase", phaseName(phase));
    return b.obj();
}

StatusWith<MovePrimaryState> MovePrimaryState::parse(bson::BsonView doc) {
    MovePrimaryState s;
    ASSIGN_OR_RETURN(s.id, stringField(doc, "_id"));
    ASSIGN_OR_RETURN(std::string type, stringField(doc, "type"));
    if (type != "movePrimary") {
        return Status(ErrorCodes::FailedToParse, "not a movePrimary document");
    }
    ASSIGN_OR_RETURN(s.db, stringField(doc, "db"));
    ASSIGN_OR_RETURN(s.from, stringField(doc, "from"));
    ASSIGN_OR_RETURN(s.to, stringField(doc, "to"));
    ASSIGN_OR_RETURN(std::string phase, stringField(doc, "phase"));
    ASSIGN_OR_RETURN(s.phase, parsePhase(phase));
    return s;
}

std::string movePrimaryCoordinatorId(std::string_view db) {
    return "movePrimary-" + std::string(db);
}

bson::BsonObj PlacementDdlState::toBson() const {
    bson::BsonBuilder b;
    b.appendString("_id", id).appendString("type", type).appendString("target", target);
    b.startArray("shards");
    for (size_t i = 0; i < shards.size(); ++i) b.appendString(std::to_string(i), shards[i]);
    b.end();
    b.startArray("created");
    for (size_t i = 0; i < created.size(); ++i) b.appendString(std::to_string(i), created[i]);
    b.end();
    b.appendString("phase", phaseName(phase));
    return b.obj();
}

StatusWith<PlacementDdlState> PlacementDdlState::parse(bson::BsonView doc) {
    PlacementDdlState s;
    ASSIGN_OR_RETURN(s.id, stringField(doc, "_id"));
    ASSIGN_OR_RETURN(s.type, stringField(doc, "type"));
    if (s.type != "shardCollection" && s.type != "dropCollection" && s.type != "dropDatabase") {
        return Status(ErrorCodes::FailedToParse, "not a placement DDL document: " + doc.toJson());
    }
    ASSIGN_OR_RETURN(s.target, stringField(doc, "target"));
    ASSIGN_OR_RETURN(std::string phase, stringField(doc, "phase"));
    ASSIGN_OR_RETURN(s.phase, parsePhase(phase));
    for (auto [field, out] : {std::pair{"shards", &s.shards}, std::pair{"created", &s.created}}) {
        if (!doc[field].isArray()) {
            return Status(ErrorCodes::FailedToParse,
                          "placement DDL document without array '" + std::string(field) + "'");
        }
        for (bson::BsonElement e : doc[field].objValue()) {
            if (e.type() != BsonType::String) {
                return Status(ErrorCodes::FailedToParse, "shard ids must be strings");
            }
            out->emplace_back(e.stringValue());
        }
    }
    return s;
}

PlacementDdlState PlacementDdlState::start(std::string type, std::string target,
                                           std::vector<std::string> shards) {
    PlacementDdlState state;
    state.id = placementDdlCoordinatorId(type, target);
    state.type = std::move(type);
    state.target = std::move(target);
    state.shards = std::move(shards);
    return state;
}

std::string placementDdlCoordinatorId(std::string_view type, std::string_view target) {
    return std::string(type) + "-" + std::string(target);
}

RecoveryAction recoveryAction(CoordinatorPhase phase, bool catalogNamesRecipient) {
    if (phase == CoordinatorPhase::kCleaned) return RecoveryAction::kForget;
    if (phase == CoordinatorPhase::kCommitted || catalogNamesRecipient) {
        return RecoveryAction::kFinishCommit;
    }
    return RecoveryAction::kAbort;
}

bool isTransientCoordinatorError(const Status& status) {
    switch (status.errorCode()) {
        case ErrorCodes::HostUnreachable:
        case ErrorCodes::HostNotFound:
        case ErrorCodes::NetworkTimeout:
        case ErrorCodes::SocketException:
        case ErrorCodes::ShutdownInProgress:
        case ErrorCodes::InterruptedAtShutdown:
        case ErrorCodes::LockBusy:
        case ErrorCodes::NotWritablePrimary:
        case ErrorCodes::PrimarySteppedDown:
        case ErrorCodes::InterruptedDueToReplStateChange:
            return true;
        default:
            return false;
    }
}

std::chrono::milliseconds coordinatorBackoff(int attempt) {
    constexpr std::chrono::milliseconds kBase{200};
    constexpr std::chrono::milliseconds kMax{10000};
    if (attempt <= 1) return kBase;
    const int doublings = std::min(attempt - 1, 10);
    return std::min(kMax, kBase * (int64_t{1} << doublings));
}

CoordinatorRecovery CoordinatorRecovery::of(bson::BsonView doc) {
    CoordinatorRecovery r;
    bson::BsonView rec = doc["recovery"].objValue();
    r.attempts = static_cast<int>(rec["attempts"].numberLong());
    r.abandoning = rec["abandoning"].trueValue();
    if (bson::BsonView e = rec["lastError"].objValue(); !e.isEmpty()) {
        r.lastError = Status(e["code"].numberInt(), std::string(e["errmsg"].stringValue()));
    }
    return r;
}

}  // namespace tessera::config
