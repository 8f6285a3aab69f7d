// Self-tests of the spec runner's pure parts (no server needed):
//   node --test tests/spec/selftest.test.mjs
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import mongodb from './driver.mjs';
import { match, matchExact, matchResult, MatchError, UnsupportedError, typeNames } from './matcher.mjs';
import { PROFILES, requirementsMismatch, requirementMismatch, schemaProblem, compareVersions } from './requirements.mjs';
import { applyUriOptions, clientUri, EntityMap, hostsOf, toReadPreference, createQueuedPkFactory, withHosts } from './entities.mjs';
import {
    runOperation,
    checkError,
    clientBulkWriteModels,
    clientBulkWriteResultDoc,
    bulkWriteResultDoc,
    AssertionFailure,
} from './operations.mjs';
import { parseTestFile, Runner, annotateDriverDeviation } from './runner.mjs';

const { Long, Int32, Double, ObjectId, Binary, MongoServerError, MongoInvalidArgumentError, MongoClientBulkWriteError } =
    mongodb;

const ok = (exp, act, opts) => assert.equal(matchResult(exp, act, opts), null);
const bad = (exp, act, opts, re) => {
    const why = matchResult(exp, act, opts);
    assert.notEqual(why, null, `expected a mismatch for ${JSON.stringify(exp)}`);
    if (re) assert.match(why, re);
};

describe('entities: several routers', () => {
    const two = 'mongodb://u:p@127.0.0.1:1,127.0.0.1:2/db?w=1';
    test('hostsOf and withHosts keep credentials, path and options', () => {
        assert.deepEqual(hostsOf(two), ['127.0.0.1:1', '127.0.0.1:2']);
        assert.deepEqual(hostsOf('mongodb://h:3'), ['h:3']);
        assert.equal(withHosts(two, ['127.0.0.1:2']), 'mongodb://u:p@127.0.0.1:2/db?w=1');
        assert.equal(withHosts('mongodb://a:1,b:2', ['a:1']), 'mongodb://a:1');
    });
    test('clientUri: at a sharded profile every router only for useMultipleMongoses', () => {
        const sharded = PROFILES['sharded-8.0'];
        assert.equal(clientUri(two, sharded, true), two);
        assert.equal(clientUri(two, sharded, false), 'mongodb://u:p@127.0.0.1:1/db?w=1');
        assert.equal(clientUri(two, sharded, undefined), 'mongodb://u:p@127.0.0.1:1/db?w=1');
        assert.equal(clientUri(two, PROFILES['replicaset-8.0'], false), two);
        assert.equal(clientUri('mongodb://h:1/', sharded, true), 'mongodb://h:1/');
    });
});

describe('matcher: documents', () => {
    test('extra keys are allowed in the root document only', () => {
        ok({ x: 1 }, { x: 1, y: 2 });
        bad({ x: { y: 1 } }, { x: { y: 1, z: 1 } }, {}, /unexpected field\(s\) z/);
        bad({ x: 1 }, { x: 1, y: 2 }, { root: false }, /unexpected field/);
    });
    test('missing keys and key order', () => {
        bad({ x: 1, y: 1 }, { x: 1 }, {}, /\$\.y: missing field/);
        ok({ x: 1, y: { a: 1, b: 2 } }, { y: { b: 2, a: 1 }, x: 1 });
    });
    test('null must be present', () => {
        ok({ x: null }, { x: null });
        bad({ x: null }, {});
        bad({ x: null }, { x: 0 });
    });
    test('undefined-valued fields count as absent', () => {
        ok({ a: 1 }, { a: 1, b: undefined }, { root: false });
        bad({ b: 1 }, { b: undefined });
    });
    test('a document does not match a scalar or array', () => {
        bad({ x: 1 }, 5, {}, /expected a document/);
        bad({ x: 1 }, [{ x: 1 }]);
    });
    test('Map results are matched as documents', () => {
        ok({ 0: { insertedId: 1 } }, new Map([[0, { insertedId: 1 }]]));
    });
});

