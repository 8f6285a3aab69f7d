// Coordinators whose steps fail (issue 40): a persisted operation whose step throws is retried
// with back-off a bounded number of times and then abandoned — its error visible in currentOp, the
// logs, config.changelog and the command's reply, its critical sections released and its
// placement old or new — instead of taking the process down at every restart. The failpoints
// make a step throw: `coordinatorStepThrows` (config server: every DDL coordinator, migrations,
// movePrimary, refine, drains), `transactionCoordinatorStepThrows` (a shard's two-phase commit
// coordinator) and `rangeDeletionThrows` (a shard's range deleter).
import assert from 'node:assert/strict';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster, waitFor, settle } from './cluster_harness.mjs';

describeWithCluster('coordinators whose steps fail', (ctx) => {
    const test = ctx.test;
    const c = () => ctx.cluster;
    const admin = async (cmd) => (await c().router()).db('admin').command(cmd);
    const cfgAdmin = async (cmd) => (await c().config()).db('admin').command(cmd);
    const shardIds = async () => (await admin({ listShards: 1 })).shards.map((s) => s._id).sort();
    const configPid = () => Number(/config .*pid (\d+)/.exec(c().stdout)[1]);

    async function setBalancer(on) {
        await (await c().router()).db('config').collection('settings').updateOne({ _id: 'balancer' },
            { $set: { mode: on ? 'full' : 'off', stopped: !on, roundIntervalMillis: 200 } }, { upsert: true });
    }

    /** A sharded collection {x: 1} with 200 documents and chunks [MinKey, 100) [100, MaxKey). */
    async function sharded(prefix) {
        const dbName = uniqueDbName(prefix);
        const ns = `${dbName}.c`;
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { x: 1 } })).ok, 1);
        const coll = (await c().router()).db(dbName).collection('c');
        await coll.insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i, x: i })));
        assert.equal((await admin({ split: ns, middle: { x: 100 } })).ok, 1);
        const primary = (await (await c().router()).db('config').collection('databases').findOne({ _id: dbName })).primary;
        const other = (await shardIds()).find((s) => s !== primary);
        return { dbName, ns, coll, primary, other };
    }

    test('every config coordinator kind is retried, then abandoned; the namespaces stay usable', async () => {
        await setBalancer(false);
        const pidBefore = configPid();
        const move = await sharded('cfmove');
        const mp = await sharded('cfmp');
        const shard = await sharded('cfshard');
        await admin({ split: shard.ns, middle: { x: 50 } });
        const drop = await sharded('cfdrop');
        const dropDb = await sharded('cfdropdb');
        const refine = await sharded('cfrefine');
        await refine.coll.createIndex({ x: 1, y: 1 });
        const unsharded = uniqueDbName('cfshcoll');
        await (await c().router()).db(unsharded).collection('c').insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i, k: i })));

        await cfgAdmin({ configureFailPoint: 'coordinatorStepThrows', mode: 'alwaysOn' });
        let results;
        const seen = new Set();
        try {
            const running = Promise.all([
                settle(admin({ moveRange: move.ns, min: { x: 100 }, max: { x: 1000 }, toShard: move.other })),
                settle(admin({ movePrimary: mp.dbName, to: mp.other })),
                settle(admin({ shardCollection: `${unsharded}.c`, key: { _id: 'hashed' } })),
                settle((await c().router()).db(drop.dbName).collection('c').drop()),
                settle((await c().router()).db(dropDb.dbName).dropDatabase()),
                settle(admin({ refineCollectionShardKey: refine.ns, key: { x: 1, y: 1 } })),
            ]);
            // While they are retried: currentOp through the router names each coordinator with
            // its attempts and last error, under the config server's op ids.
            await waitFor('currentOp to show the failing coordinators', async () => {
                const ops = (await admin({ currentOp: 1 })).inprog.filter((op) => op.shard === 'config');
                for (const op of ops) {
                    if (op.attempts >= 1 && op.lastError?.code === 1 && /^config:\d+$/.test(op.opid)) seen.add(op.desc);
                }
                return seen.size >= 4;
            }, { timeoutMs: 30000, intervalMs: 100 });
            results = await running;
        } finally {
            await cfgAdmin({ configureFailPoint: 'coordinatorStepThrows', mode: 'off' });
        }
        assert.equal(configPid(), pidBefore, 'the config server never restarted');
        assert.ok(c().alive);
        for (const [i, r] of results.entries()) {
            assert.ok(r.error, `command ${i} failed: ${JSON.stringify(r.reply)}`);
            assert.match(r.error.message, /abandoned|coordinatorStepThrows/, `command ${i}: ${r.error.message}`);
        }
        const cfg = (await c().router()).db('config');
        // dropDatabase's own dropCollection coordinator was not abandoned with it: recovery
        // finishes it now that its step no longer throws.
        await waitFor('nothing left to recover', async () =>
            (await cfg.collection('system.coordinators').countDocuments({})) === 0, { timeoutMs: 30000, intervalMs: 200 });
        const abandoned = (await cfg.collection('changelog').find({ what: /\.abandoned$/ }).toArray()).map((d) => d.what);
        for (const what of ['moveRange.abandoned', 'movePrimary.abandoned', 'dropCollection.abandoned', 'refineCollectionShardKey.abandoned']) {
            assert.ok(abandoned.includes(what), `${what} in config.changelog: ${abandoned}`);
        }

        // Every namespace usable, its placement old or new: the operations work when run again.
        assert.equal((await admin({ moveRange: move.ns, min: { x: 100 }, max: { x: 1000 }, toShard: move.other })).ok, 1);
        await c().checkConsistency(move.ns, 200);
        assert.equal((await admin({ movePrimary: mp.dbName, to: mp.other })).ok, 1);
        await c().checkConsistency(mp.ns, 200);
        assert.equal((await admin({ shardCollection: `${unsharded}.c`, key: { _id: 'hashed' } })).ok, 1);
        await c().checkConsistency(`${unsharded}.c`, 50);
        await (await c().router()).db(drop.dbName).collection('c').drop();
        assert.equal(await (await c().router()).db(drop.dbName).collection('c').countDocuments({}), 0);
        await (await c().router()).db(dropDb.dbName).dropDatabase();
        assert.equal((await admin({ refineCollectionShardKey: refine.ns, key: { x: 1, y: 1 } })).ok, 1);
        await c().checkConsistency(refine.ns, 200);
        for (const n of [move, mp, refine]) {
            await n.coll.insertOne({ _id: 'after', x: 150, y: 1 });  // writes flow: no section held
        }
    });

    // A drop rolls forward when resumed: the retry finishes it and the client hears success. (A
    // migration resumed before its commit is aborted instead, as any failed migration — its
    // command fails and the balancer or the user moves the range again.)
    test('a coordinator step that throws once is retried and the operation succeeds', async () => {
        const d = await sharded('cfonce');
        await cfgAdmin({ configureFailPoint: 'coordinatorStepThrows', mode: { times: 1 }, data: { type: 'dropCollection' } });
        let fired;
        try {
            assert.equal(await d.coll.drop(), true);
        } finally {
            fired = await cfgAdmin({ configureFailPoint: 'coordinatorStepThrows', mode: 'off' });
        }
        assert.equal(fired.count, 1, 'the step threw once');
        const cfg = (await c().router()).db('config');
        assert.equal(await cfg.collection('collections').countDocuments({ _id: d.ns }), 0);
        assert.equal(await cfg.collection('system.coordinators').countDocuments({}), 0);
        assert.equal(await d.coll.countDocuments({}), 0);
        await d.coll.insertOne({ _id: 1, x: 1 });  // the namespace is usable
    });

    test('a drain whose steps throw is marked failed, visible, and resumes when started again', async () => {
        const [a, b] = await shardIds();
        const dbName = uniqueDbName('cfdrain');
        assert.equal((await admin({ enableSharding: dbName, primaryShard: b })).ok, 1);
        await (await c().router()).db(dbName).collection('u').insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i })));
        await cfgAdmin({ configureFailPoint: 'coordinatorStepThrows', mode: 'alwaysOn', data: { type: 'drain' } });
        try {
            assert.equal((await admin({ startShardDraining: b })).ok, 1);
            await setBalancer(true);
            const failed = await waitFor('the drain to be marked failed', async () => {
                const st = await admin({ shardDrainingStatus: b });
                return st.state === 'failed' ? st : null;
            }, { timeoutMs: 60000, intervalMs: 200 });
            assert.equal(failed.lastError.code, 1, JSON.stringify(failed));
            assert.ok(failed.failedAttempts >= 5);
            const op = (await admin({ currentOp: 1, desc: 'shard draining' })).inprog[0];
            assert.equal(op.state, 'failed');
            assert.equal(op.shard, b);
            const abandoned = await (await c().router()).db('config').collection('changelog').findOne({ what: 'removeShard.failed', 'details.shard': b });
            assert.ok(abandoned, 'removeShard.failed in config.changelog');
        } finally {
            await cfgAdmin({ configureFailPoint: 'coordinatorStepThrows', mode: 'off' });
        }
        try {
            assert.equal((await admin({ startShardDraining: b })).ok, 1, 'started again: the failure is cleared');
            await waitFor('the database to move off the draining shard', async () => {
                const st = await admin({ shardDrainingStatus: b });
                return st.state !== 'failed' && !st.dbsToMove.includes(dbName);
            }, { timeoutMs: 60000, intervalMs: 200 });
            assert.equal((await (await c().router()).db('config').collection('databases').findOne({ _id: dbName })).primary, a);
            assert.equal(await (await c().router()).db(dbName).collection('u').countDocuments({}), 20);
        } finally {
            await admin({ stopShardDraining: b });
            await setBalancer(false);
        }
    });

    test('a transaction coordinator whose delivery throws keeps retrying, shows it, and delivers', async () => {
        const t = await sharded('cftxn');
        assert.equal((await admin({ moveRange: t.ns, min: { x: 100 }, max: { x: 1000 }, toShard: t.other })).ok, 1);
        // The first participant coordinates: the shard owning [MinKey, 100).
        const coordinator = await c().shardByName(t.primary);
        await coordinator.db('admin').command({ configureFailPoint: 'transactionCoordinatorStepThrows', mode: 'alwaysOn' });
        const client = await c().router();
        const session = client.startSession();
        let op;
        try {
            session.startTransaction();
            // By shard key: the first statement's shard is the coordinator.
            await t.coll.updateOne({ x: 1 }, { $set: { paid: true } }, { session });
            await t.coll.updateOne({ x: 150 }, { $set: { paid: true } }, { session });
            await session.commitTransaction();
            op = await waitFor('the coordinator to show its failing delivery', async () => {
                const ops = (await admin({ currentOp: 1, desc: 'transaction coordinator' })).inprog;
                return ops.find((o) => o.twoPhaseCommitCoordinator?.attempts >= 2);
            }, { timeoutMs: 30000, intervalMs: 100 });
        } finally {
            await coordinator.db('admin').command({ configureFailPoint: 'transactionCoordinatorStepThrows', mode: 'off' });
            await session.endSession();
        }
        assert.equal(op.twoPhaseCommitCoordinator.lastError.code, 1, JSON.stringify(op));
        assert.match(op.opid, new RegExp(`^${t.primary}:\\d+$`));
        await waitFor('the decision to be delivered', async () =>
            (await t.coll.countDocuments({ paid: true }, { maxTimeMS: 2000 }).catch(() => 0)) === 2, { timeoutMs: 30000, intervalMs: 200 });
        assert.equal((await admin({ currentOp: 1, desc: 'transaction coordinator' })).inprog.length, 0);
    });

    test('a range deletion that throws is retried, then shown failed; reads stay exact', async () => {
        const r = await sharded('cfrange');
        const donor = await c().shardByName(r.primary);
        await donor.db('admin').command({ configureFailPoint: 'rangeDeletionThrows', mode: 'alwaysOn' });
        try {
            assert.equal((await admin({ moveRange: r.ns, min: { x: 100 }, max: { x: 1000 }, toShard: r.other })).ok, 1);
            const op = await waitFor('the range deletion to be given up', async () => {
                const ops = (await admin({ currentOp: 1, desc: 'rangeDeletion', ns: r.ns })).inprog;
                return ops.find((o) => o.state === 'failed');
            }, { timeoutMs: 60000, intervalMs: 200 });
            assert.equal(op.lastError.code, 1);
            assert.equal(op.attempts, op.maxAttempts);
            // The orphans are hidden: the donor's direct reads and every count stay exact.
            await c().checkConsistency(r.ns, 200);
        } finally {
            await donor.db('admin').command({ configureFailPoint: 'rangeDeletionThrows', mode: 'off' });
        }
        // Moving the range back purges the leftovers first: nothing is wedged.
        assert.equal((await admin({ moveRange: r.ns, min: { x: 100 }, max: { x: 1000 }, toShard: r.primary })).ok, 1);
        await c().checkConsistency(r.ns, 200);
    });
}, { shards: 2, routers: 1 });
