// Operations of the unified test format: argument mapping onto the Node driver, conversion of
// driver results into documents, and expectError / expectResult / saveResultAsEntity handling.
import mongodb from './driver.mjs';
import { match, describe, MatchError, UnsupportedError } from './matcher.mjs';
import { applyUriOptions, convertCommonOptions, convertTransactionOptions, toReadPreference, QUEUED_PK } from './entities.mjs';

const { MongoServerError, MongoBulkWriteError, MongoClientBulkWriteError, MongoOperationTimeoutError } = mongodb;

/** An assertion of the test failed (as opposed to an error raised by the driver). */
export class AssertionFailure extends Error {
    constructor(message) {
        super(message);
        this.name = 'AssertionFailure';
    }
}

function isRunnerError(err) {
    return err instanceof AssertionFailure || err instanceof MatchError || err instanceof UnsupportedError;
}

// Code names of MongoDB's error_codes.yml that tests or bulk write errors may refer to.
export const CODE_NAMES = {
    1: 'InternalError', 2: 'BadValue', 4: 'NoSuchKey', 6: 'HostUnreachable', 7: 'HostNotFound',
    8: 'UnknownError', 9: 'FailedToParse', 10: 'CannotMutateObject', 11: 'UserNotFound',
    13: 'Unauthorized', 14: 'TypeMismatch', 15: 'Overflow', 16: 'InvalidLength', 17: 'ProtocolError',
    18: 'AuthenticationFailed', 20: 'IllegalOperation', 21: 'EmptyArrayOperation', 22: 'InvalidBSON',
    24: 'LockTimeout', 26: 'NamespaceNotFound', 27: 'IndexNotFound', 28: 'PathNotViable',
    29: 'NonExistentPath', 30: 'InvalidPath', 40: 'ConflictingUpdateOperators', 43: 'CursorNotFound',
    46: 'LockBusy', 48: 'NamespaceExists', 50: 'MaxTimeMSExpired',
    52: 'DollarPrefixedFieldName', 53: 'InvalidIdField', 54: 'NotSingleValueField', 55: 'InvalidDBRef',
    56: 'EmptyFieldName', 57: 'DottedFieldName', 59: 'CommandNotFound', 61: 'ShardKeyNotFound',
    63: 'StaleShardVersion', 64: 'WriteConcernFailed', 66: 'ImmutableField', 67: 'CannotCreateIndex',
    68: 'IndexAlreadyExists', 72: 'InvalidOptions', 73: 'InvalidNamespace', 79: 'UnknownReplWriteConcern',
    85: 'IndexOptionsConflict', 86: 'IndexKeySpecsConflict', 89: 'NetworkTimeout', 91: 'ShutdownInProgress',
    96: 'OperationFailed', 100: 'UnsatisfiableWriteConcern', 112: 'WriteConflict', 115: 'CommandNotSupported',
    117: 'ConflictingOperationInProgress', 121: 'DocumentValidationFailure', 125: 'CommandFailed',
    133: 'FailedToSatisfyReadPreference', 136: 'CappedPositionLost', 166: 'CommandNotSupportedOnView',
    167: 'OptionNotSupportedOnView', 168: 'InvalidPipelineOperator', 189: 'PrimarySteppedDown',
    197: 'InvalidIndexSpecificationOption', 211: 'KeyNotFound', 225: 'TransactionTooOld',
    244: 'TransactionAborted', 246: 'SnapshotUnavailable', 251: 'NoSuchTransaction',
    256: 'TransactionCommitted', 257: 'TransactionTooLarge', 262: 'ExceededTimeLimit',
    263: 'OperationNotSupportedInTransaction', 267: 'PreparedTransactionInProgress', 279: 'ClientDisconnect',
    290: 'TransactionExceededLifetimeLimitSeconds', 9001: 'SocketException', 10107: 'NotWritablePrimary',
    11000: 'DuplicateKey', 11600: 'InterruptedAtShutdown', 11601: 'Interrupted',
    11602: 'InterruptedDueToReplStateChange', 13388: 'StaleConfig', 13435: 'NotPrimaryNoSecondaryOk',
    13436: 'NotPrimaryOrSecondary',
};

// Operations whose result is an iterable of root-level documents.
const ROOT_ELEMENT_RESULTS = new Set([
    'aggregate',
    'find',
    'listCollections',
    'listDatabases',
    'listIndexes',
    'listSearchIndexes',
    'runCursorCommand',
]);

// ---------------------------------------------------------------------------------------------
// Result conversion