describe('matcher: numbers and scalars', () => {
    test('int, long and double are equal when numerically equal', () => {
        ok(1, new Long(1));
        ok(new Long(1), 1);
        ok(1, new Double(1.0));
        ok(new Int32(3), 3);
        ok({ n: 1 }, { n: 1.0 });
        ok(Long.fromString('9007199254740993'), Long.fromString('9007199254740993'));
        bad(Long.fromString('9007199254740993'), Long.fromString('9007199254740992'));
        bad(1, 1.5);
        bad(1, '1');
        bad(0, false);
    });
    test('other BSON values', () => {
        const id = new ObjectId();
        ok(id, new ObjectId(id.toHexString()));
        bad(id, new ObjectId());
        ok(new Date(5), new Date(5));
        bad(new Date(5), new Date(6));
        ok(new Binary(Buffer.from('ab'), 4), new Binary(Buffer.from('ab'), 4));
        bad(new Binary(Buffer.from('ab'), 4), new Binary(Buffer.from('ab'), 0));
        ok(/a.c/i, /a.c/i);
        bad(/a.c/i, /a.c/);
        bad('a', 'b');
        ok(true, true);
        bad(true, 1);
    });
    test('arrays must have the same length; elements are not root documents', () => {
        ok([1, 2, 3], [1, 2, 3]);
        bad([1, 2, 3], [1, 2, 3, 4], {}, /expected 3 element/);
        bad([{ x: 1 }], [{ x: 1, y: 1 }]);
        ok([{ x: 1 }], [{ x: 1, y: 1 }], { rootElements: true });
        bad([1], { 0: 1 }, {}, /expected an array/);
    });
});

describe('matcher: special operators', () => {
    test('$$exists', () => {
        ok({ a: { $$exists: true } }, { a: null });
        ok({ a: { $$exists: false } }, { b: 1 });
        bad({ a: { $$exists: false } }, { a: 1 });
        bad({ a: { $$exists: true } }, {});
        ok({ a: { b: { $$exists: false } } }, { a: {} });
    });
    test('$$unsetOrMatches as field and as whole value', () => {
        ok({ insertedId: { $$unsetOrMatches: 2 } }, {});
        ok({ insertedId: { $$unsetOrMatches: 2 } }, { insertedId: 2 });
        bad({ insertedId: { $$unsetOrMatches: 2 } }, { insertedId: 3 });
        ok({ $$unsetOrMatches: { insertedId: { $$unsetOrMatches: 2 } } }, undefined);
        ok({ $$unsetOrMatches: { deletedCount: 0 } }, { deletedCount: 0, acknowledged: true });
        bad({ $$unsetOrMatches: { deletedCount: 0 } }, { deletedCount: 1 });
        // Does not make the value a root document: extra nested keys still fail.
        bad({ a: { $$unsetOrMatches: { b: 1 } } }, { a: { b: 1, c: 2 } });
    });
    test('$$type with a string or a list of names', () => {
        ok({ a: { $$type: 'string' } }, { a: 'x' });
        ok({ a: { $$type: ['int', 'long'] } }, { a: new Long(5) });
        ok({ a: { $$type: ['int', 'long'] } }, { a: 5 });
        bad({ a: { $$type: ['int', 'long'] } }, { a: 5.5 });
        ok({ a: { $$type: 'double' } }, { a: 5.5 });
        ok({ a: { $$type: 'object' } }, { a: { b: 1 } });
        bad({ a: { $$type: 'object' } }, { a: [1] });
        ok({ a: { $$type: 'array' } }, { a: [1] });
        ok({ a: { $$type: 'objectId' } }, { a: new ObjectId() });
        ok({ a: { $$type: 'binData' } }, { a: new Binary(Buffer.from('x')) });
        ok({ a: { $$type: 'date' } }, { a: new Date() });
        bad({ a: { $$type: 'string' } }, {}, {}, /missing field/);
        assert.deepEqual(typeNames(null), ['null']);
    });
    test('$$lte with flexible numerics', () => {
        ok({ n: { $$lte: 5 } }, { n: 5.0 });
        ok({ n: { $$lte: 5 } }, { n: new Long(0) });
        bad({ n: { $$lte: 1 } }, { n: 1.1 });
    });
    test('$$matchesEntity and $$sessionLsid use the entity map', () => {
        const lsid = { id: new Binary(Buffer.alloc(16, 7), 4) };
        const entities = {
            lookup: (name) => ({ saved: new ObjectId('0123456789abcdef01234567') })[name],
            sessionLsid: (name) => (name === 'session0' ? lsid : undefined),
        };
        ok({ _id: { $$matchesEntity: 'saved' } }, { _id: new ObjectId('0123456789abcdef01234567') }, { entities });
        bad({ _id: { $$matchesEntity: 'saved' } }, { _id: new ObjectId() }, { entities });
        ok({ lsid: { $$sessionLsid: 'session0' } }, { lsid: { id: new Binary(Buffer.alloc(16, 7), 4) } }, { entities });
        bad({ lsid: { $$sessionLsid: 'session0' } }, { lsid: { id: new Binary(Buffer.alloc(16, 8), 4) } }, { entities });
    });
    test('$$matchesHexBytes', () => {
        ok({ $$matchesHexBytes: '12AB' }, Buffer.from([0x12, 0xab]));
        bad({ $$matchesHexBytes: '12AB' }, Buffer.from([0x12]));
    });
    test('$$matchAsDocument and $$matchAsRoot', () => {
        ok({ $$matchAsDocument: { a: 1 } }, '{"a": 1}');
        bad({ $$matchAsDocument: { a: 1 } }, '{"a": 1, "b": 2}');
        ok({ x: { $$matchAsRoot: { a: 1 } } }, { x: { a: 1, b: 2 } });
    });
    test('unknown operators and $$placeholder are unsupported, not silently accepted', () => {
        assert.throws(() => match({ a: { $$bogus: 1 } }, { a: 1 }), UnsupportedError);
        assert.throws(() => match({ a: { $$placeholder: 1 } }, { a: 1 }), UnsupportedError);
        assert.throws(() => match({ a: 1 }, { a: 2 }), MatchError);
    });
    test('matchExact (outcome) forbids extra keys at every level', () => {
        assert.doesNotThrow(() => matchExact([{ _id: 1, x: 1 }], [{ x: 1, _id: 1 }]));
        assert.throws(() => matchExact([{ _id: 1 }], [{ _id: 1, x: 1 }]), MatchError);
        assert.throws(() => matchExact([{ _id: 1 }], []), MatchError);
    });
});

