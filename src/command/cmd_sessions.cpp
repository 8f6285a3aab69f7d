// Logical session commands. Sessions carry no server state yet beyond what retryable writes
// will need (a later issue); these commands exist so drivers can end sessions cleanly.

#include <cstring>
#include <random>

#include "command/registry.h"
#include "command/reply_util.h"
#include "command/server_info.h"

namespace tessera::command {
namespace {

class EndSessionsCommand : public Command {
  public:
    std::string_view name() const override { return "endSessions"; }
    Status run(OperationContext&, const CommandRequest& request, bson::BsonBuilder&) override {
        if (!request.firstElement().isArray()) {
            return Status(ErrorCodes::TypeMismatch, "endSessions takes an array of session ids");
        }
        return Status::OK();
    }
};

class KillSessionsCommand : public Command {
  public:
    explicit KillSessionsCommand(std::string_view name) : _name(name) {}
    std::string_view name() const override { return _name; }
    Status run(OperationContext&, const CommandRequest&, bson::BsonBuilder&) override {
        return Status::OK();
    }

  private:
    std::string_view _name;
};

class StartSessionCommand : public Command {
  public:
    std::string_view name() const override { return "startSession"; }
    Status run(OperationContext&, const CommandRequest&, bson::BsonBuilder& reply) override {
        thread_local std::mt19937_64 rng{std::random_device{}()};
        std::string uuid(16, '\0');
        for (size_t i = 0; i < 16; i += 8) {
            uint64_t r = rng();
            std::memcpy(&uuid[i], &r, 8);
        }
        uuid[6] = static_cast<char>((uuid[6] & 0x0f) | 0x40);  // version 4
        uuid[8] = static_cast<char>((uuid[8] & 0x3f) | 0x80);  // RFC 4122 variant
        reply.startObject("id");
        appendUuid(reply, "id", uuid);
        reply.end();
        reply.appendInt32("timeoutMinutes", kLogicalSessionTimeoutMinutes);
        return Status::OK();
    }
};

}  // namespace

void registerSessionCommands(CommandRegistry& registry) {
    registry.add(std::make_unique<EndSessionsCommand>());
    registry.add(std::make_unique<KillSessionsCommand>("killSessions"));
    registry.add(std::make_unique<KillSessionsCommand>("killAllSessions"));
    registry.add(std::make_unique<KillSessionsCommand>("refreshSessions"));
    registry.add(std::make_unique<StartSessionCommand>());
}

}  // namespace tessera::command