function dropUndefined(doc) {
    const out = {};
    for (const [k, v] of Object.entries(doc)) if (v !== undefined) out[k] = v;
    return out;
}

export function mapToDoc(m) {
    if (!(m instanceof Map)) return m;
    const out = {};
    for (const [k, v] of m.entries()) out[String(k)] = v && typeof v === 'object' && !v._bsontype ? dropUndefined(v) : v;
    return out;
}

export function bulkWriteResultDoc(r) {
    if (!r) return r;
    return dropUndefined({
        acknowledged: r.acknowledged,
        insertedCount: r.insertedCount,
        matchedCount: r.matchedCount,
        modifiedCount: r.modifiedCount,
        deletedCount: r.deletedCount,
        upsertedCount: r.upsertedCount,
        upsertedIds: r.upsertedIds ?? {},
        insertedIds: r.insertedIds,
    });
}

/**
 * Converts one Node `ClientUpdateResult` to the bulk-write spec's UpdateResult model
 * ({ matchedCount, modifiedCount, upsertedId? }), as the unified format's "Converting Returned
 * Model Objects to Documents" requires. The spec lets a driver add a `didUpsert` flag only to tell
 * a BSON-null upsertedId from an unset one; that information is kept here by setting `upsertedId`
 * exactly when `didUpsert` is true (null included), and the flag itself, which is no field of the
 * spec's model, is not copied.
 */
export function clientUpdateResultDoc(u) {
    if (!u || typeof u !== 'object' || u._bsontype) return u;
    const { didUpsert, ...rest } = u;
    const doc = dropUndefined(rest);
    if (didUpsert === true) doc.upsertedId = u.upsertedId ?? null;
    else if (didUpsert === false) delete doc.upsertedId;
    return doc;
}

function clientUpdateResultsDoc(m) {
    if (!(m instanceof Map)) return m;
    const out = {};
    for (const [k, v] of m.entries()) out[String(k)] = clientUpdateResultDoc(v);
    return out;
}

export function clientBulkWriteResultDoc(r) {
    if (!r) return r;
    return dropUndefined({
        acknowledged: r.acknowledged,
        insertedCount: r.insertedCount,
        upsertedCount: r.upsertedCount,
        matchedCount: r.matchedCount,
        modifiedCount: r.modifiedCount,
        deletedCount: r.deletedCount,
        insertResults: r.insertResults === undefined ? undefined : mapToDoc(r.insertResults),
        updateResults: r.updateResults === undefined ? undefined : clientUpdateResultsDoc(r.updateResults),
        deleteResults: r.deleteResults === undefined ? undefined : mapToDoc(r.deleteResults),
    });
}

function updateResultDoc(r) {
    const doc = dropUndefined({
        acknowledged: r.acknowledged,
        matchedCount: r.matchedCount,
        modifiedCount: r.modifiedCount,
        upsertedCount: r.upsertedCount,
        upsertedId: r.upsertedId,
    });
    if (doc.upsertedId === null) delete doc.upsertedId;
    return doc;
}

function deleteResultDoc(r) {
    return dropUndefined({ acknowledged: r.acknowledged, deletedCount: r.deletedCount });
}

/** Converts spec-format clientBulkWrite models ({insertOne: {...}}) into the Node driver's. */
export function clientBulkWriteModels(models) {
    return models.map((m) => {
        const keys = Object.keys(m);
        if (keys.length !== 1) throw new UnsupportedError(`clientBulkWrite model ${describe(m)}`);
        const name = keys[0];
        if (!['insertOne', 'replaceOne', 'updateOne', 'updateMany', 'deleteOne', 'deleteMany'].includes(name)) {
            throw new UnsupportedError(`clientBulkWrite model ${name}`);
        }
        return { name, ...m[name] };
    });
}

function returnDocumentOption(opts) {
    if (opts.returnDocument === undefined) return opts;
    const v = String(opts.returnDocument).toLowerCase();
    if (v !== 'before' && v !== 'after') throw new UnsupportedError(`returnDocument ${opts.returnDocument}`);
    return { ...opts, returnDocument: v };
}

// ---------------------------------------------------------------------------------------------
// Arguments

/** Resolves `session` and converts concern/preference arguments; returns a fresh object. */
export function prepareArguments(args = {}, entities) {
    const out = {};
    for (const [k, v] of Object.entries(args)) {
        if (k === 'session') out.session = entities.get(v, 'session');
        else if (k === 'readPreference') out.readPreference = toReadPreference(v);
        else out[k] = v;
    }
    return out;
}