describe('requirements against pinned profiles', () => {
    const single = PROFILES['single-8.0'];
    const sharded = PROFILES['sharded-8.0'];
    test('server versions', () => {
        assert.equal(compareVersions('4.0.10', '4.0.9'), 1);
        assert.equal(compareVersions('3.6', '4.2.0'), -1);
        assert.equal(compareVersions('8.0', '8.0.0'), 0);
        assert.equal(requirementMismatch({ minServerVersion: '8.0' }, single), null);
        assert.notEqual(requirementMismatch({ minServerVersion: '8.2.0' }, single), null);
        assert.equal(requirementMismatch({ maxServerVersion: '8.1.99' }, single), null);
        assert.notEqual(requirementMismatch({ maxServerVersion: '4.2.99' }, single), null);
        assert.notEqual(requirementMismatch({ minServerVersion: '8.0.1' }, single), null);
    });
    test('topologies', () => {
        assert.notEqual(requirementMismatch({ topologies: ['replicaset'] }, single), null);
        assert.equal(requirementMismatch({ topologies: ['single', 'replicaset'] }, single), null);
        assert.equal(requirementMismatch({ topologies: ['sharded-replicaset'] }, sharded), null);
        assert.notEqual(requirementMismatch({ topologies: ['sharded', 'load-balanced'] }, single), null);
    });
    test('serverless, auth, csfle, serverParameters', () => {
        assert.equal(requirementMismatch({ serverless: 'forbid' }, single), null);
        assert.notEqual(requirementMismatch({ serverless: 'require' }, single), null);
        assert.notEqual(requirementMismatch({ auth: true }, single), null);
        assert.equal(requirementMismatch({ auth: false }, single), null);
        assert.notEqual(requirementMismatch({ csfle: true }, single), null);
        assert.notEqual(requirementMismatch({ serverParameters: { enableTestCommands: true } }, single), null);
        const withParams = { ...single, serverParameters: { x: 1 } };
        assert.equal(requirementMismatch({ serverParameters: { x: 1.0 } }, withParams), null);
    });
    test('any one alternative suffices; absent means applicable', () => {
        const reqs = [{ minServerVersion: '4.0.0', topologies: ['single', 'replicaset'] }, { minServerVersion: '4.2.0', topologies: ['sharded'] }];
        assert.equal(requirementsMismatch(reqs, single), null);
        assert.equal(requirementsMismatch(reqs, sharded), null);
        assert.equal(requirementsMismatch(undefined, single), null);
        assert.notEqual(requirementsMismatch([{ topologies: ['replicaset'] }], sharded), null);
    });
    test('unknown requirement keys are an error', () => {
        assert.throws(() => requirementMismatch({ bogus: 1 }, single), UnsupportedError);
    });
    test('schema versions', () => {
        assert.equal(schemaProblem('1.0'), null);
        assert.equal(schemaProblem('1.21'), null);
        assert.notEqual(schemaProblem('1.22'), null);
        assert.notEqual(schemaProblem('2.0'), null);
    });
});

