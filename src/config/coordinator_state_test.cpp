#include "config/coordinator_state.h"

#include <gtest/gtest.h>

namespace tessera::config {
namespace {

using bson::fromJson;

TEST(CoordinatorState, PhaseNamesRoundTrip) {
    for (auto p : {CoordinatorPhase::kStart, CoordinatorPhase::kCloning,
                   CoordinatorPhase::kCommitted, CoordinatorPhase::kCleaned}) {
        auto parsed = parsePhase(phaseName(p));
        ASSERT_TRUE(parsed.isOK());
        EXPECT_EQ(parsed.getValue(), p);
    }
    EXPECT_EQ(phaseName(CoordinatorPhase::kCloning), "cloning");
    EXPECT_FALSE(parsePhase("bogus").isOK());
}

TEST(CoordinatorState, MoveRangeDocumentRoundTrip) {
    MoveRangeState s;
    s.ns = "db.c";
    s.min = fromJson(R"({"a": 0})");
    s.max = fromJson(R"({"a": 10})");
    s.id = moveRangeCoordinatorId(s.ns, s.min);
    s.from = "shard0";
    s.to = "shard1";
    s.phase = CoordinatorPhase::kCommitted;
    s.waitForDelete = true;
    bson::BsonObj doc = s.toBson();
    EXPECT_EQ(doc["type"].stringValue(), "moveRange");
    EXPECT_EQ(doc["phase"].stringValue(), "committed");
    EXPECT_EQ(s.id.rfind("moveRange-db.c-", 0), 0u);
    auto parsed = MoveRangeState::parse(doc);
    ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
    EXPECT_EQ(parsed.getValue().id, s.id);
    EXPECT_EQ(parsed.getValue().from, "shard0");
    EXPECT_EQ(parsed.getValue().to, "shard1");
    EXPECT_EQ(parsed.getValue().phase, CoordinatorPhase::kCommitted);
    EXPECT_TRUE(parsed.getValue().min.binaryEqual(s.min));
    EXPECT_TRUE(parsed.getValue().max.binaryEqual(s.max));
    EXPECT_TRUE(parsed.getValue().waitForDelete);
    // A movePrimary document is not a moveRange one.
    EXPECT_FALSE(MoveRangeState::parse(fromJson(
                                           R"({"_id": "x", "type": "movePrimary", "db": "d",
                                               "from": "a", "to": "b", "phase": "start"})"))
                     .isOK());
}

TEST(CoordinatorState, MovePrimaryDocumentRoundTrip) {
    MovePrimaryState s;
    s.db = "db";
    s.id = movePrimaryCoordinatorId("db");
    s.from = "shard0";
    s.to = "shard1";
    s.phase = CoordinatorPhase::kCloning;
    auto parsed = MovePrimaryState::parse(s.toBson());
    ASSERT_TRUE(parsed.isOK());
    EXPECT_EQ(parsed.getValue().id, "movePrimary-db");
    EXPECT_EQ(parsed.getValue().db, "db");
    EXPECT_EQ(parsed.getValue().phase, CoordinatorPhase::kCloning);
    EXPECT_FALSE(
        MovePrimaryState::parse(fromJson(R"({"_id": "x", "type": "movePrimary"})")).isOK());
}

TEST(CoordinatorState, PlacementDdlDocumentRoundTrip) {
    PlacementDdlState s;
    s.type = "shardCollection";
    s.target = "db.c";
    s.id = placementDdlCoordinatorId(s.type, s.target);
    s.shards = {"shard0"};
    s.created = {"shard1", "shard2"};
    s.phase = CoordinatorPhase::kCommitted;
    auto parsed = PlacementDdlState::parse(s.toBson());
    ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
    EXPECT_EQ(parsed.getValue().id, "shardCollection-db.c");
    EXPECT_EQ(parsed.getValue().target, "db.c");
    EXPECT_EQ(parsed.getValue().shards, std::vector<std::string>{"shard0"});
    EXPECT_EQ(parsed.getValue().created, (std::vector<std::string>{"shard1", "shard2"}));
    EXPECT_EQ(parsed.getValue().phase, CoordinatorPhase::kCommitted);
    EXPECT_FALSE(PlacementDdlState::parse(fromJson(R"({"_id": "x", "type": "moveRange",
        "target": "a.b", "shards": [], "created": [], "phase": "start"})"))
                     .isOK());
    EXPECT_FALSE(PlacementDdlState::parse(fromJson(R"({"_id": "x", "type": "dropDatabase",
        "target": "a", "shards": [1], "created": [], "phase": "start"})"))
                     .isOK());
}

TEST(CoordinatorState, RecoveryAbortsBeforeCommitAndFinishesAfter) {
    EXPECT_EQ(recoveryAction(CoordinatorPhase::kStart, false), RecoveryAction::kAbort);
    EXPECT_EQ(recoveryAction(CoordinatorPhase::kCloning, false), RecoveryAction::kAbort);
    EXPECT_EQ(recoveryAction(CoordinatorPhase::kCommitted, false), RecoveryAction::kFinishCommit);
    EXPECT_EQ(recoveryAction(CoordinatorPhase::kCommitted, true), RecoveryAction::kFinishCommit);
    EXPECT_EQ(recoveryAction(CoordinatorPhase::kCleaned, true), RecoveryAction::kForget);
}

TEST(CoordinatorState, RecoveryTrustsTheCatalogOverAStalePhase) {
    // Crash after the catalog commit but before the phase update: the recipient's copy is the
    // only owned one, so the coordinator must finish, never abort.
    EXPECT_EQ(recoveryAction(CoordinatorPhase::kCloning, true), RecoveryAction::kFinishCommit);
}

// A failing coordinator: an unreachable shard is retried without counting, anything else counts;
// the waits grow and stay bounded; the bookkeeping is read back from the document.
TEST(CoordinatorState, FailurePolicy) {
    EXPECT_TRUE(isTransientCoordinatorError(Status(ErrorCodes::HostUnreachable, "down")));
    EXPECT_TRUE(isTransientCoordinatorError(Status(ErrorCodes::NetworkTimeout, "slow")));
    EXPECT_TRUE(isTransientCoordinatorError(Status(ErrorCodes::LockBusy, "held")));
    EXPECT_FALSE(isTransientCoordinatorError(Status(ErrorCodes::InternalError, "threw")));
    EXPECT_FALSE(isTransientCoordinatorError(Status(ErrorCodes::ExceededMemoryLimit, "oom")));
    EXPECT_FALSE(isTransientCoordinatorError(Status(ErrorCodes::BadValue, "bad")));
    std::chrono::milliseconds previous{0};
    for (int attempt = 1; attempt <= 20; ++attempt) {
        auto wait = coordinatorBackoff(attempt);
        EXPECT_GE(wait, previous);
        EXPECT_LE(wait, std::chrono::milliseconds(10000));
        previous = wait;
    }
    EXPECT_EQ(coordinatorBackoff(1), std::chrono::milliseconds(200));
    EXPECT_EQ(coordinatorBackoff(20), std::chrono::milliseconds(10000));

    CoordinatorRecovery none = CoordinatorRecovery::of(fromJson(R"({"_id": "x"})"));
    EXPECT_EQ(none.attempts, 0);
    EXPECT_FALSE(none.lastError.has_value());
    EXPECT_FALSE(none.abandoning);
    CoordinatorRecovery some = CoordinatorRecovery::of(fromJson(
        R"({"_id": "x", "recovery": {"attempts": 3, "abandoning": true,
            "lastError": {"code": 146, "codeName": "ExceededMemoryLimit", "errmsg": "oom"}}})"));
    EXPECT_EQ(some.attempts, 3);
    EXPECT_TRUE(some.abandoning);
    ASSERT_TRUE(some.lastError.has_value());
    EXPECT_TRUE(some.lastError->is(ErrorCodes::ExceededMemoryLimit));
    EXPECT_EQ(some.lastError->reason(), "oom");
}

}  // namespace
}  // namespace tessera::config
