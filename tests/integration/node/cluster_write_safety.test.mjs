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

        // A client of each router (their own, `appName`-i: their pooled sessions are nobody
        // else's) and one logical session through both: `session` on router 0's client and
        // `other`, router 1's, given its id — as a driver's retry after failing over to another
        // mongos sends the same lsid and txnNumber.
        async function oneSessionThroughBothRouters(appName, options = '') {
            const clients = [];
            for (const i of [0, 1]) clients.push(await ctx.cluster.clientFor(`${ctx.cluster.routerUri(i)}${options}&appName=${appName}-${i}`));
            const session = clients[0].startSession();
            const other = clients[1].startSession();
            other.serverSession.id = session.serverSession.id;
            return { clients, session, other };
        }

        test('a retried write that moved a document is answered from its record, never run again', async () => {
            // The driver retries a write whose reply it lost with the same lsid and txnNumber;
            // here each command is sent twice so, the second time through the other router.
            const { clients, session, other } = await oneSessionThroughBothRouters('move-retry', '&monitorCommands=true');
            const [db0, db1] = clients.map((c) => c.db(orders));
            const c = db0.collection('orders');
            const sent = [];
            const listener = (e) => sent.push(e.command);
            for (const cl of clients) cl.on('commandStarted', listener);
            const twice = async (cmd) => {
                sent.length = 0;
                const first = await db0.command(cmd, { session });
                const second = await db1.command(cmd, { session: other });
                assert.deepEqual(sent.map((s) => [s.lsid.id.toString('hex'), String(s.txnNumber)]), [
                    [session.id.id.toString('hex'), String(cmd.txnNumber)],
                    [session.id.id.toString('hex'), String(cmd.txnNumber)],
                ]);
                return [first, second];
            };
            let txnNumber = 0;
            const next = () => BSON.Long.fromNumber(++txnNumber);
            try {
                await c.insertMany([
                    { _id: 'mr1', customerId: 31, createdAt: new Date(31), total: 1 },
                    { _id: 'mr2', customerId: 32, createdAt: new Date(32), total: 2 },
                    { _id: 'mr4', customerId: 34, createdAt: new Date(34), total: 4 },
                ]);
                orderCount += 3;
                // By the full shard key (the retry reaches the same shard).
                let [r1, r2] = await twice({
                    update: 'orders',
                    updates: [{ q: { customerId: 31, createdAt: new Date(31) }, u: { $set: { customerId: 631 } } }],
                    txnNumber: next(),
                });
                assert.deepEqual([r1.n, r1.nModified], [1, 1], JSON.stringify(r1));
                assert.deepEqual([r2.n, r2.nModified], [1, 1], `the retry: ${JSON.stringify(r2)}`);
                assert.equal((await c.findOne({ _id: 'mr1' })).customerId, 631);
                // By _id alone (the retry's read phase asks every shard whether it ran it).
                [r1, r2] = await twice({
                    update: 'orders',
                    updates: [{ q: { _id: 'mr2' }, u: { $inc: { customerId: 600, total: 1 } } }],
                    txnNumber: next(),
                });
                assert.deepEqual([r1.n, r1.nModified, r2.n, r2.nModified], [1, 1, 1, 1], JSON.stringify([r1, r2]));
                assert.deepEqual(await c.findOne({ _id: 'mr2' }, { projection: { customerId: 1, total: 1 } }), {
                    _id: 'mr2',
                    customerId: 632,
                    total: 3,
                });
                // An upsert whose new document lives on the other shard: inserted once.
                [r1, r2] = await twice({
                    update: 'orders',
                    updates: [{ q: { customerId: 33, createdAt: new Date(33), tag: 'mr3' }, u: { $set: { customerId: 633 } }, upsert: true }],
                    txnNumber: next(),
                });
                assert.equal(r1.n, 1, JSON.stringify(r1));
                assert.equal(r1.upserted?.length, 1, JSON.stringify(r1));
                assert.deepEqual(r2.upserted, r1.upserted, `the retry: ${JSON.stringify(r2)}`);
                assert.equal(await c.countDocuments({ tag: 'mr3' }), 1);
                orderCount += 1;
                // findAndModify: the retry gets the same reply, the document's value before.
                [r1, r2] = await twice({
                    findAndModify: 'orders',
                    query: { _id: 'mr4' },
                    update: { $set: { customerId: 634 } },
                    txnNumber: next(),
                });
                assert.equal(r1.value.customerId, 34, JSON.stringify(r1));
                assert.deepEqual(r2.value, r1.value, `the retry: ${JSON.stringify(r2)}`);
                assert.deepEqual(r2.lastErrorObject, r1.lastErrorObject);
                assert.equal((await c.findOne({ _id: 'mr4' })).customerId, 634);
                // The next write of the session runs as usual.
                [r1, r2] = await twice({
                    update: 'orders',
                    updates: [{ q: { _id: 'mr4' }, u: { $inc: { total: 1 } } }],
                    txnNumber: next(),
                });
                assert.deepEqual([r1.nModified, r2.nModified], [1, 1]);
                assert.equal((await c.findOne({ _id: 'mr4' })).total, 5);
            } finally {
                for (const cl of clients) cl.off('commandStarted', listener);
                await session.endSession();
                await other.endSession();
            }
            await ctx.cluster.checkConsistency(ordersNs, orderCount);
        });

        test('a retry that arrives while the move is in flight waits for it and gets its reply', async () => {
            // The router's move transaction is held before its commit (hangBeforeCommittingMove);
            // the retry through the other router reaches the shard that answered
            // WouldChangeOwningShard, which holds it until the move's record commits.
            const { clients, session, other } = await oneSessionThroughBothRouters('move-in-flight');
            const [db0, db1] = clients.map((cl) => cl.db(orders));
            const c = db0.collection('orders');
            const router0 = clients[0].db('admin');
            const low = (await ctx.cluster.shardByName(lowShard)).db('admin');
            const waiting = async () => (await low.command({ serverStatus: 1 })).shardRetryableWrites.retriesWaitingForMove;
            let txnNumber = 100;
            const inFlight = async (cmd) => {
                cmd.txnNumber = BSON.Long.fromNumber(++txnNumber);
                await router0.command({ configureFailPoint: 'hangBeforeCommittingMove', mode: 'alwaysOn' });
                try {
                    const first = db0.command(cmd, { session });
                    await router0.command({ waitForFailPoint: 'hangBeforeCommittingMove', timesEntered: 1, maxTimeMS: 30000 });
                    let settled = null;
                    const retry = db1.command(cmd, { session: other });
                    retry.then((r) => (settled = r), (e) => (settled = e));
                    for (const end = Date.now() + 30000; (await waiting()) < 1; ) {
                        assert.equal(settled, null, `the retry did not wait for the move: ${JSON.stringify(settled)}`);
                        assert.ok(Date.now() < end, 'the retry never waited for the move');
                        await new Promise((r) => setTimeout(r, 20));
                    }
                    await router0.command({ configureFailPoint: 'hangBeforeCommittingMove', mode: 'off' });
                    return [await first, await retry];
                } finally {
                    await router0.command({ configureFailPoint: 'hangBeforeCommittingMove', mode: 'off' });
                }
            };
            try {
                await c.insertMany([
                    { _id: 'mf1', customerId: 41, createdAt: new Date(41), total: 1 },
                    { _id: 'mf2', customerId: 42, createdAt: new Date(42), total: 2 },
                    { _id: 'mf3', customerId: 43, createdAt: new Date(43), total: 3 },
                ]);
                orderCount += 3;
                // By the full shard key: the retry reaches the same shard.
                let [r1, r2] = await inFlight({
                    update: 'orders',
                    updates: [{ q: { customerId: 41, createdAt: new Date(41) }, u: { $set: { customerId: 641 } } }],
                });
                assert.deepEqual([r1.n, r1.nModified, r2.n, r2.nModified], [1, 1, 1, 1], JSON.stringify([r1, r2]));
                assert.equal((await c.findOne({ _id: 'mf1' })).customerId, 641);
                // By _id alone: the retry's read phase asks the shards whether they ran it.
                [r1, r2] = await inFlight({
                    update: 'orders',
                    updates: [{ q: { _id: 'mf2' }, u: { $inc: { customerId: 600, total: 1 } } }],
                });
                assert.deepEqual([r1.n, r1.nModified, r2.n, r2.nModified], [1, 1, 1, 1], JSON.stringify([r1, r2]));
                assert.deepEqual(await c.findOne({ _id: 'mf2' }, { projection: { customerId: 1, total: 1 } }), {
                    _id: 'mf2',
                    customerId: 642,
                    total: 3,
                });
                // findAndModify: the retry gets the first reply.
                [r1, r2] = await inFlight({ findAndModify: 'orders', query: { _id: 'mf3' }, update: { $set: { customerId: 643 } } });
                assert.equal(r1.value?.customerId, 43, JSON.stringify(r1));
                assert.deepEqual(r2.value, r1.value, `the retry: ${JSON.stringify(r2)}`);
                assert.equal((await c.findOne({ _id: 'mf3' })).customerId, 643);
                assert.equal(await waiting(), 0);
                assert.equal((await low.command({ serverStatus: 1 })).shardRetryableWrites.movingStatements, 0);
            } finally {
                await session.endSession();
                await other.endSession();
            }
            await ctx.cluster.checkConsistency(ordersNs, orderCount);
        });

        test('a shard keeps a retryable write\'s record only from a transaction that commits', async () => {
            // What the router sends the source shard when it moves a document for a retryable
            // write, sent here by hand: the record of another session's statement.
            const shard = await ctx.cluster.shardByName(lowShard);
            const db = shard.db(orders);
            const recorded = shard.startSession(); // only its id is used: the write's session
            const of = (txnNumber) => ({ lsid: recorded.id, txnNumber: BSON.Long.fromNumber(txnNumber), stmtId: 0 });
            const record = (txnNumber, extra = {}) => ({ _shardsvrRecordRetryableWrite: 1, of: of(txnNumber), result: { n: 1, nModified: 1 }, ...extra });
            // Asked as the router's write without shard key asks: with its read phase's find.
            const executed = async (txnNumber) => {
                const reply = await db.command({ find: 'orders', filter: { _id: 'none' }, limit: 1, singleBatch: true, $retryableWriteStatus: of(txnNumber) });
                assert.equal(typeof reply.retryableWriteExecuted, 'boolean', JSON.stringify(reply));
                return reply.retryableWriteExecuted;
            };
            const txnSession = shard.startSession();
            // The commands in one transaction of txnSession, ended by `end` (the driver's
            // commitTransaction / abortTransaction): each command's reply or error.
            const inTransaction = async (cmds, end) => {
                txnSession.startTransaction();
                const replies = [];
                for (const cmd of cmds) replies.push(await db.command(cmd, { session: txnSession }).then((r) => r, (e) => e));
                await txnSession[end]();
                return replies;
            };
            try {
                // Outside a transaction: refused, nothing recorded.
                let e = await rejects(db.command(record(1)));
                assert.equal(e.code, 72, `${e}`);
                assert.equal(await executed(1), false);
                // Out of shape, or the transaction's own session: refused (the transaction then
                // ends as the client says; nothing of it recorded).
                for (const bad of [
                    { of: { ...of(2), stmtId: 0.5 } },
                    { of: { ...of(2), txnNumber: 2 } },
                    { of: { ...of(2), uid: 'someone' } }, // a field it would not carry out
                    { result: { n: 1 } },
                    { of: { ...of(2), lsid: txnSession.id } },
                ]) {
                    const [, reply] = await inTransaction([{ find: 'orders', limit: 1 }, record(2, bad)], 'abortTransaction');
                    assert.ok(reply instanceof MongoServerError, `accepted ${JSON.stringify(bad)}`);
                    assert.ok([14, 72].includes(reply.code), `${reply}`);
                }
                assert.equal(await executed(2), false);
                // Aborted: never recorded.
                let [reply] = await inTransaction([record(3)], 'abortTransaction');
                assert.equal(reply.ok, 1, `${reply}`);
                assert.equal(await executed(3), false);
                // Committed: the shard answers the statement as executed from then on.
                [reply] = await inTransaction([record(4)], 'commitTransaction');
                assert.equal(reply.ok, 1, `${reply}`);
                assert.equal(await executed(4), true);
            } finally {
                for (const s of [recorded, txnSession]) await s.endSession();
            }
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
