#pragma once

#include <string_view>

namespace tessera {

// MongoDB's error codes (src/mongo/base/error_codes.yml). Drivers branch on these numbers and on
// the code names, so both must match MongoDB exactly. Add codes here as they are needed.
#define TESSERA_ERROR_CODES(X)                                                                 \
    X(OK, 0)                                                                                   \
    X(InternalError, 1)                                                                        \
    X(BadValue, 2)                                                                             \
    X(NoSuchKey, 4)                                                                            \
    X(HostUnreachable, 6)                                                                      \
    X(HostNotFound, 7)                                                                         \
    X(UnknownError, 8)                                                                         \
    X(FailedToParse, 9)                                                                        \
    X(CannotMutateObject, 10)                                                                  \
    X(Unauthorized, 13)                                                                        \
    X(TypeMismatch, 14)                                                                        \
    X(Overflow, 15)                                                                            \
    X(InvalidLength, 16)                                                                       \
    X(ProtocolError, 17)                                                                       \
    X(AuthenticationFailed, 18)                                                                \
    X(IllegalOperation, 20)                                                                    \
    X(EmptyArrayOperation, 21)                                                                 \
    X(InvalidBSON, 22)                                                                         \
    X(LockTimeout, 24)                                                                         \
    X(LockBusy, 46)                                                                            \
    X(LockFailed, 107)                                                                         \
    X(ExceededMemoryLimit, 146)                                                                \
    X(NamespaceNotFound, 26)                                                                   \
    X(IndexNotFound, 27)                                                                       \
    X(PathNotViable, 28)                                                                       \
    X(NonExistentPath, 29)                                                                     \
    X(InvalidPath, 30)                                                                         \
    X(RoleNotFound, 31)                                                                        \
    X(ConflictingUpdateOperators, 40)                                                          \
    X(CursorNotFound, 43)                                                                      \
    X(QueryPlanKilled, 175)                                                                    \
    X(NamespaceExists, 48)                                                                     \
    X(MaxTimeMSExpired, 50)                                                                    \
    X(ShardKeyNotFound, 61)                                                                    \
    X(DollarPrefixedFieldName, 52)                                                             \
    X(InvalidIdField, 53)                                                                      \
    X(NotSingleValueField, 54)                                                                 \
    X(InvalidDBRef, 55)                                                                        \
    X(EmptyFieldName, 56)                                                                      \
    X(DottedFieldName, 57)                                                                     \
    X(CommandNotFound, 59)                                                                     \
    X(ImmutableField, 66)                                                                      \
    X(CannotCreateIndex, 67)                                                                   \
    X(IndexAlreadyExists, 68)                                                                  \
    X(InvalidOptions, 72)                                                                      \
    X(InvalidNamespace, 73)                                                                    \
    X(NoReplicationEnabled, 76)                                                                \
    X(IndexOptionsConflict, 85)                                                                \
    X(IndexKeySpecsConflict, 86)                                                               \
    X(NetworkTimeout, 89)                                                                      \
    X(ShutdownInProgress, 91)                                                                  \
    X(WriteConflict, 112)                                                                      \
    X(ConflictingOperationInProgress, 117)                                                     \
    X(CommandNotSupportedOnView, 166)                                                          \
    X(InvalidIndexSpecificationOption, 197)                                                    \
    X(DocumentValidationFailure, 121)                                                          \
    X(CommandFailed, 125)                                                                      \
    X(StaleDbVersion, 249)                                                                     \
    X(NoSuchTransaction, 251)                                                                  \
    X(SnapshotUnavailable, 246)                                                                \
    X(TransactionCommitted, 256)                                                               \
    X(PreparedTransactionInProgress, 267)                                                      \
    X(TransactionExceededLifetimeLimitSeconds, 290)                                            \
    X(ExceededTimeLimit, 262)                                                                  \
    X(TooManyFilesOpen, 264)                                                                   \
    X(DuplicateKey, 11000)                                                                     \
    X(InterruptedAtShutdown, 11600)                                                            \
    X(StaleConfig, 13388)                                                                      \
    X(NotWritablePrimary, 10107)                                                               \
    X(BSONObjectTooLarge, 10334)                                                               \
    X(NoMatchingDocument, 47)                                                                  \
    X(OperationFailed, 96)                                                                     \
    X(DBPathInUse, 98)                                                                         \
    X(SnapshotTooOld, 239)                                                                     \
    X(InvalidPipelineOperator, 168)                                                            \
    X(OptionNotSupportedOnView, 167)                                                           \
    X(CannotIndexParallelArrays, 171)                                                          \
    X(IncompatibleCollationVersion, 190)                                                       \
    X(InvalidViewDefinition, 182)                                                              \
    X(ViewDepthLimitExceeded, 149)                                                             \
    X(GraphContainsCycle, 93)                                                                  \
    X(IncompleteTransactionHistory, 217)                                                       \
    X(TransactionTooOld, 225)                                                                  \
    X(CannotImplicitlyCreateCollection, 227)                                                   \
    X(NotImplemented, 238)                                                                     \
    X(ConversionFailure, 241)                                                                  \
    X(IllegalOpMsgFlag, 223)                                                                   \
    X(TooManyDocumentSequences, 233)                                                           \
    X(ChecksumMismatch, 288)                                                                   \
    X(UnsupportedOpQueryCommand, 352)                                                          \
    X(SocketException, 9001)                                                                   \
    X(CursorInUse, 143)                                                                        \
    X(CursorKilled, 237)                                                                       \
    X(QueryExceededMemoryLimitNoDiskUseAllowed, 292)                                           \
    X(ShardNotFound, 70)                                                                       \
    X(NamespaceNotSharded, 118)                                                                \
    X(ShardingStateNotInitialized, 193)                                                        \
    X(AlreadyInitialized, 23)                                                                  \
    X(DatabaseDifferCase, 13297)                                                               \
    X(OperationNotSupportedInTransaction, 263)                                                 \
    X(WouldChangeOwningShard, 283)                                                             \
    X(NotARetryableWriteCommand, 50768)                                                        \
    X(Location50911, 50911)                                                                    \
    X(UnknownReplWriteConcern, 79)                                                             \
    X(UnsatisfiableWriteConcern, 100)                                                          \
    X(FailedToSatisfyReadPreference, 133)                                                      \
    X(APIStrictError, 323)                                                                     \
    X(APIVersionError, 322)                                                                    \
    X(APIDeprecationError, 324)                                                                \
    X(Interrupted, 11601)                                                                      \
    X(ReadConcernMajorityNotAvailableYet, 134)                                                 \
    X(PrimarySteppedDown, 189)                                                                 \
    X(InterruptedDueToReplStateChange, 11602)                                                  \
    X(NotPrimaryNoSecondaryOk, 13435)                                                          \
    X(NotPrimaryOrSecondary, 13436)                                                            \
    X(NodeNotFound, 74)                                                                        \
    X(WriteConcernFailed, 64)                                                                  \
    X(NewReplicaSetConfigurationIncompatible, 103)                                             \
    X(MigrationConflict, 300)                                                                  \
    X(ZoneStillInUse, 163)                                                                     \
    X(ZoneNotFound, 177)                                                                       \
    X(RangeOverlapConflict, 178)                                                               \
    /* Tessera-internal, never sent: an inline request would have to wait (net::RequestHandler \
       ::runInline); it runs on the worker pool instead. */                                    \
    X(InlineWouldBlock, 1000001)                                                               \
    /* Tessera-internal, never sent: a read at the latest timestamp met a prepared transaction \
       that committed after it (storage::PrepareReads); the read runs again. */                \
    X(ReadMetLaterCommit, 1000002)

enum class ErrorCodes : int {
#define TESSERA_DECLARE_CODE(name, value) name = value,
    TESSERA_ERROR_CODES(TESSERA_DECLARE_CODE)
#undef TESSERA_DECLARE_CODE
};

// MongoDB's code name for a code ("CommandNotFound"); "Location<N>" for assertion codes that have
// no name in error_codes.yml (MongoDB does the same).
std::string codeName(int code);

}  // namespace tessera
