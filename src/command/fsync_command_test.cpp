#include <gtest/gtest.h>

#include "command/crud_test_util.h"

namespace tessera::command {
namespace {

class FsyncCommandTest : public test::CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        registerFsyncCommand(registry);
    }
};

TEST_F(FsyncCommandTest, FlushesAndAnswersLikeMongoDB) {
    ok(R"({"insert": "c", "documents": [{"_id": 1}, {"_id": 2}]})");
    test::CommandResult r = run(R"({"fsync": 1})", {}, "admin");
    ASSERT_TRUE(r.ok()) << r.status.toString();
    EXPECT_EQ(r.reply["numFiles"].numberInt(), 1);
    EXPECT_EQ(findAll(R"({"find": "c"})").size(), 2u);
}

TEST_F(FsyncCommandTest, LockIsRefusedWithWhatToDoInstead) {
    test::CommandResult r = run(R"({"fsync": 1, "lock": true})", {}, "admin");
    EXPECT_EQ(r.status.code(), static_cast<int>(ErrorCodes::NotImplemented));
    EXPECT_NE(r.status.reason().find("without lock"), std::string::npos) << r.status.reason();
    EXPECT_TRUE(run(R"({"fsync": 1, "lock": false})", {}, "admin").ok());
    EXPECT_EQ(run(R"({"fsync": 1, "lock": "yes"})", {}, "admin").status.code(),
              static_cast<int>(ErrorCodes::TypeMismatch));
}

}  // namespace
}  // namespace tessera::command