function without(args, ...names) {
    const out = { ...args };
    for (const n of names) delete out[n];
    return out;
}

function required(args, name, op) {
    if (args[name] === undefined) throw new UnsupportedError(`${op} without required argument ${name}`);
    return args[name];
}

// Runs `fn` with the pk factory primed for `docs` (see QueuedPkFactory).
async function withIds(pkFactory, docs, fn) {
    if (!pkFactory?.[QUEUED_PK]) return fn();
    pkFactory.prepare(docs);
    try {
        return await fn();
    } finally {
        pkFactory.clear();
    }
}

const collectionPk = (c) => c?.s?.pkFactory;

// ---------------------------------------------------------------------------------------------
// Entity operations: (target, args, ctx, op) => { value, kind? }

const collectionOps = {
    async aggregate(c, a) {
        return { value: await c.aggregate(a.pipeline, without(a, 'pipeline')).toArray() };
    },
    async bulkWrite(c, a) {
        const requests = required(a, 'requests', 'bulkWrite');
        const docs = requests.filter((r) => r.insertOne).map((r) => r.insertOne.document);
        const r = await withIds(collectionPk(c), docs, () => c.bulkWrite(requests, without(a, 'requests')));
        return { value: bulkWriteResultDoc(r) };
    },
    async countDocuments(c, a) {
        return { value: await c.countDocuments(a.filter ?? {}, without(a, 'filter')) };
    },
    async count(c, a) {
        return { value: await c.count(a.filter ?? {}, without(a, 'filter')) };
    },
    async estimatedDocumentCount(c, a) {
        return { value: await c.estimatedDocumentCount(a) };
    },
    async createIndex(c, a) {
        return { value: await c.createIndex(required(a, 'keys', 'createIndex'), without(a, 'keys')) };
    },
    async createIndexes(c, a) {
        return { value: await c.createIndexes(required(a, 'models', 'createIndexes'), without(a, 'models')) };
    },
    async dropIndex(c, a) {
        return { value: await c.dropIndex(required(a, 'name', 'dropIndex'), without(a, 'name')) };
    },
    async dropIndexes(c, a) {
        return { value: await c.dropIndexes(a) };
    },
    async listIndexes(c, a) {
        return { value: await c.listIndexes(a).toArray() };
    },
    async listIndexNames(c, a) {
        return { value: (await c.listIndexes(a).toArray()).map((i) => i.name) };
    },
    async deleteOne(c, a) {
        return { value: deleteResultDoc(await c.deleteOne(a.filter, without(a, 'filter'))) };
    },
    async deleteMany(c, a) {
        return { value: deleteResultDoc(await c.deleteMany(a.filter, without(a, 'filter'))) };
    },
    async distinct(c, a) {
        return {
            value: await c.distinct(required(a, 'fieldName', 'distinct'), a.filter ?? {}, without(a, 'fieldName', 'filter')),
        };
    },
    async find(c, a) {
        return { value: await c.find(a.filter ?? {}, without(a, 'filter')).toArray() };
    },
    async findOne(c, a) {
        return { value: await c.findOne(a.filter ?? {}, without(a, 'filter')) };
    },
    async findOneAndDelete(c, a) {
        return { value: await c.findOneAndDelete(a.filter, without(a, 'filter')) };
    },
    async findOneAndReplace(c, a) {
        return {
            value: await c.findOneAndReplace(a.filter, a.replacement, returnDocumentOption(without(a, 'filter', 'replacement'))),
        };
    },
    async findOneAndUpdate(c, a) {
        return { value: await c.findOneAndUpdate(a.filter, a.update, returnDocumentOption(without(a, 'filter', 'update'))) };
    },
    async insertOne(c, a) {
        const doc = required(a, 'document', 'insertOne');
        const r = await withIds(collectionPk(c), [doc], () => c.insertOne(doc, without(a, 'document')));
        return { value: dropUndefined({ acknowledged: r.acknowledged, insertedId: r.insertedId }) };
    },
    async insertMany(c, a) {
        const docs = required(a, 'documents', 'insertMany');
        const r = await withIds(collectionPk(c), docs, () => c.insertMany(docs, without(a, 'documents')));
        return {
            value: dropUndefined({ acknowledged: r.acknowledged, insertedCount: r.insertedCount, insertedIds: r.insertedIds }),
        };
    },
    async replaceOne(c, a) {
        return { value: updateResultDoc(await c.replaceOne(a.filter, a.replacement, without(a, 'filter', 'replacement'))) };
    },
    async updateOne(c, a) {
        return { value: updateResultDoc(await c.updateOne(a.filter, a.update, without(a, 'filter', 'update'))) };
    },
    async updateMany(c, a) {
        return { value: updateResultDoc(await c.updateMany(a.filter, a.update, without(a, 'filter', 'update'))) };
    },
    async createFindCursor(c, a) {
        const cursor = c.find(a.filter ?? {}, without(a, 'filter'));
        // The Node driver sends `find` lazily; hasNext() runs it without consuming a document.
        await cursor.hasNext();
        return { value: cursor, kind: 'cursor' };
    },
    async rename(c, a) {
        return { value: await c.rename(required(a, 'to', 'rename'), without(a, 'to')), kind: 'collection' };
    },
    async drop(c, a) {
        return { value: await c.drop(a) };
    },
};

