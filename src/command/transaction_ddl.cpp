#include "command/transaction_ddl.h"

#include "storage/engine.h"
#include "storage/transaction.h"
#include "txn/session_transactions.h"

namespace tessera::command {

storage::CollectionPtr lookupCollection(const OperationContext& opCtx, std::string_view ns) {
    if (opCtx.transaction) {
        if (storage::CollectionPtr created = opCtx.transaction->createdCollection(ns)) {
            return created;
        }
    }
    return opCtx.service->engine->getCollection(ns);
}

Status checkCreateInTransaction(const OperationContext& opCtx, const std::string& ns) {
    std::string_view coll = std::string_view(ns).substr(ns.find('.') + 1);
    if (coll.substr(0, 7) == "system.") {
        return Status(ErrorCodes::OperationNotSupportedInTransaction,
                      "Cannot create system collection " + ns + " within a transaction.");
    }
    bool participant =
        opCtx.service->transactions && opCtx.service->transactions->participantMode();
    if (!participant && opCtx.transactionSession && !opCtx.transactionSession->readConcernLocal) {
        return Status(ErrorCodes::InvalidOptions,
                      "Cannot create collection " + ns +
                          " in a multi-document transaction with a read concern other than "
                          "'local'; start the transaction with readConcern {level: 'local'}");
    }
    return Status::OK();
}

StatusWith<storage::CollectionPtr> createInTransaction(OperationContext& opCtx,
                                                       const std::string& ns,
                                                       bson::BsonView options) {
    TRY_STATUS(checkCreateInTransaction(opCtx, ns));
    auto created = opCtx.transaction->createCollection(ns, options);
    if (created.getStatus().is(ErrorCodes::NamespaceExists)) {
        return Status(ErrorCodes::NamespaceExists, "Collection " + ns + " already exists.");
    }
    return created;
}

}  // namespace tessera::command
