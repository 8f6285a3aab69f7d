// Refine × zones (issue 40): refineCollectionShardKey of a zoned collection once made the config
// server allocate without bound (a zone range's ObjectId `_id` read as a string length) and, the
// refine being a persisted coordinator, run out of memory again at every restart. These tests run
// the user's repro through mongosh, then refine populated collections with several zones, zones
// given on the old key's fields and a second refine, and check that the balancer keeps every
// chunk of a zone range on the zone's shards under the refined key.
import assert from 'node:assert/strict';
import { MaxKey, MinKey } from 'mongodb';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster, mongosh, resultLine, waitFor } from './cluster_harness.mjs';

const isMinKey = (v) => v instanceof MinKey || v?._bsontype === 'MinKey';
const isMaxKey = (v) => v instanceof MaxKey || v?._bsontype === 'MaxKey';

describeWithCluster('refineCollectionShardKey of zoned collections', (ctx) => {
    const test = ctx.test;
    const c = () => ctx.cluster;
    const admin = async (cmd) => (await c().router()).db('admin').command(cmd);
    const cfg = async () => (await c().router()).db('config');
    const shardIds = async () => (await admin({ listShards: 1 })).shards.map((s) => s._id).sort();

    /** The config server still answers (it once died of the refine, then at every restart). */
    async function configAlive() {
        const reply = await (await c().config()).db('admin').command({ ping: 1 });
        assert.equal(reply.ok, 1);
    }

    async function setBalancer(on) {
        const settings = (await cfg()).collection('settings');
        await settings.updateOne({ _id: 'balancer' },
            { $set: { mode: on ? 'full' : 'off', stopped: !on, roundIntervalMillis: 200 } }, { upsert: true });
    }

    /**
     * Every chunk inside a zone range is on a shard of that zone (read from config.tags,
     * config.shards and config.chunks, compared by the first key field — the ranges here are
     * bounded on it).
     */
    async function zonesHonoured(ns) {
        const db = await cfg();
        const tags = await db.collection('tags').find({ ns }).toArray();
        const zoneShards = {};
        for (const s of await db.collection('shards').find().toArray()) {
            for (const z of s.tags || []) (zoneShards[z] ||= []).push(s._id);
        }
        const { chunks } = await c().placement(ns);
        const num = (v) => (isMinKey(v) ? -Infinity : isMaxKey(v) ? Infinity : v);
        for (const t of tags) {
            const lo = num(t.min.customerId);
            const hi = num(t.max.customerId);
            const inside = chunks.filter((ch) => num(ch.min.customerId) >= lo && num(ch.max.customerId) <= hi);
            if (inside.length === 0) return false;
            if (!inside.every((ch) => zoneShards[t.tag].includes(ch.shard))) return false;
            // The range's bounds are chunk bounds (a chunk never straddles a zone bound).
            if (!chunks.some((ch) => num(ch.min.customerId) === lo)) return false;
        }
        return true;
    }

    test('the repro through mongosh: refine of an empty zoned collection', async () => {
        const dbName = uniqueDbName('shop');
        const out = await mongosh(c().routerUri(0, dbName), `
            sh.shardCollection('${dbName}.z0', {customerId: 1});
            sh.addShardToZone('shard0', 'EU');
            sh.updateZoneKeyRange('${dbName}.z0', {customerId: 0}, {customerId: 100}, 'EU');
            db.z0.createIndex({customerId: 1, createdAt: 1});
            const r = db.adminCommand({refineCollectionShardKey: '${dbName}.z0', key: {customerId: 1, createdAt: 1}});
            print('RESULT ' + EJSON.stringify({ok: r.ok, errmsg: r.errmsg || null}));
        `);
        const result = resultLine(out);
        assert.equal(result.ok, 1, JSON.stringify(result));
        await configAlive();
        const tag = await (await cfg()).collection('tags').findOne({ ns: `${dbName}.z0` });
        assert.equal(tag.min.customerId, 0);
        assert.ok(isMinKey(tag.min.createdAt), `zone min extended: ${JSON.stringify(tag.min)}`);
        assert.equal(tag.max.customerId, 100);
        assert.ok(isMinKey(tag.max.createdAt), `zone max extended: ${JSON.stringify(tag.max)}`);
        const entry = await (await cfg()).collection('collections').findOne({ _id: `${dbName}.z0` });
        assert.deepEqual(entry.key, { customerId: 1, createdAt: 1 });
        assert.equal(await (await cfg()).collection('system.coordinators').countDocuments({}), 0);
        assert.equal((await admin({ removeShardFromZone: 'shard0', zone: 'EU' }).catch((e) => e)).code, 163,
            'the zone is still in use by the extended range');
        assert.equal((await admin({ updateZoneKeyRange: `${dbName}.z0`, min: { customerId: 0 }, max: { customerId: 100 }, zone: null })).ok, 1,
            'the range is removed by the bounds it was given with');
        assert.equal(await (await cfg()).collection('tags').countDocuments({ ns: `${dbName}.z0` }), 0);
        assert.equal((await admin({ removeShardFromZone: 'shard0', zone: 'EU' })).ok, 1);
    });

    test('refine with data and several zones; zones on the old fields; the balancer keeps them', async () => {
        const [a, b] = await shardIds();
        const dbName = uniqueDbName('zref');
        const ns = `${dbName}.orders`;
        const coll = (await c().router()).db(dbName).collection('orders');
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { customerId: 1 } })).ok, 1);
        assert.equal((await admin({ addShardToZone: a, zone: 'EUR' })).ok, 1);
        assert.equal((await admin({ addShardToZone: b, zone: 'AMR' })).ok, 1);
        assert.equal((await admin({ updateZoneKeyRange: ns, min: { customerId: 0 }, max: { customerId: 100 }, zone: 'EUR' })).ok, 1);
        assert.equal((await admin({ updateZoneKeyRange: ns, min: { customerId: 100 }, max: { customerId: 200 }, zone: 'AMR' })).ok, 1);
        const base = new Date('2026-01-01T00:00:00Z').getTime();
        const docs = Array.from({ length: 900 }, (_, i) => ({
            _id: i, customerId: i % 300, createdAt: new Date(base + i * 1000), total: i,
        }));
        await coll.insertMany(docs);
        try {
            await setBalancer(true);
            await waitFor('both zones on their shards', () => zonesHonoured(ns), { timeoutMs: 60000, intervalMs: 300 });
            await setBalancer(false);

            await coll.createIndex({ customerId: 1, createdAt: 1 });
            assert.equal((await admin({ refineCollectionShardKey: ns, key: { customerId: 1, createdAt: 1 } })).ok, 1);
            await configAlive();
            const tags = await (await cfg()).collection('tags').find({ ns }).sort({ 'min.customerId': 1 }).toArray();
            assert.equal(tags.length, 2);
            for (const t of tags) {
                assert.ok(isMinKey(t.min.createdAt) && isMinKey(t.max.createdAt), JSON.stringify(t));
            }
            const { chunks } = await c().placement(ns);
            assert.ok(chunks.every((ch) => 'createdAt' in ch.min && 'createdAt' in ch.max), 'chunk bounds extended');
            assert.ok(await zonesHonoured(ns), 'nothing moved out of its zone by the refine');
            await c().checkConsistency(ns, 900);

            // A zone given on the old key's field only: extended as MongoDB does.
            assert.equal((await admin({ updateZoneKeyRange: ns, min: { customerId: 200 }, max: { customerId: 250 }, zone: 'EUR' })).ok, 1);
            const added = await (await cfg()).collection('tags').findOne({ ns, 'min.customerId': 200 });
            assert.ok(isMinKey(added.min.createdAt) && isMinKey(added.max.createdAt), JSON.stringify(added));
            await assert.rejects(admin({ updateZoneKeyRange: ns, min: { customerId: 240 }, max: { customerId: 260 }, zone: 'AMR' }),
                (e) => e.code === 178, 'overlaps the extended range');
            await assert.rejects(admin({ updateZoneKeyRange: ns, min: { createdAt: 1 }, max: { createdAt: 2 }, zone: 'AMR' }),
                (e) => e.code === 2, 'not a prefix of the key');

            // Writes under the refined key, then balancer rounds: every zone range on its shards.
            await coll.insertMany(Array.from({ length: 300 }, (_, i) => ({
                _id: 900 + i, customerId: i, createdAt: new Date(base - i * 1000), total: -i,
            })));
            await setBalancer(true);
            await waitFor('the three zone ranges on their shards under the refined key', () => zonesHonoured(ns),
                { timeoutMs: 60000, intervalMs: 300 });
            const status0 = await admin({ balancerStatus: 1 });
            await waitFor('two more balancer rounds', async () =>
                (await admin({ balancerStatus: 1 })).numBalancerRounds >= status0.numBalancerRounds + 2, { timeoutMs: 30000, intervalMs: 200 });
            assert.ok(await zonesHonoured(ns), 'the zones still hold after more rounds');
            await setBalancer(false);
            const compliant = await admin({ balancerCollectionStatus: ns });
            assert.notEqual(compliant.firstComplianceViolation, 'zoneViolation', JSON.stringify(compliant));
            await c().checkConsistency(ns, 1200);
            const eur = (await (await c().shardByName(a)).db(dbName).collection('orders').countDocuments({ customerId: { $gte: 200, $lt: 250 } }));
            assert.equal(eur, 200, 'the range given on the old field lives on its zone\'s shard');

            // A second refine (with _id): the zones are extended once more, nothing moves.
            await coll.createIndex({ customerId: 1, createdAt: 1, _id: 1 });
            assert.equal((await admin({ refineCollectionShardKey: ns, key: { customerId: 1, createdAt: 1, _id: 1 } })).ok, 1);
            for (const t of await (await cfg()).collection('tags').find({ ns }).toArray()) {
                assert.ok(isMinKey(t.min._id) && isMinKey(t.max._id), JSON.stringify(t));
            }
            assert.ok(await zonesHonoured(ns));
            await c().checkConsistency(ns, 1200);
        } finally {
            await setBalancer(false);
            for (const t of await (await cfg()).collection('tags').find({ ns }).toArray()) {
                await admin({ updateZoneKeyRange: ns, min: t.min, max: t.max, zone: null });
            }
            await admin({ removeShardFromZone: a, zone: 'EUR' }).catch(() => {});
            await admin({ removeShardFromZone: b, zone: 'AMR' }).catch(() => {});
        }
    });
}, { shards: 2, routers: 1 });