const databaseOps = {
    async aggregate(db, a) {
        return { value: await db.aggregate(a.pipeline, without(a, 'pipeline')).toArray() };
    },
    async runCommand(db, a) {
        const command = required(a, 'command', 'runCommand');
        const opts = without(a, 'command', 'commandName');
        return { value: await db.command(command, opts) };
    },
    async runCursorCommand(db, a) {
        const cursor = db.runCursorCommand(required(a, 'command', 'runCursorCommand'), {
            session: a.session,
            readPreference: a.readPreference,
        });
        if (a.batchSize !== undefined) cursor.setBatchSize(a.batchSize);
        if (a.maxTimeMS !== undefined) cursor.setMaxTimeMS(a.maxTimeMS);
        if (a.comment !== undefined) cursor.setComment(a.comment);
        return { value: await cursor.toArray() };
    },
    async listCollections(db, a) {
        return { value: await db.listCollections(a.filter ?? {}, without(a, 'filter')).toArray() };
    },
    async listCollectionNames(db, a) {
        const list = await db.listCollections(a.filter ?? {}, { ...without(a, 'filter'), nameOnly: true }).toArray();
        return { value: list.map((c) => c.name) };
    },
    async createCollection(db, a) {
        const coll = await db.createCollection(required(a, 'collection', 'createCollection'), without(a, 'collection'));
        return { value: coll, kind: 'collection' };
    },
    async dropCollection(db, a) {
        return { value: await db.dropCollection(required(a, 'collection', 'dropCollection'), without(a, 'collection')) };
    },
    async modifyCollection(db, a) {
        const { session, ...rest } = a;
        const command = { collMod: required(a, 'collection', 'modifyCollection'), ...without(rest, 'collection') };
        return { value: await db.command(command, { session }) };
    },
    async dropDatabase(db, a) {
        return { value: await db.dropDatabase(a) };
    },
};

const clientOps = {
    async listDatabases(ce, a) {
        const opts = { ...without(a, 'filter') };
        if (a.filter !== undefined) opts.filter = a.filter;
        const r = await ce.client.db('admin').admin().listDatabases(opts);
        return { value: r.databases };
    },
    async listDatabaseNames(ce, a) {
        const r = await ce.client.db('admin').admin().listDatabases({ ...a, nameOnly: true });
        return { value: r.databases.map((d) => d.name) };
    },
    async clientBulkWrite(ce, a) {
        const models = clientBulkWriteModels(required(a, 'models', 'clientBulkWrite'));
        const docs = models.filter((m) => m.name === 'insertOne').map((m) => m.document);
        const r = await withIds(ce.pkFactory, docs, () => ce.client.bulkWrite(models, without(a, 'models')));
        return { value: clientBulkWriteResultDoc(r) };
    },
    async close(ce) {
        await ce.client.close();
        return { value: undefined };
    },
};

const TXN_STATES = {
    NO_TRANSACTION: 'none',
    STARTING_TRANSACTION: 'starting',
    TRANSACTION_IN_PROGRESS: 'in_progress',
    TRANSACTION_COMMITTED: 'committed',
    TRANSACTION_COMMITTED_EMPTY: 'committed',
    TRANSACTION_ABORTED: 'aborted',
};

