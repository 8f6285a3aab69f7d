// Documents of a sharded collection are stored clustered by the shard key on each shard: a
// find({}) without sort sent directly to a shard returns them in shard key order (the natural
// order is the record order), on the primary after shardCollection (empty or populated
// collection, ranged or hashed key) and on the recipient of a moveRange. Unsharded collections
// stay clustered by _id.
import assert from 'node:assert/strict';
import { MaxKey } from 'mongodb';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster, hashedValue } from './cluster_harness.mjs';

const N = 300;

/** 0..n-1 in a fixed pseudo-random order. */
function shuffled(n, seed = 7) {
    const v = Array.from({ length: n }, (_, i) => i);
    let s = seed;
    for (let i = n - 1; i > 0; i--) {
        s = (s * 1103515245 + 12345) % 2147483648;
        const j = s % (i + 1);
        [v[i], v[j]] = [v[j], v[i]];
    }
    return v;
}

const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i);

describeWithCluster('clustered by the shard key (tessera up, 2 shards)', (ctx) => {
    const test = ctx.test;
    const dbName = uniqueDbName('ccl');
    const admin = async (cmd) => (await ctx.cluster.router()).db('admin').command(cmd);
    const primaryName = async () => {
        const r = await ctx.cluster.router();
        return (await r.db('config').collection('databases').findOne({ _id: dbName })).primary;
    };
    const otherName = async () => {
        const primary = await primaryName();
        return [ctx.cluster.shardName(0), ctx.cluster.shardName(1)].find((s) => s !== primary);
    };
    /** find({}) with no sort, sent directly to the shard: the natural order. */
    const natural = async (shard, coll, field) => {
        const c = await ctx.cluster.shardByName(shard);
        const docs = await c.db(dbName).collection(coll).find({}).toArray();
        return docs.map((d) => d[field]);
    };
    const insertShuffled = async (coll, extra = (k) => ({})) => {
        const r = await ctx.cluster.router();
        const ks = shuffled(N);
        // _id order is the insertion order, not k order.
        const docs = ks.map((k, i) => ({ _id: i, k, ...extra(k) }));
        await r.db(dbName).collection(coll).insertMany(docs);
        return docs;
    };

    test('shardCollection on an empty collection, then inserts in random key order', async () => {
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        assert.equal((await admin({ shardCollection: `${dbName}.ranged`, key: { k: 1 } })).ok, 1);
        await insertShuffled('ranged');
        const primary = await primaryName();
        assert.deepEqual(await natural(primary, 'ranged', 'k'), range(0, N));
        // listIndexes and listCollections on the shard look as they always did.
        const shard = await ctx.cluster.shardByName(primary);
        const idx = await shard.db(dbName).collection('ranged').listIndexes().toArray();
        assert.deepEqual(idx.map((i) => i.name).sort(), ['_id_', 'k_1']);
        assert.deepEqual(idx.find((i) => i.name === '_id_'), { v: 2, key: { _id: 1 }, name: '_id_' });
        const colls = await shard.db(dbName).listCollections({ name: 'ranged' }).toArray();
        assert.equal(colls.length, 1);
        assert.equal(colls[0].options.clusteredIndex, undefined);
        // Point reads by _id go through the (now real) _id_ index.
        const r = await ctx.cluster.router();
        for (const id of [0, 17, N - 1]) {
            const doc = await r.db(dbName).collection('ranged').findOne({ _id: id });
            assert.equal(doc?._id, id);
        }
    });

    test('after moveRange the recipient (and the donor) are in key order too', async () => {
        const ns = `${dbName}.ranged`;
        const to = await otherName();
        const mv = await admin({ moveRange: ns, min: { k: 150 }, max: { k: new MaxKey() }, toShard: to });
        assert.equal(mv.ok, 1);
        assert.deepEqual(await natural(to, 'ranged', 'k'), range(150, N));
        assert.deepEqual(await natural(await primaryName(), 'ranged', 'k'), range(0, 150));
        // A shard key update moves the document inside the recipient's order.
        const r = await ctx.cluster.router();
        const res = await r.db(dbName).collection('ranged').updateOne({ k: 151 }, { $set: { k: 1000 } });
        assert.equal(res.modifiedCount, 1);
        assert.deepEqual(await natural(to, 'ranged', 'k'), [150, ...range(152, N), 1000]);
        assert.equal(await r.db(dbName).collection('ranged').countDocuments({}), N);
    });

    test('shardCollection of a populated collection reclusters it on the primary', async () => {
        const r = await ctx.cluster.router();
        const docs = await insertShuffled('populated', (k) => ({ b: k % 3 }));
        await r.db(dbName).collection('populated').createIndex({ b: 1 });
        const primary = await primaryName();
        assert.deepEqual(await natural(primary, 'populated', '_id'), range(0, N)); // unsharded: _id
        assert.equal((await admin({ shardCollection: `${dbName}.populated`, key: { k: 1 } })).ok, 1);
        assert.deepEqual(await natural(primary, 'populated', 'k'), range(0, N));
        const coll = r.db(dbName).collection('populated');
        assert.equal(await coll.countDocuments({}), N);
        assert.equal(await coll.countDocuments({ b: 1 }), docs.filter((d) => d.b === 1).length);
        assert.equal((await coll.findOne({ _id: 42 }))?.k, docs[42].k);
    });

    test('a hashed shard key clusters each shard by the hash', async () => {
        const ns = `${dbName}.hashed`;
        assert.equal((await admin({ shardCollection: ns, key: { h: 'hashed' } })).ok, 1);
        await insertShuffled('hashed', (k) => ({ h: `v${k}` }));
        let total = 0;
        for (const shard of [ctx.cluster.shardName(0), ctx.cluster.shardName(1)]) {
            const hs = await natural(shard, 'hashed', 'h');
            total += hs.length;
            const hashes = hs.map((h) => hashedValue(h));
            const sorted = [...hashes].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
            assert.deepEqual(hashes, sorted, `${shard}: natural order is not hash order`);
        }
        assert.equal(total, N);
    });

    test('unsharded collections stay clustered by _id', async () => {
        const r = await ctx.cluster.router();
        const ids = shuffled(50, 3);
        await r.db(dbName).collection('plain').insertMany(ids.map((id) => ({ _id: id, k: 50 - id })));
        assert.deepEqual(await natural(await primaryName(), 'plain', '_id'), range(0, 50));
    });
}, { shards: 2, routers: 1 });
