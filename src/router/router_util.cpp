#include "router/router_util.h"

#include <algorithm>
#include <set>

#include "command/generic_args.h"
#include "command/registry.h"

namespace tessera::router {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;
using command::CommandRequest;
using command::OperationContext;

namespace {

class FnCommand final : public command::Command {
  public:
    FnCommand(std::string name, std::vector<std::string> aliases, bool adminOnly, CommandFn fn)
        : _name(std::move(name)),
          _aliases(std::move(aliases)),
          _adminOnly(adminOnly),
          _fn(std::move(fn)) {}
    std::string_view name() const override { return _name; }
    std::vector<std::string_view> aliases() const override {
        return {_aliases.begin(), _aliases.end()};
    }
    bool adminOnly() const override { return _adminOnly; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               BsonBuilder& reply) override {
        return _fn(opCtx, request, reply);
    }

  private:
    std::string _name;
    std::vector<std::string> _aliases;
    bool _adminOnly;
    CommandFn _fn;
};

bool isGossipField(std::string_view name) {
    return name == "$db" || name == "$clusterTime" || name == "$readPreference" ||
           name == "$configTime" || name == "$topologyTime" || name == "$audit" ||
           name == "$client";
}

bool isReplyMetadata(std::string_view name) {
    return name == "ok" || name == "$clusterTime" || name == "operationTime" ||
           name == "$configTime" || name == "$topologyTime" || name == "$gleStats" ||
           name == "lastCommittedOpTime" || name == "$configServerState";
}

// Commands that, run on the `config` database, are forwarded to the config server.
const std::set<std::string, std::less<>>& configPassthroughCommands() {
    static const std::set<std::string, std::less<>> names = {
        "find",        "aggregate",       "count",         "distinct",      "insert",
        "update",      "delete",          "findAndModify", "findandmodify", "getMore",
        "killCursors", "listCollections", "listIndexes",   "createIndexes", "dropIndexes",
        "collStats",   "dbStats",         "create",        "drop",          "explain",
        "collMod",     "validate",        "dataSize"};
    return names;
}

// A command of the router's families, with the `config` database passthrough in front.
class PassthroughCommand final : public command::Command {
  public:
    PassthroughCommand(command::Command* inner, std::shared_ptr<command::CommandRegistry> owner)
        : _inner(inner),
          _owner(std::move(owner)),
          _forward(configPassthroughCommands().count(inner->name()) > 0) {}
    std::string_view name() const override { return _inner->name(); }
    std::vector<std::string_view> aliases() const override { return _inner->aliases(); }
    bool adminOnly() const override { return _inner->adminOnly(); }
    bool testOnly() const override { return _inner->testOnly(); }
    bool supportsRetryableWrite() const override { return _inner->supportsRetryableWrite(); }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               BsonBuilder& reply) override {
        if (_forward && request.db == "config") {
            Router& router = Router::get(opCtx);
            // lsid/txnNumber go along: the config server applies a retried write at most once
            // (command::RetryableWriteHooks).
            BsonObj body = forwardableBody(request);
            ASSIGN_OR_RETURN(BsonObj remote, runOnConfig(router, "config", body));
            return relayRemoteReply(opCtx, remote, reply);
        }
        return _inner->run(opCtx, request, reply);
    }
    std::optional<command::ForwardPlan> planForward(
        OperationContext& opCtx, const command::CommandRequest& request) override {
        if (_forward && request.db == "config") return std::nullopt;
        return _inner->planForward(opCtx, request);
    }
    std::optional<Status> completeForward(OperationContext& opCtx,
                                          const command::CommandRequest& request,
                                          command::ForwardPlan& plan,
                                          const std::vector<StatusWith<BsonObj>>& remotes,
                                          BsonBuilder& reply) override {
        return _inner->completeForward(opCtx, request, plan, remotes, reply);
    }

  private:
    command::Command* _inner;
    std::shared_ptr<command::CommandRegistry> _owner;  // keeps _inner alive
    bool _forward;
};

}  // namespace