const sessionOps = {
    async startTransaction(s, a, ctx) {
        ctx.state.usedTransactions = true;
        s.startTransaction(convertTransactionOptions(a));
        return { value: undefined };
    },
    async commitTransaction(s, a) {
        await s.commitTransaction(a);
        return { value: undefined };
    },
    async abortTransaction(s, a) {
        await s.abortTransaction(a);
        return { value: undefined };
    },
    async withTransaction(s, a, ctx) {
        ctx.state.usedTransactions = true;
        const callback = required(a, 'callback', 'withTransaction');
        const options = convertTransactionOptions(without(a, 'callback'));
        let failure = null;
        try {
            await s.withTransaction(async () => {
                for (const op of callback) {
                    try {
                        await runOperation(op, ctx, { inCallback: true });
                    } catch (err) {
                        if (isRunnerError(err)) failure = err;
                        throw err;
                    }
                }
            }, options);
        } catch (err) {
            if (failure) throw failure;
            throw err;
        }
        if (failure) throw failure;
        return { value: undefined };
    },
    async endSession(s) {
        await s.endSession();
        return { value: undefined };
    },
    async getSnapshotTime(s) {
        return { value: s.snapshotTime };
    },
};

const cursorOps = {
    async iterateUntilDocumentOrError(cur) {
        // next() waits for a document (or the end of a non-tailable cursor).
        return { value: await cur.next() };
    },
    async iterateOnce(cur) {
        return { value: await cur.tryNext() };
    },
    async close(cur) {
        await cur.close().catch(() => {});
        return { value: undefined };
    },
};

const OPS_BY_KIND = {
    collection: collectionOps,
    database: databaseOps,
    client: clientOps,
    session: sessionOps,
    cursor: cursorOps,
};

async function executeEntityOperation(op, ctx) {
    const { entities } = ctx;
    if (!entities.has(op.object)) throw new AssertionFailure(`operation ${op.name} on undefined entity ${op.object}`);
    const kind = entities.kindOf(op.object);
    const table = OPS_BY_KIND[kind];
    const fn = table && Object.prototype.hasOwnProperty.call(table, op.name) ? table[op.name] : null;
    if (!fn) throw new UnsupportedError(`operation ${op.name} on a ${kind} entity`);
    const target = entities.get(op.object);
    let args;
    if (op.name === 'withTransaction') args = { ...op.arguments };
    else args = prepareArguments(op.arguments, entities);
    return fn(target, args, ctx, op);
}

// ---------------------------------------------------------------------------------------------
// Special ("testRunner") operations

async function listCollectionNamesInternal(ctx, dbName) {
    const list = await ctx.internalClient.db(dbName).listCollections({}, { nameOnly: true }).toArray();
    return list.map((c) => c.name);
}

async function indexNamesInternal(ctx, dbName, collName) {
    try {
        const list = await ctx.internalClient.db(dbName).collection(collName).listIndexes().toArray();
        return list.map((i) => i.name);
    } catch (err) {
        if (err.code === 26) return [];
        throw err;
    }
}

function sessionOf(ctx, args) {
    return ctx.entities.get(required(args, 'session', 'special operation'), 'session');
}

function lastTwoLsids(ctx, args) {
    const ce = ctx.entities.get(required(args, 'client', 'lsid assertion'), 'client');
    const started = ce.commandStartedEvents();
    if (started.length < 2) throw new AssertionFailure(`fewer than two commandStartedEvents on ${ce.id}`);
    const [a, b] = started.slice(-2).map((e) => e.command.lsid);
    if (!a || !b) throw new AssertionFailure('one of the last two commands has no lsid');
    return [describe(a), describe(b)];
}

