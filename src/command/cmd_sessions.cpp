// Logical session commands. Sessions carry no server state yet beyond what retryable writes
// will need (a later issue); these commands exist so drivers can end sessions cleanly.

#include <cstring>
#include <random>

#include "command/registry.h"
#include "command/reply_util.h"
#include "command/server_info.h"
#include "command/transactions.h"

namespace tessera::command {
namespace {

// Aborts the unfinished transactions of the sessions in `ids` ([{id: UUID}, ...]).
void endTransactionsOf(OperationContext& opCtx, bson::BsonElement ids) {
    if (!opCtx.service || !opCtx.service->transactions || !ids.isArray()) return;
    for (bson::BsonElement e : ids.objValue()) {
        if (!e.isObject()) continue;
        bson::BsonElement id = e.objValue()["id"];
        if (id.type() == bson::BsonType::BinData) {
            opCtx.service->transactions->endSession(std::string(id.binaryValue().data));
        }
    }
}

// commitTransaction / abortTransaction: the entry point checked the session out and verified
// the transaction (transactions.h); these act on it.
class EndTransactionCommand : public Command {
  public:
    explicit EndTransactionCommand(bool commit) : _commit(commit) {}
    std::string_view name() const override {
        return _commit ? "commitTransaction" : "abortTransaction";
    }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest&, bson::BsonBuilder&) override {
        if (!opCtx.transactionSession) {
            return Status(ErrorCodes::NoSuchTransaction, "no transaction is in progress");
        }
        if (!_commit) return SessionTransactions::abort(*opCtx.transactionSession);
        return SessionTransactions::commit(*opCtx.transactionSession, /*sync=*/false).getStatus();
    }

  private:
    bool _commit;
};

class EndSessionsCommand : public Command {
  public:
    std::string_view name() const override { return "endSessions"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        if (!request.firstElement().isArray()) {
            return Status(ErrorCodes::TypeMismatch, "endSessions takes an array of session ids");
        }
        endTransactionsOf(opCtx, request.firstElement());
        return Status::OK();
    }
};

class KillSessionsCommand : public Command {
  public:
    explicit KillSessionsCommand(std::string_view name) : _name(name) {}
    std::string_view name() const override { return _name; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        if (_name == "killAllSessions") {
            if (opCtx.service && opCtx.service->transactions) {
                opCtx.service->transactions->killAll();
            }
        } else if (_name == "killSessions") {
            endTransactionsOf(opCtx, request.firstElement());
        }
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
    registry.add(std::make_unique<EndTransactionCommand>(true));
    registry.add(std::make_unique<EndTransactionCommand>(false));
}

}  // namespace tessera::command
