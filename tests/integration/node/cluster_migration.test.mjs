// Online range migrations (docs/protocols/migration.md, issue 12) through real drivers while
// clients write: the donor keeps serving the range while it is cloned, the changes made meanwhile
// reach the recipient, writes wait only for the short critical section, counts stay exact at
// every moment without scans, the donor deletes the range at once, a range can move straight
// back, and a retryable write retried after its document moved is not applied twice.
import assert from 'node:assert/strict';
import { Long, MongoClient } from 'mongodb';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster, waitFor } from './cluster_harness.mjs';

describeWithCluster('online range migrations', (ctx) => {
    const test = ctx.test;
    const c = () => ctx.cluster;
    const admin = async (cmd, i = 0) => (await c().router(i)).db('admin').command(cmd);
    const shardNames = async () =>
        (await (await c().router()).db('config').collection('shards').find().sort({ _id: 1 }).toArray()).map((s) => s._id);

    /** db.c sharded on {x: 1}, `n` documents x = 0..n-1, chunks [MinKey, 1000) [1000, MaxKey). */
    async function setup(prefix, n = 2000) {
        const dbName = uniqueDbName(prefix);
        const ns = `${dbName}.c`;
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { x: 1 } })).ok, 1);
        const coll = (await c().router()).db(dbName).collection('c');
        const docs = Array.from({ length: n }, (_, i) => ({ _id: i, x: i, pad: 'p'.repeat(100) }));
        for (let i = 0; i < docs.length; i += 1000) await coll.insertMany(docs.slice(i, i + 1000));
        assert.equal((await admin({ split: ns, middle: { x: 1000 } })).ok, 1);
        const donor = (await (await c().router()).db('config').collection('databases').findOne({ _id: dbName })).primary;
        const names = await shardNames();
        const recipient = names[(names.indexOf(donor) + 1) % names.length];
        return { dbName, ns, coll, donor, recipient };
    }

    const move = (ns, to, i = 0) => admin({ moveRange: ns, min: { x: 1000 }, max: { x: MaxKeyValue }, toShard: to }, i);
    // The last chunk's max: {x: MaxKey}.
    let MaxKeyValue;
    const maxKey = async () => {
        if (!MaxKeyValue) {
            const { MaxKey } = await import('mongodb');
            MaxKeyValue = new MaxKey();
        }
        return MaxKeyValue;
    };

    /** Runs `body(stop)` clients until `stop()` flips; returns what each produced. */
    async function whileRunning(workers, during) {
        let stopped = false;
        const running = workers.map((w) => w(() => stopped));
        try {
            await during();
        } finally {
            stopped = true;
        }
        return Promise.all(running);
    }

    test('unique inserts through two routers during repeated moves back and forth: each acknowledged insert exactly once', async () => {
        await maxKey();
        const { ns, dbName, donor, recipient } = await setup('migset');
        const inserter = (routerIndex, tag) => async (stopped) => {
            const coll = (await c().router(routerIndex)).db(dbName).collection('c');
            const acked = [];
            let failed = 0;
            for (let i = 0; !stopped() || i < 20; i++) {
                const x = 1000 + ((i * 7919 + routerIndex * 104729) % 5000);
                const _id = `${tag}-${i}`;
                try {
                    await coll.insertOne({ _id, x, w: tag });
                    acked.push(_id);
                } catch (err) {
                    failed++;
                    if (failed > 5) throw new Error(`inserts keep failing: ${err.message}`);
                }
            }
            return { acked, failed };
        };
        const results = await whileRunning([inserter(0, 'a'), inserter(1, 'b'), inserter(0, 'c'), inserter(1, 'd')], async () => {
            for (let round = 0; round < 3; round++) {
                assert.equal((await move(ns, recipient, round % 2)).ok, 1);
                assert.equal((await move(ns, donor, (round + 1) % 2)).ok, 1);
            }
        });
        const acked = results.flatMap((r) => r.acked);
        const failures = results.reduce((n, r) => n + r.failed, 0);
        assert.equal(failures, 0, 'no client write failed during the migrations');
        const coll = (await c().router()).db(dbName).collection('c');
        const stored = await coll.find({ w: { $exists: true } }).project({ _id: 1 }).toArray();
        const ids = stored.map((d) => d._id).sort();
        assert.equal(new Set(ids).size, ids.length, 'no duplicates');
        assert.deepEqual(ids, [...acked].sort(), 'every acknowledged insert is present, nothing else');
        await c().checkConsistency(ns, 2000 + acked.length);
    });

    test('estimatedDocumentCount and count, through the router and on each shard directly, are exact during and after moves', async () => {
        await maxKey();
        const { ns, dbName, coll, donor, recipient } = await setup('migcount', 3000);
        const samples = [];
        const bad = [];
        let directSamples = 0;
        const sampler = async (stopped) => {
            while (!stopped()) {
                const [est, cnt] = await Promise.all([
                    coll.estimatedDocumentCount(),
                    (await c().router(1)).db(dbName).command({ count: 'c' }),
                ]);
                // Direct reads of the two shards are two moments: around a commit (the shards
                // learn it one after the other) their sum may be off. Outside one — no
                // migration of ns in its critical section or later phase before and after the
                // two reads — each shard counts exactly what it owns, so the sum is exact:
                // a clone is never counted by its recipient, a donation never twice.
                const committing = async () => (await (await c().config()).db('config').collection('system.coordinators')
                    .find({ type: 'moveRange', ns, phase: { $in: ['criticalSection', 'committed', 'cleaned'] } }).toArray()).length > 0;
                // A whole commit can also pass between the two looks at the coordinators (a move
                // of this size takes a fraction of a sampling interval): the changelog counts them.
                const commits = async () => (await c().config()).db('config').collection('changelog')
                    .countDocuments({ what: 'moveChunk.commit', ns });
                const before = await committing();
                const commitsBefore = await commits();
                let direct = 0;
                for (const name of [donor, recipient]) {
                    const r = await (await c().shardByName(name)).db(dbName).command({ count: 'c' });
                    direct += r.n;
                }
                const quiet = !before && !(await committing()) && (await commits()) === commitsBefore;
                samples.push(est);
                if (quiet) directSamples++;
                if (est !== 3000 || cnt.n !== 3000) bad.push({ est, cnt: cnt.n });
                if (quiet && direct !== 3000) bad.push({ direct });
                await new Promise((r) => setTimeout(r, 100));
            }
        };
        // Updates keep the number of documents the same while the range moves.
        const updater = async (stopped) => {
            let n = 0;
            for (let i = 0; !stopped(); i++) {
                await coll.updateOne({ _id: 1000 + (i % 2000) }, { $inc: { v: 1 } });
                n++;
            }
            return n;
        };
        // Moves back and forth until the samplers have seen enough of them (a move of 2000
        // small documents takes a fraction of a sampling interval).
        await whileRunning([sampler, updater], async () => {
            for (let round = 0; round < 40 && (round < 2 || samples.length < 10 || directSamples < 3); round++) {
                assert.equal((await move(ns, recipient)).ok, 1);
                assert.equal((await move(ns, donor)).ok, 1);
            }
        });
        assert.ok(samples.length >= 10, `sampled ${samples.length} times`);
        assert.ok(directSamples >= 3, `sampled the shards directly ${directSamples} times outside a commit`);
        assert.deepEqual(bad, [], 'every sample was exact');
        // Right after a move, and after the donor deleted the range: the same.
        assert.equal((await move(ns, recipient)).ok, 1);
        assert.equal(await coll.estimatedDocumentCount(), 3000);
        await waitFor('the donor to delete the donated range', async () => {
            const s = await (await c().shardByName(donor)).db(dbName).command({ collStats: 'c' });
            return Number(s.numOrphanDocs) === 0;
        });
        const onDonor = await (await c().shardByName(donor)).db(dbName).command({ collStats: 'c' });
        const onRecipient = await (await c().shardByName(recipient)).db(dbName).command({ collStats: 'c' });
        assert.equal(Number(onDonor.count), 1000);
        assert.equal(Number(onRecipient.count), 2000);
        assert.equal(Number(onRecipient.numOrphanDocs), 0);
        await c().checkConsistency(ns, 3000);
    });

    /**
     * Starts moveRange of [1000, MaxKey) to `recipient` with the recipient held after its clone
     * (failpoint migrationRecipientHangAfterClone): the donor still owns and serves the range, and
     * every change made now must reach the recipient through the catch-up. Returns the pending
     * move and a release function.
     */
    async function moveHeldAfterClone(ns, recipient, clonedDocs) {
        const shardAdmin = (await c().shardByName(recipient)).db('admin');
        await shardAdmin.command({ configureFailPoint: 'migrationRecipientHangAfterClone', mode: 'alwaysOn' });
        const moving = move(ns, recipient).then((r) => ({ r }), (error) => ({ error }));
        await waitFor('the recipient to finish its clone and hang', async () => {
            const r = await admin({ currentOp: 1, desc: 'migration', role: 'recipient', ns });
            return r.inprog.length === 1 && r.inprog[0].docsCloned === clonedDocs;
        });
        const release = async () => {
            await shardAdmin.command({ configureFailPoint: 'migrationRecipientHangAfterClone', mode: 'off' });
            const outcome = await moving;
            assert.ok(!outcome.error, `moveRange failed: ${outcome.error && outcome.error.message}`);
            assert.equal(outcome.r.ok, 1);
        };
        return { release };
    }

    test('updates that move documents into and out of the migrating range, inserts and deletes after the snapshot reach the recipient', async () => {
        await maxKey();
        const { ns, coll, recipient } = await setup('miginout');
        const { release } = await moveHeldAfterClone(ns, recipient, 1000);
        // After the clone's snapshot, on the donor (which owns both sides): documents 0..99 move
        // into the range, 1000..1099 move out of it (retryable writes: a shard key update that
        // stays on the shard), 1500..1599 are deleted, 2000..2099 are new, 1200..1299 change.
        for (let i = 0; i < 100; i++) {
            assert.equal((await coll.updateOne({ _id: i, x: i }, { $set: { x: 3000 + i } })).modifiedCount, 1);
            assert.equal((await coll.updateOne({ _id: 1000 + i, x: 1000 + i }, { $set: { x: 500 + i } })).modifiedCount, 1);
            assert.equal((await coll.deleteOne({ _id: 1500 + i })).deletedCount, 1);
            await coll.insertOne({ _id: 2000 + i, x: 2000 + i });
            assert.equal((await coll.updateOne({ _id: 1200 + i }, { $set: { changed: true } })).modifiedCount, 1);
        }
        // Large changes: more than one transfer round's 8 MB (the rest waits for the next).
        const big = 'b'.repeat(40 * 1024);
        for (let i = 0; i < 300; i++) {
            assert.equal((await coll.updateOne({ _id: 1700 + i }, { $set: { big } })).modifiedCount, 1);
        }
        // One document moved in and straight out again, one out and back in.
        await coll.updateOne({ _id: 5, x: 3005 }, { $set: { x: 5 } });
        await coll.updateOne({ _id: 1005, x: 505 }, { $set: { x: 1005 } });
        await release();
        const all = await coll.find({}).toArray();
        const byId = new Map(all.map((d) => [d._id, d]));
        assert.equal(all.length, 2000);
        for (let i = 0; i < 100; i++) {
            assert.equal(byId.get(i).x, i === 5 ? 5 : 3000 + i);
            assert.equal(byId.get(1000 + i).x, i === 5 ? 1005 : 500 + i);
            assert.equal(byId.get(1500 + i), undefined, `deleted document ${1500 + i} came back`);
            assert.equal(byId.get(2000 + i).x, 2000 + i);
            assert.equal(byId.get(1200 + i).changed, true);
        }
        for (let i = 0; i < 300; i++) assert.equal(byId.get(1700 + i).big.length, 40 * 1024, `large change of ${1700 + i}`);
        await c().checkConsistency(ns, 2000);
    });

    test('a range moves straight back, and again', async () => {
        await maxKey();
        const { ns, donor, recipient } = await setup('migback', 500);
        for (let i = 0; i < 3; i++) {
            assert.equal((await move(ns, recipient)).ok, 1, `move ${i} to the recipient`);
            assert.equal((await move(ns, donor)).ok, 1, `move ${i} back`);
        }
        await c().checkConsistency(ns, 500);
    });

    test('currentOp through the router shows the migration; the changelog has its steps; _waitForDelete waits', async () => {
        await maxKey();
        const { ns, dbName, recipient } = await setup('migop', 5000);
        const { release } = await moveHeldAfterClone(ns, recipient, 4000);
        const r = await admin({ currentOp: 1, desc: 'migration' }, 1);
        const ops = r.inprog.filter((op) => op.ns === ns);
        assert.equal(ops.length, 2, `donor and recipient parts: ${JSON.stringify(r.inprog)}`);
        for (const op of ops) {
            for (const f of ['shard', 'ns', 'min', 'max', 'from', 'to', 'phase', 'docsCloned', 'bytesCloned', 'backlog']) {
                assert.ok(f in op, `currentOp entry has ${f}: ${JSON.stringify(op)}`);
            }
            assert.equal(op.docsCloned, 4000);
            assert.ok(op.bytesCloned > 4000 * 100);
        }
        assert.deepEqual(ops.map((op) => op.role).sort(), ['donor', 'recipient']);
        // mongosh's db.currentOp() (an aggregate with $currentOp on admin) shows the same.
        const viaShell = await (await c().router()).db('admin')
            .aggregate([{ $currentOp: { allUsers: true, idleConnections: false } }, { $match: { desc: 'migration', ns } }]).toArray();
        assert.equal(viaShell.length, 2, JSON.stringify(viaShell));
        const donorOp = ops.find((op) => op.role === 'donor');
        assert.equal(donorOp.criticalSectionMs, 0, 'no critical section while the recipient catches up');
        assert.equal(donorOp.phase, 'catchUp');
        await release();
        assert.equal((await admin({ moveRange: ns, min: { x: 1000 }, max: { x: MaxKeyValue }, toShard: ops[0].from, _waitForDelete: true })).ok, 1);
        const log = await (await c().router()).db('config').collection('changelog')
            .find({ what: 'moveChunk.from', ns }).sort({ time: -1 }).limit(1).toArray();
        assert.equal(log.length, 1);
        const d = log[0].details;
        for (let i = 1; i <= 6; i++) assert.ok(`step ${i} of 6` in d, `changelog has step ${i}: ${JSON.stringify(d)}`);
        assert.equal(Number(d.docsCloned), 4000);
        assert.ok(Number(d.criticalSectionMs) >= 0);
        assert.equal(d.note, 'success');
        // _waitForDelete: the donor of the second move deleted the range before it returned.
        const s = await (await c().shardByName(d.from)).db(dbName).command({ collStats: 'c' });
        assert.equal(Number(s.numOrphanDocs), 0);
        assert.equal(Number(s.count), 0);
        await c().checkConsistency(ns, 5000);
    });

    test('a retryable write retried after its document moved is not applied twice', async () => {
        await maxKey();
        const { ns, dbName, recipient } = await setup('migretry', 100);
        const client = new MongoClient(c().routerUri(0));
        await client.connect();
        try {
            const db = client.db(dbName);
            await db.collection('c').insertOne({ _id: 'u1', x: 1050, n: 0 });
            const insertSession = client.startSession();
            const updateSession = client.startSession();
            const insert = { insert: 'c', documents: [{ _id: 'r1', x: 1500, n: 0 }], txnNumber: Long.fromNumber(1000000) };
            const update = { update: 'c', updates: [{ q: { _id: 'u1', x: 1050 }, u: { $inc: { n: 1 } } }], txnNumber: Long.fromNumber(1000000) };
            assert.equal((await db.command(insert, { session: insertSession })).n, 1);
            assert.equal((await db.command(update, { session: updateSession })).nModified, 1);
            assert.equal((await move(ns, recipient)).ok, 1);
            // The retries reach the recipient now; it must know both statements ran.
            const again = await db.command(update, { session: updateSession });
            assert.equal(again.n, 1, JSON.stringify(again));
            assert.equal((await db.collection('c').findOne({ _id: 'u1' })).n, 1, 'the $inc was applied once');
            const insertAgain = await db.command(insert, { session: insertSession }).catch((e) => e);
            assert.ok(!(insertAgain instanceof Error), `the retried insert is answered, not refused: ${insertAgain.message}`);
            assert.equal(insertAgain.n, 1);
            await insertSession.endSession();
            await updateSession.endSession();
        } finally {
            await client.close();
        }
        await c().checkConsistency(ns, 102);
    });
}, { shards: 3, routers: 2 });
