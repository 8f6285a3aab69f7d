#include "command/error_labels.h"

#include <array>
#include <string_view>

#include "base/error_codes.h"
#include "bson/bson_builder.h"

namespace tessera::command {

namespace {

constexpr std::string_view kRetryableWriteError = "RetryableWriteError";
constexpr std::string_view kNoWritesPerformed = "NoWritesPerformed";
constexpr std::string_view kTransientTransactionError = "TransientTransactionError";
constexpr std::string_view kUnknownCommitResult = "UnknownTransactionCommitResult";

int codeOf(bson::BsonElement e) { return e.isNumber() ? e.numberInt() : 0; }

bool hasLabel(bson::BsonElement labels, std::string_view label) {
    if (!labels.isArray()) return false;
    for (bson::BsonElement e : labels.objValue()) {
        if (e.type() == bson::BsonType::String && e.stringValue() == label) return true;
    }
    return false;
}

}  // namespace

bool isRetriableErrorCode(int code) {
    static constexpr std::array kRetriable = {
        ErrorCodes::HostUnreachable,
        ErrorCodes::HostNotFound,
        ErrorCodes::NetworkTimeout,
        ErrorCodes::ShutdownInProgress,
        ErrorCodes::ReadConcernMajorityNotAvailableYet,
        ErrorCodes::PrimarySteppedDown,
        ErrorCodes::ExceededTimeLimit,
        ErrorCodes::SocketException,
        ErrorCodes::NotWritablePrimary,
        ErrorCodes::InterruptedAtShutdown,
        ErrorCodes::InterruptedDueToReplStateChange,
        ErrorCodes::NotPrimaryNoSecondaryOk,
        ErrorCodes::NotPrimaryOrSecondary,
    };
    for (ErrorCodes c : kRetriable) {
        if (static_cast<int>(c) == code) return true;
    }
    return false;
}

bool isTransientTransactionErrorCode(int code) {
    static constexpr std::array kTransient = {
        ErrorCodes::WriteConflict,
        ErrorCodes::LockTimeout,
        ErrorCodes::NoSuchTransaction,
        ErrorCodes::SnapshotUnavailable,
        // A router's statement whose placement changed under it: the whole transaction is
        // retried against the new placement.
        ErrorCodes::StaleConfig,
        ErrorCodes::StaleDbVersion,
    };
    for (ErrorCodes c : kTransient) {
        if (static_cast<int>(c) == code) return true;
    }
    return isRetriableErrorCode(code);
}

namespace {

// The labels of a transaction's reply (error_labels.h).
bson::BsonObj transactionLabels(bson::BsonObj reply, const LabelContext& context) {
    bson::BsonView view = reply;
    bool failed = !view["ok"].trueValue();
    int code = failed ? codeOf(view["code"]) : 0;
    // A write concern no member set could satisfy is a definite answer, not an unknown one.
    auto unsatisfiable = [](int c) { return c == 100 || c == 79; };  // Unsatisfiable/UnknownRepl
    bool wcError = view["writeConcernError"].isObject() &&
                   !unsatisfiable(codeOf(view["writeConcernError"].objValue()["code"]));
    std::string_view label;
    if (context.commitTransaction) {
        if ((failed && (isRetriableErrorCode(code) ||
                        code == static_cast<int>(ErrorCodes::MaxTimeMSExpired))) ||
            wcError) {
            label = kUnknownCommitResult;
        } else if (failed && (code == static_cast<int>(ErrorCodes::NoSuchTransaction) ||
                              code == static_cast<int>(ErrorCodes::WriteConflict))) {
            // WriteConflict: the commit lost a collection it created to a plain create (first
            // committer wins, storage/transaction.h) and aborted; run the transaction again.
            label = kTransientTransactionError;
        }
    } else if (failed && isTransientTransactionErrorCode(code)) {
        label = kTransientTransactionError;
    }
    bson::BsonElement present = view["errorLabels"];
    if (label.empty() || hasLabel(present, label)) return reply;
    bson::BsonArrayBuilder labels;
    if (present.isArray()) {
        for (bson::BsonElement e : present.objValue()) labels.appendElement(e);
    }
    labels.append(label);
    bson::BsonBuilder b;
    for (bson::BsonElement e : view) {
        if (e.fieldName() != "errorLabels") b.appendElement(e);
    }
    b.appendArray("errorLabels", labels.arr());
    return b.obj();
}

}  // namespace

bson::BsonObj withServerErrorLabels(bson::BsonObj reply, const LabelContext& context) {
    if (context.inTransaction && !reply.isEmpty()) {
        return transactionLabels(std::move(reply), context);
    }
    if (!context.retryableWrite || reply.isEmpty()) return reply;
    bson::BsonView view = reply;
    bool failed = !view["ok"].trueValue();
    bool retriable = (failed && isRetriableErrorCode(codeOf(view["code"]))) ||
                     (view["writeConcernError"].isObject() &&
                      isRetriableErrorCode(codeOf(view["writeConcernError"].objValue()["code"])));
    if (!retriable) return reply;
    bson::BsonElement present = view["errorLabels"];
    bool addRetryable = !hasLabel(present, kRetryableWriteError);
    bool addNoWrites = failed && context.wroteNothing && !hasLabel(present, kNoWritesPerformed);
    if (!addRetryable && !addNoWrites) return reply;

    bson::BsonArrayBuilder labels;
    if (present.isArray()) {
        for (bson::BsonElement e : present.objValue()) labels.appendElement(e);
    }
    if (addRetryable) labels.append(kRetryableWriteError);
    if (addNoWrites) labels.append(kNoWritesPerformed);
    bson::BsonBuilder b;
    for (bson::BsonElement e : view) {
        if (e.fieldName() != "errorLabels") b.appendElement(e);
    }
    b.appendArray("errorLabels", labels.arr());
    return b.obj();
}

namespace {

bool isShutdownCode(int code) {
    return code == static_cast<int>(ErrorCodes::InterruptedAtShutdown) ||
           code == static_cast<int>(ErrorCodes::ShutdownInProgress);
}

// `doc` with `code`/`codeName` of a shutdown code replaced (11602).
bson::BsonObj replaceShutdownCode(bson::BsonView doc) {
    const int replaced = static_cast<int>(ErrorCodes::InterruptedDueToReplStateChange);
    bson::BsonBuilder b;
    for (bson::BsonElement e : doc) {
        if (e.fieldName() == "code") {
            b.appendInt32("code", replaced);
        } else if (e.fieldName() == "codeName") {
            b.append("codeName", codeName(replaced));
        } else {
            b.appendElement(e);
        }
    }
    return b.obj();
}

}  // namespace

bson::BsonObj withoutShutdownCodes(bson::BsonObj reply) {
    bson::BsonView view = reply;
    const bool failed = !view["ok"].trueValue() && isShutdownCode(codeOf(view["code"]));
    bson::BsonElement wce = view["writeConcernError"];
    const bool wceShutdown = wce.isObject() && isShutdownCode(codeOf(wce.objValue()["code"]));
    if (!failed && !wceShutdown) return reply;
    bson::BsonObj top = failed ? replaceShutdownCode(view) : reply;
    if (!wceShutdown) return top;
    bson::BsonBuilder b;
    for (bson::BsonElement e : bson::BsonView(top)) {
        if (e.fieldName() == "writeConcernError") {
            b.append("writeConcernError", replaceShutdownCode(e.objValue()));
        } else {
            b.appendElement(e);
        }
    }
    return b.obj();
}

}  // namespace tessera::command
