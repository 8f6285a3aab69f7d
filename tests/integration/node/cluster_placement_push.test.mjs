// Placement changes pushed to routers (issue 42, point 4), with the Node driver against
// `tessera up --shards 2 --routers 2`: after a migration, split, merge, movePrimary or drop made
// through one router, the config service tells every router in config.mongos, and the other
// router's cached placement is current before its next operation — no stale error on the way
// (its catalog cache counts the pushed refresh; getShardVersion, which answers from the cache,
// shows the new version at once). A router that misses the push (its failpoint
// routerIgnorePlacementAnnouncements) is still corrected by the shard's stale error, as before.
import assert from 'node:assert/strict';
import { MaxKey, MinKey } from 'mongodb';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster, waitFor } from './cluster_harness.mjs';

describeWithCluster(
    'placement changes pushed to routers (2 shards, 2 routers)',
    (ctx) => {
        const test = ctx.test;
        const dbName = uniqueDbName('push');
        const ns = `${dbName}.c`;
        const router = (i) => ctx.cluster.router(i);
        const admin = async (i, cmd) => (await router(i)).db('admin').command(cmd);
        const cacheStats = async (i) => (await admin(i, { serverStatus: 1 })).shardingStatistics.catalogCache;
        const cachedVersion = async (i, coll = ns) => (await admin(i, { getShardVersion: coll })).version.toString();
        const configVersion = async (coll = ns) => {
            const c = (await router(0)).db('config');
            const { uuid } = await c.collection('collections').findOne({ _id: coll });
            const [top] = await c.collection('chunks').find({ uuid }).sort({ lastmod: -1 }).limit(1).toArray();
            return top.lastmod.toString();
        };
        let shards = [];

        // Router 1 gets the push of one placement change made through router 0 by `change`: its
        // pushed-refresh count grows and its cached version becomes the config's, with no
        // operation through it; then a read through it finds `expect` documents, needing no
        // refresh of its own.
        async function pushedToOtherRouter(what, change, expectDocs) {
            const before = await cacheStats(1);
            await change();
            await waitFor(`router 1 refreshed after the ${what} was pushed`, async () =>
                (await cacheStats(1)).countAnnouncedRefreshes > before.countAnnouncedRefreshes, { timeoutMs: 10000 });
            await waitFor(`router 1 caches the version the ${what} made`, async () =>
                (await cachedVersion(1)) === (await configVersion()), { timeoutMs: 10000 });
            const settled = await cacheStats(1);
            const docs = await (await router(1)).db(dbName).collection('c').find({}).toArray();
            assert.equal(docs.length, expectDocs);
            const after = await cacheStats(1);
            assert.equal(after.countIncrementalRefreshesStarted, settled.countIncrementalRefreshesStarted,
                `router 1 refreshed again after the ${what}: it learnt from a stale error, not from the push`);
            assert.equal(after.countFullRefreshesStarted, settled.countFullRefreshesStarted);
            assert.equal(after.countStaleChunkDeltasApplied, settled.countStaleChunkDeltasApplied);
        }

        test('setup: a collection on one shard, cached by both routers', async () => {
            shards = (await admin(0, { listShards: 1 })).shards.map((s) => s._id).sort();
            await admin(0, { enableSharding: dbName, primaryShard: shards[0] });
            await admin(0, { shardCollection: ns, key: { k: 1 } });
            const docs = [];
            for (let k = 0; k < 100; k++) docs.push({ k });
            await (await router(0)).db(dbName).collection('c').insertMany(docs);
            for (const i of [0, 1]) assert.equal(await (await router(i)).db(dbName).collection('c').countDocuments(), 100);
        });

        test('a migration, a split and a merge through router 0 reach router 1 before its next read', async () => {
            await pushedToOtherRouter('split', () => admin(0, { split: ns, middle: { k: 50 } }), 100);
            await pushedToOtherRouter('migration', () => admin(0, { moveChunk: ns, find: { k: 50 }, to: shards[1], _waitForDelete: true }), 100);
            await pushedToOtherRouter('migration back', () => admin(0, { moveChunk: ns, find: { k: 50 }, to: shards[0], _waitForDelete: true }), 100);
            await pushedToOtherRouter('merge', () => admin(0, { mergeChunks: ns, bounds: [{ k: new MinKey() }, { k: new MaxKey() }] }), 100);
        });

        test('a router that misses the push is still corrected by the shard', async () => {
            await admin(1, { configureFailPoint: 'routerIgnorePlacementAnnouncements', mode: 'alwaysOn' });
            try {
                const old = await cachedVersion(1);
                await admin(0, { split: ns, middle: { k: 25 } });
                await admin(0, { moveChunk: ns, find: { k: 25 }, to: shards[1], _waitForDelete: true });
                assert.equal(await cachedVersion(1), old, 'router 1 heard of the moves although it ignores pushes');
                const before = await cacheStats(1);
                const moved = await (await router(1)).db(dbName).collection('c').find({ k: { $gte: 25, $lt: 50 } }).toArray();
                assert.equal(moved.length, 25);
                const after = await cacheStats(1);
                assert.ok(after.countIncrementalRefreshesStarted + after.countFullRefreshesStarted + after.countStaleChunkDeltasApplied >
                    before.countIncrementalRefreshesStarted + before.countFullRefreshesStarted + before.countStaleChunkDeltasApplied,
                    'the stale router read the moved range without learning the move');
                assert.equal(await cachedVersion(1), await configVersion());
            } finally {
                await admin(1, { configureFailPoint: 'routerIgnorePlacementAnnouncements', mode: 'off' });
            }
        });

        test('movePrimary and a drop through router 0 reach router 1', async () => {
            const other = `${dbName}.unsharded`;
            await (await router(0)).db(dbName).collection('unsharded').insertOne({ _id: 1 });
            assert.equal(await (await router(1)).db(dbName).collection('unsharded').countDocuments(), 1);
            const dbVersion = async (i) => (await (await router(i)).db('config').collection('databases').findOne({ _id: dbName })).version;
            const before = await cacheStats(1);
            await admin(0, { movePrimary: dbName, to: shards[1] });
            await waitFor('router 1 refreshed the database after movePrimary', async () =>
                (await cacheStats(1)).countAnnouncedRefreshes > before.countAnnouncedRefreshes, { timeoutMs: 10000 });
            assert.ok(await dbVersion(1));
            const settled = await cacheStats(1);
            assert.equal(await (await router(1)).db(dbName).collection('unsharded').countDocuments(), 1);
            assert.equal((await cacheStats(1)).countDatabaseRefreshesStarted, settled.countDatabaseRefreshesStarted,
                'router 1 learnt of movePrimary from a stale error, not from the push');

            // Dropped through router 0, recreated unsharded: router 1 routes to the primary at once.
            const beforeDrop = await cacheStats(1);
            await (await router(0)).db(dbName).collection('c').drop();
            await waitFor('router 1 refreshed after the drop', async () =>
                (await cacheStats(1)).countAnnouncedRefreshes > beforeDrop.countAnnouncedRefreshes, { timeoutMs: 10000 });
            await (await router(0)).db(dbName).collection('c').insertOne({ k: 'again' });
            const again = await (await router(1)).db(dbName).collection('c').find({}).toArray();
            assert.deepEqual(again.map((d) => d.k), ['again']);
            assert.equal(other, `${dbName}.unsharded`);
        });
    },
    { shards: 2, routers: 2 },
);
