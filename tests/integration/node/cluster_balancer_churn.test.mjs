// The balancer's churn test (issue 13 point 7): unique inserts through two routers, four clients,
// while the balancer splits and moves continuously (chunk size 1 MB, rounds every 200 ms); then
// every acknowledged insert is present exactly once, on the shard config.chunks names, and the
// counts through both routers are exact.
import assert from 'node:assert/strict';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster, waitFor } from './cluster_harness.mjs';

describeWithCluster('the balancer under churn', (ctx) => {
    const c = () => ctx.cluster;

    ctx.test('inserts through two routers while the balancer splits and moves: each acknowledged insert exactly once', async () => {
        const r0 = await c().router(0);
        const r1 = await c().router(1);
        const admin = (cmd) => r0.db('admin').command(cmd);
        const settings = r0.db('config').collection('settings');
        const dbName = uniqueDbName('churn');
        const ns = `${dbName}.c`;
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { k: 1 } })).ok, 1);
        await settings.updateOne({ _id: 'chunksize' }, { $set: { value: 1 } }, { upsert: true });
        await settings.updateOne({ _id: 'balancer' },
            { $set: { mode: 'full', stopped: false, roundIntervalMillis: 200 } }, { upsert: true });
        const pad = 'x'.repeat(900);
        const acked = new Set();
        let stop = false;
        let failures = 0;
        // Four clients, two per router; keys spread over the key space so every chunk grows.
        const client = (router, w) => (async () => {
            const coll = router.db(dbName).collection('c');
            for (let i = 0; !stop; i++) {
                const docs = Array.from({ length: 20 }, (_, j) => {
                    const id = `${w}-${i}-${j}`;
                    return { _id: id, k: ((i * 20 + j) * 7919 + w * 104729) % 1000003, pad };
                });
                try {
                    await coll.insertMany(docs, { ordered: true });
                    for (const d of docs) acked.add(d._id);
                } catch (err) {
                    // Retried by the driver already; count it, and keep what was acknowledged.
                    failures++;
                    for (const d of docs.slice(0, err.result?.insertedCount ?? 0)) acked.add(d._id);
                }
            }
        })();
        const clients = [client(r0, 0), client(r0, 1), client(r1, 2), client(r1, 3)];
        const changelog = r0.db('config').collection('changelog');
        try {
            await waitFor('several balancer migrations and splits during the inserts', async () => {
                const moves = await changelog.countDocuments({ ns, what: 'moveChunk.from', 'details.note': 'success' });
                const splits = (await c().placement(ns)).chunks.length;
                return moves >= 4 && splits >= 8;
            }, { timeoutMs: 90000, intervalMs: 500 });
        } finally {
            stop = true;
            await Promise.all(clients);
            await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'off', stopped: true } });
            await settings.updateOne({ _id: 'chunksize' }, { $set: { value: 128 } });
        }
        assert.equal(failures, 0, 'no insert failed');
        // Wait out a round still running, so the check sees a settled placement.
        await waitFor('the balancer round to end', async () => !(await admin({ balancerStatus: 1 })).inBalancerRound,
            { timeoutMs: 60000, intervalMs: 100 });
        for (const router of [r0, r1]) {
            const coll = router.db(dbName).collection('c');
            const ids = await coll.find({}).project({ _id: 1 }).toArray();
            assert.equal(ids.length, acked.size, 'every acknowledged insert, no more');
            assert.equal(new Set(ids.map((d) => d._id)).size, ids.length, 'no duplicates');
            assert.ok(ids.every((d) => acked.has(d._id)));
            assert.equal(await coll.countDocuments({}), acked.size);
        }
        await c().checkConsistency(ns, acked.size);
    });
}, { shards: 2, routers: 2 });
