// Writes a sharded cluster must refuse or route differently so that no document is lost, doubled
// or half-written (issue "Ways a cluster silently loses or misreports data"), through the Node
// driver against `tessera up --shards 2 --routers 2`:
//  - an update that changes a document's owning shard moves it in a transaction (updateOne,
//    replaceOne, updateMany, findOneAndUpdate, in a client's transaction too; concurrently,
//    snapshot counts exact); the forms that do not (a batch of several statements, a shard
//    reached directly) fail with MongoDB's error, nothing written;
//  - unique indexes a sharded collection cannot enforce are refused on every path;
//  - a single write by `_id` changes at most one document when `_id` does not pick the shard.
// Each case ends with checkConsistency (every document on exactly one owning shard, exact count).
import assert from 'node:assert/strict';
import { BSON, MongoBulkWriteError, MongoClient, MongoServerError } from 'mongodb';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster } from './cluster_harness.mjs';

// The server's code. The Node driver replaces an IllegalOperation (20) of a write with its own
// "add retryWrites=false" error and keeps the server's as originalError.
const codeOf = (e) => e.originalError?.code ?? e.code;

async function rejects(promise) {
    return promise.then(
        (v) => assert.fail(`expected an error, got ${JSON.stringify(v)}`),
        (e) => e,
    );
}