describe('loading test files and client URIs', () => {
    test('extended JSON keeps explicit types, plain numbers stay numbers', () => {
        const d = parseTestFile(
            '{"a": 1, "b": {"$numberLong": "5"}, "c": {"$numberDouble": "1.0"}, "d": {"$oid": "0123456789abcdef01234567"},' +
                ' "e": {"$date": {"$numberLong": "5"}}, "f": {"$gt": 1}, "g": {"$numberInt": "7"}, "h": [2.5]}'
        );
        assert.equal(d.a, 1);
        assert.equal(d.b._bsontype, 'Long');
        assert.equal(d.c._bsontype, 'Double');
        assert.equal(d.d._bsontype, 'ObjectId');
        assert.ok(d.e instanceof Date);
        assert.deepEqual(d.f, { $gt: 1 });
        assert.equal(d.g, 7);
        assert.deepEqual(d.h, [2.5]);
    });
    test('uriOptions override URI options case-insensitively; defaults only fill gaps', () => {
        const base = 'mongodb://127.0.0.1:27017/?directConnection=true&retryWrites=true';
        const u = applyUriOptions(base, { retrywrites: false, appname: 'a b' }, { serverSelectionTimeoutMS: 5000 });
        assert.equal(u, 'mongodb://127.0.0.1:27017/?directConnection=true&retrywrites=false&appname=a%20b&serverSelectionTimeoutMS=5000');
        assert.equal(applyUriOptions('mongodb://h:1', { w: 'majority' }), 'mongodb://h:1/?w=majority');
        assert.equal(applyUriOptions('mongodb://h:1/?serverSelectionTimeoutMS=1', {}, { serverSelectionTimeoutMS: 5 }), 'mongodb://h:1/?serverSelectionTimeoutMS=1');
        assert.throws(() => applyUriOptions('mongodb://h:1', { authMechanismProperties: { X: { $$placeholder: 1 } } }), UnsupportedError);
    });
    test('explicit null _id survives the driver; missing _id gets an ObjectId', () => {
        const pk = createQueuedPkFactory();
        pk.prepare([{ _id: null }, { x: 1 }, { _id: 5 }]);
        assert.equal(pk.createPk(), null);
        assert.equal(pk.createPk()._bsontype, 'ObjectId');
        assert.equal(pk.createPk()._bsontype, 'ObjectId'); // queue empty: default behaviour
    });
    test('driver deviations are labelled, other failures are not', () => {
        assert.match(annotateDriverDeviation('crud/bypassDocumentValidation.json', 'x bypassDocumentValidation: missing field'), /^\[driver\]/);
        assert.doesNotMatch(annotateDriverDeviation('crud/find.json', 'bypassDocumentValidation: missing field'), /\[driver\]/);
        assert.match(annotateDriverDeviation('crud/client-bulkWrite-partialResults.json', 'error.result.insertedCount: expected no field, got 0'), /^\[driver\]/);
        assert.doesNotMatch(annotateDriverDeviation('crud/client-bulkWrite-partialResults.json', 'error.result.insertedCount: expected 1, got 0'), /\[driver\]/);
    });
    test('read preferences are converted', () => {
        assert.equal(toReadPreference({ mode: 'secondaryPreferred' }).mode, 'secondaryPreferred');
    });
});

// A fake collection recording the arguments the runner passes to the driver.
function fakeEntities(coll) {
    const entities = new EntityMap({ uri: 'mongodb://unused', profile: PROFILES['single-8.0'] });
    entities.set('collection0', 'collection', coll);
    entities.set('session0', 'session', { fake: 'session' });
    return entities;
}

function ctxFor(coll) {
    return { entities: fakeEntities(coll), state: { failPoints: [], usedTransactions: false } };
}

