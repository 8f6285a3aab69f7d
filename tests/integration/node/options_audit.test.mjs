// The audit of index and collection options (issue 40): every option MongoDB knows for
// createIndexes and create is either carried out (and checked here where it has an effect) or
// refused with MongoDB's error — never accepted and ignored (a wildcard index that was listed but
// never used by a query was). Each case runs through a router, on a shard reached directly and on
// a single node, and a refused one leaves nothing behind.
import assert from 'node:assert/strict';
import { uniqueDbName, startServer } from './harness.mjs';
import { describeWithCluster } from './cluster_harness.mjs';

const NOT_IMPLEMENTED = 238;
const CANNOT_CREATE_INDEX = 67;
const INVALID_OPTIONS = 72;
const INVALID_INDEX_OPTION = 197;

// [case, index specification (name added), expected: 'ok' or a code, check(coll)?]
const INDEX_CASES = [
    ['ascending', { key: { a: 1 } }, 'ok'],
    ['compound', { key: { a: 1, b: -1 } }, 'ok'],
    ['hashed', { key: { h: 'hashed' } }, 'ok'],
    ['unique', { key: { u: 1 }, unique: true }, 'ok', async (coll) => {
        await coll.insertOne({ _id: 1, u: 5 });
        await assert.rejects(coll.insertOne({ _id: 2, u: 5 }), (e) => e.code === 11000);
    }],
    ['unique: false', { key: { u: 1 }, unique: false }, 'ok'],
    ['sparse', { key: { s: 1 }, sparse: true }, 'ok', async (coll) => {
        await coll.insertMany([{ _id: 1 }, { _id: 2, s: 1 }]);
        assert.equal(await coll.countDocuments({ s: { $exists: true } }, { hint: 'i' }), 1);
    }],
    ['collation', { key: { c: 1 }, collation: { locale: 'en', strength: 2 } }, 'ok', async (coll) => {
        const [spec] = (await coll.listIndexes().toArray()).filter((i) => i.name === 'i');
        assert.equal(spec.collation.locale, 'en');
        assert.equal(spec.collation.strength, 2);
    }],
    ['v: 2', { key: { a: 1 }, v: 2 }, 'ok'],
    ['v: 1', { key: { a: 1 }, v: 1 }, CANNOT_CREATE_INDEX],
    ['background (meaningless since 4.2)', { key: { a: 1 }, background: true }, 'ok'],
    ['hidden: false', { key: { a: 1 }, hidden: false }, 'ok'],
    ['hidden: true', { key: { a: 1 }, hidden: true }, NOT_IMPLEMENTED],
    ['storageEngine {}', { key: { a: 1 }, storageEngine: {} }, 'ok'],
    ['storageEngine wiredTiger', { key: { a: 1 }, storageEngine: { wiredTiger: { configString: 'block_compressor=zlib' } } }, INVALID_OPTIONS],
    ['wildcard $**', { key: { '$**': 1 } }, CANNOT_CREATE_INDEX],
    ['wildcard a.$**', { key: { 'a.$**': 1 } }, CANNOT_CREATE_INDEX],
    ['wildcard compound', { key: { x: 1, '$**': 1 } }, CANNOT_CREATE_INDEX],
    ['wildcardProjection', { key: { '$**': 1 }, wildcardProjection: { a: 1 } }, CANNOT_CREATE_INDEX],
    ['a $-prefixed field', { key: { $a: 1 } }, CANNOT_CREATE_INDEX],
    ['an empty path component', { key: { 'a..b': 1 } }, CANNOT_CREATE_INDEX],
    ['text', { key: { t: 'text' } }, CANNOT_CREATE_INDEX],
    ['2d', { key: { g: '2d' } }, CANNOT_CREATE_INDEX],
    ['2dsphere', { key: { g: '2dsphere' } }, CANNOT_CREATE_INDEX],
    ['partialFilterExpression', { key: { a: 1 }, partialFilterExpression: { a: { $gt: 1 } } }, NOT_IMPLEMENTED],
    ['expireAfterSeconds', { key: { t: 1 }, expireAfterSeconds: 60 }, NOT_IMPLEMENTED],
    ['weights', { key: { a: 1 }, weights: { a: 1 } }, INVALID_INDEX_OPTION],
    ['default_language', { key: { a: 1 }, default_language: 'en' }, INVALID_INDEX_OPTION],
    ['bits', { key: { a: 1 }, bits: 26 }, INVALID_INDEX_OPTION],
    ['an unknown option', { key: { a: 1 }, tesseraBogus: 1 }, INVALID_INDEX_OPTION],
];

