// DDL inside a transaction on `tessera serve --replSet` through the Node driver (MongoDB 4.4+
// rules): a collection created by `create`, an insert or an upsert exists for the transaction at
// once and for everyone else from its commit, not at all after an abort; indexes on it while it
// is empty; what MongoDB refuses is refused and changes nothing; and concurrent creators of one
// collection, four clients at a time, end with every transaction's document in one collection.
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { MongoClient } from 'mongodb';
import { describeWithServer, uniqueDbName, withServerLog } from './harness.mjs';

async function rejects(promise) {
    return promise.then(
        (v) => assert.fail(`expected an error, got ${JSON.stringify(v)}`),
        (e) => e,
    );
}

describeWithServer(
    'DDL inside transactions on a one-member replica set',
    (ctx) => {
        const test = (name, fn) => it(name, withServerLog(ctx, fn));
        const dbName = uniqueDbName('txnddl');
        let n = 0;
        const clients = [];
        const connect = async () => {
            const c = new MongoClient(
                `mongodb://127.0.0.1:${ctx.server.port}/?replicaSet=rs0&serverSelectionTimeoutMS=10000`,
            );
            await c.connect();
            clients.push(c);
            return c;
        };
        const names = async (client) =>
            (await client.db(dbName).listCollections({}, { nameOnly: true }).toArray())
                .map((c) => c.name)
                .sort();
        after(async () => Promise.all(clients.map((c) => c.close())));

        for (const how of ['create', 'insert', 'upsert']) {
            test(`a collection created by ${how} appears at commit and never after an abort`, async () => {
                const client = await connect();
                const other = await connect();
                const db = client.db(dbName);
                for (const outcome of ['abort', 'commit']) {
                    const name = `${how}_${outcome}_${++n}`;
                    const c = db.collection(name);
                    const s = client.startSession();
                    try {
                        s.startTransaction();
                        if (how === 'create') await db.createCollection(name, { session: s });
                        if (how === 'upsert') {
                            await c.updateOne({ _id: 1 }, { $set: { v: 1 } }, { upsert: true, session: s });
                        } else {
                            await c.insertOne({ _id: 1, v: 1 }, { session: s });
                        }
                        await c.insertOne({ _id: 2, v: 2 }, { session: s });
                        assert.equal(await c.countDocuments({}, { session: s }), 2);
                        assert.deepEqual(await c.findOne({ _id: 1 }, { session: s }), { _id: 1, v: 1 });
                        const grouped = await c
                            .aggregate([{ $group: { _id: null, sum: { $sum: '$v' } } }], { session: s })
                            .toArray();
                        assert.equal(grouped[0].sum, 3);
                        // Nobody else sees the collection or its documents.
                        assert.ok(!(await names(other)).includes(name));
                        assert.equal(await other.db(dbName).collection(name).countDocuments(), 0);
                        if (outcome === 'abort') {
                            await s.abortTransaction();
                        } else {
                            await s.commitTransaction();
                        }
                    } finally {
                        await s.endSession();
                    }
                    const seen = other.db(dbName).collection(name);
                    if (outcome === 'abort') {
                        assert.ok(!(await names(other)).includes(name), 'an abort leaves no collection');
                        assert.equal(await seen.countDocuments(), 0);
                    } else {
                        assert.ok((await names(other)).includes(name));
                        assert.deepEqual(await seen.find().sort({ _id: 1 }).toArray(), [
                            { _id: 1, v: 1 },
                            { _id: 2, v: 2 },
                        ]);
                        assert.equal(await seen.estimatedDocumentCount(), 2);
                    }
                }
            });
        }

        // A cursor remembers the collection it reads and fails once that is dropped
        // (QueryPlanKilled): a collection the cursor's own transaction created is not dropped.
        test('cursors over a collection the transaction created read every batch', async () => {
            const client = await connect();
            const name = `cur${++n}`;
            const db = client.db(dbName);
            const s = client.startSession();
            try {
                s.startTransaction();
                await db.createCollection(name, { session: s });
                await db.collection(name).insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i })), { session: s });
                const found = await db.collection(name).find({}, { batchSize: 3, session: s }).toArray();
                assert.equal(found.length, 20);
                const aggregated = await db.collection(name).aggregate([{ $sort: { _id: -1 } }], { batchSize: 3, session: s }).toArray();
                assert.equal(aggregated.length, 20);
                await s.commitTransaction();
            } finally {
                await s.endSession();
            }
            assert.equal(await db.collection(name).countDocuments(), 20);
        });

        test('indexes on a collection the transaction created, while it is empty', async () => {
            const client = await connect();
            const name = `idx${++n}`;
            const c = client.db(dbName).collection(name);
            // A failed statement aborts the transaction: these run it by hand, not by
            // withTransaction (which would run an aborted one again until its time limit).
            const s = client.startSession();
            try {
                s.startTransaction();
                const created = await client
                    .db(dbName)
                    .command({ createIndexes: name, indexes: [{ key: { u: 1 }, name: 'u_1', unique: true }] }, { session: s });
                assert.equal(created.createdCollectionAutomatically, true);
                assert.equal(created.numIndexesAfter, 2);
                await c.insertOne({ _id: 1, u: 7 }, { session: s });
                const dup = await rejects(c.insertOne({ _id: 2, u: 7 }, { session: s }));
                assert.equal(dup.code, 11000, 'the transaction maintains the index it created');
                await s.abortTransaction().catch(() => {});
            } finally {
                await s.endSession();
            }
            assert.ok(!(await names(client)).includes(name), 'the aborted transaction created nothing');

            const s2 = client.startSession();
            try {
                s2.startTransaction();
                await client.db(dbName).createCollection(name, { session: s2 });
                await c.insertOne({ _id: 1, u: 7 }, { session: s2 });
                const late = await rejects(c.createIndex({ w: 1 }, { session: s2 }));
                assert.equal(late.code, 263);
                assert.match(late.message, /non-empty collection/);
                await s2.abortTransaction().catch(() => {});
            } finally {
                await s2.endSession();
            }
            assert.ok(!(await names(client)).includes(name));

            const s3 = client.startSession();
            try {
                await s3.withTransaction(async () => {
                    await client.db(dbName).createCollection(name, { session: s3 });
                    await c.createIndex({ u: 1 }, { unique: true, session: s3 });
                    await c.insertOne({ _id: 1, u: 7 }, { session: s3 });
                });
            } finally {
                await s3.endSession();
            }
            const indexes = (await c.indexes()).map((i) => i.name).sort();
            assert.deepEqual(indexes, ['_id_', 'u_1']);
            assert.equal((await rejects(c.insertOne({ _id: 2, u: 7 }))).code, 11000);
        });

        test('what MongoDB refuses in a transaction is refused and changes nothing', async () => {
            const client = await connect();
            const db = client.db(dbName);
            const existing = db.collection(`existing${++n}`);
            await existing.insertOne({ _id: 1 });
            const attempt = async (options, fn) => {
                const s = client.startSession();
                try {
                    s.startTransaction(options);
                    const err = await rejects(fn(s));
                    const after = await rejects(existing.findOne({}, { session: s }));
                    assert.equal(after.code, 251, 'the failed statement aborted the transaction');
                    await s.abortTransaction().catch(() => {});
                    return err;
                } finally {
                    await s.endSession();
                }
            };
            // A new index on a collection the transaction did not create.
            let err = await attempt({}, (s) => existing.createIndex({ x: 1 }, { session: s }));
            assert.equal(err.code, 263);
            assert.match(err.message, /existing collection/);
            assert.deepEqual((await existing.indexes()).map((i) => i.name), ['_id_']);
            // An index that exists already is fine.
            const s = client.startSession();
            try {
                await s.withTransaction(async () => {
                    await db.command({ createIndexes: existing.collectionName, indexes: [{ key: { _id: 1 }, name: '_id_' }] }, { session: s });
                });
            } finally {
                await s.endSession();
            }
            // A collection that exists.
            err = await attempt({}, (s) => db.createCollection(existing.collectionName, { session: s }));
            assert.equal(err.code, 48);
            // A read concern other than local.
            const snap = `snap${++n}`;
            err = await attempt({ readConcern: { level: 'snapshot' } }, (s) => db.createCollection(snap, { session: s }));
            assert.equal(err.code, 72);
            err = await attempt({ readConcern: { level: 'snapshot' } }, (s) =>
                db.command({ createIndexes: snap, indexes: [{ key: { a: 1 }, name: 'a_1' }] }, { session: s }),
            );
            assert.equal(err.code, 72);
            // A view.
            err = await attempt({}, (s) =>
                db.command({ create: `view${++n}`, viewOn: existing.collectionName, pipeline: [] }, { session: s }),
            );
            assert.equal(err.code, 263);
            assert.ok(!(await names(client)).some((c) => c === snap || c.startsWith('view')));
        });

        test('four clients creating one collection in transactions: every document, one collection', async () => {
            const name = `race${++n}`;
            const writers = await Promise.all([0, 1, 2, 3].map(() => connect()));
            const plain = await connect();
            const runs = writers.map(async (client, i) => {
                const c = client.db(dbName).collection(name);
                const s = client.startSession();
                try {
                    // A second creator gets WriteConflict (TransientTransactionError), and so does
                    // a commit that lost the name to a plain insert: withTransaction runs it again.
                    await s.withTransaction(async () => {
                        await c.insertOne({ _id: `txn${i}` }, { session: s });
                    });
                } finally {
                    await s.endSession();
                }
            });
            // A plain insert joins the race: whoever publishes the collection first wins it.
            runs.push(plain.db(dbName).collection(name).insertOne({ _id: 'plain' }));
            await Promise.all(runs);
            const c = plain.db(dbName).collection(name);
            assert.deepEqual(
                (await c.find().sort({ _id: 1 }).toArray()).map((d) => d._id),
                ['plain', 'txn0', 'txn1', 'txn2', 'txn3'],
            );
            assert.equal((await names(plain)).filter((x) => x === name).length, 1);
            assert.equal(await c.countDocuments(), 5);
        });
    },
    { serverOptions: { args: ['--replSet', 'rs0'] } },
);