const specialOps = {
    async failPoint(a, ctx) {
        const ce = ctx.entities.get(required(a, 'client', 'failPoint'), 'client');
        const fp = required(a, 'failPoint', 'failPoint');
        await ce.client.db('admin').command(fp);
        ctx.state.failPoints.push({ client: ce.client, name: fp.configureFailPoint });
    },
    async targetedFailPoint(a, ctx) {
        const session = ctx.entities.get(required(a, 'session', 'targetedFailPoint'), 'session');
        const fp = required(a, 'failPoint', 'targetedFailPoint');
        if (!session.transaction?.isPinned && !session.isPinned) {
            throw new AssertionFailure('targetedFailPoint: the session is not pinned to a mongos');
        }
        // On the router the session is pinned to, through a direct connection to it (the session's
        // client may know several): closed once the fail point is turned off after the test.
        const address = session.transaction?.server?.description?.address;
        if (!address) throw new AssertionFailure('targetedFailPoint: the pinned router has no address');
        const uri = applyUriOptions(`mongodb://${address}/`, {}, { directConnection: true, serverSelectionTimeoutMS: 5000 });
        const direct = new mongodb.MongoClient(uri);
        try {
            await direct.db('admin').command(fp);
        } catch (err) {
            await direct.close(true).catch(() => {});
            throw err;
        }
        ctx.state.failPoints.push({ client: direct, name: fp.configureFailPoint, closeAfter: true });
    },
    async assertSessionTransactionState(a, ctx) {
        const s = sessionOf(ctx, a);
        const state = TXN_STATES[s.transaction.state] ?? s.transaction.state;
        if (state !== a.state) throw new AssertionFailure(`session transaction state is ${state}, expected ${a.state}`);
    },
    async assertSessionPinned(a, ctx) {
        const s = sessionOf(ctx, a);
        if (!(s.transaction?.isPinned || s.isPinned)) throw new AssertionFailure('session is not pinned');
    },
    async assertSessionUnpinned(a, ctx) {
        const s = sessionOf(ctx, a);
        if (s.transaction?.isPinned || s.isPinned) throw new AssertionFailure('session is pinned');
    },
    async assertSessionDirty(a, ctx) {
        const s = sessionOf(ctx, a);
        if (!s.serverSession?.isDirty) throw new AssertionFailure('session is not dirty');
    },
    async assertSessionNotDirty(a, ctx) {
        const s = sessionOf(ctx, a);
        if (s.serverSession?.isDirty) throw new AssertionFailure('session is dirty');
    },
    async assertSameLsidOnLastTwoCommands(a, ctx) {
        const [x, y] = lastTwoLsids(ctx, a);
        if (x !== y) throw new AssertionFailure(`lsids differ: ${x} vs ${y}`);
    },
    async assertDifferentLsidOnLastTwoCommands(a, ctx) {
        const [x, y] = lastTwoLsids(ctx, a);
        if (x === y) throw new AssertionFailure(`lsids are the same: ${x}`);
    },
    async assertCollectionExists(a, ctx) {
        const names = await listCollectionNamesInternal(ctx, a.databaseName);
        if (!names.includes(a.collectionName)) {
            throw new AssertionFailure(`collection ${a.databaseName}.${a.collectionName} does not exist`);
        }
    },
    async assertCollectionNotExists(a, ctx) {
        const names = await listCollectionNamesInternal(ctx, a.databaseName);
        if (names.includes(a.collectionName)) {
            throw new AssertionFailure(`collection ${a.databaseName}.${a.collectionName} exists`);
        }
    },
    async assertIndexExists(a, ctx) {
        const names = await indexNamesInternal(ctx, a.databaseName, a.collectionName);
        if (!names.includes(a.indexName)) throw new AssertionFailure(`index ${a.indexName} does not exist`);
    },
    async assertIndexNotExists(a, ctx) {
        const names = await indexNamesInternal(ctx, a.databaseName, a.collectionName);
        if (names.includes(a.indexName)) throw new AssertionFailure(`index ${a.indexName} exists`);
    },
    async createEntities(a, ctx) {
        await ctx.entities.create(required(a, 'entities', 'createEntities'));
    },
    async assertNumberConnectionsCheckedOut(a, ctx) {
        const ce = ctx.entities.get(a.client, 'client');
        if (ce.checkedOut !== a.connections) {
            throw new AssertionFailure(`${ce.checkedOut} connections checked out, expected ${a.connections}`);
        }
    },
    async wait(a) {
        await new Promise((r) => setTimeout(r, required(a, 'ms', 'wait')));
    },
};

// ---------------------------------------------------------------------------------------------
// Error assertions

function topLevelError(err) {
    if (MongoClientBulkWriteError && err instanceof MongoClientBulkWriteError) return err.cause ?? null;
    return err;
}

function errorLabels(err) {
    const labels = new Set();
    for (const e of [err, err?.cause]) {
        if (!e) continue;
        const l = typeof e.errorLabels === 'object' ? e.errorLabels : e[Symbol.for('errorLabels')];
        if (l) for (const x of l) labels.add(x);
    }
    return labels;
}

function hasLabel(err, label) {
    for (const e of [err, err?.cause]) {
        if (e && typeof e.hasErrorLabel === 'function' && e.hasErrorLabel(label)) return true;
    }
    return errorLabels(err).has(label);
}

function plainErrorResponse(err) {
    let r = err?.errorResponse;
    let guard = 0;
    while (r instanceof Error && guard++ < 5) {
        r = r.errorResponse ?? Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'stack'));
    }
    return r && typeof r === 'object' ? r : undefined;
}

