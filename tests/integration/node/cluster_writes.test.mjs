// Writes through a router over a collection whose chunks are on 3 shards: batches with errors in
// the middle (MongoDB's per-document error indexes), single-document writes without the shard key,
// multi-writes, findOneAndUpdate, upserts, retryable writes and exactly-once execution of a
// retried (lsid, txnNumber).
import assert from 'node:assert/strict';
import { BSON, MongoBulkWriteError } from 'mongodb';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster } from './cluster_harness.mjs';

const { Long } = BSON;

describeWithCluster('writes through a router (3 shards)', (ctx) => {
    const test = ctx.test;
    const dbName = uniqueDbName('cw');
    const ns = `${dbName}.c`;
    const state = { owner: {} }; // 'low' | 'mid' | 'high' -> shard name
    const router = () => ctx.cluster.router(0);
    const admin = async (cmd) => (await router()).db('admin').command(cmd);
    const coll = async () => (await router()).db(dbName).collection('c');
    const onShard = async (name) => (await ctx.cluster.shardByName(name)).db(dbName).collection('c');
    let expectedCount = 0;

    test('setup: {x: 1} sharded, chunks [MinKey,100) [100,200) [200,MaxKey) on 3 shards', async () => {
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { x: 1 } })).ok, 1);
        assert.equal((await admin({ split: ns, middle: { x: 100 } })).ok, 1);
        assert.equal((await admin({ split: ns, middle: { x: 200 } })).ok, 1);
        const primary = (await (await router()).db('config').collection('databases').findOne({ _id: dbName })).primary;
        const shards = (await (await router()).db('config').collection('shards').find().sort({ _id: 1 }).toArray()).map((s) => s._id);
        const others = shards.filter((s) => s !== primary);
        assert.equal((await admin({ moveRange: ns, min: { x: 100 }, max: { x: 200 }, toShard: others[0] })).ok, 1);
        assert.equal((await admin({ moveRange: ns, min: { x: 200 }, toShard: others[1] })).ok, 1);
        state.owner = { low: primary, mid: others[0], high: others[1] };
        const { chunks } = await ctx.cluster.placement(ns);
        assert.deepEqual(chunks.map((c) => c.shard), [primary, others[0], others[1]]);
        await ctx.cluster.checkConsistency(ns, 0);
    });

    test('insertMany ordered: a duplicate _id in the middle stops the batch at its index', async () => {
        const c = await coll();
        const batch = [
            { _id: 1, x: 50 },
            { _id: 2, x: 150 },
            { _id: 3, x: 250 },
            { _id: 2, x: 150 }, // duplicate on the mid shard
            { _id: 5, x: 60 },
            { _id: 6, x: 260 },
        ];
        const err = await c.insertMany(batch, { ordered: true }).then(
            () => assert.fail('insertMany succeeded'),
            (e) => e,
        );
        assert.ok(err instanceof MongoBulkWriteError, `${err}`);
        assert.equal(err.code, 11000);
        assert.deepEqual(
            err.writeErrors.map((w) => [w.index, w.code]),
            [[3, 11000]],
        );
        assert.equal(err.result.insertedCount, 3);
        assert.deepEqual((await c.find().sort({ _id: 1 }).toArray()).map((d) => d._id), [1, 2, 3]);
        expectedCount = 3;
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });

    test('insertMany unordered: every duplicate is reported with its index, the rest inserted', async () => {
        const c = await coll();
        const batch = [
            { _id: 11, x: 50 },
            { _id: 12, x: 150 },
            { _id: 12, x: 150 }, // dup (mid)
            { _id: 14, x: 250 },
            { _id: 1, x: 40 }, // dup of an existing doc (low)
            { _id: 15, x: 60 },
            { _id: 14, x: 270 }, // dup (high)
            { _id: 16, x: 199 },
        ];
        const err = await c.insertMany(batch, { ordered: false }).then(
            () => assert.fail('insertMany succeeded'),
            (e) => e,
        );
        assert.ok(err instanceof MongoBulkWriteError, `${err}`);
        assert.deepEqual(
            err.writeErrors.map((w) => [w.index, w.code]).sort((p, q) => p[0] - q[0]),
            [
                [2, 11000],
                [4, 11000],
                [6, 11000],
            ],
        );
        assert.equal(err.result.insertedCount, 5);
        expectedCount += 5;
        assert.deepEqual(
            (await c.find({}, { projection: { _id: 1 } }).sort({ _id: 1 }).toArray()).map((d) => d._id),
            [1, 2, 3, 11, 12, 14, 15, 16],
        );
        // The docs landed where their x says.
        assert.equal(await (await onShard(state.owner.high)).countDocuments({ _id: 14, x: 250 }), 1);
        assert.equal(await (await onShard(state.owner.mid)).countDocuments({ _id: 16 }), 1);
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });

    test('raw insert command: writeErrors indexes are positions in the original batch', async () => {
        const db = (await router()).db(dbName);
        const reply = await db.command({
            insert: 'c',
            ordered: false,
            documents: [
                { _id: 21, x: 250 },
                { _id: 2, x: 150 }, // dup
                { _id: 22, x: 10 },
                { _id: 3, x: 250 }, // dup
            ],
        });
        assert.equal(reply.ok, 1);
        assert.equal(reply.n, 2);
        assert.deepEqual(
            reply.writeErrors.map((w) => [w.index, w.code]).sort((p, q) => p[0] - q[0]),
            [
                [1, 11000],
                [3, 11000],
            ],
        );
        for (const w of reply.writeErrors) assert.match(w.errmsg, /E11000 duplicate key error/);
        expectedCount += 2;
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });

    test('more data: 300 documents over the 3 chunks', async () => {
        const c = await coll();
        const docs = Array.from({ length: 300 }, (_, i) => ({ _id: 1000 + i, x: i, g: i % 6, name: `n${i}`, v: 0 }));
        const r = await c.insertMany(docs);
        assert.equal(r.insertedCount, 300);
        expectedCount += 300;
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });

    test('updateOne / deleteOne without the shard key (by _id and by another field)', async () => {
        const c = await coll();
        let r = await c.updateOne({ _id: 1150 }, { $set: { tagged: 'by-id' } });
        assert.deepEqual([r.matchedCount, r.modifiedCount], [1, 1], 'updateOne by _id');
        r = await c.updateOne({ name: 'n250' }, { $set: { tagged: 'by-name' } });
        assert.deepEqual([r.matchedCount, r.modifiedCount], [1, 1], 'updateOne by name');
        // Matches documents on every shard: exactly one is updated.
        r = await c.updateOne({ g: 1 }, { $set: { tagged: 'one-of-many' } });
        assert.deepEqual([r.matchedCount, r.modifiedCount], [1, 1], 'updateOne matching many');
        assert.equal(await c.countDocuments({ tagged: 'one-of-many' }), 1);
        assert.equal((await c.findOne({ _id: 1150 })).tagged, 'by-id');
        assert.equal((await (await onShard(state.owner.high)).findOne({ name: 'n250' })).tagged, 'by-name');
        // No match anywhere.
        r = await c.updateOne({ name: 'nope' }, { $set: { tagged: 1 } });
        assert.deepEqual([r.matchedCount, r.modifiedCount], [0, 0]);

        let d = await c.deleteOne({ _id: 1160 });
        assert.equal(d.deletedCount, 1, 'deleteOne by _id');
        d = await c.deleteOne({ name: 'n20' });
        assert.equal(d.deletedCount, 1, 'deleteOne by name');
        const before = await c.countDocuments({ g: 2 });
        d = await c.deleteOne({ g: 2 });
        assert.equal(d.deletedCount, 1, 'deleteOne matching many');
        assert.equal(await c.countDocuments({ g: 2 }), before - 1);
        d = await c.deleteOne({ name: 'nope' });
        assert.equal(d.deletedCount, 0);
        expectedCount -= 3;
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });

    test('updateMany / deleteMany across shards', async () => {
        const c = await coll();
        const g0 = await c.countDocuments({ g: 0 });
        assert.ok(g0 > 40);
        const r = await c.updateMany({ g: 0 }, { $inc: { v: 7 } });
        assert.equal(r.matchedCount, g0);
        assert.equal(r.modifiedCount, g0);
        assert.equal(await c.countDocuments({ v: 7 }), g0);
        for (const s of Object.values(state.owner)) {
            assert.ok((await (await onShard(s)).countDocuments({ v: 7 })) > 0, `updated docs on ${s}`);
        }
        const g4 = await c.countDocuments({ g: 4 });
        const d = await c.deleteMany({ g: 4 });
        assert.equal(d.deletedCount, g4);
        assert.equal(await c.countDocuments({ g: 4 }), 0);
        expectedCount -= g4;
        // Shard-key-targeted multi-writes too.
        const r2 = await c.updateMany({ x: { $gte: 90, $lt: 110 }, g: { $ne: 4 } }, { $set: { band: true } });
        assert.equal(r2.matchedCount, await c.countDocuments({ band: true }));
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });

    test('findOneAndUpdate with and without the shard key', async () => {
        const c = await coll();
        let doc = await c.findOneAndUpdate({ x: 275 }, { $set: { f: 1 } }, { returnDocument: 'after' });
        assert.equal(doc?.x, 275);
        assert.equal(doc.f, 1);
        doc = await c.findOneAndUpdate({ _id: 1125 }, { $inc: { f: 5 } }, { returnDocument: 'before' });
        assert.equal(doc?._id, 1125);
        assert.equal(doc.f, undefined);
        assert.equal((await c.findOne({ _id: 1125 })).f, 5);
        doc = await c.findOneAndUpdate({ name: 'n55' }, { $set: { f: 2 } }, { returnDocument: 'after', projection: { _id: 0, f: 1 } });
        assert.deepEqual(doc, { f: 2 });
        doc = await c.findOneAndDelete({ name: 'n56' });
        assert.equal(doc?.x, 56);
        expectedCount -= 1;
        doc = await c.findOneAndUpdate({ name: 'missing' }, { $set: { f: 3 } });
        assert.equal(doc, null);
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });

    test('upsert with the full shard key lands on the owning shard', async () => {
        const c = await coll();
        let r = await c.updateOne({ x: 5000 }, { $set: { up: 1 } }, { upsert: true });
        assert.equal(r.upsertedCount, 1);
        assert.ok(r.upsertedId);
        assert.equal(await (await onShard(state.owner.high)).countDocuments({ x: 5000 }), 1);
        r = await c.updateOne({ x: 5000 }, { $inc: { up: 1 } }, { upsert: true });
        assert.deepEqual([r.matchedCount, r.modifiedCount, r.upsertedCount], [1, 1, 0]);
        r = await c.replaceOne({ x: 150.5 }, { _id: 'rep', x: 150.5, kind: 'replaced' }, { upsert: true });
        assert.equal(r.upsertedCount, 1);
        assert.equal(r.upsertedId, 'rep');
        assert.equal(await (await onShard(state.owner.mid)).countDocuments({ _id: 'rep' }), 1);
        r = await c.updateOne({ x: -5 }, { $setOnInsert: { low: true } }, { upsert: true });
        assert.equal(r.upsertedCount, 1);
        assert.equal(await (await onShard(state.owner.low)).countDocuments({ x: -5, low: true }), 1);
        expectedCount += 3;
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });

    test('retryable writes: the driver sends txnNumber to the router (retryWrites default)', async () => {
        const client = await ctx.cluster.clientFor(`${ctx.cluster.routerUri(0)}&monitorCommands=true`);
        const seen = [];
        const listener = (e) => {
            if (['insert', 'update', 'delete', 'findAndModify'].includes(e.commandName)) seen.push(e.command);
        };
        client.on('commandStarted', listener);
        try {
            const c = client.db(dbName).collection('c');
            await c.insertOne({ _id: 'rw1', x: 120 });
            await c.updateOne({ _id: 'rw1' }, { $set: { r: 1 } });
            await c.findOneAndUpdate({ x: 120, _id: 'rw1' }, { $inc: { r: 1 } });
            await c.deleteOne({ _id: 'rw1' });
        } finally {
            client.off('commandStarted', listener);
        }
        assert.equal(seen.length, 4);
        for (const cmd of seen) {
            assert.ok(cmd.lsid, `lsid in ${JSON.stringify(cmd)}`);
            assert.ok(cmd.txnNumber !== undefined, `txnNumber in ${JSON.stringify(cmd)}`);
        }
        const nums = seen.map((cmd) => Number(cmd.txnNumber));
        assert.deepEqual(nums, [...nums].sort((p, q) => p - q));
        assert.equal(new Set(nums).size, 4);
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });

    test('a retried write with the same lsid and txnNumber is applied once', async () => {
        // A client of its own: a pooled server session (lsid) of another test has higher txnNumbers.
        const client = await ctx.cluster.clientFor(`${ctx.cluster.routerUri(0)}&monitorCommands=true&appName=retry-once`);
        const db = client.db(dbName);
        const session = client.startSession();
        const sent = [];
        const listener = (e) => {
            if (['insert', 'update', 'delete'].includes(e.commandName)) sent.push(e.command);
        };
        client.on('commandStarted', listener);
        try {
            const twice = async (cmd) => {
                const first = await db.command(cmd, { session });
                const second = await db.command(cmd, { session });
                return [first, second];
            };
            // Insert on the mid shard: without exactly-once the retry would be a duplicate key error.
            let [r1, r2] = await twice({ insert: 'c', documents: [{ _id: 'once', x: 160, cnt: 0 }], txnNumber: Long.fromNumber(1) });
            assert.equal(r1.n, 1);
            assert.equal(r2.n, 1, `retry reply ${JSON.stringify(r2)}`);
            assert.equal(r2.writeErrors, undefined, `retry reply ${JSON.stringify(r2)}`);
            // $inc by _id (no shard key, so the router has to find the shard) and by shard key.
            [r1, r2] = await twice({ update: 'c', updates: [{ q: { _id: 'once' }, u: { $inc: { cnt: 1 } } }], txnNumber: Long.fromNumber(2) });
            assert.deepEqual([r1.n, r1.nModified, r2.n, r2.nModified], [1, 1, 1, 1], JSON.stringify([r1, r2]));
            [r1, r2] = await twice({ update: 'c', updates: [{ q: { x: 160 }, u: { $inc: { cnt: 10 } } }], txnNumber: Long.fromNumber(3) });
            assert.deepEqual([r1.n, r2.n], [1, 1]);
            // A batch over all 3 shards.
            const batch = [
                { _id: 'b1', x: 1 },
                { _id: 'b2', x: 101 },
                { _id: 'b3', x: 201 },
            ];
            [r1, r2] = await twice({ insert: 'c', documents: batch, ordered: false, txnNumber: Long.fromNumber(4) });
            assert.equal(r1.n, 3);
            assert.equal(r2.n, 3, `retry reply ${JSON.stringify(r2)}`);
            assert.equal(r2.writeErrors, undefined, `retry reply ${JSON.stringify(r2)}`);
            [r1, r2] = await twice({ delete: 'c', deletes: [{ q: { _id: 'b2' }, limit: 1 }], txnNumber: Long.fromNumber(5) });
            assert.equal(r1.n, 1);
            assert.equal(r2.n, 1, `retry of a delete reports the first result: ${JSON.stringify(r2)}`);
            // An older txnNumber than the session's newest is refused (TransactionTooOld), not applied.
            const old = await db
                .command({ insert: 'c', documents: [{ _id: 'too-old', x: 160 }], txnNumber: Long.fromNumber(2) }, { session })
                .catch((err) => ({ thrown: err }));
            const code = old.thrown ? old.thrown.code : old.writeErrors?.[0]?.code;
            assert.equal(code, 225, `reply to an old txnNumber: ${JSON.stringify(old)}`);
        } finally {
            client.off('commandStarted', listener);
            await session.endSession();
        }
        const c = await coll();
        assert.deepEqual(await c.findOne({ _id: 'once' }), { _id: 'once', x: 160, cnt: 11 });
        assert.equal(await c.countDocuments({ _id: { $in: ['b1', 'b3'] } }), 2);
        assert.equal(await c.countDocuments({ _id: 'too-old' }), 0);
        // Every pair went out with the same lsid and txnNumber.
        const ids = new Set(sent.map((cmd) => Buffer.from(cmd.lsid.id.buffer).toString('hex')));
        assert.equal(ids.size, 1, 'one lsid for all the commands');
        const nums = sent.map((cmd) => Number(cmd.txnNumber));
        assert.deepEqual(nums, [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 2]);
        expectedCount += 1 + 2;
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });

    test('the driver retries after a RetryableWriteError writeConcernError; the write is applied once', async () => {
        const client = await ctx.cluster.clientFor(`${ctx.cluster.routerUri(0)}&monitorCommands=true&appName=retry-wce`);
        const c = client.db(dbName).collection('c');
        await c.insertOne({ _id: 'ctr', x: 180.25, n: 0 }); // x unique in the collection
        expectedCount += 1;
        const sent = [];
        const listener = (e) => sent.push(e);
        client.on('commandStarted', listener);
        // failCommand on the router: the write runs, then the reply gets a retryable write concern
        // error, so the driver sends the same (lsid, txnNumber) again.
        const failOnce = (commandName) =>
            client.db('admin').command({
                configureFailPoint: 'failCommand',
                mode: { times: 1 },
                data: {
                    failCommands: [commandName],
                    writeConcernError: { code: 91, errmsg: 'Replication is being shut down', errorLabels: ['RetryableWriteError'] },
                },
            });
        const ops = [
            ['update', 'updateOne by _id (no shard key)', () => c.updateOne({ _id: 'ctr' }, { $inc: { n: 1 } })],
            ['update', 'updateOne by shard key', () => c.updateOne({ x: 180.25 }, { $inc: { n: 10 } })],
            ['findAndModify', 'findOneAndUpdate', () => c.findOneAndUpdate({ _id: 'ctr' }, { $inc: { n: 100 } })],
            ['insert', 'insertOne', () => c.insertOne({ _id: 'wce-insert', x: 181.5 })],
            ['delete', 'deleteOne', () => c.deleteOne({ _id: 'wce-insert' })],
        ];
        try {
            for (const [commandName, label, op] of ops) {
                sent.length = 0;
                await failOnce(commandName);
                await op();
                const attempts = sent.filter((e) => e.commandName === commandName);
                assert.equal(attempts.length, 2, `${label}: the driver retried once`);
                assert.equal(String(attempts[0].command.txnNumber), String(attempts[1].command.txnNumber), label);
            }
        } finally {
            client.off('commandStarted', listener);
            await client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
        }
        assert.deepEqual(await c.findOne({ _id: 'ctr' }), { _id: 'ctr', x: 180.25, n: 111 });
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });

    // reference/mongodb-surface.md §4.2: drivers of wire version ≥ 9 retry a write only on the
    // server's RetryableWriteError label, so a retriable code without it would surface as an error.
    test('retriable errors get RetryableWriteError from the server (NoWritesPerformed before the write)', async () => {
        const client = await ctx.cluster.clientFor(`${ctx.cluster.routerUri(0)}&monitorCommands=true&appName=retry-labels`);
        const c = client.db(dbName).collection('c');
        const failed = [];
        const listener = (e) => failed.push(e);
        client.on('commandFailed', listener);
        const failOnce = (target, data) =>
            target.db('admin').command({ configureFailPoint: 'failCommand', mode: { times: 1 }, data: { failCommands: ['insert', 'update'], ...data } });
        const owner = await ctx.cluster.shardByName(state.owner.mid);
        try {
            // 1. The router itself fails the insert (errorCode, no errorLabels named): labelled,
            //    retried by the driver, applied once.
            await failOnce(client, { errorCode: 91, appName: 'retry-labels' });
            await c.insertOne({ _id: 'lbl-1', x: 150.5 });
            assert.equal(failed.length, 1, 'one failed attempt');
            // (the driver adds ResetPool to shutdown codes itself)
            assert.deepEqual(
                failed[0].failure.errorLabels.filter((l) => l !== 'ResetPool').sort(),
                ['NoWritesPerformed', 'RetryableWriteError'],
            );
            // 2. The owning shard fails it: the router's reply carries the label once, not twice.
            failed.length = 0;
            await failOnce(owner, { errorCode: 189 });
            await c.insertOne({ _id: 'lbl-2', x: 150.75 });
            assert.equal(failed.length, 1, 'the shard failed the first attempt');
            assert.equal(failed[0].failure.code, 189);
            const labels = failed[0].failure.errorLabels;
            assert.equal(labels.filter((l) => l === 'RetryableWriteError').length, 1, JSON.stringify(labels));
            // 3. A retriable writeConcernError (no labels named) after the update ran: labelled, retried,
            //    and the retry replays the recorded reply (the $inc applies once).
            failed.length = 0;
            await failOnce(client, { writeConcernError: { code: 91, errmsg: 'shutting down' }, appName: 'retry-labels' });
            const r = await c.updateOne({ _id: 'lbl-1' }, { $inc: { n: 1 } });
            assert.equal(r.modifiedCount, 1);
            // 4. failCommand's errorLabels are taken as they are: [] means no label, no retry.
            await failOnce(client, { errorCode: 91, errorLabels: [], appName: 'retry-labels' });
            const e = await c.insertOne({ _id: 'lbl-3', x: 150.875 }).then(() => null, (err) => err);
            assert.ok(e, 'no label, no retry: the error surfaces');
            assert.equal(e.code, 91);
            assert.equal(e.hasErrorLabel('RetryableWriteError'), false);
            // 5. Not a retryable write (retryWrites=false): no label.
            const plain = await ctx.cluster.clientFor(`${ctx.cluster.routerUri(0)}&retryWrites=false&appName=retry-labels-off`);
            await failOnce(plain, { errorCode: 91, appName: 'retry-labels-off' });
            const e2 = await plain.db(dbName).collection('c').insertOne({ _id: 'lbl-4', x: 150.9375 }).then(() => null, (err) => err);
            assert.ok(e2 && e2.code === 91, String(e2));
            assert.equal(e2.hasErrorLabel('RetryableWriteError'), false);
        } finally {
            client.off('commandFailed', listener);
            await client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
            await owner.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
        }
        assert.deepEqual(await c.findOne({ _id: 'lbl-1' }), { _id: 'lbl-1', x: 150.5, n: 1 });
        assert.equal(await c.countDocuments({ _id: { $in: ['lbl-1', 'lbl-2', 'lbl-3', 'lbl-4'] } }), 2);
        expectedCount += 2;
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });

    // A client batch split over the 3 shards, one of which fails its sub-command with a retriable
    // error: the router fails the command as a whole (labelled), the driver retries it with the
    // same txnNumber, and every shard runs each statement at most once (stmtIds): the shards that
    // applied their part replay it, the failed one runs it now.
    test('a retried batch split over shards applies every statement once (stmtIds)', async () => {
        const client = await ctx.cluster.clientFor(`${ctx.cluster.routerUri(0)}&monitorCommands=true&appName=retry-split`);
        const c = client.db(dbName).collection('c');
        const docs = [
            { _id: 'sp-low', x: 10.125, n: 0 },
            { _id: 'sp-mid', x: 110.125, n: 0 },
            { _id: 'sp-high', x: 210.125, n: 0 },
        ];
        await c.insertMany(docs);
        expectedCount += 3;
        const sent = [];
        const listener = (e) => {
            if (e.commandName === 'update') sent.push(e);
        };
        client.on('commandStarted', listener);
        const high = await ctx.cluster.shardByName(state.owner.high);
        try {
            await high.db('admin').command({
                configureFailPoint: 'failCommand',
                mode: { times: 1 },
                data: { failCommands: ['update'], errorCode: 91 },
            });
            // Ordered and unordered: both split into one sub-command per shard.
            for (const ordered of [true, false]) {
                sent.length = 0;
                if (!ordered) {
                    await high.db('admin').command({
                        configureFailPoint: 'failCommand',
                        mode: { times: 1 },
                        data: { failCommands: ['update'], errorCode: 189 },
                    });
                }
                const r = await c.bulkWrite(
                    docs.map((d) => ({ updateOne: { filter: { x: d.x }, update: { $inc: { n: 1 } } } })),
                    { ordered },
                );
                assert.equal(r.modifiedCount, 3, `ordered ${ordered}`);
                assert.equal(sent.length, 2, `ordered ${ordered}: the driver sent the batch twice`);
                assert.equal(String(sent[0].command.txnNumber), String(sent[1].command.txnNumber));
            }
        } finally {
            client.off('commandStarted', listener);
            await high.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
        }
        const got = await c.find({ _id: { $in: docs.map((d) => d._id) } }).sort({ x: 1 }).toArray();
        assert.deepEqual(got.map((d) => d.n), [2, 2, 2], JSON.stringify(got));
        await ctx.cluster.checkConsistency(ns, expectedCount);
    });
});
