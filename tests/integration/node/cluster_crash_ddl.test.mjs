// Crash tests of the DDL coordinators, the refine's recluster, drains and the balancer's
// migrations (issue 41: "kill -9 where there were no crash tests"; docs/protocols/
// ddl-coordinators.md). The roles are started one by one (ManualCluster: config, 3 shards, 1
// router) so that a killed process restarts on its port and dbpath. The config server's
// failpoints hold an operation at a phase; the process is killed with SIGKILL there and
// restarted; once config.system.coordinators is empty (recovery finished) the outcome must be the
// one docs/protocols/ddl-coordinators.md promises — finished after the commit, undone before it —
// and checkConsistency (every document on exactly the shard owning its chunk, the router's count
// exact) must hold. Also: startShardDraining / stopShardDraining.
import assert from 'node:assert/strict';
import { uniqueDbName } from './harness.mjs';
import { describeWithManualCluster, waitFor, settle } from './cluster_harness.mjs';

describeWithManualCluster('crash recovery of DDL coordinators, recluster, drains and balancer migrations (kill -9)', (ctx) => {
    const test = ctx.test;
    const c = () => ctx.cluster;
    const admin = async (cmd) => (await c().router()).db('admin').command(cmd);
    const cfgAdmin = async (cmd) => (await c().config()).db('admin').command(cmd);
    const cfg = async () => (await c().router()).db('config');
    const coordinators = async () =>
        (await c().config()).db('config').collection('system.coordinators').find({}).toArray();
    const failpointHits = (name) => c().configProc.countLog(new RegExp(`"failpoint":"${name}"`));
    const shardNames = async () => (await (await cfg()).collection('shards').find().sort({ _id: 1 }).toArray()).map((s) => s._id);

    const waitRecovered = () =>
        waitFor('config.system.coordinators to be empty (recovery finished)', async () => (await coordinators()).length === 0, {
            timeoutMs: 60000,
            intervalMs: 100,
        });

    /**
     * Turns `fp` on, runs `cmd` through the router, waits until it hangs there; `{outcome}`: the
     * command's settling promise (wrapped: an async function would wait for it).
     */
    async function holdAt(fp, cmd) {
        const before = failpointHits(fp);
        await cfgAdmin({ configureFailPoint: fp, mode: 'alwaysOn' });
        const outcome = settle(admin(cmd));
        await waitFor(`${Object.keys(cmd)[0]} to hang at ${fp}`, async () => failpointHits(fp) > before, { timeoutMs: 30000 });
        return { outcome };
    }

    /** A drop of `ns` through the router held at `fp` (its outcome is not awaited). */
    async function holdDropAt(ns, fp) {
        const before = failpointHits(fp);
        await cfgAdmin({ configureFailPoint: fp, mode: 'alwaysOn' });
        const [dbName, collName] = ns.split('.');
        void settle((await c().router()).db(dbName).command({ drop: collName }));
        await waitFor(`drop to hang at ${fp}`, async () => failpointHits(fp) > before, { timeoutMs: 30000 });
    }

    /** kill -9 of the config server, a restart on its port and dbpath, recovery finished. */
    async function crashConfigAndRecover() {
        await c().kill9(c().configProc);
        await c().restart(c().configProc);
        await waitRecovered();
    }

    /** An unsharded collection of 100 documents on its database's primary. */
    async function unsharded(prefix) {
        const dbName = uniqueDbName(prefix);
        const ns = `${dbName}.c`;
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        const coll = (await c().router()).db(dbName).collection('c');
        await coll.insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: i, x: i })));
        return { dbName, ns, coll };
    }

    test('config server killed before shardCollection commits: the restart undoes it, writes were held, not lost', async () => {
        const { ns, coll } = await unsharded('crddlA');
        const { outcome: sharding } = await holdAt('shardCollectionHangBeforeCommit', { shardCollection: ns, key: { x: 1 } });
        // Writes of the namespace wait in the coordinator's critical section meanwhile.
        const held = settle(coll.insertOne({ _id: 'held', x: 1000 }));
        await c().kill9(c().configProc);
        await c().restart(c().configProc);
        await waitRecovered();
        await settle(sharding);
        assert.equal(await (await cfg()).collection('collections').countDocuments({ _id: ns }), 0, 'not sharded');
        // The held write either went through once the section was released, or failed with an
        // error the application may retry (the router could not reach the dead config server to
        // refresh): retried, it is applied once — a duplicate key would mean it was applied twice.
        const write = await held;
        if (write.error) {
            assert.ok(write.error.errorLabels?.includes('RetryableWriteError') ?? write.error.hasErrorLabel?.('RetryableWriteError'),
                `a held write fails only with a retryable error: ${write.error}`);
            await coll.insertOne({ _id: 'held', x: 1000 });
        }
        assert.equal(await coll.countDocuments(), 101, 'every document, and the held write, once');
        await c().checkConsistency(ns, 101);
        // Nothing is left in the way: sharding it again works.
        assert.equal((await admin({ shardCollection: ns, key: { x: 1 } })).ok, 1);
        await c().checkConsistency(ns, 101);
    });

    test('config server killed after shardCollection committed: the restart finishes it', async () => {
        const { ns, coll } = await unsharded('crddlB');
        const { outcome: sharding } = await holdAt('shardCollectionHangAfterCommit', { shardCollection: ns, key: { x: 1 } });
        await crashConfigAndRecover();
        await settle(sharding);
        const entry = await (await cfg()).collection('collections').findOne({ _id: ns });
        assert.ok(entry, 'sharded');
        assert.deepEqual(entry.key, { x: 1 });
        // The primary left its critical section: writes and reads go on.
        await coll.insertOne({ _id: 'after', x: 5 });
        await c().checkConsistency(ns, 101);
    });

    test('config server killed in the middle of dropCollection: the restart rolls it forward', async () => {
        const { ns, coll } = await unsharded('crddlC');
        assert.equal((await admin({ shardCollection: ns, key: { x: 'hashed' } })).ok, 1);
        await holdDropAt(ns, 'dropCollectionHangAfterCatalogDelete');
        await crashConfigAndRecover();
        assert.equal(await (await cfg()).collection('collections').countDocuments({ _id: ns }), 0);
        for (const name of await shardNames()) {
            const colls = await (await c().shardByName(name)).db(ns.split('.')[0]).listCollections({ name: 'c' }).toArray();
            assert.deepEqual(colls, [], `dropped on ${name}`);
        }
        await coll.insertOne({ _id: 'again', x: 1 });
        assert.equal(await coll.countDocuments(), 1, 'the namespace is usable again');
    });

    test('a shard killed during a refine\'s recluster: its restart discards the partial copy; the refine then works', async () => {
        const dbName = uniqueDbName('crddlD');
        const ns = `${dbName}.orders`;
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { customerId: 1 } })).ok, 1);
        const coll = (await c().router()).db(dbName).collection('orders');
        await coll.insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i, customerId: i % 50, createdAt: new Date(i) })));
        await coll.createIndex({ customerId: 1, createdAt: 1 });
        const primary = (await (await cfg()).collection('databases').findOne({ _id: dbName })).primary;
        const shard = await c().shardByName(primary);
        // The recluster stops after its copy, before the swap: what a crash there leaves.
        await shard.db('admin').command({ configureFailPoint: 'reclusterStopBeforeSwap', mode: 'alwaysOn' });
        const failed = await settle(admin({ refineCollectionShardKey: ns, key: { customerId: 1, createdAt: 1 } }));
        assert.ok(failed.error, 'the refine failed at the recluster');
        assert.deepEqual((await (await cfg()).collection('collections').findOne({ _id: ns })).key, { customerId: 1 });
        await c().kill9(c().shardProc(primary));
        await c().restart(c().shardProc(primary));
        await c().checkConsistency(ns, 200);
        assert.equal((await admin({ refineCollectionShardKey: ns, key: { customerId: 1, createdAt: 1 } })).ok, 1);
        assert.deepEqual((await (await cfg()).collection('collections').findOne({ _id: ns })).key, { customerId: 1, createdAt: 1 });
        await c().checkConsistency(ns, 200);
    });

    test('config server killed while a drain\'s migration is about to commit: the drain resumes and completes', async () => {
        const dbName = uniqueDbName('crddlE');
        const ns = `${dbName}.c`;
        const names = await shardNames();
        const drained = names[2];
        assert.equal((await admin({ enableSharding: dbName, primaryShard: names[0] })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { x: 1 } })).ok, 1);
        const coll = (await c().router()).db(dbName).collection('c');
        await coll.insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: i, x: i })));
        assert.equal((await admin({ split: ns, middle: { x: 150 } })).ok, 1);
        assert.equal((await admin({ moveChunk: ns, find: { x: 150 }, to: drained, _waitForDelete: true })).ok, 1);
        // The drain's migration of that chunk is held before its commit, then the config server dies.
        const before = failpointHits('moveRangeHangBeforeCommit');
        await cfgAdmin({ configureFailPoint: 'moveRangeHangBeforeCommit', mode: 'alwaysOn' });
        assert.equal((await admin({ startShardDraining: drained })).ok, 1);
        await waitFor('the drain to start moving the chunk', async () => failpointHits('moveRangeHangBeforeCommit') > before, { timeoutMs: 60000 });
        await crashConfigAndRecover();
        await waitFor(`${drained} drained`, async () => {
            const status = await settle(admin({ shardDrainingStatus: drained }));
            return status.reply?.state === 'drainingComplete' || status.reply?.state === 'completed';
        }, { timeoutMs: 90000, intervalMs: 500 });
        const { chunks } = await c().placement(ns);
        assert.ok(chunks.every((ch) => ch.shard !== drained), 'no chunk left on the drained shard');
        await c().checkConsistency(ns, 300);
        assert.equal((await admin({ stopShardDraining: drained })).ok, 1, 'the shard stays, draining stopped');
    });

    test('a shard killed while the balancer\'s migration holds its critical section: aborted, then balanced again', async () => {
        const dbName = uniqueDbName('crddlF');
        const ns = `${dbName}.c`;
        const names = await shardNames();
        assert.equal((await admin({ enableSharding: dbName, primaryShard: names[0] })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { x: 1 } })).ok, 1);
        const coll = (await c().router()).db(dbName).collection('c');
        await coll.insertMany(Array.from({ length: 400 }, (_, i) => ({ _id: i, x: i, pad: 'p'.repeat(200) })));
        for (const m of [0, 100, 200, 300]) assert.equal((await admin({ split: ns, middle: { x: m } })).ok, 1);
        // A zone on another shard for [0, 100): the balancer's next round migrates that chunk.
        const zoned = names[1];
        assert.equal((await admin({ addShardToZone: zoned, zone: 'crashZ' })).ok, 1);
        const settings = (await c().router()).db('config').collection('settings');
        await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'full', stopped: false, roundIntervalMillis: 200 } }, { upsert: true });
        const fp = 'moveRangeHangInCriticalSection';
        const before = failpointHits(fp);
        await cfgAdmin({ configureFailPoint: fp, mode: 'alwaysOn' });
        try {
            assert.equal((await admin({ updateZoneKeyRange: ns, min: { x: 0 }, max: { x: 100 }, zone: 'crashZ' })).ok, 1);
            await waitFor('a balancer migration in its critical section', async () => failpointHits(fp) > before, { timeoutMs: 60000 });
            // The donor (the primary: every chunk starts there) dies inside the section.
            await c().kill9(c().shardProc(names[0]));
        } finally {
            await cfgAdmin({ configureFailPoint: fp, mode: 'off' });
        }
        await c().restart(c().shardProc(names[0]));
        await waitRecovered();
        await waitFor('the balancer to move the zoned chunk again', async () => {
            const { chunks } = await c().placement(ns);
            const first = chunks.find((ch) => ch.min.x === 0);
            return first?.shard === zoned && (await coordinators()).length === 0;
        }, { timeoutMs: 90000, intervalMs: 500 });
        await c().checkConsistency(ns, 400);
        await settings.updateOne({ _id: 'balancer' }, { $unset: { roundIntervalMillis: 1 } });
    });

    test('startShardDraining / stopShardDraining: the shard is marked and reported draining, then takes chunks again', async () => {
        const names = await shardNames();
        const target = names[1];
        assert.equal((await admin({ startShardDraining: target })).ok, 1);
        const status = await admin({ shardDrainingStatus: target });
        assert.ok(['ongoing', 'drainingComplete', 'completed'].includes(status.state), JSON.stringify(status));
        const entry = await (await cfg()).collection('shards').findOne({ _id: target });
        assert.equal(entry.draining, true);
        const dbName = uniqueDbName('crddlG');
        const ns = `${dbName}.c`;
        assert.equal((await admin({ enableSharding: dbName, primaryShard: names[0] })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { x: 1 } })).ok, 1);
        await (await c().router()).db(dbName).collection('c').insertMany([{ _id: 1, x: 1 }, { _id: 2, x: 200 }]);
        assert.equal((await admin({ split: ns, middle: { x: 100 } })).ok, 1);
        assert.equal((await admin({ stopShardDraining: target })).ok, 1);
        assert.notEqual((await (await cfg()).collection('shards').findOne({ _id: target })).draining, true);
        assert.equal((await admin({ moveChunk: ns, find: { x: 200 }, to: target })).ok, 1, 'it takes chunks again');
        await c().checkConsistency(ns, 2);
    });
}, { shards: 3, routers: 1 });
