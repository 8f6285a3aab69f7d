// Issue 4 point 7 (the movePrimary incident): router B caches a placement, router A changes it,
// and B's next reads and writes must be right without flushRouterConfig — the shards' version
// checks (StaleDbVersion / StaleConfig) make B refresh and retry. Checked for movePrimary of a
// database with unsharded collections and for a migrated range of a sharded collection; the data
// is checked directly on the shards afterwards.
import assert from 'node:assert/strict';
import { uniqueDbName } from './harness.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { describeWithCluster, waitFor } from './cluster_harness.mjs';

describeWithCluster('stale routers after movePrimary and migrations (2 routers)', (ctx) => {
    const test = ctx.test;
    const routerA = () => ctx.cluster.router(0);
    const routerB = () => ctx.cluster.router(1);
    const adminA = async (cmd) => (await routerA()).db('admin').command(cmd);
    const configDoc = async (coll, id) => (await routerA()).db('config').collection(coll).findOne({ _id: id });
    const shardNames = async () =>
        (await (await routerA()).db('config').collection('shards').find().sort({ _id: 1 }).toArray()).map((s) => s._id);

    test('movePrimary through A; B (cached primary) reads and writes the new primary', async () => {
        const dbName = uniqueDbName('mp');
        const docs = Array.from({ length: 50 }, (_, i) => ({ _id: i, n: i, tag: `t${i % 4}` }));
        const other = Array.from({ length: 7 }, (_, i) => ({ _id: `o${i}`, k: i }));
        const a = (await routerA()).db(dbName);
        await a.collection('u').insertMany(docs);
        await a.collection('u2').insertMany(other);
        await a.collection('u').createIndex({ tag: 1 });

        // B reads the database: it now caches the primary (and its database version).
        const b = (await routerB()).db(dbName);
        assert.deepEqual(await b.collection('u').find().sort({ _id: 1 }).toArray(), docs);
        assert.equal(await b.collection('u').countDocuments({}), 50);

        const before = await configDoc('databases', dbName);
        const oldPrimary = before.primary;
        const newPrimary = (await shardNames()).find((s) => s !== oldPrimary);
        const moved = await adminA({ movePrimary: dbName, to: newPrimary });
        assert.equal(moved.ok, 1, JSON.stringify(moved));
        const after = await configDoc('databases', dbName);
        assert.equal(after.primary, newPrimary);
        assert.ok(after.version.lastMod > before.version.lastMod, `lastMod ${before.version.lastMod} -> ${after.version.lastMod}`);

        // B, without flushRouterConfig: reads are complete, writes land on the new primary.
        assert.deepEqual(await b.collection('u').find().sort({ _id: 1 }).toArray(), docs, 'B reads after movePrimary');
        assert.equal(await b.collection('u').countDocuments({ tag: 't1' }), docs.filter((d) => d.tag === 't1').length);
        const ins = await b.collection('u').insertOne({ _id: 1000, n: 1000, tag: 'new' });
        assert.equal(ins.acknowledged, true);
        const up = await b.collection('u').updateOne({ _id: 3 }, { $set: { updated: true } });
        assert.equal(up.matchedCount, 1);
        assert.equal(up.modifiedCount, 1);
        const del = await b.collection('u').deleteOne({ _id: 4 });
        assert.equal(del.deletedCount, 1);
        assert.deepEqual(await b.collection('u2').find().sort({ _id: 1 }).toArray(), other, 'B reads u2');
        assert.deepEqual(
            (await b.collection('u').indexes()).map((i) => i.name).sort(),
            ['_id_', 'tag_1'],
            'indexes cloned to the new primary',
        );

        // Directly on the shards: everything on the new primary, nothing on the old one.
        const onNew = await (await ctx.cluster.shardByName(newPrimary)).db(dbName).collection('u').find().sort({ _id: 1 }).toArray();
        const want = docs.filter((d) => d._id !== 4).map((d) => (d._id === 3 ? { ...d, updated: true } : d));
        want.push({ _id: 1000, n: 1000, tag: 'new' });
        assert.deepEqual(onNew, want, `documents on the new primary ${newPrimary}`);
        const onOld = await (await ctx.cluster.shardByName(oldPrimary)).db(dbName).collection('u').countDocuments({});
        assert.equal(onOld, 0, `documents left on the old primary ${oldPrimary}`);
        await ctx.cluster.checkConsistency(`${dbName}.u`, 50);
        await ctx.cluster.checkConsistency(`${dbName}.u2`, 7);

        // And A agrees.
        assert.deepEqual(await a.collection('u').find().sort({ _id: 1 }).toArray(), want);
    });

    test('movePrimary back and forth: a stale B creates a new collection on the current primary', async () => {
        const dbName = uniqueDbName('mp2');
        const a = (await routerA()).db(dbName);
        const b = (await routerB()).db(dbName);
        await a.collection('c').insertOne({ _id: 1 });
        assert.equal(await b.collection('c').countDocuments({}), 1);
        const shards = await shardNames();
        for (let round = 0; round < 2; round++) {
            const cur = (await configDoc('databases', dbName)).primary;
            const to = shards.find((s) => s !== cur);
            const r = await adminA({ movePrimary: dbName, to });
            assert.equal(r.ok, 1, JSON.stringify(r));
            // B creates a collection that did not exist: it must go to the current primary.
            await b.collection(`fresh${round}`).insertOne({ _id: round });
            const onTo = await (await ctx.cluster.shardByName(to)).db(dbName).collection(`fresh${round}`).countDocuments({});
            assert.equal(onTo, 1, `round ${round}: fresh${round} on the new primary ${to}`);
            assert.equal(await b.collection('c').countDocuments({}), 1, `round ${round}: B reads c`);
            await ctx.cluster.checkConsistency(`${dbName}.c`, 1);
            await ctx.cluster.checkConsistency(`${dbName}.fresh${round}`, 1);
        }
    });

    test('range migration through A; B (cached routing table) reads, writes and counts correctly', async () => {
        const dbName = uniqueDbName('mr');
        const ns = `${dbName}.c`;
        const docs = Array.from({ length: 300 }, (_, i) => ({ _id: i, x: i, v: i % 10 }));
        assert.equal((await adminA({ enableSharding: dbName })).ok, 1);
        assert.equal((await adminA({ shardCollection: ns, key: { x: 1 } })).ok, 1);
        const a = (await routerA()).db(dbName).collection('c');
        await a.insertMany(docs);
        assert.equal((await adminA({ split: ns, middle: { x: 100 } })).ok, 1);
        assert.equal((await adminA({ split: ns, middle: { x: 200 } })).ok, 1);
        const primary = (await configDoc('databases', dbName)).primary;
        const target = (await shardNames()).find((s) => s !== primary);

        // B reads the range and the whole collection: it caches the routing table.
        const b = (await routerB()).db(dbName).collection('c');
        const range = docs.filter((d) => d.x >= 100 && d.x < 200);
        assert.deepEqual(await b.find({ x: { $gte: 100, $lt: 200 } }).sort({ _id: 1 }).toArray(), range);
        assert.equal(await b.countDocuments({}), 300);

        const mv = await adminA({ moveRange: ns, min: { x: 100 }, max: { x: 200 }, toShard: target });
        assert.equal(mv.ok, 1, JSON.stringify(mv));

        // B, no flushRouterConfig.
        assert.deepEqual(await b.find({ x: { $gte: 100, $lt: 200 } }).sort({ _id: 1 }).toArray(), range, 'B reads the moved range');
        assert.equal(await b.countDocuments({}), 300, 'B counts after the move');
        assert.equal(await b.countDocuments({ x: { $gte: 150 } }), 150);
        assert.deepEqual(await b.find({ x: 150 }).toArray(), [{ _id: 150, x: 150, v: 0 }]);
        await b.insertOne({ _id: 'new', x: 155, v: -1 });
        const up = await b.updateOne({ x: 120 }, { $set: { touched: true } });
        assert.equal(up.matchedCount, 1);
        assert.equal(up.modifiedCount, 1);
        const del = await b.deleteOne({ x: 130 });
        assert.equal(del.deletedCount, 1);

        // Directly: the moved range (with B's writes) is on the target only.
        const onTarget = await (await ctx.cluster.shardByName(target)).db(dbName).collection('c')
            .find({ x: { $gte: 100, $lt: 200 } }).sort({ x: 1 }).toArray();
        assert.equal(onTarget.length, 100, 'target holds the range, with the insert and without the delete');
        assert.ok(onTarget.some((d) => d._id === 'new'));
        assert.ok(onTarget.find((d) => d.x === 120).touched);
        assert.ok(!onTarget.some((d) => d.x === 130));
        const onDonor = await (await ctx.cluster.shardByName(primary)).db(dbName).collection('c')
            .countDocuments({ x: { $gte: 100, $lt: 200 } });
        assert.equal(onDonor, 0, 'donor shows no document of the moved range (deleted or hidden as orphans)');
        await ctx.cluster.checkConsistency(ns, 300);

        // Move it back through A; B is stale again.
        const back = await adminA({ moveChunk: ns, find: { x: 150 }, to: primary });
        assert.equal(back.ok, 1, JSON.stringify(back));
        assert.equal(await b.countDocuments({ x: { $gte: 100, $lt: 200 } }), 100, 'B after the move back');
        await b.updateMany({ x: { $gte: 100, $lt: 200 } }, { $inc: { v: 100 } });
        assert.equal(await a.countDocuments({ v: { $gte: 99 } }), 100);
        await ctx.cluster.checkConsistency(ns, 300);
    });

    for (const [kind, key] of [
        ['ranged', { k: 1 }],
        ['hashed', { k: 'hashed' }],
    ]) {
        test(`B writes without a read first after a ${kind} chunk moved`, async () => {
            const dbName = uniqueDbName(`mw${kind}`);
            const ns = `${dbName}.h`;
            assert.equal((await adminA({ shardCollection: ns, key })).ok, 1);
            const b = (await routerB()).db(dbName).collection('h');
            await b.insertMany(Array.from({ length: 90 }, (_, i) => ({ _id: i, k: i })));
            if (kind === 'ranged') assert.equal((await adminA({ split: ns, middle: { k: 45 } })).ok, 1);
            const { chunks } = await ctx.cluster.placement(ns);
            const c0 = chunks[chunks.length - 1];
            const to = (await shardNames()).find((s) => s !== c0.shard);
            const mv = await adminA({ moveRange: ns, min: c0.min, max: c0.max, toShard: to });
            assert.equal(mv.ok, 1, JSON.stringify(mv));
            const more = Array.from({ length: 90 }, (_, i) => ({ _id: 100 + i, k: 100 + i }));
            const res = await b.insertMany(more, { ordered: false });
            assert.equal(res.insertedCount, 90);
            assert.equal((await b.deleteMany({ k: { $lt: 10 } })).deletedCount, 10);
            assert.equal((await b.updateMany({ k: { $gte: 50 } }, { $set: { hi: true } })).modifiedCount, 130);
            await ctx.cluster.checkConsistency(ns, 170);
        });
    }

    test('orphans stay hidden: the recipient copy before the commit, and an aborted migration', async () => {
        const dbName = uniqueDbName('orph');
        const ns = `${dbName}.c`;
        const docs = Array.from({ length: 200 }, (_, i) => ({ _id: i, x: i }));
        assert.equal((await adminA({ enableSharding: dbName })).ok, 1);
        assert.equal((await adminA({ shardCollection: ns, key: { x: 1 } })).ok, 1);
        await (await routerA()).db(dbName).collection('c').insertMany(docs);
        assert.equal((await adminA({ split: ns, middle: { x: 100 } })).ok, 1);
        const donor = (await configDoc('databases', dbName)).primary;
        const recipient = (await shardNames()).find((s) => s !== donor);
        const cfgAdmin = (await ctx.cluster.config()).db('admin');
        const direct = async (name, filter = {}) =>
            (await ctx.cluster.shardByName(name)).db(dbName).collection('c').find(filter).toArray();
        const configLog = path.join(ctx.cluster.dbpath, 'config.log');
        const hangs = () => (fs.readFileSync(configLog, 'utf8').match(/"failpoint":"moveRangeHangBeforeCommit"/g) || []).length;

        const hangsBefore = hangs();
        await cfgAdmin.command({ configureFailPoint: 'moveRangeHangBeforeCommit', mode: 'alwaysOn' });
        let moving;
        try {
            moving = adminA({ moveRange: ns, min: { x: 100 }, max: { x: 200 }, toShard: recipient }).then(
                (r) => r,
                (err) => ({ error: err }),
            );
            await waitFor('the migration to reach moveRangeHangBeforeCommit', () => hangs() > hangsBefore, {
                timeoutMs: 60000,
            });
            // The recipient has cloned the range but does not own it: a direct read hides it.
            assert.deepEqual(await direct(recipient), [], 'recipient shows the uncommitted range');
            assert.deepEqual(
                await (await ctx.cluster.shardByName(recipient)).db(dbName).collection('c')
                    .aggregate([{ $match: { x: { $gte: 100 } } }]).toArray(),
                [],
                'recipient aggregate shows the uncommitted range',
            );
            assert.equal((await direct(donor)).length, 200, 'the donor still owns everything');
        } finally {
            await cfgAdmin.command({ configureFailPoint: 'moveRangeHangBeforeCommit', mode: 'off' });
        }
        const moved = await moving;
        assert.equal(moved.ok, 1, JSON.stringify(moved));
        await ctx.cluster.checkConsistency(ns, 200);
        assert.equal((await direct(recipient)).length, 100);

        // An aborted migration back: the donor of this move (the recipient above) keeps the range,
        // and what the other side cloned never becomes visible.
        await cfgAdmin.command({ configureFailPoint: 'moveRangeFailBeforeCommit', mode: { times: 1 } });
        try {
            await assert.rejects(adminA({ moveChunk: ns, find: { x: 150 }, to: donor }), (err) => {
                assert.match(`${err.codeName} ${err.message}`, /OperationFailed|moveRangeFailBeforeCommit/);
                return true;
            });
        } finally {
            await cfgAdmin.command({ configureFailPoint: 'moveRangeFailBeforeCommit', mode: 'off' });
        }
        const { chunks } = await ctx.cluster.placement(ns);
        // moveRange of [100, 200) out of [100, MaxKey) split it: [200, MaxKey) stayed on the donor.
        assert.deepEqual(chunks.map((c) => c.shard), [donor, recipient, donor]);
        assert.deepEqual(await direct(donor, { x: { $gte: 100 } }), [], 'aborted copy hidden on the donor');
        await ctx.cluster.checkConsistency(ns, 200);
        const b = (await routerB()).db(dbName).collection('c');
        assert.equal(await b.countDocuments({}), 200);
        assert.deepEqual(await b.find({ x: { $gte: 95, $lt: 105 } }).sort({ x: 1 }).toArray(), docs.slice(95, 105));
    });
});
