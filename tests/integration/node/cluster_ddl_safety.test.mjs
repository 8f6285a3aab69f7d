// DDL and admin commands of a sharded cluster that must neither lose writes nor misreport
// (issue "Ways a cluster silently loses or misreports data"), through the Node driver against
// `tessera up --shards 2 --routers 2`:
//  - shardCollection holds the writes it decides about (a failpoint between its emptiness check
//    and its commit; four clients inserting meanwhile);
//  - every shard holding a collection's data has its options and indexes;
//  - concurrent DDL on different namespaces does not stall;
//  - $shardedDataDistribution, serverStatus, reads of a missing database and moveChunk with
//    bounds that name no chunk tell the truth.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MongoClient } from 'mongodb';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster, startCluster } from './cluster_harness.mjs';

async function rejects(promise) {
    return promise.then(
        (v) => assert.fail(`expected an error, got ${JSON.stringify(v)}`),
        (e) => e,
    );
}

describeWithCluster(
    'DDL safety through routers (2 shards, 2 routers)',
    (ctx) => {
        const test = ctx.test;
        const router = (i = 0) => ctx.cluster.router(i);
        const admin = async (cmd, i = 0) => (await router(i)).db('admin').command(cmd);
        const cfgAdmin = async (cmd) => (await ctx.cluster.clientFor(ctx.cluster.configUri())).db('admin').command(cmd);
        const shardNames = async () =>
            (await (await router()).db('config').collection('shards').find().sort({ _id: 1 }).toArray()).map((s) => s._id);
        const primaryOf = async (db) => (await (await router()).db('config').collection('databases').findOne({ _id: db })).primary;
        const distribution = async (ns) => {
            const docs = await (await router()).db('admin').aggregate([{ $shardedDataDistribution: {} }]).toArray();
            return docs.find((d) => d.ns === ns);
        };

        // --- 5. shardCollection excludes the writes it decides about ---------------------------

        test('inserts that arrive while shardCollection decides wait and land where the commit says', async () => {
            const db = uniqueDbName('scwait');
            const ns = `${db}.events`;
            await (await router()).db(db).createCollection('events');
            await cfgAdmin({ configureFailPoint: 'shardCollectionHangBeforeCommit', mode: 'alwaysOn' });
            let sharded;
            const inserts = [];
            const settled = new Set();
            try {
                sharded = admin({ shardCollection: ns, key: { _id: 'hashed' } });
                sharded.catch(() => {});
                await cfgAdmin({ waitForFailPoint: 'shardCollectionHangBeforeCommit', timesEntered: 1, maxTimeMS: 30000 });
                // The emptiness check is done; the initial chunks (spread over both shards) are
                // decided but not committed. Four clients write now, through both routers.
                for (let client = 0; client < 4; client++) {
                    const c = (await router(client % 2)).db(db).collection('events');
                    inserts.push(
                        (async () => {
                            for (let i = 0; i < 10; i++) await c.insertOne({ _id: `c${client}-${i}`, client, i });
                        })().finally(() => settled.add(client)),
                    );
                }
                // Held, not failed: nothing settles while the commit is held back.
                await new Promise((resolve) => setTimeout(resolve, 500));
                assert.equal(settled.size, 0, 'an insert completed while shardCollection was deciding');
            } finally {
                await cfgAdmin({ configureFailPoint: 'shardCollectionHangBeforeCommit', mode: 'off' });
            }
            assert.equal((await sharded).ok, 1);
            await Promise.all(inserts);
            const c = (await router(1)).db(db).collection('events');
            assert.equal(await c.countDocuments(), 40);
            const { perShard } = await ctx.cluster.checkConsistency(ns, 40);
            assert.equal(Object.values(perShard).filter((n) => n > 0).length, 2, JSON.stringify(perShard));
            const dist = await distribution(ns);
            assert.equal(dist.shards.reduce((n, s) => n + s.numOrphanedDocs, 0), 0, JSON.stringify(dist));
            assert.equal(dist.shards.reduce((n, s) => n + s.numOwnedDocuments, 0), 40, JSON.stringify(dist));
        });

        // --- 4. $shardedDataDistribution counts owned documents once ------------------------------

        test('$shardedDataDistribution reports owned and orphaned documents exactly, also mid-migration', async () => {
            const db = uniqueDbName('sdd');
            const ns = `${db}.c`;
            await admin({ enableSharding: db });
            await admin({ shardCollection: ns, key: { k: 1 } });
            const c = (await router()).db(db).collection('c');
            await c.insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: i, k: i })));
            await admin({ split: ns, middle: { k: 50 } });
            const primary = await primaryOf(db);
            const other = (await shardNames()).find((s) => s !== primary);
            await cfgAdmin({ configureFailPoint: 'moveRangeHangAfterCommit', mode: 'alwaysOn' });
            let moved;
            try {
                moved = admin({ moveChunk: ns, find: { k: 75 }, to: other });
                moved.catch(() => {});
                await cfgAdmin({ waitForFailPoint: 'moveRangeHangAfterCommit', timesEntered: 1, maxTimeMS: 30000 });
                // Committed, the donor's copy not deleted yet: one side's 50 documents are orphans.
                const dist = await distribution(ns);
                const owned = dist.shards.reduce((n, s) => n + s.numOwnedDocuments, 0);
                const orphans = dist.shards.reduce((n, s) => n + s.numOrphanedDocs, 0);
                assert.equal(owned, 100, JSON.stringify(dist));
                assert.equal(orphans, 50, JSON.stringify(dist));
                for (const s of dist.shards) assert.ok(s.numOwnedDocuments >= 0 && s.ownedSizeBytes >= 0, JSON.stringify(s));
            } finally {
                await cfgAdmin({ configureFailPoint: 'moveRangeHangAfterCommit', mode: 'off' });
            }
            await moved;
            const after = await distribution(ns);
            assert.deepEqual(
                after.shards.map((s) => [s.shardName, s.numOwnedDocuments, s.numOrphanedDocs]).sort(),
                [
                    [other, 50, 0],
                    [primary, 50, 0],
                ].sort(),
            );
            await ctx.cluster.checkConsistency(ns, 100);
        });

        // --- 6. options and indexes on every shard that holds the collection ----------------------

        test('a validator and a default collation reach every shard, also by collMod and by migration', async () => {
            const db = uniqueDbName('opts');
            await admin({ enableSharding: db });
            const r = (await router()).db(db);
            await r.createCollection('people', {
                validator: { $jsonSchema: { required: ['name'] } },
                collation: { locale: 'en', strength: 2 },
            });
            // A non-simple default collation needs the simple collation named for the key.
            const e = await rejects(admin({ shardCollection: `${db}.people`, key: { _id: 'hashed' } }));
            assert.equal(e.code, 2, `${e}`);
            await admin({ shardCollection: `${db}.people`, key: { _id: 'hashed' }, collation: { locale: 'simple' } });
            const people = r.collection('people');
            const { chunks } = await ctx.cluster.placement(`${db}.people`);
            assert.equal(new Set(chunks.map((ch) => ch.shard)).size, 2, 'hashed chunks on both shards');
            // Invalid documents are refused whichever shard their _id hashes to.
            for (let i = 0; i < 20; i++) {
                const err = await rejects(people.insertOne({ _id: i, age: i }));
                assert.equal(err.code, 121, `doc ${i}: ${err}`);
            }
            for (const name of await shardNames()) {
                const info = await (await ctx.cluster.shardByName(name)).db(db).listCollections({ name: 'people' }).next();
                assert.ok(info?.options?.validator, `${name} has the validator`);
                assert.equal(info.options.collation?.locale, 'en', `${name} has the collation`);
            }
            // collMod through the router reaches every shard.
            await r.command({ collMod: 'people', validator: { $jsonSchema: { required: ['email'] } } });
            for (const name of await shardNames()) {
                const info = await (await ctx.cluster.shardByName(name)).db(db).listCollections({ name: 'people' }).next();
                assert.deepEqual(info.options.validator, { $jsonSchema: { required: ['email'] } }, name);
            }
            for (let i = 0; i < 20; i++) await people.insertOne({ _id: i, email: `${i}@x` });
            await ctx.cluster.checkConsistency(`${db}.people`, 20);
        });

        test('a shard that receives a chunk gets the donor options and exactly the donor indexes', async () => {
            const db = uniqueDbName('recv');
            const ns = `${db}.c`;
            await admin({ enableSharding: db });
            const primary = await primaryOf(db);
            const other = (await shardNames()).find((s) => s !== primary);
            const r = (await router()).db(db);
            await r.createCollection('c', { validator: { k: { $type: 'number' } } });
            await admin({ shardCollection: ns, key: { k: 1 } });
            await r.collection('c').insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: i, k: i })));
            await admin({ split: ns, middle: { k: 5 } });
            // First chunk ever on `other`: it gets the collection with the validator.
            await admin({ moveChunk: ns, find: { k: 7 }, to: other });
            const onOther = (await ctx.cluster.shardByName(other)).db(db);
            assert.ok((await onOther.listCollections({ name: 'c' }).next()).options.validator);
            // Give it back: `other` keeps an empty copy and owns nothing.
            await admin({ moveChunk: ns, find: { k: 7 }, to: primary });
            // Indexes created now go to the shards that hold data: not to `other`.
            await r.collection('c').createIndex({ tag: 1 }, { name: 'tag_1' });
            // Receiving again, it is brought in line with the donor.
            await admin({ moveChunk: ns, find: { k: 7 }, to: other });
            const names = (await onOther.collection('c').indexes()).map((i) => i.name).sort();
            assert.ok(names.includes('tag_1'), `indexes on the recipient: ${names}`);
            const err = await rejects(r.collection('c').insertOne({ _id: 100, k: 'seven' }));
            assert.equal(err.code, 121, `${err}`);
            await ctx.cluster.checkConsistency(ns, 10);
        });

        // --- 7. concurrent DDL on different namespaces ---------------------------------------------

        // The stall this guards against lasted 120-480 s (workers waiting on one DDL lock): a hang,
        // which the test's own timeout catches (not a wall-clock assertion on a busy machine).
        test('eight concurrent DDL operations on different namespaces all finish', { timeout: 90000 }, async () => {
            const dbs = Array.from({ length: 6 }, (_, i) => uniqueDbName(`ddl${i}`));
            const victim = uniqueDbName('ddlvictim');
            await (await router()).db(victim).collection('x').insertOne({ _id: 1 });
            const clients = await Promise.all([router(0), router(1)]);
            const ops = [
                ...dbs.map((db, i) =>
                    clients[i % 2].db('admin').command({ shardCollection: `${db}.c`, key: i % 2 ? { _id: 'hashed' } : { k: 1 } }),
                ),
                clients[0].db(victim).dropDatabase(),
                clients[1].db(dbs[0]).collection('side').createIndex({ a: 1 }),
            ];
            const results = await Promise.allSettled(ops);
            assert.deepEqual(
                results.filter((r) => r.status === 'rejected').map((r) => String(r.reason)),
                [],
            );
            for (const db of dbs) await ctx.cluster.checkConsistency(`${db}.c`, 0);
            assert.equal(await (await router()).db('config').collection('databases').countDocuments({ _id: victim }), 0);
        });

        // --- 9. reads of a database that does not exist are validated first -----------------------

        test('reads of a missing database validate their arguments, then answer empty', async () => {
            const db = (await router()).db(uniqueDbName('nodb'));
            let e = await rejects(db.command({ find: 'x', filter: { a: { $bogus: 1 } } }));
            assert.equal(e.code, 2, `${e}`);
            e = await rejects(db.command({ aggregate: 'x', pipeline: [{ $bogus: 1 }], cursor: {} }));
            assert.equal(e.code, 40324, `${e}`);
            e = await rejects(db.command({ count: 'x', query: { $where: {} } }));
            assert.ok(e instanceof Error);
            e = await rejects(db.command({ distinct: 'x', key: 'a', query: { a: { $in: 5 } } }));
            assert.equal(e.code, 2, `${e}`);
            e = await rejects(db.command({ find: 'x', sort: { a: 'sideways' } }));
            assert.ok(e instanceof Error);
            const ex = await db.command({ aggregate: 'x', pipeline: [{ $match: { a: 1 } }], explain: true });
            assert.equal(ex.ok, 1);
            assert.equal(ex.queryPlanner.winningPlan.stage, 'EOF');
            const exFind = await db.command({ explain: { find: 'x', filter: { a: 1 } }, verbosity: 'executionStats' });
            assert.equal(exFind.executionStats.nReturned, 0);
            e = await rejects(db.command({ explain: { find: 'x', filter: { a: { $bogus: 1 } } } }));
            assert.equal(e.code, 2, `${e}`);
            assert.deepEqual(await db.collection('x').find({ a: 1 }).toArray(), []);
            assert.equal(await db.collection('x').countDocuments({ a: 1 }), 0);
            assert.deepEqual(await db.collection('x').distinct('a'), []);
            // Stages that make documents still make them.
            const docs = await db.aggregate([{ $documents: [{ a: 1 }, { a: 2 }] }, { $match: { a: 2 } }]).toArray();
            assert.deepEqual(docs, [{ a: 2 }]);
        });

        // --- 10. admin commands that find nothing to act on say so -------------------------------

        test('moveChunk with bounds that name no chunk is refused and moves nothing', async () => {
            const db = uniqueDbName('mcb');
            const ns = `${db}.c`;
            await admin({ enableSharding: db });
            await admin({ shardCollection: ns, key: { k: 1 } });
            await (await router()).db(db).collection('c').insertMany([{ k: 1 }, { k: 6 }, { k: 12 }]);
            await admin({ split: ns, middle: { k: 10 } });
            const primary = await primaryOf(db);
            const other = (await shardNames()).find((s) => s !== primary);
            const e = await rejects(admin({ moveChunk: ns, bounds: [{ k: 5 }, { k: 7 }], to: other }));
            assert.equal(e.code, 656452, `${e}`);
            assert.match(e.message, /no chunk found with the shard key bounds/);
            const e2 = await rejects(admin({ split: ns, bounds: [{ k: 5 }, { k: 7 }] }));
            assert.ok(/no chunk found/.test(e2.message), `${e2}`);
            const { chunks } = await ctx.cluster.checkConsistency(ns, 3);
            assert.ok(chunks.every((ch) => ch.shard === primary), 'nothing moved');
            // The exact bounds of a chunk move it; the router split by another router is seen.
            await admin({ split: ns, middle: { k: 5 } }, 1);
            assert.equal((await admin({ moveChunk: ns, bounds: [{ k: 5 }, { k: 10 }], to: other })).ok, 1);
            await ctx.cluster.checkConsistency(ns, 3);
        });

        // --- 11. the router's serverStatus counts what its clients do -----------------------------

        // DDL × open cursors: a cursor over both shards (one cluster time, src/router/README.md)
        // whose collection or database is dropped through the other router fails with
        // QueryPlanKilled, as in MongoDB, once the router goes back to a shard for more, instead
        // of reading a collection that is gone. (What the router read before the drop it may
        // still return: each shard's first batch, and whole results a shard getMore brought.)
        test('a scatter cursor whose collection is dropped fails its getMore with QueryPlanKilled', async () => {
            const dbName = `ddlcur_${Date.now()}`;
            const [s0, s1] = await shardNames();
            assert.equal((await admin({ enableSharding: dbName, primaryShard: s0 })).ok, 1);
            const open = async (name) => {
                const ns = `${dbName}.${name}`;
                assert.equal((await admin({ shardCollection: ns, key: { x: 1 } })).ok, 1);
                await (await router()).db(dbName).collection(name).insertMany(Array.from({ length: 60 }, (_, i) => ({ _id: i, x: i })));
                assert.equal((await admin({ split: ns, middle: { x: 30 } })).ok, 1);
                assert.equal((await admin({ moveChunk: ns, find: { x: 30 }, to: s1, _waitForDelete: true })).ok, 1);
                const cursor = (await router()).db(dbName).collection(name).find({}, { batchSize: 4 });
                assert.notEqual(await cursor.next(), null);
                return cursor;
            };
            const killed = (err) => err.code === 175 && err.codeName === 'QueryPlanKilled';
            const drain = async (cursor) => { while (await cursor.next()) { /* to the end */ } };
            const dropped = await open('dropped');
            const other = await open('other');
            const kept = await open('kept');
            await (await router(1)).db(dbName).collection('dropped').drop();
            await assert.rejects(drain(dropped), killed, 'dropped');
            assert.equal((await kept.toArray()).length, 59, 'the other collection\'s cursor reads on');
            // A cursor of a collection in a database dropped as a whole.
            await (await router(1)).db(dbName).dropDatabase();
            await assert.rejects(drain(other), killed, 'dropDatabase');
        });

        test("the router's serverStatus counts operations and has a sharding section", async () => {
            const client = await router(1);
            const before = (await client.db('admin').command({ serverStatus: 1 })).opcounters;
            const c = client.db(uniqueDbName('ops')).collection('c');
            await c.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }]);
            await c.findOne({ _id: 1 });
            await c.find({}).toArray();
            await c.updateOne({ _id: 1 }, { $set: { a: 1 } });
            await c.deleteMany({});
            const status = await client.db('admin').command({ serverStatus: 1 });
            const after = status.opcounters;
            assert.ok(after.insert - before.insert >= 3, JSON.stringify([before, after]));
            assert.ok(after.query - before.query >= 2, JSON.stringify([before, after]));
            assert.ok(after.update - before.update >= 1, JSON.stringify([before, after]));
            assert.ok(after.delete - before.delete >= 1, JSON.stringify([before, after]));
            assert.equal(status.process, 'mongos');
            assert.equal(status.sharding.configsvrConnectionString, ctx.cluster.configHost);
            assert.ok(status.sharding.lastSeenConfigServerOpTime.ts, JSON.stringify(status.sharding));
            assert.ok(status.shardingStatistics.catalogCache.numDatabaseEntries >= 1);
        });
    },
    { shards: 2, routers: 2 },
);

// --- 8. `tessera up` passes its --workerThreads and --cacheSizeMB to the children ---------------

describe('tessera up passes its options to every child', () => {
    it('--workerThreads and --cacheSizeMB reach the config server, the shards and the router', async () => {
        const cluster = await startCluster({ shards: 1, routers: 1, args: ['--workerThreads', '5', '--cacheSizeMB', '64'] });
        try {
            const argvOf = async (uri) => {
                const client = new MongoClient(uri);
                await client.connect();
                try {
                    return (await client.db('admin').command({ getCmdLineOpts: 1 })).argv;
                } finally {
                    await client.close();
                }
            };
            const flag = (argv, name) => argv[argv.indexOf(name) + 1];
            for (const uri of [cluster.configUri(), cluster.shardUri(0), cluster.routerUri(0)]) {
                const argv = await argvOf(uri);
                assert.equal(flag(argv, '--workerThreads'), '5', `${uri}: ${argv}`);
                if (uri !== cluster.routerUri(0)) assert.equal(flag(argv, '--cacheSizeMB'), '64', `${uri}: ${argv}`);
            }
        } finally {
            await cluster.stop();
            cluster.cleanup();
        }
    });
});
