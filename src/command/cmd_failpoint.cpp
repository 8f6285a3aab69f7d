// configureFailPoint and the failCommand failpoint (only with --enableTestCommands).

#include <chrono>
#include <thread>

#include "base/failpoint.h"
#include "command/fail_command.h"
#include "command/registry.h"

namespace tessera::command {

TESSERA_FAIL_POINT_DEFINE(failCommand);

namespace {

bool appliesTo(const std::string& data, std::string_view commandName, std::string_view appName) {
    bson::BsonView spec(reinterpret_cast<const uint8_t*>(data.data()));
    if (data.size() < 5) return false;
    bson::BsonElement app = spec["appName"];
    if (app.type() == bson::BsonType::String && app.stringValue() != appName) return false;
    bson::BsonElement commands = spec["failCommands"];
    if (!commands.isArray()) return false;
    for (bson::BsonElement c : commands.objValue()) {
        if (c.type() == bson::BsonType::String && c.stringValue() == commandName) return true;
    }
    return false;
}

// The failpoint the command's first field names.
StatusWith<FailPoint*> namedFailPoint(const CommandRequest& request) {
    bson::BsonElement nameElt = request.firstElement();
    if (nameElt.type() != bson::BsonType::String) {
        return Status(ErrorCodes::TypeMismatch, "failpoint name must be a string");
    }
    FailPoint* fp = FailPointRegistry::global().find(std::string(nameElt.stringValue()));
    if (!fp) {
        return Status(ErrorCodes::BadValue,
                      "Cannot find failpoint named " + std::string(nameElt.stringValue()));
    }
    return fp;
}

class ConfigureFailPointCommand : public Command {
  public:
    std::string_view name() const override { return "configureFailPoint"; }
    bool adminOnly() const override { return true; }
    bool testOnly() const override { return true; }

    Status run(OperationContext&, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(FailPoint * fp, namedFailPoint(request));
        FailPoint::Mode mode = FailPoint::Mode::kOff;
        int64_t count = 0;
        bson::BsonElement modeElt = request.body["mode"];
        if (modeElt.type() == bson::BsonType::String) {
            if (modeElt.stringValue() == "alwaysOn") {
                mode = FailPoint::Mode::kAlwaysOn;
            } else if (modeElt.stringValue() != "off") {
                return Status(ErrorCodes::BadValue,
                              "unknown mode: " + std::string(modeElt.stringValue()));
            }
        } else if (modeElt.isObject()) {
            bson::BsonView m = modeElt.objValue();
            if (m["times"].isNumber()) {
                mode = FailPoint::Mode::kTimes;
                count = m["times"].numberLong();
            } else if (m["skip"].isNumber()) {
                mode = FailPoint::Mode::kSkip;
                count = m["skip"].numberLong();
            } else {
                return Status(ErrorCodes::BadValue,
                              "mode must be 'alwaysOn', 'off', {times: n} or {skip: n}");
            }
            if (count < 0) return Status(ErrorCodes::BadValue, "mode count must be >= 0");
        } else {
            return Status(ErrorCodes::BadValue, "missing or invalid 'mode'");
        }
        bson::BsonElement data = request.body["data"];
        std::string dataBytes;
        if (data.isObject()) dataBytes = std::string(data.objValue().bytes());
        int64_t before = fp->timesEntered();
        fp->configure(mode, count, std::move(dataBytes));
        reply.appendInt64("count", before);
        return Status::OK();
    }
};

// {waitForFailPoint: name, timesEntered: N, maxTimeMS: M}: waits until the failpoint has fired
// N times since it was configured (configureFailPoint answers how many before), so a test knows
// a hang was reached instead of sleeping. MaxTimeMSExpired (50) when it was not reached in time.
class WaitForFailPointCommand : public Command {
  public:
    std::string_view name() const override { return "waitForFailPoint"; }
    bool adminOnly() const override { return true; }
    bool testOnly() const override { return true; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        ASSIGN_OR_RETURN(FailPoint * fp, namedFailPoint(request));
        bson::BsonElement times = request.body["timesEntered"];
        if (!times.isNumber() || times.numberLong() < 1) {
            return Status(ErrorCodes::BadValue, "waitForFailPoint needs timesEntered >= 1");
        }
        if (!opCtx.deadline) {
            return Status(ErrorCodes::BadValue, "waitForFailPoint needs maxTimeMS");
        }
        while (fp->timesEntered() < times.numberLong()) {
            TRY_STATUS(opCtx.checkForInterrupt());
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return Status::OK();
    }
};

}  // namespace

std::optional<FailCommandAction> evaluateFailCommand(std::string_view commandName,
                                                     std::string_view appName) {
    auto data = failCommand.shouldFailIf(
        [&](const std::string& d) { return appliesTo(d, commandName, appName); });
    if (!data) return std::nullopt;
    bson::BsonObj spec = bson::BsonObj::fromBytes(*data);
    FailCommandAction action;
    action.closeConnection = spec["closeConnection"].trueValue();
    if (spec["errorCode"].isNumber()) action.errorCode = spec["errorCode"].numberInt();
    if (spec["errorLabels"].isArray()) action.errorLabels = spec["errorLabels"].objValue().copy();
    if (spec["writeConcernError"].isObject()) {
        action.writeConcernError = spec["writeConcernError"].objValue().copy();
    }
    if (spec["blockConnection"].trueValue()) action.blockTimeMS = spec["blockTimeMS"].numberInt();
    return action;
}

void registerTestCommands(CommandRegistry& registry) {
    registry.add(std::make_unique<ConfigureFailPointCommand>());
    registry.add(std::make_unique<WaitForFailPointCommand>());
}

}  // namespace tessera::command