describeWithCluster(
    'write safety through routers (2 shards, 2 routers)',
    (ctx) => {
        const test = ctx.test;
        const router = (i = 0) => ctx.cluster.router(i);
        const admin = async (cmd) => (await router()).db('admin').command(cmd);
        const shardNames = async () =>
            (await (await router()).db('config').collection('shards').find().sort({ _id: 1 }).toArray()).map((s) => s._id);
        const primaryOf = async (db) => (await (await router()).db('config').collection('databases').findOne({ _id: db })).primary;

        // --- 2. writes that would change the owning shard -------------------------------------------

        const orders = uniqueDbName('skchange');
        const ordersNs = `${orders}.orders`;
        let orderCount = 0;
        let lowShard = null;
        let highShard = null;

        test('setup: orders sharded by {customerId, createdAt}, customerId >= 500 on the other shard', async () => {
            await admin({ enableSharding: orders });
            await admin({ shardCollection: ordersNs, key: { customerId: 1, createdAt: 1 } });
            await admin({ split: ordersNs, middle: { customerId: 500, createdAt: new Date(0) } });
            lowShard = await primaryOf(orders);
            highShard = (await shardNames()).find((s) => s !== lowShard);
            await admin({ moveChunk: ordersNs, find: { customerId: 900, createdAt: new Date(0) }, to: highShard });
            const c = (await router()).db(orders).collection('orders');
            const docs = [];
            for (let i = 0; i < 40; i++) docs.push({ _id: i, customerId: i * 25, createdAt: new Date(1000 * i), total: i });
            await c.insertMany(docs);
            orderCount = docs.length;
            await ctx.cluster.checkConsistency(ordersNs, orderCount);
        });

        test('updateMany that changes the shard key moves every document it changes (one transaction)', async () => {
            const c = (await router()).db(orders).collection('orders');
            const before = await c.findOne({ _id: 19 });
            assert.equal(before.customerId, 475);
            // Eloquent's save(): an updateMany by _id that changes the key to another shard's.
            const r = await c.updateMany({ _id: 19 }, { $set: { customerId: 901 } });
            assert.equal(r.matchedCount, 1);
            assert.equal(r.modifiedCount, 1);
            assert.deepEqual(await c.findOne({ _id: 19 }), { ...before, customerId: 901 });
            const high = (await ctx.cluster.shardByName(highShard)).db(orders).collection('orders');
            assert.deepEqual(await high.findOne({ _id: 19 }), { ...before, customerId: 901 });
            // Several documents whose new keys stay on their shard: changed in place.
            const same = await c.updateMany({ customerId: { $lt: 100 } }, { $inc: { customerId: 1 } });
            assert.equal(same.modifiedCount, 4);
            assert.equal(await c.countDocuments({ customerId: { $in: [1, 26, 51, 76] } }), 4);
            // Several moving to the other shard.
            const moved = await c.updateMany({ customerId: { $gte: 100, $lt: 200 } }, { $inc: { customerId: 700 } });
            assert.equal(moved.matchedCount, 4);
            assert.equal(moved.modifiedCount, 4);
            assert.equal(await high.countDocuments({ _id: { $in: [4, 5, 6, 7] } }), 4);
            // The key unchanged (Eloquent's save() sets every field): an update in place.
            const ok = await c.updateMany({ _id: 19 }, { $set: { customerId: 901, total: 190 } });
            assert.equal(ok.modifiedCount, 1);
            await ctx.cluster.checkConsistency(ordersNs, orderCount);
        });

        test('concurrent single-document moves through both routers: every document once, counts exact', async () => {
            // 4 clients move 8 documents back and forth between the shards (retryable updateOne,
            // replaceOne and updateMany), while counts through the other router stay exact.
            const ids = [8, 9, 10, 11, 12, 13, 14, 15];
            // Router 1 has not talked to the shards yet: a read first lets its clock see their
            // time (a router draws a snapshot's time from its own clock; without causal
            // consistency between clients a fresh router may read up to a second in the past).
            await (await router(1)).db(orders).collection('orders').find({ _id: { $in: ids } }).toArray();
            const workers = [0, 1, 2, 3].map(async (w) => {
                const c = (await router(w % 2)).db(orders).collection('orders');
                for (let round = 0; round < 6; round++) {
                    for (const id of ids.filter((_, i) => i % 4 === w)) {
                        const doc = await c.findOne({ _id: id });
                        const customerId = doc.customerId < 500 ? 600 + id : id * 25;
                        if (round % 3 === 0) await c.updateOne({ _id: id }, { $set: { customerId } });
                        else if (round % 3 === 1) await c.replaceOne({ _id: id }, { ...doc, customerId });
                        else await c.updateMany({ _id: id }, { $set: { customerId } });
                    }
                }
            });
            // A snapshot read (one cluster time for both shards) sees each document exactly
            // once; a plain scatter read reads each shard at its own time (README, Transactions).
            let counting = true;
            const counts = [];
            const counter = (async () => {
                const c = (await router(1)).db(orders).collection('orders');
                while (counting) {
                    const docs = await c.find({ _id: { $in: ids } }, { readConcern: { level: 'snapshot' } }).toArray();
                    counts.push(new Set(docs.map((d) => d._id)).size === docs.length ? docs.length : -docs.length);
                }
            })();
            await Promise.all(workers);
            counting = false;
            await counter;
            assert.ok(counts.length > 0);
            for (const n of counts) assert.ok(n === ids.length, `a count saw ${n} of ${ids.length} documents`);
            await ctx.cluster.checkConsistency(ordersNs, orderCount);
        });

        test('a shard key change in a transaction moves the document with the rest of the transaction', async () => {
            const client = await router();
            const c = client.db(orders).collection('orders');
            const before = await c.findOne({ _id: 16 }); // customerId 400: the first shard's
            const session = client.startSession();
            try {
                session.startTransaction();
                await c.findOneAndUpdate({ _id: 16 }, { $set: { customerId: 990 } }, { session });
                await c.updateOne({ _id: 17 }, { $inc: { total: 1 } }, { session });
                // Nothing is visible before the commit, all of it after.
                assert.deepEqual(await c.findOne({ _id: 16 }), before);
                await session.abortTransaction();
                assert.deepEqual(await c.findOne({ _id: 16 }), before);
                await session.withTransaction(async () => {
                    await c.updateOne({ _id: 16 }, { $set: { customerId: 990 } }, { session });
                    await c.updateOne({ _id: 17 }, { $inc: { total: 1 } }, { session });
                });
            } finally {
                await session.endSession();
            }
            assert.deepEqual(await c.findOne({ _id: 16 }), { ...before, customerId: 990 });
            const high = (await ctx.cluster.shardByName(highShard)).db(orders).collection('orders');
            assert.equal(await high.countDocuments({ _id: 16 }), 1);
            await ctx.cluster.checkConsistency(ordersNs, orderCount);
        });

        test('single-document writes that move a document, and the forms that still refuse', async () => {
            const c = (await router()).db(orders).collection('orders');
            // Retryable (the driver's default): moved in a transaction, as MongoDB does.
            const before = await c.findOne({ _id: 3 });
            let r = await c.updateOne({ _id: 3 }, { $set: { customerId: 950 } });
            assert.equal(r.modifiedCount, 1);
            assert.deepEqual(await c.findOne({ _id: 3 }), { ...before, customerId: 950 });
            r = await c.replaceOne({ _id: 3 }, { customerId: 60, createdAt: before.createdAt, total: 3 });
            assert.equal(r.modifiedCount, 1);
            assert.deepEqual(await c.findOne({ _id: 3 }), { _id: 3, customerId: 60, createdAt: before.createdAt, total: 3 });
            const snapshot = await c.find().sort({ _id: 1 }).toArray();
            // findOneAndUpdate too, answering with the new or the stored version as asked.
            const there = await c.findOneAndUpdate({ _id: 3 }, { $set: { customerId: 950 } }, { returnDocument: 'after' });
            assert.equal(there.customerId, 950);
            const back = await c.findOneAndUpdate({ _id: 3 }, { $set: { customerId: 60 } });
            assert.equal(back.customerId, 950);
            assert.deepEqual(await c.findOne({ _id: 3 }), snapshot.find((d) => d._id === 3));
            let e;
            // An upsert that matches nothing inserts its new document where its new key lives
            // (the router builds it, as MongoDB 8.0 does), not where its query pointed.
            const up = await c.updateOne(
                { _id: 2000, customerId: 10, createdAt: new Date(5) },
                { $set: { customerId: 990 } },
                { upsert: true },
            );
            assert.equal(up.upsertedCount, 1);
            orderCount += 1;
            // Not retryable: MongoDB's IllegalOperation (the driver words it as its retryWrites hint).
            const plain = new MongoClient(ctx.cluster.routerUri(1), { retryWrites: false });
            await plain.connect();
            try {
                const pc = plain.db(orders).collection('orders');
                e = await rejects(pc.updateOne({ _id: 3 }, { $set: { customerId: 950 } }));
                assert.equal(codeOf(e), 20, `${e}`);
                assert.match(e.originalError.message, /retryWrites: true/);
                e = await rejects(pc.updateOne({ _id: 3 }, { $set: { customerId: 61 } }));
                assert.equal(codeOf(e), 20, `a non-retryable key change on the same shard: ${e}`);
            } finally {
                await plain.close();
            }
            // An update command of several statements (MongoDB's rule: a move needs a batch of
            // one); the failing statement at any position; ordered stops there.
            e = await rejects(
                c.bulkWrite(
                    [
                        { insertOne: { document: { _id: 1000, customerId: 7, createdAt: new Date(7), total: 0 } } },
                        { updateOne: { filter: { _id: 17 }, update: { $inc: { total: 1 } } } },
                        { updateMany: { filter: { _id: 18 }, update: { $set: { customerId: 960 } } } },
                        { updateOne: { filter: { _id: 17 }, update: { $inc: { total: 1 } } } },
                    ],
                    { ordered: true },
                ),
            );
            assert.ok(e instanceof MongoBulkWriteError, `${e}`);
            assert.deepEqual(e.writeErrors.map((w) => [w.index, w.code]), [[2, 72]]);
            assert.match(e.writeErrors[0].errmsg, /batch of size 1/);
            assert.equal(e.result.insertedCount, 1);
            assert.equal(e.result.modifiedCount, 1);
            orderCount += 1;
            e = await rejects(
                c.bulkWrite(
                    [
                        { updateOne: { filter: { _id: 18 }, update: { $set: { customerId: 970 } } } },
                        { insertOne: { document: { _id: 1002, customerId: 9, createdAt: new Date(9), total: 0 } } },
                        { updateOne: { filter: { _id: 17 }, update: { $inc: { total: 1 } } } },
                    ],
                    { ordered: false },
                ),
            );
            assert.deepEqual(e.writeErrors.map((w) => [w.index, w.code]), [[0, 72]]);
            orderCount += 1;
            for (const id of [3, 18]) {
                assert.deepEqual(await c.findOne({ _id: id }), snapshot.find((d) => d._id === id), `doc ${id} unchanged`);
            }
            // MongoDB 8.0's client bulkWrite, updateMany in the middle: each operation is its
            // own statement, so the document moves.
            const client = await router();
            const bulk = await client.bulkWrite([
                { name: 'insertOne', namespace: ordersNs, document: { _id: 1003, customerId: 11, createdAt: new Date(11), total: 0 } },
                { name: 'updateMany', namespace: ordersNs, filter: { _id: 18 }, update: { $set: { customerId: 980 } } },
            ]);
            assert.equal(bulk.modifiedCount, 1);
            orderCount += 1;
            assert.equal((await c.findOne({ _id: 18 })).customerId, 980);
            assert.equal((await c.findOne({ _id: 17 })).total, snapshot.find((d) => d._id === 17).total + 2);
            await ctx.cluster.checkConsistency(ordersNs, orderCount);
        });

        test('the shard itself refuses writes that leave a document under a key it does not own', async () => {
            const low = (await ctx.cluster.shardByName(lowShard)).db(orders).collection('orders');
            let e = await rejects(low.updateMany({ _id: 10 }, { $set: { customerId: 901 } }));
            assert.equal(e.code, 72, `${e}`);
            assert.match(e.message, /through a router/);
            e = await rejects(low.insertOne({ _id: 5000, customerId: 999, createdAt: new Date(1) }));
            assert.equal(e.code, 72, `${e}`);
            assert.match(e.message, /does not own/);
            e = await rejects(low.updateOne({ _id: 10 }, { $set: { customerId: 901 } }));
            assert.equal(codeOf(e), 20, `${e}`); // direct to a shard: not a retryable write
            await ctx.cluster.checkConsistency(ordersNs, orderCount);
        });

        // --- 3. unique indexes a sharded collection cannot enforce -----------------------------------

        const users = uniqueDbName('uniq');

        test('shardCollection over a unique index the shard key is not a prefix of is refused (72)', async () => {
            await admin({ enableSharding: users });
            const c = (await router()).db(users).collection('byEmail');
            await c.createIndex({ email: 1 }, { unique: true });
            await c.insertMany([{ email: 'a@x' }, { email: 'b@x' }]);
            const e = await rejects(admin({ shardCollection: `${users}.byEmail`, key: { _id: 'hashed' } }));
            assert.equal(e.code, 72, `${e}`);
            assert.match(e.message, /Uniqueness can't be maintained unless shard key is a prefix/);
            assert.equal(await (await router()).db('config').collection('collections').countDocuments({ _id: `${users}.byEmail` }), 0);
            await ctx.cluster.checkConsistency(`${users}.byEmail`, 2);
            // A compatible key is accepted.
            assert.equal((await admin({ shardCollection: `${users}.byEmail`, key: { email: 1 } })).ok, 1);
        });

        test('createIndex of such a unique index on a sharded collection is refused (67), router and shard', async () => {
            const ns = `${users}.hashed`;
            await admin({ shardCollection: ns, key: { _id: 'hashed' } });
            const c = (await router()).db(users).collection('hashed');
            const e = await rejects(c.createIndex({ email: 1 }, { unique: true }));
            assert.equal(e.code, 67, `${e}`);
            for (const name of await shardNames()) {
                const direct = (await ctx.cluster.shardByName(name)).db(users).collection('hashed');
                const d = await rejects(direct.createIndex({ email: 1 }, { unique: true }));
                assert.equal(d.code, 67, `${name}: ${d}`);
                assert.ok(!(await direct.indexes()).some((i) => i.name === 'email_1'));
            }
            // Non-unique, and unique starting with _id, are fine.
            await c.createIndex({ email: 1 });
            await c.createIndex({ _id: 1, email: 1 }, { unique: true });
            await c.insertMany([{ email: 'same@x' }, { email: 'same@x' }]);
            await ctx.cluster.checkConsistency(ns, 2);
        });

        // --- 12. a single write by _id changes at most one document ---------------------------------

        test('updateOne / deleteOne / findOneAndUpdate by a repeated _id change one document', async () => {
            const db = uniqueDbName('dupid');
            const ns = `${db}.orders`;
            await admin({ enableSharding: db });
            await admin({ shardCollection: ns, key: { k: 1 } });
            await admin({ split: ns, middle: { k: 0 } });
            const primary = await primaryOf(db);
            const other = (await shardNames()).find((s) => s !== primary);
            await admin({ moveChunk: ns, find: { k: 5 }, to: other });
            const c = (await router()).db(db).collection('orders');
            await c.insertOne({ _id: 'ORD-1', k: -5 });
            await c.insertOne({ _id: 'ORD-1', k: 5 }); // _id is unique per shard only
            const u = await c.updateOne({ _id: 'ORD-1' }, { $set: { seen: 1 } });
            assert.equal(u.matchedCount, 1);
            assert.equal(u.modifiedCount, 1);
            assert.equal(await c.countDocuments({ seen: 1 }), 1);
            const f = await c.findOneAndUpdate({ _id: 'ORD-1' }, { $inc: { n: 1 } }, { returnDocument: 'after' });
            assert.equal(f.n, 1);
            assert.equal(await c.countDocuments({ n: 1 }), 1);
            const b = await c.bulkWrite([{ updateOne: { filter: { _id: 'ORD-1' }, update: { $set: { b: 1 } } } }]);
            assert.equal(b.modifiedCount, 1);
            const d = await c.deleteOne({ _id: 'ORD-1' });
            assert.equal(d.deletedCount, 1);
            assert.equal(await c.countDocuments({ _id: 'ORD-1' }), 1);
            // deleteMany by _id still removes every match.
            assert.equal((await c.deleteMany({ _id: 'ORD-1' })).deletedCount, 1);
            await ctx.cluster.checkConsistency(ns, 0);
        });
    },
    { shards: 2, routers: 2 },
);
