#include "command/exec/local_sessions.h"

#include <chrono>
#include <map>
#include <mutex>

#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "command/exec/pipeline_stage_list.h"
#include "command/exec/scan_stages.h"

namespace tessera::command::exec {

namespace {

Mutex gMutex;
std::map<std::string, int64_t>& sessions() REQUIRES(gMutex) {
    static auto* s = new std::map<std::string, int64_t>();
    return *s;
}

// SHA-256 of the empty user name (no authentication), as MongoDB's session `uid`.
constexpr unsigned char kEmptyUserSha256[32] = {
    0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
    0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55};

}  // namespace

void recordLocalSession(const std::string& lsid) {
    int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    MutexLock lock(gMutex);
    sessions()[lsid] = now;
}

void forgetLocalSession(const std::string& lsid) {
    MutexLock lock(gMutex);
    sessions().erase(lsid);
}

std::vector<bson::BsonObj> listLocalSessions() {
    MutexLock lock(gMutex);
    std::vector<bson::BsonObj> out;
    for (const auto& [id, lastUse] : sessions()) {
        bson::BsonBuilder b;
        b.startObject("_id")
            .appendBinary("id", 4, id)
            .appendBinary("uid", 0,
                          std::string_view(reinterpret_cast<const char*>(kEmptyUserSha256), 32))
            .end();
        b.appendDate("lastUse", lastUse);
        out.push_back(b.obj());
    }
    return out;
}

namespace {
StatusWith<std::unique_ptr<PlanStage>> parseListLocalSessions(const StageParseContext& ctx,
                                                              std::unique_ptr<PlanStage>) {
    if (ctx.spec().type() != bson::BsonType::Object) {
        return Status(
            ErrorCodes::TypeMismatch,
            "$listLocalSessions must take a nested object but found: " + ctx.spec().toString());
    }
    return std::unique_ptr<PlanStage>(
        std::make_unique<VectorSourceStage>(listLocalSessions(), "LIST_LOCAL_SESSIONS"));
}
}  // namespace

namespace stages {
const StageDescriptor kListLocalSessions{
    "$listLocalSessions",
    {.firstOnly = true, .collectionless = true, .allowedInFacet = false},
    &parseListLocalSessions};
}  // namespace stages

}  // namespace tessera::command::exec
