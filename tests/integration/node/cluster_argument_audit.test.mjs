// The audit of the fields a router strips or passes through (src/router/README.md "Fields"):
// for every generic argument, and for every router command's own arguments, the decision —
// carried out, forwarded with its meaning, or refused with MongoDB's error — asserted through the
// Node driver against `tessera up --shards 2 --routers 1`. A field this file does not list is
// refused as unknown (40415) by the router's own commands.
import assert from 'node:assert/strict';
import { BSON, MongoClient } from 'mongodb';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster } from './cluster_harness.mjs';

const { Long, Timestamp } = BSON;

async function outcome(promise) {
    try {
        const r = await promise;
        if (r.writeConcernError) return { ok: r.ok, reply: r, wce: r.writeConcernError.code };
        return { ok: r.ok, reply: r };
    } catch (e) {
        // The command ran, and its write concern could not be met (the driver may throw it).
        if (e.name === 'MongoWriteConcernError') return { ok: 1, wce: e.code, message: e.message };
        return { code: e.originalError?.code ?? e.code, message: e.message };
    }
}

describeWithCluster(
    'the fields a router carries out, forwards or refuses',
    (ctx) => {
        const test = ctx.test;
        const db = uniqueDbName('audit');
        const router = () => ctx.cluster.router(0);
        const run = async (cmd, dbName = db) => outcome((await router()).db(dbName).command(cmd));

        test('setup: a sharded collection on both shards', async () => {
            const admin = (await router()).db('admin');
            await admin.command({ enableSharding: db });
            await admin.command({ shardCollection: `${db}.c`, key: { _id: 'hashed' } });
            await (await router()).db(db).collection('c').insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }]);
        });

        // [field value, command, expected]: expected is 'ok', a server error code, or 'wce <code>'
        // (it ran, and its reply has that writeConcernError). The txnNumbers grow: a session's
        // retryable writes and transactions share one order.
        const generic = [
            ['maxTimeMS', { find: 'c', maxTimeMS: 5000 }, 'ok'],
            ['comment', { find: 'c', comment: 'audit' }, 'ok'],
            ['txnNumber on a read', { find: 'c', txnNumber: Long.fromNumber(1) }, 50768],
            ['txnNumber on a retryable write', { insert: 'c', documents: [{ _id: 10 }], txnNumber: Long.fromNumber(2) }, 'ok'],
            ['autocommit without a transaction', { find: 'c', txnNumber: Long.fromNumber(3), autocommit: false }, 251],
            ['startTransaction', { find: 'c', txnNumber: Long.fromNumber(4), startTransaction: true, autocommit: false }, 'ok'],
            ['autocommit: true', { find: 'c', txnNumber: Long.fromNumber(5), startTransaction: true, autocommit: true }, 72],
            ['readConcern local', { find: 'c', readConcern: { level: 'local' } }, 'ok'],
            ['readConcern available', { find: 'c', readConcern: { level: 'available' } }, 'ok'],
            ['readConcern majority', { find: 'c', readConcern: { level: 'majority' } }, 'ok'],
            ['readConcern linearizable', { count: 'c', readConcern: { level: 'linearizable' } }, 'ok'],
            ['readConcern snapshot', { find: 'c', readConcern: { level: 'snapshot' } }, 'ok'],
            ['readConcern snapshot at a cluster time', { find: 'c', readConcern: { level: 'snapshot', atClusterTime: new Timestamp({ t: Math.floor(Date.now() / 1000) - 1, i: 1 }) } }, 'ok'],
            ['readConcern snapshot on count', { count: 'c', readConcern: { level: 'snapshot' } }, 72],
            ['readConcern snapshot on a write', { insert: 'c', documents: [{ _id: 19 }], readConcern: { level: 'snapshot' } }, 72],
            ['readConcern afterClusterTime', { find: 'c', readConcern: { level: 'majority', afterClusterTime: new Timestamp({ t: 1, i: 1 }) } }, 'ok'],
            ['readConcern atClusterTime outside a transaction', { find: 'c', readConcern: { level: 'majority', atClusterTime: new Timestamp({ t: 1, i: 1 }) } }, 72],
            ['readConcern bad level', { find: 'c', readConcern: { level: 'sometimes' } }, 2],
            ['readConcern majority on a write', { insert: 'c', documents: [{ _id: 11 }], readConcern: { level: 'majority' } }, 72],
            ['writeConcern majority', { insert: 'c', documents: [{ _id: 12 }], writeConcern: { w: 'majority' } }, 'ok'],
            ['writeConcern j', { insert: 'c', documents: [{ _id: 13 }], writeConcern: { w: 1, j: true, wtimeout: 100 } }, 'ok'],
            // As a replica set primary does: the write runs, then its write concern fails.
            ['writeConcern w: 2', { insert: 'c', documents: [{ _id: 14 }], writeConcern: { w: 2 } }, 'wce 100'],
            ['writeConcern w: 2 on a read', { find: 'c', writeConcern: { w: 2 } }, 100],
            ['writeConcern tag', { insert: 'c', documents: [{ _id: 15 }], writeConcern: { w: 'dc1' } }, 79],
            ['writeConcern unknown field', { insert: 'c', documents: [{ _id: 16 }], writeConcern: { w: 1, x: 1 } }, 40415],
            ['$readPreference secondaryPreferred', { find: 'c', $readPreference: { mode: 'secondaryPreferred' } }, 'ok'],
            ['$readPreference nearest', { find: 'c', $readPreference: { mode: 'nearest' } }, 'ok'],
            ['$readPreference secondary', { find: 'c', $readPreference: { mode: 'secondary' } }, 133],
            ['$readPreference nearest with tags', { find: 'c', $readPreference: { mode: 'nearest', tags: [{ dc: 'x' }] } }, 133],
            ['apiVersion 1', { find: 'c', apiVersion: '1', apiStrict: true }, 'ok'],
            ['apiVersion 2', { find: 'c', apiVersion: '2' }, 322],
            ['apiStrict without apiVersion', { find: 'c', apiStrict: true }, 4886600],
            ['apiStrict outside API 1', { listCommands: 1, apiVersion: '1', apiStrict: true }, 323],
            ['shardVersion from a client', { find: 'c', shardVersion: [new Timestamp({ t: 1, i: 0 }), new BSON.ObjectId()] }, 72],
            ['databaseVersion from a client', { find: 'c', databaseVersion: { uuid: new BSON.UUID(), timestamp: new Timestamp({ t: 1, i: 1 }), lastMod: 1 } }, 72],
            ['$clusterTime', { find: 'c', $clusterTime: { clusterTime: new Timestamp({ t: 1, i: 1 }), signature: {} } }, 'ok'],
            ['stmtIds', { insert: 'c', documents: [{ _id: 17 }], stmtIds: [0] }, 72],
            ['$readAtClusterTime from a client', { find: 'c', $readAtClusterTime: new Timestamp({ t: 1, i: 1 }) }, 72],
            ['$retryableWriteStatus from a client', { find: 'c', $retryableWriteStatus: { lsid: { id: new BSON.UUID() }, txnNumber: BSON.Long.fromNumber(1), stmtId: 0 } }, 72],
            ['$audit', { find: 'c', $audit: {} }, 72],
            ['$client', { find: 'c', $client: {} }, 72],
            ['mayBypassWriteBlocking', { insert: 'c', documents: [{ _id: 18 }], mayBypassWriteBlocking: true }, 72],
            ['$configTime', { find: 'c', $configTime: new Timestamp({ t: 1, i: 1 }) }, 72],
            ['$topologyTime', { find: 'c', $topologyTime: new Timestamp({ t: 1, i: 1 }) }, 72],
        ];
        test('every generic argument gets its decision through the router', async () => {
            const wrong = [];
            for (const [label, cmd, expected] of generic) {
                const got = await run(cmd);
                const gotKey = got.wce !== undefined ? `wce ${got.wce}` : got.code === undefined ? 'ok' : got.code;
                if (gotKey !== expected) wrong.push(`${label}: expected ${expected}, got ${JSON.stringify(got)}`);
            }
            assert.deepEqual(wrong, []);
            // What the writes that succeeded wrote, once each.
            const c = (await router()).db(db).collection('c');
            assert.deepEqual((await c.find({ _id: { $gte: 10 } }).sort({ _id: 1 }).toArray()).map((d) => d._id), [10, 12, 13, 14]);
        });

        test('a shard reached directly gossips cluster time, as a router does, and refuses what a router refuses', async () => {
            const shard = await ctx.cluster.shard(0);
            // A shard's replies carry operationTime, and it takes $clusterTime and afterClusterTime
            // back (causally consistent sessions on a shard); a router's carry both as a mongos's.
            const got = await outcome(shard.db(db).command({ find: 'c', $clusterTime: { clusterTime: new Timestamp({ t: 1, i: 1 }) } }));
            assert.equal(got.ok, 1, JSON.stringify(got));
            assert.ok(got.reply.operationTime, JSON.stringify(got));
            const viaRouter = await run({ find: 'c', $clusterTime: { clusterTime: new Timestamp({ t: 1, i: 1 }) } });
            assert.equal(viaRouter.ok, 1, JSON.stringify(viaRouter));
            assert.ok(viaRouter.reply.operationTime && viaRouter.reply.$clusterTime, JSON.stringify(viaRouter));
            const wc = await outcome(shard.db(db).command({ insert: 'c', documents: [{ _id: 99 }], writeConcern: { w: 3 } }));
            assert.equal(wc.wce, 100, JSON.stringify(wc));
            // The one cluster time a router reads several shards at: a shard takes it on reads
            // outside a transaction, at a level that has no time of its own, and nowhere else.
            const at = got.reply.operationTime;
            const timed = await outcome(shard.db(db).command({ find: 'c', $readAtClusterTime: at }));
            assert.equal(timed.ok, 1, JSON.stringify(timed));
            assert.equal(timed.reply.cursor.atClusterTime?.toString(), at.toString(), JSON.stringify(timed));
            for (const cmd of [
                { insert: 'c', documents: [{ _id: 98 }], $readAtClusterTime: at },
                { find: 'c', readConcern: { level: 'snapshot' }, $readAtClusterTime: at },
                { find: 'c', readConcern: { level: 'linearizable' }, $readAtClusterTime: at },
                { find: 'c', $readAtClusterTime: new Timestamp({ t: 0, i: 0 }) },
                { aggregate: 'c', pipeline: [{ $out: 'd' }], cursor: {}, $readAtClusterTime: at },
            ]) {
                const refused = await outcome(shard.db(db).command(cmd));
                assert.equal(refused.code, 72, `${JSON.stringify(cmd)}: ${JSON.stringify(refused)}`);
            }
            assert.equal(await shard.db(db).collection('c').countDocuments({ _id: 98 }), 0);
            // A router's question, with the read phase's find of a write without shard key,
            // whether this shard executed a retryable statement: on find only, in its shape.
            const question = { lsid: { id: new BSON.UUID() }, txnNumber: BSON.Long.fromNumber(3), stmtId: 0 };
            const asked = await outcome(shard.db(db).command({ find: 'c', filter: { _id: 1 }, limit: 1, $retryableWriteStatus: question }));
            assert.equal(asked.ok, 1, JSON.stringify(asked));
            assert.equal(asked.reply.retryableWriteExecuted, false, JSON.stringify(asked));
            for (const [cmd, code] of [
                [{ insert: 'c', documents: [{ _id: 97 }], $retryableWriteStatus: question }, 72],
                [{ count: 'c', $retryableWriteStatus: question }, 72],
                [{ ping: 1, $retryableWriteStatus: question }, 72],
                [{ find: 'c', $retryableWriteStatus: { ...question, stmtId: 'x' } }, 14],
                [{ find: 'c', $retryableWriteStatus: { ...question, txnNumber: 3 } }, 14],
                [{ find: 'c', $retryableWriteStatus: { ...question, extra: 1 } }, 72],
                [{ find: 'c', $retryableWriteStatus: 1 }, 14],
            ]) {
                const refused = await outcome(shard.db(db).command(cmd));
                assert.equal(refused.code, code, `${JSON.stringify(cmd)}: ${JSON.stringify(refused)}`);
            }
            assert.equal(await shard.db(db).collection('c').countDocuments({ _id: 97 }), 0);
            // Read at that time, on a shard directly: a later insert is not seen, by a find or by
            // a count of everything (which then scans instead of answering the latest count).
            const plain = shard.db(db).collection('plain');
            await plain.insertOne({ _id: 1 });
            const before = (await shard.db(db).command({ find: 'plain', filter: {} })).operationTime;
            await plain.insertOne({ _id: 2 });
            const seen = await shard.db(db).command({ find: 'plain', filter: {}, $readAtClusterTime: before });
            assert.deepEqual(seen.cursor.firstBatch.map((d) => d._id), [1]);
            const counted = await shard.db(db).command({ count: 'plain', $readAtClusterTime: before });
            assert.equal(counted.n, 1);
            assert.equal((await shard.db(db).command({ count: 'plain' })).n, 2);
        });

        // The router's own commands: an unknown field is refused, not dropped.
        const own = [
            { enableSharding: db, bogus: 1 },
            { shardCollection: `${db}.d`, key: { a: 1 }, bogus: 1 },
            { split: `${db}.c`, middle: { _id: 0 }, bogus: 1 },
            { mergeChunks: `${db}.c`, bounds: [{ _id: 0 }, { _id: 1 }], bogus: 1 },
            { moveChunk: `${db}.c`, bounds: [{ _id: 0 }, { _id: 1 }], to: 'shard0', bogus: 1 },
            { moveRange: `${db}.c`, min: { _id: 0 }, toShard: 'shard0', bogus: 1 },
            { movePrimary: db, to: 'shard0', bogus: 1 },
            { addShard: '127.0.0.1:1', maxSize: 10 },
            { listShards: 1, bogus: 1 },
            { getShardMap: 1, bogus: 1 },
            { flushRouterConfig: 1, bogus: 1 },
            { getShardVersion: `${db}.c`, bogus: 1 },
            { balancerStatus: 1, bogus: 1 },
            { balancerStart: 1, bogus: 1 },
            { balancerStop: 1, bogus: 1 },
        ];
        test("the router's own admin commands refuse unknown fields (40415)", async () => {
            const wrong = [];
            for (const cmd of own) {
                const got = await run(cmd, 'admin');
                if (got.code !== 40415) wrong.push(`${Object.keys(cmd)[0]}: ${JSON.stringify(got)}`);
            }
            for (const cmd of [{ getMore: Long.fromNumber(1), collection: 'c', bogus: 1 }, { killCursors: 'c', cursors: [], bogus: 1 }]) {
                const got = await run(cmd);
                if (got.code !== 40415) wrong.push(`${Object.keys(cmd)[0]}: ${JSON.stringify(got)}`);
            }
            assert.deepEqual(wrong, []);
        });

        test('shardCollection options it cannot carry out are refused', async () => {
            const admin = async (cmd) => run(cmd, 'admin');
            assert.equal((await admin({ shardCollection: `${db}.z`, key: { _id: 'hashed' }, presplitHashedZones: true })).code, 72);
            assert.equal((await admin({ shardCollection: `${db}.t`, key: { m: 1 }, timeseries: { timeField: 't' } })).code, 238);
            assert.equal((await admin({ shardCollection: `${db}.u`, key: { u: 1 }, unique: true, enforceUniquenessCheck: false })).code, 72);
            const noIndex = await admin({ shardCollection: `${db}.v`, key: { v: 1 }, implicitlyCreateIndex: false });
            assert.equal(noIndex.code, 72, JSON.stringify(noIndex));
            assert.equal(await (await router()).db('config').collection('collections').countDocuments({ _id: { $in: [`${db}.z`, `${db}.t`, `${db}.u`, `${db}.v`] } }), 0);
            // Accepted with their meaning.
            assert.equal((await admin({ shardCollection: `${db}.w`, key: { w: 1 }, presplitHashedZones: false, enforceUniquenessCheck: true })).ok, 1);
        });

        test('a retried write through the config passthrough is applied once', async () => {
            const client = new MongoClient(ctx.cluster.routerUri(0), { monitorCommands: true });
            await client.connect();
            const sent = [];
            client.on('commandStarted', (e) => e.commandName === 'update' && sent.push(e.command));
            try {
                const settings = client.db('config').collection('settings');
                const session = client.startSession();
                const cmd = { update: 'settings', updates: [{ q: { _id: 'audit' }, u: { $inc: { n: 1 } }, upsert: true }], txnNumber: Long.fromNumber(1) };
                const first = await client.db('config').command(cmd, { session });
                const second = await client.db('config').command(cmd, { session });
                await session.endSession();
                assert.equal(first.n, 1);
                assert.equal(second.n, 1, 'the retry answers the first reply');
                assert.equal((await settings.findOne({ _id: 'audit' })).n, 1, 'applied once');
                assert.ok(sent.every((c) => c.txnNumber !== undefined));
            } finally {
                await client.close();
            }
        });
    },
    { shards: 2, routers: 1 },
);
