#include "command/registry.h"

namespace tessera::command {

const DocumentSequence* CommandRequest::sequence(std::string_view identifier) const {
    for (const auto& seq : sequences) {
        if (seq.identifier == identifier) return &seq;
    }
    return nullptr;
}

Status OperationContext::checkForInterrupt() const {
    if (deadline && std::chrono::steady_clock::now() >= *deadline) {
        return Status(ErrorCodes::MaxTimeMSExpired, "operation exceeded time limit");
    }
    return Status::OK();
}

StatusWith<std::shared_ptr<const OwnershipFilter>> OperationContext::ownershipFilter(
    std::string_view ns) {
    if (!service || !service->hooks) return std::shared_ptr<const OwnershipFilter>();
    for (const auto& [name, filter] : _ownership) {
        if (name == ns) return filter;
    }
    ASSIGN_OR_RETURN(auto filter, service->hooks->ownershipFilter(*this, ns));
    _ownership.emplace_back(std::string(ns), filter);
    return filter;
}

void CommandRegistry::add(std::unique_ptr<Command> command) {
    Command* raw = command.get();
    if (Command* replaced = find(raw->name())) {
        std::erase_if(_byName, [&](const auto& entry) { return entry.second == replaced; });
        std::erase_if(_commands, [&](const auto& c) { return c.get() == replaced; });
    }
    _byName[std::string(raw->name())] = raw;
    for (auto alias : raw->aliases()) _byName[std::string(alias)] = raw;
    _commands.push_back(std::move(command));
}

Command* CommandRegistry::find(std::string_view name) const {
    auto it = _byName.find(name);
    return it == _byName.end() ? nullptr : it->second;
}

std::vector<const Command*> CommandRegistry::all() const {
    std::vector<const Command*> out;
    for (const auto& c : _commands) out.push_back(c.get());
    return out;
}

void registerAllCommands(CommandRegistry& registry) {
    registerHandshakeCommands(registry);
    registerDiagnosticCommands(registry);
    registerReplSetCommands(registry);
    registerInitialSyncCommands(registry);
    registerTestCommands(registry);
    registerDatabaseCommands(registry);
    registerCollectionCommands(registry);
    registerIndexCommands(registry);
    registerSessionCommands(registry);
    registerCurrentOpCommand(registry);
    registerCrudCommands(registry);
    registerFsyncCommand(registry);
}

}  // namespace tessera::command
