// A `tessera up --shards 3 --routers 2` cluster through the Node driver and mongosh: hello, the
// sharding helpers (ranged, hashed and compound-hashed keys), sh.status(), getShardDistribution(),
// reads that must equal what one node returns for the same data, explain targeting, split, moves
// and addShard of a fourth shard. Every placement change is followed by checkConsistency.
import assert from 'node:assert/strict';
import { uniqueDbName } from './harness.mjs';
import { chunkFor, describeWithCluster, mongosh, resultLine, waitFor } from './cluster_harness.mjs';

const N = 600;

function makeDocs(n) {
    return Array.from({ length: n }, (_, i) => ({
        _id: i,
        x: i,
        h: i,
        a: i % 7,
        b: `s${i}`,
        g: i % 5,
        s: `t${i % 13}`,
        v: (i * 37) % 101,
    }));
}

const byKeys = (keys) => (p, q) => {
    for (const [k, dir] of keys) {
        if (p[k] < q[k]) return -dir;
        if (p[k] > q[k]) return dir;
    }
    return 0;
};

/** The shard names an explain reply says the router targeted. */
function explainShards(ex) {
    const wp = ex?.queryPlanner?.winningPlan;
    if (wp && Array.isArray(wp.shards)) return wp.shards.map((s) => s.shardName).sort();
    if (ex?.shards && typeof ex.shards === 'object') return Object.keys(ex.shards).sort();
    throw new Error(`no shard list in explain: ${JSON.stringify(ex).slice(0, 2000)}`);
}

/**
 * Runs fn(item) for every item and fails at the end with every failure, so that one broken key
 * kind (say hashed) does not hide what happens with the others.
 */
async function forEachSoft(items, label, fn) {
    const errors = [];
    for (const item of items) {
        try {
            await fn(item);
        } catch (err) {
            errors.push(`[${label(item)}] ${err.message}`);
        }
    }
    assert.ok(errors.length === 0, errors.join('\n--------\n'));
}