// [case, create options, expected, check(db, name)?]
const CREATE_CASES = [
    ['validator', { validator: { a: { $type: 'int' } } }, 'ok', async (db, name) => {
        await assert.rejects(db.collection(name).insertOne({ a: 'x' }), (e) => e.code === 121);
    }],
    ['validationLevel/validationAction', { validator: { a: { $type: 'int' } }, validationLevel: 'moderate', validationAction: 'warn' }, 'ok', async (db, name) => {
        await db.collection(name).insertOne({ a: 'x' }); // warn: accepted, logged
    }],
    ['collation', { collation: { locale: 'en', strength: 2 } }, 'ok', async (db, name) => {
        await db.collection(name).insertMany([{ _id: 1, s: 'ABC' }, { _id: 2, s: 'abc' }]);
        assert.equal(await db.collection(name).countDocuments({ s: 'abc' }), 2);
    }],
    ['idIndex as listCollections shows it', { idIndex: { key: { _id: 1 }, name: '_id_', v: 2 } }, 'ok'],
    ['idIndex with a collation of its own', { idIndex: { key: { _id: 1 }, name: '_id_', v: 2, collation: { locale: 'fr' } } }, INVALID_OPTIONS],
    ['storageEngine {}', { storageEngine: {} }, 'ok'],
    ['storageEngine wiredTiger', { storageEngine: { wiredTiger: {} } }, INVALID_OPTIONS],
    ['indexOptionDefaults {}', { indexOptionDefaults: { storageEngine: {} } }, 'ok'],
    ['indexOptionDefaults wiredTiger', { indexOptionDefaults: { storageEngine: { wiredTiger: {} } } }, INVALID_OPTIONS],
    ['capped: false', { capped: false }, 'ok'],
    ['capped', { capped: true, size: 4096 }, NOT_IMPLEMENTED],
    ['timeseries', { timeseries: { timeField: 't' } }, NOT_IMPLEMENTED],
    ['clusteredIndex', { clusteredIndex: { key: { _id: 1 }, unique: true } }, NOT_IMPLEMENTED],
    ['expireAfterSeconds', { expireAfterSeconds: 60 }, NOT_IMPLEMENTED],
    ['changeStreamPreAndPostImages disabled', { changeStreamPreAndPostImages: { enabled: false } }, 'ok'],
    ['changeStreamPreAndPostImages enabled', { changeStreamPreAndPostImages: { enabled: true } }, NOT_IMPLEMENTED],
    ['encryptedFields', { encryptedFields: { fields: [] } }, NOT_IMPLEMENTED],
    ['an unknown option', { tesseraBogus: 1 }, 40415],
];

async function outcome(promise) {
    try {
        await promise;
        return 'ok';
    } catch (e) {
        return e.code ?? e.message;
    }
}

/** Runs every case against `client` (a router, a shard or a single node). */
async function audit(label, client) {
    const db = client.db(uniqueDbName('opts'));
    const problems = [];
    for (const [i, [what, spec, expected, check]] of INDEX_CASES.entries()) {
        const name = `i${i}`;
        await db.createCollection(name);
        const got = await outcome(db.command({ createIndexes: name, indexes: [{ name: 'i', ...spec }] }));
        const listed = (await db.collection(name).listIndexes().toArray()).map((x) => x.name);
        if (got !== expected) problems.push(`${label}: createIndexes ${what}: got ${got}, want ${expected}`);
        if (expected !== 'ok' && listed.includes('i')) problems.push(`${label}: refused index ${what} is listed`);
        if (got === 'ok' && check) await check(db.collection(name));
    }
    for (const [i, [what, options, expected, check]] of CREATE_CASES.entries()) {
        const name = `c${i}`;
        const got = await outcome(db.command({ create: name, ...options }));
        const exists = (await db.listCollections({ name }).toArray()).length === 1;
        if (got !== expected) problems.push(`${label}: create ${what}: got ${got}, want ${expected}`);
        if (expected !== 'ok' && exists) problems.push(`${label}: refused create ${what} created the collection`);
        if (got === 'ok' && check) await check(db, name);
    }
    await db.dropDatabase();
    return problems;
}

describeWithCluster('index and collection options: carried out or refused', (ctx) => {
    ctx.test('every option on a router, a shard reached directly and a single node', async () => {
        const single = await startServer();
        const singleClient = await single.client();
        try {
            const problems = [
                ...await audit('router', await ctx.cluster.router()),
                ...await audit('shard', await ctx.cluster.shard(0)),
                ...await audit('single node', singleClient),
            ];
            assert.deepEqual(problems, []);
        } finally {
            await singleClient.close();
            await single.stop();
            single.cleanup();
        }
    });
}, { shards: 2, routers: 1 });
