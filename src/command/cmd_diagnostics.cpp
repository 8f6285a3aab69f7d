// Diagnostic commands: serverStatus, getLog, connectionStatus, hostInfo, getCmdLineOpts.

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "base/log.h"
#include "base/wall_clock.h"
#include "command/cursor_manager.h"
#include "command/opcounters.h"
#include "command/registry.h"
#include "command/server_info.h"

namespace tessera::command {
namespace {

// Reads "VmRSS"/"VmSize" (kB) from /proc/self/status; 0 when unavailable.
int64_t procStatusKb(std::string_view key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.compare(0, key.size(), key) == 0 && line.size() > key.size() &&
            line[key.size()] == ':') {
            return std::stoll(line.substr(key.size() + 1));
        }
    }
    return 0;
}

std::string hostName() {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return buf;
}

class ServerStatusCommand : public Command {
  public:
    std::string_view name() const override { return "serverStatus"; }
    Status run(OperationContext& opCtx, const CommandRequest&, bson::BsonBuilder& reply) override {
        const ServiceContext& svc = *opCtx.service;
        auto uptime = std::chrono::system_clock::now() - svc.startTime;
        int64_t uptimeMillis =
            std::chrono::duration_cast<std::chrono::milliseconds>(uptime).count();
        reply.append("host", svc.host);
        reply.append("version", kCompatibleMongoVersion);
        reply.append("process", svc.role == ClusterRole::kRouter ? "mongos" : "tessera");
        reply.appendInt64("pid", getpid());
        reply.appendDouble("uptime", uptimeMillis / 1000.0);
        reply.appendInt64("uptimeMillis", uptimeMillis);
        reply.appendInt64("uptimeEstimate", uptimeMillis / 1000);
        reply.appendDate("localTime", wallClockMillis());
        reply.startObject("connections")
            .appendInt32("current", static_cast<int32_t>(
                                        svc.connections.current ? svc.connections.current() : 0))
            .appendInt32("available", static_cast<int32_t>(svc.connections.available))
            .appendInt64("totalCreated",
                         svc.connections.totalCreated ? svc.connections.totalCreated() : 0)
            .end();
        OpCounters& ops = OpCounters::global();
        reply.startObject("opcounters")
            .appendInt64("insert", ops.insert.load())
            .appendInt64("query", ops.query.load())
            .appendInt64("update", ops.update.load())
            .appendInt64("delete", ops.remove.load())
            .appendInt64("getmore", ops.getmore.load())
            .appendInt64("command", ops.command.load())
            .end();
        reply.startObject("mem")
            .appendInt32("bits", 64)
            .appendInt64("resident", procStatusKb("VmRSS") / 1024)
            .appendInt64("virtual", procStatusKb("VmSize") / 1024)
            .end();
        reply.startObject("storageEngine")
            .append("name", "rocksdb")
            .appendBool("supportsCommittedReads", true)
            .appendBool("persistent", true)
            .end();
        if (svc.cursors) {
            // MongoDB's metrics.cursor.open.total: this process's open cursors.
            reply.startObject("metrics")
                .startObject("cursor")
                .startObject("open")
                .appendInt64("total", static_cast<int64_t>(svc.cursors->numOpenCursors()))
                .end()
                .end()
                .end();
        }
        if (svc.appendRoleServerStatus) svc.appendRoleServerStatus(reply);
        return Status::OK();
    }
};

// getLog: "startupWarnings", "global" or "*" (the names).
class GetLogCommand : public Command {
  public:
    std::string_view name() const override { return "getLog"; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext&, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        bson::BsonElement which = request.firstElement();
        if (which.type() != bson::BsonType::String) {
            return Status(ErrorCodes::TypeMismatch,
                          "Argument to getLog must be of type String; found " +
                              which.toString(false) + " of type " +
                              std::string(typeName(which.type())));
        }
        std::string_view name = which.stringValue();
        if (name == "*") {
            reply.startArray("names").append("0", "global").append("1", "startupWarnings").end();
            return Status::OK();
        }
        log::RecentLines lines;
        if (name == "global") {
            lines = log::recentLines();
        } else if (name == "startupWarnings") {
            lines = log::startupWarnings();
        } else {
            return Status(ErrorCodes::OperationFailed, "No log named '" + std::string(name) + "'");
        }
        reply.appendInt64("totalLinesWritten", lines.totalLinesWritten);
        reply.startArray("log");
        for (size_t i = 0; i < lines.lines.size(); ++i) {
            reply.append(std::to_string(i), lines.lines[i]);
        }
        reply.end();
        return Status::OK();
    }
};

// Authentication is not implemented yet: every connection is unauthenticated with full access,
// as a mongod without --auth.
class ConnectionStatusCommand : public Command {
  public:
    std::string_view name() const override { return "connectionStatus"; }
    Status run(OperationContext&, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        reply.startObject("authInfo");
        reply.startArray("authenticatedUsers").end();
        reply.startArray("authenticatedUserRoles").end();
        if (request.body["showPrivileges"].trueValue()) {
            reply.startArray("authenticatedUserPrivileges").end();
        }
        reply.end();
        return Status::OK();
    }
};

class HostInfoCommand : public Command {
  public:
    std::string_view name() const override { return "hostInfo"; }
    Status run(OperationContext&, const CommandRequest&, bson::BsonBuilder& reply) override {
        struct utsname uts {};
        uname(&uts);
        long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
        reply.startObject("system")
            .appendDate("currentTime", wallClockMillis())
            .append("hostname", hostName())
            .appendInt32("cpuAddrSize", 64)
            .appendInt64("memSizeMB", static_cast<int64_t>(pages) * pageSize / (1024 * 1024))
            .appendInt32("numCores", static_cast<int32_t>(std::thread::hardware_concurrency()))
            .append("cpuArch", uts.machine)
            .end();
        reply.startObject("os")
            .append("type", uts.sysname)
            .append("name", uts.sysname)
            .append("version", uts.release)
            .end();
        reply.startObject("extra").end();
        return Status::OK();
    }
};

class GetCmdLineOptsCommand : public Command {
  public:
    std::string_view name() const override { return "getCmdLineOpts"; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest&, bson::BsonBuilder& reply) override {
        reply.startArray("argv");
        const auto& argv = opCtx.service->argv;
        for (size_t i = 0; i < argv.size(); ++i) reply.append(std::to_string(i), argv[i]);
        reply.end();
        reply.startObject("parsed")
            .startObject("net")
            .appendInt32("port", opCtx.service->port)
            .end()
            .end();
        return Status::OK();
    }
};

}  // namespace

void registerDiagnosticCommands(CommandRegistry& registry) {
    registry.add(std::make_unique<ServerStatusCommand>());
    registry.add(std::make_unique<GetLogCommand>());
    registry.add(std::make_unique<ConnectionStatusCommand>());
    registry.add(std::make_unique<HostInfoCommand>());
    registry.add(std::make_unique<GetCmdLineOptsCommand>());
}

}  // namespace tessera::command
