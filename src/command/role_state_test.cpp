// ServiceContext::roleStateAs: a role's state is reached with its type, never by a blind cast.
#include <gtest/gtest.h>

#include "command/command.h"

namespace tessera::command {
namespace {

struct RouterLike final : RoleState {
    int routes = 3;
};
struct ShardLike final : RoleState {};

TEST(RoleState, IsReachedWithItsOwnTypeOnly) {
    ServiceContext service;
    EXPECT_EQ(service.roleStateAs<RouterLike>(), nullptr);  // a standalone has none
    RouterLike router;
    service.roleState = &router;
    ASSERT_NE(service.roleStateAs<RouterLike>(), nullptr);
    EXPECT_EQ(service.roleStateAs<RouterLike>()->routes, 3);
    EXPECT_EQ(service.roleStateAs<ShardLike>(), nullptr);  // a shard command on a router
}

}  // namespace
}  // namespace tessera::command