function bulkWriteErrors(err) {
    if (err instanceof MongoBulkWriteError) {
        const list = Array.isArray(err.writeErrors) ? err.writeErrors : err.writeErrors ? [err.writeErrors] : [];
        return list.map((w) => ({ code: w.code ?? w.err?.code, errmsg: w.errmsg ?? w.err?.errmsg }));
    }
    return [];
}

function writeConcernErrorOf(err) {
    const wce = err?.writeConcernError ?? err?.result?.writeConcernError ?? err?.err?.writeConcernError;
    if (wce) return wce;
    if (err instanceof MongoBulkWriteError && typeof err.result?.getWriteConcernError === 'function') {
        return err.result.getWriteConcernError() ?? null;
    }
    return null;
}

function isServerError(err) {
    return err instanceof MongoServerError;
}

export function errorSummary(err) {
    if (!err) return String(err);
    const parts = [`${err.name ?? 'Error'}: ${err.message}`];
    const top = topLevelError(err);
    if (top && top !== err) parts.push(`cause ${top.name}: ${top.message}`);
    if (top?.code !== undefined) parts.push(`code ${top.code}${top.codeName ? ` (${top.codeName})` : ''}`);
    const we = bulkWriteErrors(err);
    if (we.length) parts.push(`writeErrors ${describe(we)}`);
    if (err instanceof MongoClientBulkWriteError && err.writeErrors?.size) parts.push(`writeErrors ${describe(mapToDoc(err.writeErrors))}`);
    const labels = [...errorLabels(err)];
    if (labels.length) parts.push(`labels ${labels.join(',')}`);
    return parts.join('; ');
}

export function checkError(expected, err, ctx) {
    const fail = (msg) => {
        throw new AssertionFailure(`${msg} [error was ${errorSummary(err)}]`);
    };
    const known = new Set([
        'isError', 'isClientError', 'isTimeoutError', 'errorContains', 'errorCode', 'errorCodeName',
        'errorLabelsContain', 'errorLabelsOmit', 'writeErrors', 'writeConcernErrors', 'errorResponse', 'expectResult',
    ]);
    for (const k of Object.keys(expected)) if (!known.has(k)) throw new UnsupportedError(`expectError.${k}`);
    const top = topLevelError(err);

    if (expected.isClientError !== undefined) {
        const client = !isServerError(err);
        if (client !== expected.isClientError) {
            fail(expected.isClientError ? 'expected a client-side error, got a server error' : 'expected a server error, got a client-side error');
        }
    }
    if (expected.isTimeoutError !== undefined) {
        const timeout = MongoOperationTimeoutError ? err instanceof MongoOperationTimeoutError : false;
        if (timeout !== expected.isTimeoutError) fail(`expected isTimeoutError ${expected.isTimeoutError}`);
    }
    if (expected.errorContains !== undefined) {
        const needle = expected.errorContains.toLowerCase();
        const messages = [err.message, err.errmsg, top?.message, top?.errmsg];
        for (const w of bulkWriteErrors(err)) messages.push(w.errmsg);
        const wce = writeConcernErrorOf(err);
        if (wce) messages.push(wce.errmsg ?? wce.message);
        if (!messages.some((m) => typeof m === 'string' && m.toLowerCase().includes(needle))) {
            fail(`error message does not contain "${expected.errorContains}"`);
        }
    }
    if (expected.errorCode !== undefined) {
        if (!top || !isServerError(top) || top.code !== expected.errorCode) {
            fail(`expected error code ${expected.errorCode}, got ${top?.code}`);
        }
    }
    if (expected.errorCodeName !== undefined) {
        const want = expected.errorCodeName.toLowerCase();
        const names = [];
        if (top) names.push(top.codeName, CODE_NAMES[top.code]);
        for (const w of bulkWriteErrors(err)) names.push(w.codeName, CODE_NAMES[w.code]);
        const wce = writeConcernErrorOf(err);
        if (wce) names.push(wce.codeName, CODE_NAMES[wce.code]);
        if (!names.some((n) => typeof n === 'string' && n.toLowerCase() === want)) {
            fail(`expected error code name ${expected.errorCodeName}`);
        }
    }
    for (const label of expected.errorLabelsContain ?? []) {
        if (!hasLabel(err, label)) fail(`error lacks label ${label}`);
    }
    for (const label of expected.errorLabelsOmit ?? []) {
        if (hasLabel(err, label)) fail(`error has label ${label}`);
    }
    if (expected.errorResponse !== undefined) {
        const resp = plainErrorResponse(top ?? err);
        if (!resp) fail('error has no server response');
        try {
            match(expected.errorResponse, resp, { entities: ctx.entities });
        } catch (e) {
            if (e instanceof MatchError) fail(`errorResponse mismatch: ${e.message}`);
            throw e;
        }
    }
    if (expected.writeErrors !== undefined) {
        if (!(err instanceof MongoClientBulkWriteError)) fail('writeErrors expected on a client bulk write error');
        const actual = mapToDoc(err.writeErrors ?? new Map());
        const expKeys = Object.keys(expected.writeErrors).sort();
        const actKeys = Object.keys(actual).sort();
        if (expKeys.join(',') !== actKeys.join(',')) fail(`writeErrors indexes ${actKeys} != expected ${expKeys}`);
        for (const k of expKeys) {
            try {
                match(expected.writeErrors[k], actual[k], { entities: ctx.entities, path: `writeErrors.${k}` });
            } catch (e) {
                if (e instanceof MatchError) fail(e.message);
                throw e;
            }
        }
    }
    if (expected.writeConcernErrors !== undefined) {
        if (!(err instanceof MongoClientBulkWriteError)) fail('writeConcernErrors expected on a client bulk write error');
        const actual = err.writeConcernErrors ?? [];
        if (actual.length !== expected.writeConcernErrors.length) {
            fail(`${actual.length} writeConcernErrors, expected ${expected.writeConcernErrors.length}`);
        }
        expected.writeConcernErrors.forEach((w, i) => {
            try {
                match(w, actual[i], { entities: ctx.entities, path: `writeConcernErrors[${i}]` });
            } catch (e) {
                if (e instanceof MatchError) fail(e.message);
                throw e;
            }
        });
    }
    if (expected.expectResult !== undefined) {
        let result;
        if (MongoClientBulkWriteError && err instanceof MongoClientBulkWriteError) result = clientBulkWriteResultDoc(err.partialResult);
        else if (err instanceof MongoBulkWriteError) result = bulkWriteResultDoc(err.result);
        try {
            match(expected.expectResult, result, { entities: ctx.entities, path: 'error.result' });
        } catch (e) {
            if (e instanceof MatchError) fail(e.message);
            throw e;
        }
    }
}