describe('operations: argument mapping and results', () => {
    test('updateOne: filter/update positional, the rest as options, session resolved', async () => {
        const calls = [];
        const coll = {
            async updateOne(filter, update, options) {
                calls.push({ filter, update, options });
                return { acknowledged: true, matchedCount: 1, modifiedCount: 1, upsertedCount: 0, upsertedId: null };
            },
        };
        const ctx = ctxFor(coll);
        await runOperation(
            {
                name: 'updateOne',
                object: 'collection0',
                arguments: { filter: { _id: 1 }, update: { $inc: { x: 1 } }, upsert: true, session: 'session0', hint: '_id_' },
                expectResult: { matchedCount: 1, modifiedCount: 1, upsertedCount: 0, upsertedId: { $$exists: false } },
            },
            ctx
        );
        assert.deepEqual(calls[0].filter, { _id: 1 });
        assert.deepEqual(calls[0].update, { $inc: { x: 1 } });
        assert.deepEqual(calls[0].options, { upsert: true, session: { fake: 'session' }, hint: '_id_' });
    });
    test('findOneAndUpdate lowercases returnDocument; find results are root documents', async () => {
        const calls = [];
        const coll = {
            async findOneAndUpdate(filter, update, options) {
                calls.push(options);
                return { _id: 1, x: 2 };
            },
            find(filter, options) {
                calls.push({ filter, options });
                return { toArray: async () => [{ _id: 1, x: 2, extra: true }] };
            },
        };
        const ctx = ctxFor(coll);
        await runOperation(
            {
                name: 'findOneAndUpdate',
                object: 'collection0',
                arguments: { filter: {}, update: { $set: { x: 2 } }, returnDocument: 'After' },
                expectResult: { _id: 1, x: 2 },
            },
            ctx
        );
        assert.equal(calls[0].returnDocument, 'after');
        await runOperation(
            { name: 'find', object: 'collection0', arguments: { filter: { x: 2 }, sort: { _id: 1 } }, expectResult: [{ _id: 1, x: 2 }] },
            ctx
        );
        assert.deepEqual(calls[1], { filter: { x: 2 }, options: { sort: { _id: 1 } } });
    });
    test('a wrong result fails the operation', async () => {
        const coll = { async countDocuments() { return 3; } };
        await assert.rejects(
            runOperation({ name: 'countDocuments', object: 'collection0', arguments: { filter: {} }, expectResult: 2 }, ctxFor(coll)),
            AssertionFailure
        );
    });
    test('unexpected errors fail; expected errors are checked; unknown operations are unsupported', async () => {
        const err = new MongoServerError({ errmsg: 'E11000 duplicate key', code: 11000, codeName: 'DuplicateKey' });
        const coll = { async insertOne() { throw err; } };
        const op = { name: 'insertOne', object: 'collection0', arguments: { document: { _id: 1 } } };
        await assert.rejects(runOperation(op, ctxFor(coll)), /unexpected error/);
        await runOperation({ ...op, expectError: { errorCode: 11000, errorContains: 'duplicate KEY', isClientError: false } }, ctxFor(coll));
        await assert.rejects(runOperation({ ...op, expectError: { errorCode: 121 } }, ctxFor(coll)), AssertionFailure);
        await assert.rejects(runOperation({ ...op, expectResult: {} , expectError: { isClientError: true } }, ctxFor(coll)), AssertionFailure);
        await assert.rejects(runOperation({ name: 'watch', object: 'collection0', arguments: {} }, ctxFor(coll)), UnsupportedError);
        await assert.rejects(runOperation({ name: 'noSuchSpecialOp', object: 'testRunner', arguments: {} }, ctxFor(coll)), UnsupportedError);
        await assert.rejects(
            runOperation({ name: 'insertOne', object: 'collection9', arguments: { document: {} } }, ctxFor(coll)),
            /undefined entity collection9/
        );
    });
    test('ignoreResultAndError swallows errors', async () => {
        const coll = { async deleteOne() { throw new Error('boom'); } };
        await runOperation({ name: 'deleteOne', object: 'collection0', arguments: { filter: {} }, ignoreResultAndError: true }, ctxFor(coll));
    });
    test('saveResultAsEntity stores the result', async () => {
        const coll = { async insertOne() { return { acknowledged: true, insertedId: 7 }; } };
        const ctx = ctxFor(coll);
        await runOperation({ name: 'insertOne', object: 'collection0', arguments: { document: {} }, saveResultAsEntity: 'r' }, ctx);
        assert.deepEqual(ctx.entities.lookup('r'), { acknowledged: true, insertedId: 7 });
    });
});

