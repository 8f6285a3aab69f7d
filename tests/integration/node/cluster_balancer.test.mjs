// The balancer (issue 13, first part): a populated collection sharded on a 2-shard cluster is split
// and spread by owned bytes to within 10 % without any command, while clients insert through
// the router; every acknowledged insert is then present exactly once, the counts are exact and
// sh.status()'s source (config.chunks) agrees with where the documents are. A small chunk size
// (config.settings {_id: "chunksize", value: 1} MB) and short rounds make it quick.
import assert from 'node:assert/strict';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster, waitFor } from './cluster_harness.mjs';

describeWithCluster('the balancer', (ctx) => {
    const test = ctx.test;
    const c = () => ctx.cluster;
    const admin = async (cmd) => (await c().router()).db('admin').command(cmd);

    /** Owned bytes of db.c per shard, read on each shard directly (collStats counts owned only). */
    async function ownedBytes(dbName, shards) {
        const out = {};
        for (const s of shards) {
            try {
                const r = await (await c().shardByName(s)).db(dbName).command({ collStats: 'c' });
                out[s] = Number(r.size);
            } catch (err) {
                if (err.code !== 26) throw err;
                out[s] = 0;
            }
        }
        return out;
    }

    test('a populated collection is split and balanced by bytes to 1.10 under inserts; balancerStatus is real', async () => {
        const settings = (await c().router()).db('config').collection('settings');
        await settings.updateOne({ _id: 'chunksize' }, { $set: { value: 1 } }, { upsert: true });
        await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'off', stopped: true, roundIntervalMillis: 200 } }, { upsert: true });
        const dbName = uniqueDbName('bal');
        const ns = `${dbName}.c`;
        const coll = (await c().router()).db(dbName).collection('c');
        const pad = 'p'.repeat(380);
        const n = 16000; // ≈ 6.5 MB
        for (let i = 0; i < n; i += 2000) {
            await coll.insertMany(Array.from({ length: 2000 }, (_, k) => ({ _id: i + k, pad })));
        }
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { _id: 1 } })).ok, 1);
        const shards = (await (await c().router()).db('config').collection('shards').find().toArray()).map((s) => s._id);

        // Not balanced yet, and said so (the balancer is not running: this is what it would do).
        const before = await admin({ balancerCollectionStatus: ns });
        assert.equal(before.balancerCompliant, false, JSON.stringify(before));
        assert.equal(before.firstComplianceViolation, 'chunksImbalance');
        assert.equal(before.chunkSize, 1);

        // Inserts through the router while the balancer splits and moves.
        await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'full', stopped: false } });
        let stop = false;
        const acked = [];
        const inserter = (async () => {
            for (let i = 0; !stop; i++) {
                const _id = n + i;
                await coll.insertOne({ _id, pad: 'q' });
                acked.push(_id);
            }
        })();
        try {
            await waitFor('the collection to be balanced by owned bytes', async () => {
                const bytes = Object.values(await ownedBytes(dbName, shards));
                const max = Math.max(...bytes);
                const min = Math.max(1, Math.min(...bytes));
                return max / min <= 1.10;
            }, { timeoutMs: 90000, intervalMs: 500 });
        } finally {
            stop = true;
            await inserter;
        }
        const { chunks } = await c().placement(ns);
        assert.ok(chunks.length >= 6, `split into ${chunks.length} chunks`);
        assert.ok(new Set(chunks.map((ch) => ch.shard)).size === 2, 'chunks on both shards');
        const compliant = await admin({ balancerCollectionStatus: ns });
        assert.equal(compliant.balancerCompliant, true, JSON.stringify(compliant));
        const status = await admin({ balancerStatus: 1 });
        assert.equal(status.mode, 'full');
        assert.ok(Number(status.numBalancerRounds) > 0, JSON.stringify(status));
        const changelog = await (await c().router()).db('config').collection('changelog')
            .find({ ns, what: 'moveChunk.from', 'details.note': 'success' }).toArray();
        assert.ok(changelog.length >= 1, 'the balancer moved ranges');

        await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'off', stopped: true } });
        assert.equal((await admin({ balancerStatus: 1 })).mode, 'off');
        // Every acknowledged insert exactly once, counts exact, placement as config.chunks says.
        const ids = (await coll.find({ _id: { $gte: n } }).project({ _id: 1 }).toArray()).map((d) => d._id).sort((a, b) => a - b);
        assert.deepEqual(ids, [...acked].sort((a, b) => a - b));
        assert.equal(await coll.estimatedDocumentCount(), n + acked.length);
        await c().checkConsistency(ns, n + acked.length);
        await settings.updateOne({ _id: 'chunksize' }, { $set: { value: 128 } });
    });

    // The seed's jumbo case: {status: 1} with five values, 65 % "delivered". The balancer splits
    // what it can (one chunk per value), flags the one-value chunk jumbo, and
    // balancerCollectionStatus names it as the reason instead of calling the collection compliant.
    test('a one-value range is flagged jumbo and named by balancerCollectionStatus', async () => {
        const settings = (await c().router()).db('config').collection('settings');
        await settings.updateOne({ _id: 'chunksize' }, { $set: { value: 1 } }, { upsert: true });
        const dbName = uniqueDbName('jumbo');
        const ns = `${dbName}.orders`;
        const coll = (await c().router()).db(dbName).collection('orders');
        const statuses = ['pending', 'paid', 'shipped', 'returned'];
        const pad = 'p'.repeat(380);
        const docs = Array.from({ length: 10000 }, (_, i) => ({
            _id: i,
            status: i % 100 < 65 ? 'delivered' : statuses[i % 4],
            pad,
        }));
        for (let i = 0; i < docs.length; i += 2000) await coll.insertMany(docs.slice(i, i + 2000));
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { status: 1 } })).ok, 1);
        await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'full', stopped: false, roundIntervalMillis: 200 } }, { upsert: true });
        let status;
        try {
            await waitFor('the balancer to settle on the jumbo chunk', async () => {
                status = await admin({ balancerCollectionStatus: ns });
                return status.firstComplianceViolation === 'jumboChunks';
            }, { timeoutMs: 90000, intervalMs: 500 });
        } finally {
            await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'off', stopped: true } });
            await settings.updateOne({ _id: 'chunksize' }, { $set: { value: 128 } });
        }
        assert.equal(status.balancerCompliant, false);
        // The range holding only "delivered" (from MinKey or "delivered" to the next value) is
        // named, with its exact share (65 % of the documents, all of one size). Other one-value
        // ranges may be named too while the balancer still works around them.
        const holdsDelivered = (ch) => (typeof ch.min.status !== 'string' || ch.min.status <= 'delivered') &&
            typeof ch.max.status === 'string' && ch.max.status > 'delivered';
        const delivered = status.details.jumboChunks.find(holdsDelivered);
        assert.ok(delivered, JSON.stringify(status));
        assert.ok(delivered.shareOfCollection > 0.6 && delivered.shareOfCollection < 0.7, JSON.stringify(delivered));
        const { chunks } = await c().placement(ns);
        // Flagged: the "delivered" range (other one-value ranges may be flagged too: true, and
        // harmless while small).
        const flagged = chunks.filter((ch) => ch.jumbo);
        assert.ok(flagged.some(holdsDelivered), JSON.stringify(flagged));
        assert.match(delivered.fix, /refineCollectionShardKey/);
        await c().checkConsistency(ns, 10000);

        // The fix it names: refine the key with a high-cardinality suffix. Refused without an
        // index on the new key, or when the new key does not extend the old one.
        await assert.rejects(admin({ refineCollectionShardKey: ns, key: { status: 1, _id: 1 } }),
            (e) => e.code === 72 && /createIndex/.test(e.message), 'no index on the new key');
        await coll.createIndex({ status: 1, _id: 1 });
        await assert.rejects(admin({ refineCollectionShardKey: ns, key: { _id: 1, status: 1 } }),
            (e) => e.code === 72, 'does not extend the current key');
        await assert.rejects(admin({ refineCollectionShardKey: ns, key: { status: 1, _id: 1 }, bogus: 1 }),
            (e) => e.code === 40415, 'unknown field');
        const epochBefore = (await c().placement(ns)).coll.lastmodEpoch;
        assert.equal((await admin({ refineCollectionShardKey: ns, key: { status: 1, _id: 1 } })).ok, 1);
        const refined = await c().placement(ns);
        assert.deepEqual(refined.coll.key, { status: 1, _id: 1 });
        assert.notEqual(String(refined.coll.lastmodEpoch), String(epochBefore), 'a new generation');
        assert.ok(refined.chunks.every((ch) => !ch.jumbo), 'jumbo flags cleared');
        assert.ok(refined.chunks.every((ch) => '_id' in ch.min && '_id' in ch.max), 'bounds extended');
        // Nothing moved: the router (refreshed) and the shards agree, documents stay findable.
        await c().checkConsistency(ns, 10000);
        assert.equal(await coll.countDocuments({ status: 'delivered' }), 6500);
        await coll.insertOne({ _id: 'after-refine', status: 'delivered', pad });

        // Now the balancer splits "delivered" by _id and spreads the collection.
        await settings.updateOne({ _id: 'chunksize' }, { $set: { value: 1 } }, { upsert: true });
        await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'full', stopped: false } });
        try {
            await waitFor('the refined collection to be balanced', async () => {
                status = await admin({ balancerCollectionStatus: ns });
                return status.balancerCompliant === true;
            }, { timeoutMs: 90000, intervalMs: 500 });
        } finally {
            await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'off', stopped: true } });
            await settings.updateOne({ _id: 'chunksize' }, { $set: { value: 128 } });
        }
        assert.ok(status.details.maxOverMin <= 1.10, JSON.stringify(status));
        const spread = await c().placement(ns);
        const deliveredShards = new Set(spread.chunks
            .filter((ch) => ch.min.status === 'delivered' && ch.max.status === 'delivered')
            .map((ch) => ch.shard));
        assert.equal(deliveredShards.size, 2, `"delivered" on both shards: ${JSON.stringify(spread.chunks)}`);
        await c().checkConsistency(ns, 10001);
    });

    // A suffix other than _id rewrites each shard's copy (clustered by the new key) before the
    // commit; the refined key is then split and moved on like any other.
    test('refineCollectionShardKey with another suffix field; clearJumboFlag; configureCollectionBalancing', async () => {
        const dbName = uniqueDbName('refine');
        const ns = `${dbName}.c`;
        const coll = (await c().router()).db(dbName).collection('c');
        await coll.insertMany(Array.from({ length: 3000 }, (_, i) => ({ _id: i, x: i % 3, y: 3000 - i })));
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { x: 1 } })).ok, 1);
        assert.equal((await admin({ split: ns, middle: { x: 1 } })).ok, 1);
        await coll.createIndex({ x: 1, y: 1 });
        assert.equal((await admin({ refineCollectionShardKey: ns, key: { x: 1, y: 1 } })).ok, 1);
        await c().checkConsistency(ns, 3000);
        // The refined key splits inside one old value and moves half of it.
        assert.equal((await admin({ split: ns, middle: { x: 1, y: 1500 } })).ok, 1);
        const shards = (await admin({ listShards: 1 })).shards.map((sh) => sh._id);
        const { chunks } = await c().placement(ns);
        const upper = chunks.find((ch) => ch.min.x === 1 && ch.min.y === 1500);
        const to = shards.find((s) => s !== upper.shard);
        assert.equal((await admin({ moveRange: ns, min: upper.min, max: upper.max, toShard: to, _waitForDelete: true })).ok, 1);
        assert.equal(await coll.countDocuments({ x: 1, y: { $gte: 1500 } }), 500);
        await c().checkConsistency(ns, 3000);

        // clearJumboFlag: by a key value or by bounds; an unknown chunk is refused.
        const cfg = (await c().router()).db('config');
        const refinedColl = await cfg.collection('collections').findOne({ _id: ns });
        const upperChunk = { uuid: refinedColl.uuid, 'min.x': 1, 'min.y': 1500 };
        assert.equal((await cfg.collection('chunks').updateOne(upperChunk, { $set: { jumbo: true } })).modifiedCount, 1);
        assert.equal((await admin({ clearJumboFlag: ns, find: { x: 1, y: 2000 } })).ok, 1);
        assert.ok(!(await cfg.collection('chunks').findOne(upperChunk)).jumbo);
        await cfg.collection('chunks').updateOne(upperChunk, { $set: { jumbo: true } });
        assert.equal((await admin({ clearJumboFlag: ns, bounds: [upper.min, upper.max] })).ok, 1);
        assert.ok(!(await cfg.collection('chunks').findOne(upperChunk)).jumbo);
        await assert.rejects(admin({ clearJumboFlag: ns, bounds: [{ x: 7, y: 0 }, { x: 8, y: 0 }] }), (e) => e.code === 2);
        await assert.rejects(admin({ clearJumboFlag: ns }), (e) => e.code === 2);

        // configureCollectionBalancing: the collection's own chunk size; what Tessera does not
        // do is refused.
        assert.equal((await admin({ configureCollectionBalancing: ns, chunkSize: 7 })).ok, 1);
        assert.equal((await admin({ balancerCollectionStatus: ns })).chunkSize, 7);
        assert.equal((await cfg.collection('collections').findOne({ _id: ns })).maxChunkSizeBytes, 7 * 1024 * 1024);
        assert.equal((await admin({ configureCollectionBalancing: ns, enableAutoMerger: false })).ok, 1);
        assert.equal((await cfg.collection('collections').findOne({ _id: ns })).enableAutoMerge, false);
        assert.equal((await admin({ configureCollectionBalancing: ns, enableAutoMerger: true })).ok, 1);
        assert.equal((await cfg.collection('collections').findOne({ _id: ns })).enableAutoMerge, undefined);
        await assert.rejects(admin({ configureCollectionBalancing: ns, enableAutoMerger: 1 }), (e) => e.code === 14);
        await assert.rejects(admin({ configureCollectionBalancing: ns, defragmentCollection: true }), (e) => e.code === 20);
        await assert.rejects(admin({ configureCollectionBalancing: ns, chunkSize: -1 }), (e) => e.code === 2);
        assert.equal((await admin({ configureCollectionBalancing: ns, chunkSize: 0 })).ok, 1);
        assert.equal((await admin({ balancerCollectionStatus: ns })).chunkSize, 128);
    });

    // The auto-merger (config.settings {_id: "automerge", intervalSecs} short here; MongoDB's
    // hourly default otherwise): after most documents are deleted, neighbouring chunks on one
    // shard become one, sh.disableAutoMerger keeps a collection's chunks, every round that acted
    // is in config.actionlog (what sh.status() prints) and the data is untouched.
    test('the auto-merger merges small neighbouring chunks; sh.disableAutoMerger and actionlog', async () => {
        const r = await c().router();
        const settings = r.db('config').collection('settings');
        const dbName = uniqueDbName('merge');
        const ns = `${dbName}.c`;
        const other = `${dbName}.kept`;
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        for (const name of [ns, other]) {
            assert.equal((await admin({ shardCollection: name, key: { x: 1 } })).ok, 1);
            await r.db(dbName).collection(name.split('.')[1]).insertMany(Array.from({ length: 1000 }, (_, i) => ({ _id: i, x: i })));
            for (let x = 100; x < 1000; x += 100) assert.equal((await admin({ split: name, middle: { x } })).ok, 1);
        }
        // One chunk of each collection moved away: the merged runs are the ones on each side.
        const shards = (await admin({ listShards: 1 })).shards.map((sh) => sh._id);
        const { chunks } = await c().placement(ns);
        const home = chunks[0].shard;
        const away = shards.find((s) => s !== home);
        await admin({ moveRange: ns, min: { x: 500 }, max: { x: 600 }, toShard: away, _waitForDelete: true });
        assert.equal((await admin({ configureCollectionBalancing: other, enableAutoMerger: false })).ok, 1);
        await r.db(dbName).collection('c').deleteMany({ x: { $gte: 300 } });
        const roundsBefore = await r.db('config').collection('actionlog').countDocuments({ what: 'balancer.round' });
        try {
            await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'full', stopped: false, roundIntervalMillis: 200 } }, { upsert: true });
            await settings.updateOne({ _id: 'automerge' }, { $set: { enabled: true, intervalSecs: 0 } }, { upsert: true });
            await waitFor('the chunks of db.c to be merged', async () => (await c().placement(ns)).chunks.length === 3, { timeoutMs: 60000, intervalMs: 300 });
            const merged = (await c().placement(ns)).chunks.map((ch) => [ch.min.x, ch.max.x, ch.shard]);
            assert.deepEqual(merged.map((m) => m[2]), [home, away, home], JSON.stringify(merged));
            assert.deepEqual(merged.slice(1).map((m) => m[0]), [500, 600]);
            // Several rounds later the collection with the merger off kept its ten chunks.
            const status0 = await admin({ balancerStatus: 1 });
            await waitFor('three more balancer rounds', async () =>
                (await admin({ balancerStatus: 1 })).numBalancerRounds >= status0.numBalancerRounds + 3, { timeoutMs: 30000, intervalMs: 200 });
            assert.equal((await c().placement(other)).chunks.length, 10);
            const rounds = await r.db('config').collection('actionlog').find({ what: 'balancer.round' }).sort({ time: -1 }).toArray();
            assert.ok(rounds.length > roundsBefore, 'rounds recorded in config.actionlog');
            assert.ok(rounds.some((d) => d.details.merges > 0 && d.details.errorOccured === false), JSON.stringify(rounds.slice(0, 3)));
            await c().checkConsistency(ns, 300);
            await c().checkConsistency(other, 1000);
            // Off cluster-wide (sh.stopAutoMerger): a new split stays. A round that read the
            // settings before the change may still merge; two rounds later one has begun after it.
            await settings.updateOne({ _id: 'automerge' }, { $set: { enabled: false } });
            const status2 = await admin({ balancerStatus: 1 });
            await waitFor('a balancer round that began after sh.stopAutoMerger', async () =>
                (await admin({ balancerStatus: 1 })).numBalancerRounds >= status2.numBalancerRounds + 2, { timeoutMs: 30000, intervalMs: 200 });
            assert.equal((await admin({ split: ns, middle: { x: 50 } })).ok, 1);
            const status1 = await admin({ balancerStatus: 1 });
            await waitFor('three more balancer rounds', async () =>
                (await admin({ balancerStatus: 1 })).numBalancerRounds >= status1.numBalancerRounds + 3, { timeoutMs: 30000, intervalMs: 200 });
            assert.equal((await c().placement(ns)).chunks.length, 4);
        } finally {
            await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'off', stopped: true } });
            await settings.deleteOne({ _id: 'automerge' });
        }
    });

    // A third shard is added and fills; then it is drained — its chunks and the primary of a
    // database on it (with an unsharded collection) move off without a command — and removed.
    // (A shard once answered a reload that failed with its durable copy of the placement, i.e.
    // the pre-commit one, so a donor could believe it still owned a range: direct reads there
    // showed documents config.chunks puts elsewhere. This test found it.)
    test('a new shard fills; draining it moves chunks and databases off; then it is removed', async () => {
        const settings = (await c().router()).db('config').collection('settings');
        await settings.updateOne({ _id: 'chunksize' }, { $set: { value: 1 } }, { upsert: true });
        await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'full', stopped: false, roundIntervalMillis: 200 } }, { upsert: true });
        try {
            const extra = await c().startExtraShard();
            const added = await admin({ addShard: `127.0.0.1:${extra.port}` });
            const third = added.shardAdded;
            const dbName = uniqueDbName('drain');
            const ns = `${dbName}.c`;
            const coll = (await c().router()).db(dbName).collection('c');
            const pad = 'p'.repeat(380);
            for (let i = 0; i < 12000; i += 2000) {
                await coll.insertMany(Array.from({ length: 2000 }, (_, k) => ({ _id: i + k, pad })));
            }
            assert.equal((await admin({ enableSharding: dbName })).ok, 1);
            assert.equal((await admin({ shardCollection: ns, key: { _id: 1 } })).ok, 1);
            await waitFor('the new shard to get its share', async () => {
                const { chunks } = await c().placement(ns);
                return chunks.filter((ch) => ch.shard === third).length >= 2 &&
                    (await admin({ balancerCollectionStatus: ns })).balancerCompliant;
            }, { timeoutMs: 90000, intervalMs: 500 });
            // A database whose primary is the third shard, with an unsharded collection.
            const otherDb = uniqueDbName('drainp');
            assert.equal((await admin({ enableSharding: otherDb, primaryShard: third })).ok, 1);
            const unsharded = (await c().router()).db(otherDb).collection('u');
            await unsharded.insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i })));

            const started = await admin({ removeShard: third });
            assert.equal(started.state, 'started', JSON.stringify(started));
            assert.ok(started.dbsToMove.includes(otherDb));
            await assert.rejects(admin({ commitShardRemoval: third }), (e) => e.code === 117);
            await waitFor('the draining shard to be empty', async () => {
                const st = await admin({ shardDrainingStatus: third });
                return st.remaining.chunks === 0 && st.remaining.dbs === 0;
            }, { timeoutMs: 90000, intervalMs: 500 });
            const done = await admin({ removeShard: third });
            assert.equal(done.state, 'completed', JSON.stringify(done));
            const shards = (await admin({ listShards: 1 })).shards.map((sh) => sh._id);
            assert.ok(!shards.includes(third), JSON.stringify(shards));
            assert.notEqual((await (await c().router()).db('config').collection('databases').findOne({ _id: otherDb })).primary, third);
            assert.equal(await unsharded.countDocuments({}), 50);
            await c().checkConsistency(ns, 12000);
        } finally {
            await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'off', stopped: true } });
            await settings.updateOne({ _id: 'chunksize' }, { $set: { value: 128 } });
        }
    });

    // Zones: a key range assigned to a zone of one shard moves there (chunks split at its bounds)
    // and stays; zone commands refuse what would break them with MongoDB's codes.
    test('a zone range moves onto its zone and stays; zone commands refuse what would break them', async () => {
        const settings = (await c().router()).db('config').collection('settings');
        const shards = (await admin({ listShards: 1 })).shards.map((sh) => sh._id).sort();
        const dbName = uniqueDbName('zone');
        const ns = `${dbName}.c`;
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        const primary = (await (await c().router()).db('config').collection('databases').findOne({ _id: dbName })).primary;
        const other = shards.find((s) => s !== primary);
        assert.equal((await admin({ shardCollection: ns, key: { x: 1 } })).ok, 1);
        const coll = (await c().router()).db(dbName).collection('c');
        await coll.insertMany(Array.from({ length: 3000 }, (_, i) => ({ _id: i, x: i })));
        await assert.rejects(admin({ updateZoneKeyRange: ns, min: { x: 1000 }, max: { x: 2000 }, zone: 'EU' }),
            (e) => e.code === 177, 'an unknown zone');
        assert.equal((await admin({ addShardToZone: other, zone: 'EU' })).ok, 1);
        assert.equal((await admin({ updateZoneKeyRange: ns, min: { x: 1000 }, max: { x: 2000 }, zone: 'EU' })).ok, 1);
        await assert.rejects(admin({ updateZoneKeyRange: ns, min: { x: 1500 }, max: { x: 2500 }, zone: 'EU' }),
            (e) => e.code === 178, 'an overlapping range');
        await assert.rejects(admin({ removeShardFromZone: other, zone: 'EU' }), (e) => e.code === 163,
            'the last shard of a zone with ranges');
        await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'full', stopped: false, roundIntervalMillis: 200 } }, { upsert: true });
        try {
            await waitFor('the zone range to be on its zone', async () => {
                const { chunks } = await c().placement(ns);
                const inZone = chunks.filter((ch) => ch.min.x >= 1000 && typeof ch.max.x === 'number' && ch.max.x <= 2000);
                return inZone.length > 0 && inZone.every((ch) => ch.shard === other) &&
                    chunks.some((ch) => ch.min.x === 1000) && chunks.some((ch) => ch.max.x === 2000);
            }, { timeoutMs: 60000, intervalMs: 300 });
        } finally {
            await settings.updateOne({ _id: 'balancer' }, { $set: { mode: 'off', stopped: true } });
        }
        const onOther = await (await c().shardByName(other)).db(dbName).collection('c').countDocuments({ x: { $gte: 1000, $lt: 2000 } });
        assert.equal(onOther, 1000);
        assert.equal((await admin({ updateZoneKeyRange: ns, min: { x: 1000 }, max: { x: 2000 }, zone: null })).ok, 1);
        assert.equal((await admin({ removeShardFromZone: other, zone: 'EU' })).ok, 1);
        await c().checkConsistency(ns, 3000);
    });
}, { shards: 2, routers: 1 });
