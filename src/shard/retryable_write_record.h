#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "command/command.h"
#include "storage/write_observer.h"

namespace tessera::shard {

// A single-statement retryable write's record, written in the document write's own batch: the
// operation's write unit observer that puts {txnNum, reply} under side record `key`, with
// `reply` exactly what the command answers for that write.
class RetryableWriteRecorder final : public storage::WriteObserver {
  public:
    using ValueFn = std::function<std::string(Op op, bson::BsonView before, bson::BsonView after)>;
    RetryableWriteRecorder(std::string key, ValueFn value)
        : _key(std::move(key)), _value(std::move(value)) {}
    void onWrite(const storage::CollectionInfo&, Op op, bson::BsonView before, bson::BsonView after,
                 std::vector<std::pair<std::string, std::string>>* out) override {
        out->emplace_back(_key, _value(op, before, after));
    }

  private:
    std::string _key;
    ValueFn _value;
};

// The recorder of a retryable write, or nullptr when the reply does not follow from one document
// write (several statements, other commands, a reply field the record cannot reproduce): that
// reply is persisted after the command instead. `commandName` is the canonical name
// (findandmodify → findAndModify).
//
// A write that writes nothing (no match, no change, an error before the write) calls no
// observer and so records nothing: retried, it does the same.
std::unique_ptr<RetryableWriteRecorder> singleWriteRecorder(const command::OperationContext& opCtx,
                                                            const command::CommandRequest& request,
                                                            std::string_view commandName,
                                                            std::string key, int64_t txnNumber);

}  // namespace tessera::shard