describe('operations: errors and bulk results', () => {
    const ctx = { entities: fakeEntities({}) };
    test('server error fields, code names and labels', () => {
        const err = new MongoServerError({ errmsg: 'WriteConflict error', code: 112, errorLabels: ['TransientTransactionError'] });
        checkError({ errorCode: 112, errorCodeName: 'writeconflict', errorLabelsContain: ['TransientTransactionError'], errorLabelsOmit: ['RetryableWriteError'] }, err, ctx);
        assert.throws(() => checkError({ errorLabelsOmit: ['TransientTransactionError'] }, err, ctx), AssertionFailure);
        assert.throws(() => checkError({ isClientError: true }, err, ctx), AssertionFailure);
        checkError({ errorResponse: { code: 112 } }, err, ctx);
        assert.throws(() => checkError({ errorResponse: { code: 8 } }, err, ctx), AssertionFailure);
    });
    test('client errors', () => {
        const err = new MongoInvalidArgumentError('bad argument');
        checkError({ isClientError: true, isError: true }, err, ctx);
        assert.throws(() => checkError({ errorCode: 2 }, err, ctx), AssertionFailure);
    });
    test('client bulk write errors: top-level cause, writeErrors and partial result', () => {
        const err = new MongoClientBulkWriteError({ message: 'bulk' });
        err.writeErrors = new Map([[1, { code: 17276, message: 'x' }]]);
        err.partialResult = { acknowledged: true, insertedCount: 1, upsertedCount: 0, matchedCount: 0, modifiedCount: 0, deletedCount: 0 };
        checkError({ writeErrors: { 1: { code: 17276 } }, expectResult: { $$unsetOrMatches: { insertedCount: 1 } } }, err, ctx);
        assert.throws(() => checkError({ writeErrors: { 0: { code: 17276 } } }, err, ctx), AssertionFailure);
        const withCause = new MongoClientBulkWriteError({ message: 'bulk' });
        withCause.cause = new MongoServerError({ errmsg: 'failpoint', code: 8 });
        checkError({ errorCode: 8, errorContains: 'failpoint' }, withCause, ctx);
    });
    test('model and result conversion', () => {
        assert.deepEqual(clientBulkWriteModels([{ insertOne: { namespace: 'db.c', document: { _id: 1 } } }]), [
            { name: 'insertOne', namespace: 'db.c', document: { _id: 1 } },
        ]);
        assert.throws(() => clientBulkWriteModels([{ bogus: {} }]), UnsupportedError);
        const doc = clientBulkWriteResultDoc({
            acknowledged: true, insertedCount: 1, upsertedCount: 0, matchedCount: 1, modifiedCount: 1, deletedCount: 0,
            insertResults: new Map([[0, { insertedId: 8 }]]),
            updateResults: new Map([[1, { matchedCount: 1, modifiedCount: 1, upsertedId: undefined }]]),
            deleteResults: new Map(),
        });
        assert.deepEqual(doc.insertResults, { 0: { insertedId: 8 } });
        assert.deepEqual(doc.updateResults, { 1: { matchedCount: 1, modifiedCount: 1 } });
        ok({ updateResults: { 1: { matchedCount: 1, modifiedCount: 1, upsertedId: { $$exists: false } } } }, doc);
        // Node's ClientUpdateResult carries the spec-permitted didUpsert flag; the document form
        // is the spec's UpdateResult model, upsertedId present exactly when an upsert happened.
        const u = clientBulkWriteResultDoc({
            acknowledged: true, insertedCount: 0, upsertedCount: 2, matchedCount: 1, modifiedCount: 1, deletedCount: 0,
            updateResults: new Map([
                [0, { matchedCount: 1, modifiedCount: 1, didUpsert: false }],
                [1, { matchedCount: 0, modifiedCount: 0, didUpsert: true, upsertedId: 5 }],
                [2, { matchedCount: 0, modifiedCount: 0, didUpsert: true, upsertedId: null }],
            ]),
        });
        assert.deepEqual(u.updateResults, {
            0: { matchedCount: 1, modifiedCount: 1 },
            1: { matchedCount: 0, modifiedCount: 0, upsertedId: 5 },
            2: { matchedCount: 0, modifiedCount: 0, upsertedId: null },
        });
        const r0 = { matchedCount: 1, modifiedCount: 1, upsertedId: { $$exists: false } };
        const r1 = { matchedCount: 0, modifiedCount: 0, upsertedId: 5 };
        ok({ updateResults: { 0: r0, 1: r1, 2: { matchedCount: 0, modifiedCount: 0, upsertedId: null } } }, u);
        assert.throws(() => ok({ updateResults: { 0: r0, 1: r1, 2: { matchedCount: 0, modifiedCount: 0 } } }, u));
        const b = bulkWriteResultDoc({ insertedCount: 1, matchedCount: 0, modifiedCount: 0, deletedCount: 0, upsertedCount: 0, upsertedIds: {}, insertedIds: { 0: 1 } });
        ok({ insertedCount: 1, upsertedIds: {}, insertedIds: { $$unsetOrMatches: { 0: 1 } } }, b);
    });
});