std::unique_ptr<command::Command> makeRouterCommand(std::string name,
                                                    std::vector<std::string> aliases,
                                                    bool adminOnly, CommandFn fn) {
    return std::make_unique<FnCommand>(std::move(name), std::move(aliases), adminOnly,
                                       std::move(fn));
}

BsonObj forwardableBody(const CommandRequest& request) {
    BsonBuilder b;
    for (auto e : request.body) {
        if (isGossipField(e.fieldName())) continue;
        b.appendElement(e);
    }
    for (const auto& seq : request.sequences) {
        if (b.hasField(seq.identifier)) continue;
        b.startArray(seq.identifier);
        size_t i = 0;
        for (BsonView doc : seq.documents) b.appendObject(std::to_string(i++), doc);
        b.end();
    }
    return b.obj();
}

BsonObj withoutFields(BsonView body, std::initializer_list<std::string_view> drop) {
    BsonBuilder b;
    for (auto e : body) {
        std::string_view name = e.fieldName();
        if (isGossipField(name)) continue;
        bool skip = false;
        for (auto d : drop) skip |= d == name;
        if (!skip) b.appendElement(e);
    }
    return b.obj();
}

Status relayRemoteReply(OperationContext& opCtx, BsonView remote, BsonBuilder& reply) {
    if (remote["ok"].trueValue()) {
        for (auto e : remote) {
            if (!isReplyMetadata(e.fieldName())) reply.appendElement(e);
        }
        return Status::OK();
    }
    BsonBuilder extra;
    for (auto e : remote) {
        std::string_view n = e.fieldName();
        if (isReplyMetadata(n) || n == "code" || n == "codeName" || n == "errmsg") continue;
        extra.appendElement(e);
    }
    opCtx.errorExtraInfo = extra.obj();
    return net::replyStatus(remote);
}

Status responseStatus(const ShardResponse& r) {
    if (!r.status.isOK()) return r.status;
    return net::replyStatus(r.reply);
}

StatusWith<BsonObj> runOnConfig(Router& router, std::string_view db, BsonView cmd) {
    return router.client().runCommand(router.configHost(), db, cmd);
}

StatusWith<BsonObj> runConfigsvrCommand(Router& router, BsonView cmd) {
    ASSIGN_OR_RETURN(BsonObj reply, runOnConfig(router, "admin", cmd));
    TRY_STATUS(net::replyStatus(reply));
    return reply;
}

StatusWith<std::string> commandNamespace(const CommandRequest& request) {
    auto first = request.firstElement();
    if (first.type() != BsonType::String || first.stringValue().empty()) {
        return Status(
            ErrorCodes::InvalidNamespace,
            "collection name has invalid type " +
                std::string(first.type() == BsonType::String ? "empty string" : "non-string"));
    }
    return request.db + "." + std::string(first.stringValue());
}

StatusWith<std::string> nsArgument(const CommandRequest& request) {
    auto first = request.firstElement();
    if (first.type() != BsonType::String) {
        return Status(ErrorCodes::InvalidNamespace,
                      "'" + std::string(request.commandName) + "' must be of type String");
    }
    std::string ns(first.stringValue());
    auto dot = ns.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == ns.size()) {
        return Status(ErrorCodes::InvalidNamespace, "Invalid namespace specified '" + ns + "'");
    }
    return ns;
}

void registerWithConfigPassthrough(command::CommandRegistry& registry,
                                   std::shared_ptr<command::CommandRegistry> families) {
    for (const command::Command* c : families->all()) {
        registry.add(std::make_unique<PassthroughCommand>(families->find(c->name()), families));
    }
}

Status checkKnownFields(const CommandRequest& request,
                        std::initializer_list<std::string_view> known) {
    bool first = true;
    for (auto e : request.body) {
        std::string_view name = e.fieldName();
        if (first) {
            first = false;
            continue;  // the command's name
        }
        if (command::isGenericArgument(name)) continue;
        if (std::find(known.begin(), known.end(), name) != known.end()) continue;
        return Status(40415, "BSON field '" + std::string(request.commandName) + "." +
                                 std::string(name) + "' is an unknown field.");
    }
    return Status::OK();
}

}  // namespace tessera::router
