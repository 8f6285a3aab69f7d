// kill -9 of the config server in the middle of refineCollectionShardKey of a zoned collection
// (issue 40): the refine's coordinator (config.system.coordinators) is resumed by the restarted
// config server — undone when the crash came before the switch of config.collections to the new
// key (the new chunks were never visible), finished when it came after (old chunks deleted,
// zone ranges extended) — and the restart never runs out of memory again (the bug this follows:
// a zone range's ObjectId `_id` read as a string length, at every restart).
import assert from 'node:assert/strict';
import { MinKey } from 'mongodb';
import { uniqueDbName } from './harness.mjs';
import { describeWithManualCluster, waitFor, settle } from './cluster_harness.mjs';

const isMinKey = (v) => v instanceof MinKey || v?._bsontype === 'MinKey';

describeWithManualCluster('kill -9 of the config server during a refine of a zoned collection', (ctx) => {
    const test = ctx.test;
    const c = () => ctx.cluster;
    const admin = async (cmd) => (await c().router()).db('admin').command(cmd);
    const cfgAdmin = async (cmd) => (await c().config()).db('admin').command(cmd);
    const cfg = async () => (await c().router()).db('config');

    /** A collection {customerId: 1}, 300 orders, two zones on the two first shards. */
    async function zoned(prefix) {
        const dbName = uniqueDbName(prefix);
        const ns = `${dbName}.orders`;
        const shards = (await admin({ listShards: 1 })).shards.map((s) => s._id).sort();
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { customerId: 1 } })).ok, 1);
        await admin({ addShardToZone: shards[0], zone: `${prefix}A` });
        await admin({ addShardToZone: shards[1], zone: `${prefix}B` });
        assert.equal((await admin({ updateZoneKeyRange: ns, min: { customerId: 0 }, max: { customerId: 100 }, zone: `${prefix}A` })).ok, 1);
        assert.equal((await admin({ updateZoneKeyRange: ns, min: { customerId: 100 }, max: { customerId: 200 }, zone: `${prefix}B` })).ok, 1);
        const coll = (await c().router()).db(dbName).collection('orders');
        await coll.insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: i, customerId: i, createdAt: new Date(i * 1000) })));
        await coll.createIndex({ customerId: 1, createdAt: 1 });
        return { ns, coll };
    }

    /** Starts the refine held at `fp`, kills the config server there, restarts it. */
    async function crashDuringRefine(ns, fp) {
        const hits = c().configProc.countLog(new RegExp(`"failpoint":"${fp}"`));
        await cfgAdmin({ configureFailPoint: fp, mode: 'alwaysOn' });
        const refining = settle(admin({ refineCollectionShardKey: ns, key: { customerId: 1, createdAt: 1 } }));
        await waitFor(`the refine to hang at ${fp}`, async () =>
            c().configProc.countLog(new RegExp(`"failpoint":"${fp}"`)) > hits, { timeoutMs: 30000 });
        await c().kill9(c().configProc);
        await c().restart(c().configProc);
        const outcome = await refining;
        assert.ok(outcome.error || outcome.reply, 'the refine command returned');
        await waitFor('the refine coordinator to be resumed', async () =>
            (await (await c().config()).db('config').collection('system.coordinators').countDocuments({})) === 0,
        { timeoutMs: 45000, intervalMs: 100 });
    }

    /**
     * The balancer, restarted with the config server, moves ranges onto their zones: the shards
     * are read one by one (checkConsistency) only once it has nothing left to do and no
     * migration is in flight.
     */
    async function zonesSettled(ns) {
        await waitFor(`${ns} balanced onto its zones, no migration in flight`, async () => {
            const status = await settle(admin({ balancerCollectionStatus: ns }));
            if (!status.reply?.balancerCompliant) return false;
            return (await (await c().config()).db('config').collection('system.coordinators').countDocuments({})) === 0;
        }, { timeoutMs: 60000, intervalMs: 200 });
    }

    test('killed after the new chunks, before the switch: the refine is undone, a new one works', async () => {
        const { ns, coll } = await zoned('crrefA');
        await crashDuringRefine(ns, 'refineShardKeyHangAfterNewChunks');
        const entry = await (await cfg()).collection('collections').findOne({ _id: ns });
        assert.deepEqual(entry.key, { customerId: 1 }, 'the old key is in force');
        const chunks = await (await cfg()).collection('chunks').find({ uuid: entry.uuid }).toArray();
        assert.ok(chunks.every((ch) => !('createdAt' in ch.min)), 'only the old chunks');
        assert.equal(await (await cfg()).collection('chunks').countDocuments({ 'min.createdAt': { $exists: true } }), 0,
            'the invisible new chunks were removed');
        await zonesSettled(ns);
        await c().checkConsistency(ns, 300);
        assert.equal((await admin({ refineCollectionShardKey: ns, key: { customerId: 1, createdAt: 1 } })).ok, 1);
        for (const t of await (await cfg()).collection('tags').find({ ns }).toArray()) {
            assert.ok(isMinKey(t.min.createdAt) && isMinKey(t.max.createdAt), JSON.stringify(t));
        }
        await coll.insertOne({ _id: 'after', customerId: 5, createdAt: new Date() });
        await zonesSettled(ns);
        await c().checkConsistency(ns, 301);
    });

    test('killed after the switch: the restart finishes the refine and extends the zones', async () => {
        const { ns, coll } = await zoned('crrefB');
        await crashDuringRefine(ns, 'refineShardKeyHangAfterCommit');
        const entry = await (await cfg()).collection('collections').findOne({ _id: ns });
        assert.deepEqual(entry.key, { customerId: 1, createdAt: 1 }, 'the new key is in force');
        const all = await (await cfg()).collection('chunks').find({ 'min.customerId': { $exists: true } }).toArray();
        const mine = all.filter((ch) => String(ch.uuid) === String(entry.uuid));
        assert.ok(mine.length > 0 && mine.every((ch) => 'createdAt' in ch.min), 'the new chunks');
        const tags = await (await cfg()).collection('tags').find({ ns }).toArray();
        assert.equal(tags.length, 2);
        for (const t of tags) assert.ok(isMinKey(t.min.createdAt) && isMinKey(t.max.createdAt), JSON.stringify(t));
        await zonesSettled(ns);
        await c().checkConsistency(ns, 300);
        await coll.insertOne({ _id: 'after', customerId: 150, createdAt: new Date() });
        await zonesSettled(ns);
        await c().checkConsistency(ns, 301);
    });
}, { shards: 2, routers: 1 });