describe('expectEvents', () => {
    function runnerWithEvents(events) {
        const entities = new EntityMap({ uri: 'mongodb://unused', profile: PROFILES['single-8.0'] });
        entities.set('client0', 'client', { id: 'client0', events });
        return { runner: new Runner({ profile: PROFILES['single-8.0'] }), ctx: { entities } };
    }
    const started = (commandName, command) => ({ type: 'commandStartedEvent', commandName, databaseName: 'db', command });
    test('events match in order with root-level command documents', () => {
        const { runner, ctx } = runnerWithEvents([started('find', { find: 'c', filter: {}, lsid: {}, $db: 'db' })]);
        runner.checkEvents([{ client: 'client0', events: [{ commandStartedEvent: { command: { find: 'c', filter: {} }, commandName: 'find', databaseName: 'db' } }] }], ctx);
        assert.throws(() => runner.checkEvents([{ client: 'client0', events: [{ commandStartedEvent: { commandName: 'insert' } }] }], ctx), AssertionFailure);
        assert.throws(() => runner.checkEvents([{ client: 'client0', events: [{ commandSucceededEvent: {} }] }], ctx), AssertionFailure);
    });
    test('extra events fail unless ignoreExtraEvents', () => {
        const { runner, ctx } = runnerWithEvents([started('find', { find: 'c' }), started('getMore', { getMore: new Long(1) })]);
        const exp = { client: 'client0', events: [{ commandStartedEvent: { commandName: 'find' } }] };
        assert.throws(() => runner.checkEvents([exp], ctx), /expected 1 command event\(s\), got 2/);
        runner.checkEvents([{ ...exp, ignoreExtraEvents: true }], ctx);
        runner.checkEvents([{ client: 'client0', events: [{ commandStartedEvent: {} }, { commandStartedEvent: { command: { getMore: { $$type: ['int', 'long'] } } } }] }], ctx);
        assert.throws(() => runner.checkEvents([{ client: 'client0', events: [] }], ctx), AssertionFailure);
    });
    test("the driver's wtimeout on a first commit or abort is the one deviation absorbed", () => {
        const commit = (wc) => started('commitTransaction', { commitTransaction: 1, writeConcern: wc });
        const expect = (wc) => [{ client: 'client0', events: [{ commandStartedEvent: { command: { commitTransaction: 1, writeConcern: wc } } }] }];
        let { runner, ctx } = runnerWithEvents([commit({ w: 'majority', wtimeout: 10000 })]);
        runner.checkEvents(expect({ w: 'majority' }), ctx);
        runner.checkEvents(expect({ w: 'majority', wtimeout: 10000 }), ctx);
        assert.throws(() => runner.checkEvents(expect({ w: 1 }), ctx), AssertionFailure);
        ({ runner, ctx } = runnerWithEvents([commit({ w: 'majority', wtimeout: 5000 })]));
        assert.throws(() => runner.checkEvents(expect({ w: 'majority' }), ctx), /wtimeout/);
        ({ runner, ctx } = runnerWithEvents([started('insert', { insert: 'c', writeConcern: { w: 1, wtimeout: 10000 } })]));
        assert.throws(
            () => runner.checkEvents([{ client: 'client0', events: [{ commandStartedEvent: { command: { insert: 'c', writeConcern: { w: 1 } } } }] }], ctx),
            /wtimeout/,
        );
    });
    test('sdam event expectations are unsupported', () => {
        const { runner, ctx } = runnerWithEvents([]);
        assert.throws(() => runner.checkEvents([{ client: 'client0', eventType: 'sdam', events: [] }], ctx), UnsupportedError);
    });
});