describeWithCluster('cluster basics (tessera up, 3 shards, 2 routers)', (ctx) => {
    const test = ctx.test;
    const dbA = uniqueDbName('cbsh'); // sharded with mongosh
    const dbB = uniqueDbName('cbdrv'); // sharded with the driver's admin commands
    const docs = makeDocs(N);
    const kinds = { ranged: { x: 1 }, hashed: { h: 'hashed' }, compound: { a: 1, b: 'hashed' }, pair: { a: 1, x: 1 } };
    const state = { shards: [], primaryA: null, movedTo: {}, sharded: {} };
    const sharded = (dbName, name) => state.sharded[`${dbName}.${name}`] === true;

    const router = (i = 0) => ctx.cluster.router(i);
    const admin = async (cmd, i = 0) => (await router(i)).db('admin').command(cmd);
    const configDb = async () => (await router()).db('config');

    test('hello through each router says isdbgrid; the driver sees mongoses', async () => {
        for (let i = 0; i < ctx.cluster.numRouters; i++) {
            const hello = await admin({ hello: 1 }, i);
            assert.equal(hello.msg, 'isdbgrid', JSON.stringify(hello));
            assert.equal(hello.isWritablePrimary, true);
            const legacy = await admin({ isMaster: 1 }, i);
            assert.equal(legacy.msg, 'isdbgrid');
        }
        const multi = await ctx.cluster.clientFor(ctx.cluster.clusterUri());
        await multi.db('admin').command({ ping: 1 });
        // The driver monitors each seed on its own schedule: the first one it reaches serves the
        // ping while the others may still be Unknown, so wait (with a deadline) until it has
        // classified them all.
        const described = () => [...multi.topology.description.servers.values()];
        await waitFor('the driver to classify every router', () =>
            described().every((s) => s.type !== 'Unknown'),
        );
        const servers = described();
        assert.equal(servers.length, ctx.cluster.numRouters);
        for (const s of servers) assert.equal(s.type, 'Mongos', `${s.address} is ${s.type}`);
        assert.equal(multi.topology.description.type, 'Sharded');
    });

    test('config.shards lists the 3 shards registered by tessera up', async () => {
        const shards = await (await configDb()).collection('shards').find().sort({ _id: 1 }).toArray();
        assert.deepEqual(
            shards.map((s) => s._id),
            ['shard0', 'shard1', 'shard2'],
        );
        for (let i = 0; i < 3; i++) {
            assert.equal(shards[i].host, `127.0.0.1:${ctx.cluster.shardPort(i)}`);
            assert.equal(shards[i].state, 1);
        }
        state.shards = shards.map((s) => s._id);
        const listShards = await admin({ listShards: 1 });
        assert.deepEqual(listShards.shards.map((s) => s._id).sort(), state.shards);
    });

    test('mongosh: sh.enableSharding and sh.shardCollection (ranged, hashed, compound hashed, compound)', async () => {
        const script = `
            const out = {};
            out.enable = sh.enableSharding('${dbA}').ok;
            for (const [name, key] of [['ranged', {x: 1}], ['hashed', {h: 'hashed'}], ['compound', {a: 1, b: 'hashed'}], ['pair', {a: 1, x: 1}]]) {
                try {
                    out[name] = sh.shardCollection('${dbA}.' + name, key);
                } catch (e) {
                    out[name] = {error: String(e)};
                }
            }
            print('RESULT ' + EJSON.stringify(out, {relaxed: true}));
        `;
        const out = await mongosh(ctx.cluster.routerUri(0, dbA), script);
        const r = resultLine(out);
        assert.equal(out.code, 0, `mongosh exit ${out.code}\n${out.stderr}`);
        assert.doesNotMatch(out.stdout + out.stderr, /SHAPI-10003|not connected to a mongos/i);
        assert.equal(r.enable, 1);
        const cfg = await configDb();
        const dbDoc = await cfg.collection('databases').findOne({ _id: dbA });
        assert.ok(dbDoc && state.shards.includes(dbDoc.primary), JSON.stringify(dbDoc));
        state.primaryA = dbDoc.primary;
        await forEachSoft(Object.entries(kinds), ([name]) => `sh.shardCollection ${dbA}.${name}`, async ([name, key]) => {
            assert.equal(r[name].ok, 1, JSON.stringify(r[name]));
            assert.equal(r[name].collectionsharded, `${dbA}.${name}`);
            const c = await cfg.collection('collections').findOne({ _id: `${dbA}.${name}` });
            assert.ok(c, `config.collections has ${dbA}.${name}`);
            assert.deepEqual(c.key, key);
            state.sharded[`${dbA}.${name}`] = true;
            const { chunks } = await ctx.cluster.placement(`${dbA}.${name}`);
            if (name === 'hashed') {
                // An empty collection with a hashed key starts with chunks on every shard.
                assert.deepEqual([...new Set(chunks.map((ch) => ch.shard))].sort(), state.shards);
            }
            if (name === 'ranged') {
                assert.equal(chunks.length, 1);
                assert.equal(chunks[0].shard, state.primaryA);
            }
        });
    });

    test('driver: enableSharding and shardCollection admin commands', async () => {
        const en = await admin({ enableSharding: dbB });
        assert.equal(en.ok, 1);
        await forEachSoft(Object.entries(kinds), ([name]) => `shardCollection ${dbB}.${name}`, async ([name, key]) => {
            const r = await admin({ shardCollection: `${dbB}.${name}`, key });
            assert.equal(r.ok, 1, JSON.stringify(r));
            assert.equal(r.collectionsharded, `${dbB}.${name}`);
            state.sharded[`${dbB}.${name}`] = true;
        });
        // Sharding it again with the same key is fine; with another key it is an error.
        const again = await admin({ shardCollection: `${dbB}.ranged`, key: { x: 1 } });
        assert.equal(again.ok, 1);
        await assert.rejects(admin({ shardCollection: `${dbB}.ranged`, key: { y: 1 } }), (err) => {
            assert.ok(err.code === 20 || err.codeName === 'AlreadyInitialized', `${err.code} ${err.message}`);
            return true;
        });
    });

    test(`insert ${N} documents into every collection; each is on the shard owning its chunk`, async () => {
        const r = await router();
        const all = [dbA, dbB].flatMap((dbName) => Object.keys(kinds).map((name) => [dbName, name]));
        for (const [dbName, name] of all) {
            const res = await r.db(dbName).collection(name).insertMany(docs);
            assert.equal(res.insertedCount, N);
        }
        await forEachSoft(all, ([d, n]) => `${d}.${n}`, async ([dbName, name]) => {
            assert.ok(sharded(dbName, name), 'the collection is not sharded (see the shardCollection tests)');
            const { perShard } = await ctx.cluster.checkConsistency(`${dbName}.${name}`, N);
            if (name === 'hashed') {
                for (const s of state.shards) assert.ok(perShard[s] > 0, `hashed: ${JSON.stringify(perShard)}`);
            }
        });
    });

    test('explain of a scatter query lists only the shards owning chunks (one chunk on the primary)', async () => {
        const coll = (await router()).db(dbA).collection('ranged');
        const ex = await coll.find({ v: 5 }).explain('queryPlanner');
        assert.deepEqual(explainShards(ex), [state.primaryA]);
    });

    test('split (sh.splitAt) and moves (sh.moveRange, moveChunk command), then placement', async () => {
        const ns = `${dbA}.ranged`;
        const others = state.shards.filter((s) => s !== state.primaryA);
        state.movedTo = { mid: others[0], high: others[1] };
        const script = `
            const out = {};
            out.split1 = sh.splitAt('${ns}', {x: 200});
            out.split2 = sh.splitAt('${ns}', {x: 400});
            out.move = sh.moveRange('${ns}', '${others[0]}', {x: 200}, {x: 400});
            print('RESULT ' + EJSON.stringify(out, {relaxed: true}));
        `;
        const out = await mongosh(ctx.cluster.routerUri(0, dbA), script);
        const r = resultLine(out);
        assert.equal(out.code, 0, `mongosh exit ${out.code}\n${out.stdout}\n${out.stderr}`);
        assert.equal(r.split1.ok, 1, JSON.stringify(r));
        assert.equal(r.split2.ok, 1, JSON.stringify(r));
        assert.equal(r.move.ok, 1, JSON.stringify(r));
        const mv = await admin({ moveChunk: ns, find: { x: 450 }, to: others[1] });
        assert.equal(mv.ok, 1, JSON.stringify(mv));
        const { chunks } = await ctx.cluster.placement(ns);
        const bound = (v) => (v?._bsontype === 'MinKey' || v?._bsontype === 'MaxKey' ? v._bsontype : Number(v));
        assert.deepEqual(
            chunks.map((c) => [bound(c.min.x), bound(c.max.x), c.shard]),
            [
                ['MinKey', 200, state.primaryA],
                [200, 400, others[0]],
                [400, 'MaxKey', others[1]],
            ],
        );
        const { perShard } = await ctx.cluster.checkConsistency(ns, N);
        assert.deepEqual(perShard, { [state.primaryA]: 200, [others[0]]: 200, [others[1]]: 200 });
        // Chunk versions: every chunk of the collection has a distinct lastmod, the moved ones newer.
        const versions = chunks.map((c) => `${c.lastmod.high}|${c.lastmod.low}`);
        assert.equal(new Set(versions).size, versions.length, versions.join(' '));
    });

    test('compound ranged key {a: 1, x: 1}: split on both fields, move, placement', async () => {
        const ns = `${dbA}.pair`;
        assert.ok(sharded(dbA, 'pair'), 'not sharded');
        const others = state.shards.filter((s) => s !== state.primaryA);
        assert.equal((await admin({ split: ns, middle: { a: 3, x: 300 } })).ok, 1);
        assert.equal((await admin({ split: ns, middle: { a: 5, x: 0 } })).ok, 1);
        const mv = await admin({ moveRange: ns, min: { a: 3, x: 300 }, max: { a: 5, x: 0 }, toShard: others[0] });
        assert.equal(mv.ok, 1, JSON.stringify(mv));
        const mv2 = await admin({ moveChunk: ns, find: { a: 6, x: 6 }, to: others[1] });
        assert.equal(mv2.ok, 1, JSON.stringify(mv2));
        const inMid = (d) => (d.a > 3 || (d.a === 3 && d.x >= 300)) && d.a < 5;
        const { perShard } = await ctx.cluster.checkConsistency(ns, N);
        assert.equal(perShard[others[0]], docs.filter(inMid).length, JSON.stringify(perShard));
        assert.equal(perShard[others[1]], docs.filter((d) => d.a >= 5).length, JSON.stringify(perShard));
        const c = (await router(1)).db(dbA).collection('pair');
        assert.deepEqual(await c.find({ a: 4 }).sort({ _id: 1 }).toArray(), docs.filter((d) => d.a === 4));
        const ex = await c.find({ a: 4 }).explain('queryPlanner');
        assert.deepEqual(explainShards(ex), [others[0]], 'a prefix equality targets the one owner');
    });

    test('sh.status() lists the shards, the database and the chunks', async () => {
        const text = await mongosh(ctx.cluster.routerUri(0, dbA), 'sh.status()');
        assert.equal(text.code, 0, `mongosh exit ${text.code}\n${text.stdout}\n${text.stderr}`);
        for (const s of state.shards) assert.match(text.stdout, new RegExp(s), `sh.status() text names ${s}`);
        assert.match(text.stdout, new RegExp(`${dbA}\\.ranged`));
        assert.match(text.stdout, /chunkMetadata/);
        assert.match(text.stdout, /'on shard'/);
        const script = `
            const st = sh.status().value;
            print('RESULT ' + EJSON.stringify({
                shards: st.shards.map(s => s._id),
                dbs: st.databases.map(d => ({id: d.database._id, primary: d.database.primary,
                    colls: Object.fromEntries(Object.entries(d.collections || {}).map(([ns, c]) =>
                        [ns, {key: c.shardKey, meta: c.chunkMetadata, chunks: (c.chunks || []).length}]))})),
            }, {relaxed: true}));
        `;
        const out = await mongosh(ctx.cluster.routerUri(0, dbA), script);
        assert.equal(out.code, 0, `mongosh exit ${out.code}\n${out.stdout}\n${out.stderr}`);
        const r = resultLine(out);
        assert.deepEqual(r.shards, state.shards);
        const dbEntry = r.dbs.find((d) => d.id === dbA);
        assert.ok(dbEntry, `database ${dbA} in sh.status(): ${JSON.stringify(r.dbs)}`);
        assert.equal(dbEntry.primary, state.primaryA);
        const ranged = dbEntry.colls[`${dbA}.ranged`];
        assert.ok(ranged, JSON.stringify(dbEntry));
        assert.deepEqual(ranged.key, { x: 1 });
        assert.equal(ranged.chunks, 3);
        assert.deepEqual(
            ranged.meta.sort((p, q) => (p.shard < q.shard ? -1 : 1)),
            state.shards.map((s) => ({ shard: s, nChunks: 1 })),
        );
        await forEachSoft(['hashed', 'compound'], (n) => n, async (name) => {
            const c = dbEntry.colls[`${dbA}.${name}`];
            assert.ok(c, `${name} in sh.status()`);
            const total = c.meta.reduce((n, m) => n + m.nChunks, 0);
            const { chunks } = await ctx.cluster.placement(`${dbA}.${name}`);
            assert.equal(total, chunks.length);
        });
    });

    test('getShardDistribution() shows the real per-shard distribution', async () => {
        await forEachSoft(['ranged', 'hashed'], (n) => n, async (name) => {
            const { perShard } = await ctx.cluster.checkConsistency(`${dbA}.${name}`, N);
            const script = `
                db.${name}.getShardDistribution();
                const r = db.${name}.getShardDistribution();
                print('RESULT ' + EJSON.stringify(r.value || r, {relaxed: true}));
            `;
            const out = await mongosh(ctx.cluster.routerUri(0, dbA), script);
            assert.equal(out.code, 0, `mongosh exit ${out.code}\n${out.stdout}\n${out.stderr}`);
            const r = resultLine(out);
            const got = {};
            for (const [k, v] of Object.entries(r)) {
                const m = /^Shard (\S+) at /.exec(k);
                if (m) got[m[1]] = v.docs;
            }
            const want = Object.fromEntries(Object.entries(perShard).filter(([, n]) => n > 0));
            const gotNonEmpty = Object.fromEntries(Object.entries(got).filter(([, n]) => n > 0));
            assert.deepEqual(gotNonEmpty, want, `${name}: ${JSON.stringify(r)}`);
            assert.equal(r.Totals.docs, N);
        });
    });

    test('reads through the router equal the single-node results', async () => {
        const expected = {
            page: docs
                .filter((d) => d.v >= 50)
                .sort(byKeys([['v', -1], ['_id', 1]]))
                .slice(7, 7 + 25),
            g3: docs.filter((d) => d.g === 3).map((d) => ({ _id: d._id, v: d.v })),
            first5: docs.slice(0, 5),
            last3: docs.slice(-3).reverse(),
            count12: docs.filter((d) => d.g === 1 || d.g === 2).length,
            distinctS: [...new Set(docs.map((d) => d.s))].sort(),
            distinctG: [...new Set(docs.filter((d) => d.v < 10).map((d) => d.g))].sort(),
            group: [0, 1, 2, 3, 4].map((g) => {
                const m = docs.filter((d) => d.v < 90 && d.g === g);
                return { _id: g, n: m.length, total: m.reduce((t, d) => t + d.v, 0), maxX: Math.max(...m.map((d) => d.x)) };
            }),
            top10: [...docs].sort(byKeys([['v', 1], ['_id', 1]])).slice(0, 10).map((d) => ({ _id: d._id, v: d.v })),
        };
        const combos = [0, 1].flatMap((i) => [dbA, dbB].flatMap((d) => Object.keys(kinds).map((n) => [i, d, n])));
        await forEachSoft(combos, ([i, d, n]) => `${d}.${n} via router${i}`, async ([i, dbName, name]) => {
            const where = `${dbName}.${name} via router${i}`;
            const c = (await router(i)).db(dbName).collection(name);
            assert.deepEqual(await c.find({}).sort({ _id: 1 }).batchSize(50).toArray(), docs, `${where}: all`);
            assert.deepEqual(
                await c.find({ v: { $gte: 50 } }).sort({ v: -1, _id: 1 }).skip(7).limit(25).toArray(),
                expected.page,
                `${where}: sort/skip/limit`,
            );
            assert.deepEqual(
                await c.find({ g: 3 }, { projection: { _id: 1, v: 1 } }).sort({ _id: 1 }).toArray(),
                expected.g3,
                `${where}: projection`,
            );
            assert.deepEqual(await c.find().sort({ _id: 1 }).limit(5).toArray(), expected.first5, where);
            assert.deepEqual(await c.find().sort({ x: -1 }).limit(3).toArray(), expected.last3, where);
            assert.equal((await c.find({}).limit(17).toArray()).length, 17, `${where}: limit without sort`);
            assert.equal(await c.countDocuments({}), N, `${where}: countDocuments`);
            assert.equal(await c.countDocuments({ g: { $in: [1, 2] } }), expected.count12, where);
            assert.equal(await c.countDocuments({}, { skip: 10, limit: 100 }), 100, `${where}: count skip/limit`);
            assert.equal(await c.estimatedDocumentCount(), N, `${where}: estimatedDocumentCount`);
            assert.deepEqual((await c.distinct('s')).sort(), expected.distinctS, `${where}: distinct`);
            assert.deepEqual((await c.distinct('g', { v: { $lt: 10 } })).sort(), expected.distinctG, where);
            const group = await c
                .aggregate([
                    { $match: { v: { $lt: 90 } } },
                    { $group: { _id: '$g', n: { $sum: 1 }, total: { $sum: '$v' }, maxX: { $max: '$x' } } },
                    { $sort: { _id: 1 } },
                ])
                .toArray();
            assert.deepEqual(group, expected.group, `${where}: $group`);
            const top = await c
                .aggregate([{ $sort: { v: 1, _id: 1 } }, { $limit: 10 }, { $project: { _id: 1, v: 1 } }])
                .toArray();
            assert.deepEqual(top, expected.top10, `${where}: $sort/$limit`);
            const cnt = await c.aggregate([{ $match: { a: 3 } }, { $count: 'n' }]).toArray();
            assert.deepEqual(cnt, [{ n: docs.filter((d) => d.a === 3).length }], `${where}: $count`);
        });
    });

    test('explain: an equality on the shard key targets exactly one shard', async () => {
        const r = await router();
        const cases = [
            ['ranged', { x: 250 }, { x: 250 }],
            ['hashed', { h: 17 }, { h: 17 }],
            ['compound', { a: 3, b: 's17' }, { a: 3, b: 's17' }],
            ['pair', { a: 3, x: 17 }, { a: 3, x: 17 }],
        ];
        await forEachSoft(cases, ([name]) => name, async ([name, filter, doc]) => {
            const { coll, chunks } = await ctx.cluster.placement(`${dbA}.${name}`);
            assert.ok(coll, `${dbA}.${name} is not sharded`);
            const owner = chunkFor(doc, coll.key, chunks).shard;
            const ex = await r.db(dbA).collection(name).find(filter).explain('queryPlanner');
            assert.deepEqual(explainShards(ex), [owner], `${name} ${JSON.stringify(filter)}`);
            if (ex.queryPlanner?.winningPlan?.stage) {
                assert.equal(ex.queryPlanner.winningPlan.stage, 'SINGLE_SHARD');
            }
        });
    });

    test('explain: a scatter query lists exactly the shards that own chunks', async () => {
        const r = await router();
        const cases = [
            [dbA, 'ranged'],
            [dbA, 'hashed'],
            [dbB, 'ranged'],
        ];
        await forEachSoft(cases, ([d, n]) => `${d}.${n}`, async ([dbName, name]) => {
            const { chunks } = await ctx.cluster.placement(`${dbName}.${name}`);
            const owners = [...new Set(chunks.map((c) => c.shard))].sort();
            const ex = await r.db(dbName).collection(name).find({ v: 7 }).explain('queryPlanner');
            assert.ok(chunks.length > 0, 'not sharded');
            assert.deepEqual(explainShards(ex), owners, `${dbName}.${name}`);
        });
    });

    test('addShard of a fourth `tessera shard` process, then a move to it', async () => {
        const extra = await ctx.cluster.startExtraShard();
        const out = await mongosh(
            ctx.cluster.routerUri(0, dbA),
            `print('RESULT ' + EJSON.stringify(sh.addShard('127.0.0.1:${extra.port}'), {relaxed: true}));`,
        );
        assert.equal(out.code, 0, `mongosh exit ${out.code}\n${out.stdout}\n${out.stderr}`);
        const added = resultLine(out);
        assert.equal(added.ok, 1, JSON.stringify(added));
        const name = added.shardAdded;
        assert.ok(name && !state.shards.includes(name), `new shard name ${name}`);
        const shards = await (await configDb()).collection('shards').find().sort({ _id: 1 }).toArray();
        assert.equal(shards.length, 4);
        assert.equal(shards.find((s) => s._id === name)?.host, `127.0.0.1:${extra.port}`);

        const ns = `${dbA}.ranged`;
        const mv = await admin({ moveChunk: ns, find: { x: 10 }, to: name });
        assert.equal(mv.ok, 1, JSON.stringify(mv));
        const { perShard } = await ctx.cluster.checkConsistency(ns, N);
        assert.equal(perShard[name], 200, JSON.stringify(perShard));
        assert.equal(perShard[state.primaryA], 0, JSON.stringify(perShard));
        // The new shard serves the moved range through both routers.
        for (const i of [0, 1]) {
            const c = (await router(i)).db(dbA).collection('ranged');
            assert.deepEqual(await c.find({ x: { $lt: 200 } }).sort({ _id: 1 }).toArray(), docs.slice(0, 200));
            assert.equal(await c.countDocuments({}), N);
        }
        const ex = await (await router()).db(dbA).collection('ranged').find({ x: 10 }).explain('queryPlanner');
        assert.deepEqual(explainShards(ex), [name]);
    });
});