// ---------------------------------------------------------------------------------------------

/**
 * Runs one operation with its assertions. ctx: { entities, internalClient, state: { failPoints,
 * usedTransactions } }. Errors raised by the driver inside a withTransaction callback are rethrown
 * (after their assertions) so they reach withTransaction.
 */
export async function runOperation(op, ctx, { inCallback = false } = {}) {
    if (op.object === 'testRunner') {
        const fn = Object.prototype.hasOwnProperty.call(specialOps, op.name) ? specialOps[op.name] : null;
        if (!fn) throw new UnsupportedError(`special operation ${op.name}`);
        await fn(op.arguments ?? {}, ctx);
        return;
    }
    for (const k of Object.keys(op)) {
        if (!['name', 'object', 'arguments', 'expectResult', 'expectError', 'saveResultAsEntity', 'ignoreResultAndError'].includes(k)) {
            throw new UnsupportedError(`operation field ${k}`);
        }
    }
    let outcome;
    let error = null;
    try {
        outcome = await executeEntityOperation(op, ctx);
    } catch (err) {
        if (isRunnerError(err)) throw err;
        error = err;
    }
    if (op.ignoreResultAndError) {
        if (error && inCallback) throw error;
        return;
    }
    if (op.expectError) {
        if (!error) throw new AssertionFailure(`${op.name}: expected an error, got result ${describe(outcome?.value)}`);
        checkError(op.expectError, error, ctx);
        if (inCallback) throw error;
        return;
    }
    if (error) {
        if (inCallback) throw error;
        throw new AssertionFailure(`${op.name}: unexpected error: ${errorSummary(error)}`);
    }
    if (op.expectResult !== undefined) {
        try {
            match(op.expectResult, outcome.value, {
                entities: ctx.entities,
                rootElements: ROOT_ELEMENT_RESULTS.has(op.name),
                path: 'result',
            });
        } catch (e) {
            if (e instanceof MatchError) throw new AssertionFailure(`${op.name}: ${e.message}`);
            throw e;
        }
    }
    if (op.saveResultAsEntity) {
        ctx.entities.set(op.saveResultAsEntity, outcome.kind ?? 'value', outcome.value);
    }
}

export { convertCommonOptions };
