// The router's forwarding fast path (src/router/README.md "Forwarding"): targeted single-batch
// finds and single-statement writes go to their shard from the router's io thread, and a stale
// router catches up from the chunks the shard's StaleConfig carries (src/cluster/chunk_delta.h),
// without asking the config service. Checked through a second router that another one made
// stale — it ignores the config service's pushed placement changes (failpoint
// routerIgnorePlacementAnnouncements), as a router that missed the push —, with the data verified
// on the shards directly.
import assert from 'node:assert/strict';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster } from './cluster_harness.mjs';

describeWithCluster('router forwarding and stale-version catch-up from the shard (2 routers)', (ctx) => {
    const test = ctx.test;
    const routerA = () => ctx.cluster.router(0);
    const routerB = () => ctx.cluster.router(1);
    const adminA = async (cmd) => (await routerA()).db('admin').command(cmd);
    const catalogStats = async () =>
        (await (await routerB()).db('admin').command({ serverStatus: 1 })).shardingStatistics.catalogCache;
    const shardNames = async () =>
        (await (await routerA()).db('config').collection('shards').find().sort({ _id: 1 }).toArray()).map((s) => s._id);

    async function setUp(name) {
        await (await routerB()).db('admin').command({ configureFailPoint: 'routerIgnorePlacementAnnouncements', mode: 'alwaysOn' });
        const dbName = uniqueDbName(name);
        const ns = `${dbName}.c`;
        const shards = await shardNames();
        assert.equal((await adminA({ enableSharding: dbName, primaryShard: shards[0] })).ok, 1);
        assert.equal((await adminA({ shardCollection: ns, key: { k: 1 } })).ok, 1);
        const docs = Array.from({ length: 200 }, (_, i) => ({ _id: i, k: i, v: 0 }));
        await (await routerA()).db(dbName).collection('c').insertMany(docs);
        assert.equal((await adminA({ split: ns, middle: { k: 100 } })).ok, 1);
        const b = (await routerB()).db(dbName).collection('c');
        assert.deepEqual(await b.findOne({ k: 150 }), { _id: 150, k: 150, v: 0 });  // B caches
        return { dbName, ns, shards, b };
    }

    test('a stale router answers point reads and single writes from the new owner, no config refresh', async () => {
        const { dbName, ns, shards, b } = await setUp('fwd');
        const mv = await adminA({ moveRange: ns, min: { k: 100 }, toShard: shards[1] });
        assert.equal(mv.ok, 1, JSON.stringify(mv));
        const before = await catalogStats();

        assert.deepEqual(await b.findOne({ k: 150 }), { _id: 150, k: 150, v: 0 }, 'stale B reads the moved key');
        assert.deepEqual(await b.findOne({ k: 50 }), { _id: 50, k: 50, v: 0 }, 'and one that stayed');
        assert.equal((await b.insertOne({ _id: 'n1', k: 160, v: 1 })).acknowledged, true);
        const up = await b.updateOne({ k: 151 }, { $inc: { v: 1 } });
        assert.equal(up.matchedCount, 1);
        assert.equal(up.modifiedCount, 1);
        assert.equal((await b.deleteOne({ k: 152 })).deletedCount, 1);

        const after = await catalogStats();
        assert.ok(after.countStaleChunkDeltasApplied > before.countStaleChunkDeltasApplied,
            `B applied the shard's delta: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`);
        assert.equal(after.countFullRefreshesStarted, before.countFullRefreshesStarted, 'no full refresh');
        assert.equal(after.countIncrementalRefreshesStarted, before.countIncrementalRefreshesStarted,
            'no refresh from the config service');

        // On the shards directly: the writes landed on the new owner, once.
        const onNew = (await ctx.cluster.shardByName(shards[1])).db(dbName).collection('c');
        assert.deepEqual(await onNew.find({ _id: { $in: ['n1', 151, 152] } }).sort({ k: 1 }).toArray(),
            [{ _id: 151, k: 151, v: 1 }, { _id: 'n1', k: 160, v: 1 }]);
        const onOld = (await ctx.cluster.shardByName(shards[0])).db(dbName).collection('c');
        assert.equal(await onOld.countDocuments({ k: { $gte: 100 } }), 0, 'donor shows nothing of the range');
        await ctx.cluster.checkConsistency(ns, 200);
    });

    test('a retryable single write through a stale router is applied once, and B agrees with A', async () => {
        const { ns, shards, b } = await setUp('fwdretry');
        assert.equal((await adminA({ moveRange: ns, min: { k: 100 }, toShard: shards[1] })).ok, 1);
        // The drivers' default: retryWrites, so the insert carries lsid + txnNumber.
        await b.insertOne({ _id: 'r1', k: 170, v: 7 });
        await b.updateOne({ k: 171 }, { $inc: { v: 5 } });
        assert.equal(await b.countDocuments({ _id: 'r1' }), 1);
        assert.equal((await b.findOne({ k: 171 })).v, 5);
        // Many point operations in a row through B, moving the range back in the middle.
        const a = (await routerA()).db(b.dbName).collection('c');
        for (let i = 0; i < 40; i++) {
            if (i === 20) assert.equal((await adminA({ moveRange: ns, min: { k: 100 }, toShard: shards[0] })).ok, 1);
            const k = 100 + i;
            await b.updateOne({ k }, { $inc: { v: 1 } });
            assert.equal((await b.findOne({ k })).v, 1, `k ${k} through B`);
        }
        assert.deepEqual(await b.find({ k: { $gte: 100, $lt: 140 } }).sort({ k: 1 }).toArray(),
            await a.find({ k: { $gte: 100, $lt: 140 } }).sort({ k: 1 }).toArray(), 'A and B agree');
        await ctx.cluster.checkConsistency(ns, 201);
    });

    test('forwarded errors keep MongoDB\'s shape: duplicate key, bad filter, missing collection', async () => {
        const { dbName, b } = await setUp('fwderr');
        await assert.rejects(b.insertOne({ _id: 5, k: 5 }), (err) => err.code === 11000 && /dup key/.test(err.message));
        await assert.rejects(b.findOne({ k: { $bogus: 1 } }), (err) => err.code === 2);
        const missing = (await routerB()).db(dbName).collection('nope');
        assert.equal(await missing.findOne({ _id: 1 }), null);
        assert.equal((await missing.insertOne({ _id: 1 })).acknowledged, true);
        assert.deepEqual(await missing.findOne({ _id: 1 }), { _id: 1 });
    });

    // Writes without the shard key run their two rounds (a find on each shard, then the write
    // where the document is) from the io thread too (src/router/README.md "Forwarding").
    test('writes without the shard key through a stale router: each applied once, on the owner', async () => {
        const { dbName, ns, shards, b } = await setUp('fwdnokey');
        await (await routerA()).db(dbName).collection('c').updateMany({}, [{ $set: { tag: { $concat: ['t', { $toString: '$k' }] } } }]);
        assert.equal((await adminA({ moveRange: ns, min: { k: 100 }, toShard: shards[1] })).ok, 1);
        // B still places k >= 100 on the first shard: its read round meets a stale version.
        let up = await b.updateOne({ tag: 't150' }, { $inc: { v: 1 } });
        assert.deepEqual([up.matchedCount, up.modifiedCount], [1, 1]);
        up = await b.updateOne({ tag: 't50' }, { $inc: { v: 2 } });
        assert.deepEqual([up.matchedCount, up.modifiedCount], [1, 1]);
        assert.equal((await b.deleteOne({ tag: 't151' })).deletedCount, 1);
        assert.equal((await b.deleteOne({ tag: 't151' })).deletedCount, 0, 'gone');
        up = await b.updateOne({ tag: 'none' }, { $inc: { v: 1 } });
        assert.deepEqual([up.matchedCount, up.modifiedCount], [0, 0]);
        // With a sort: the first in sort order over both shards.
        up = await b.updateOne({ v: 0 }, { $set: { first: true } }, { sort: { k: -1 } });
        assert.equal(up.modifiedCount, 1);
        assert.deepEqual((await b.find({ first: true }).toArray()).map((d) => d.k), [199]);
        // Raw commands, not retryable (no txnNumber), ordered and not.
        const raw = await (await routerB()).db(dbName).command({ update: 'c', updates: [{ q: { tag: 't60' }, u: { $set: { raw: 1 } } }], ordered: false });
        assert.deepEqual([raw.n, raw.nModified], [1, 1], JSON.stringify(raw));
        const bad = await (await routerB()).db(dbName).command({ update: 'c', updates: [{ q: { tag: { $bogus: 1 } }, u: { $set: { raw: 1 } } }] });
        assert.equal(bad.writeErrors?.[0]?.code, 2, JSON.stringify(bad));

        const onNew = (await ctx.cluster.shardByName(shards[1])).db(dbName).collection('c');
        const onOld = (await ctx.cluster.shardByName(shards[0])).db(dbName).collection('c');
        assert.equal((await onNew.findOne({ _id: 150 })).v, 1, 'on the new owner');
        assert.equal((await onOld.findOne({ _id: 50 })).v, 2);
        assert.equal(await onNew.countDocuments({ _id: 151 }), 0);
        assert.equal((await onOld.findOne({ _id: 60 })).raw, 1);
        await ctx.cluster.checkConsistency(ns, 199);
    });

    // Four clients on both routers take the same documents at once: a document chosen by two
    // read rounds is written by one, the other finds it changed (n 0) and runs both rounds
    // again. Every document is taken exactly once and every take reports it.
    test('concurrent writes without the shard key race for the same documents: each taken once', async () => {
        const { dbName, ns } = await setUp('fwdrace');
        const kDocs = 200;
        const takers = [];
        for (let i = 0; i < 4; i++) {
            const router = i % 2 === 0 ? await routerA() : await routerB();
            const c = router.db(dbName).collection('c');
            takers.push((async () => {
                const taken = [];
                for (;;) {
                    const up = await c.updateOne({ owner: { $exists: false } }, { $set: { owner: i } });
                    if (up.matchedCount === 0) break;
                    assert.equal(up.modifiedCount, 1);
                    taken.push(i);
                }
                return taken.length;
            })());
        }
        const counts = await Promise.all(takers);
        assert.equal(counts.reduce((a, b) => a + b, 0), kDocs, `takes per client ${counts}`);
        const c = (await routerA()).db(dbName).collection('c');
        assert.equal(await c.countDocuments({ owner: { $exists: true } }), kDocs);
        await ctx.cluster.checkConsistency(ns, kDocs);
    });
}, { shards: 2, routers: 2 });
