// A fuzzer of the cluster's internal commands (issue 40): mutated `_configsvr*`, `_shardsvr*`,
// `_flush*` and transaction commands sent to every role — the config server, both shards, a
// router and a single node. {_configsvrDropCollection: "keep"} once never answered and blocked
// every DDL on database "keep" for minutes (the lock manager waited on a lock its own operation
// held); this suite keeps looking for that class of bug.
//
// Each base command is mutated field by field (removed, each value of VALUES, an unknown field
// added), then by seeded random combinations, within a fixed number of messages per role. The
// oracle: every message is answered (ok or an error with a code) within MESSAGE_DEADLINE_MS, no
// process dies, and afterwards DDL on the fuzzed names still answers promptly.
//
// Knobs: TESSERA_FUZZ_SEED (default 40), TESSERA_FUZZ_RANDOM (random messages per role, default
// 400).
import assert from 'node:assert/strict';
import { Binary, Long, MaxKey, MinKey, ObjectId, Timestamp } from 'mongodb';
import { rng, startServer } from './harness.mjs';
import { describeWithCluster } from './cluster_harness.mjs';

const MESSAGE_DEADLINE_MS = 30000;
const SEED = Number(process.env.TESSERA_FUZZ_SEED || 40);
const RANDOM_PER_ROLE = Number(process.env.TESSERA_FUZZ_RANDOM || 400);

// Values a field or a command's target is replaced with: malformed names first, then every type.
const VALUES = [
    'keep', '', 'fuzz.c', 'fuzz.', '.c', 'fu$z.c', 'fuzz.c$', 'fuzz.\u0000c', `${'n'.repeat(70)}.c`,
    `fuzz.${'c'.repeat(300)}`, 'admin.fz', 'config.fz', 'local.fz', 'shard9', '127.0.0.1:1',
    1, 0, -1, 2147483648, 1e308, -0.5, new Long(-1), true, false, null,
    {}, { a: 1 }, { x: new MinKey() }, { x: new MaxKey() }, [], [1], [{}, {}], [{ x: 1 }, { x: 0 }],
    new MinKey(), new MaxKey(), new ObjectId(), new Timestamp({ t: 1, i: 1 }),
    new Binary(Buffer.from('xy')), new Date(0),
];

// Commands that would legitimately block the fuzzer's own later messages (a critical section
// entered and never left) are sent only in their harmless form.
function harmless(cmd) {
    const name = Object.keys(cmd)[0];
    if (/CriticalSection$/.test(name) && cmd.enter) return false;
    return true;
}

const range = { min: { x: 100 }, max: { x: 200 } };
const lsidTxn = { txnNumber: new Long(1), autocommit: false };

const CONFIG_COMMANDS = [
    { _configsvrAddShard: '127.0.0.1:1', name: 'shard9' },
    { _configsvrCreateDatabase: 'keep', primaryShard: 'shard0' },
    { _configsvrShardCollection: 'keep.c', key: { x: 1 }, unique: false, numInitialChunks: 2, collation: { locale: 'simple' }, implicitlyCreateIndex: true },
    { _configsvrSplitChunk: 'fuzz.c', middle: { x: 50 } },
    { _configsvrMergeChunks: 'fuzz.c', bounds: [{ x: 0 }, { x: 100 }] },
    { _configsvrMoveRange: 'fuzz.c', ...range, toShard: 'shard9', waitForDelete: false },
    { _configsvrMovePrimary: 'keep', to: 'shard9' },
    { _configsvrDropCollection: 'keep.c' },
    { _configsvrDropDatabase: 'keep' },
    { _configsvrBalancerStatus: 1 },
    { _configsvrShardDrainingStatus: 'shard0' },
    { _configsvrAddShardToZone: 'shard9', zone: 'Z' },
    { _configsvrRemoveShardFromZone: 'shard9', zone: 'Z' },
    { _configsvrUpdateZoneKeyRange: 'keep.c', min: { x: 0 }, max: { x: 10 }, zone: null },
    { _configsvrRefineCollectionShardKey: 'keep.c', key: { x: 1, y: 1 } },
    { _configsvrClearJumboFlag: 'fuzz.c', bounds: [{ x: 100 }, { x: 200 }] },
    { _configsvrConfigureCollectionBalancing: 'keep.c', chunkSize: 0 },
    { _configsvrBalancerCollectionStatus: 'fuzz.c' },
];

const SHARD_COMMANDS = [
    { _shardsvrSetShardIdentity: 1, shardName: 'shard9', configsvrConnectionString: '127.0.0.1:1', clusterId: new ObjectId() },
    { find: 'c', filter: {}, limit: 1, $retryableWriteStatus: { lsid: { id: new Binary(Buffer.alloc(16), 4) }, txnNumber: new Long(1), stmtId: 0 } },
    { _flushRoutingTableCacheUpdates: 'fuzz.c' },
    { _flushRoutingTableCacheUpdatesWithWriteConcern: 'keep.c' },
    { _flushDatabaseCacheUpdates: 'keep' },
    { _shardsvrMigrationCriticalSection: 'keep.c', enter: false, block: 'writes', reason: { command: 'fuzz' } },
    { _shardsvrDatabaseCriticalSection: 'keep', enter: false, reason: { command: 'fuzz' } },
    { _shardsvrMigrationStart: 'fuzz.c', ...range, migrationId: 'fz', toShard: 'shard9' },
    { _shardsvrMigrationEnd: 'fuzz.c', ...range, migrationId: 'fz', committed: false, waitForDelete: false },
    { _shardsvrReadRange: 'fuzz.c', ...range, batchBytes: 1024 },
    { _shardsvrTransferMods: 'fuzz.c', migrationId: 'fz' },
    { _shardsvrFetchSessionRecords: 'fuzz.c', migrationId: 'fz' },
    { _shardsvrMigrationRecordDonation: 'fuzz.c', ...range, migrationId: 'fz', docs: 1, bytes: 1 },
    { _shardsvrReceiveRange: 'fuzz.c', ...range, fromShard: 'shard9', fromHost: '127.0.0.1:1', migrationId: 'fz', p99BudgetFactor: 3 },
    { _shardsvrReceiveRangeCatchUp: 'fuzz.c', ...range, migrationId: 'fz' },
    { _shardsvrReceiveRangeEnd: 'fuzz.c', ...range, migrationId: 'fz', committed: false },
    { _shardsvrDeleteRange: 'fuzz.c', ...range },
    { _shardsvrCloneDatabase: 'keep', from: '127.0.0.1:1' },
    { _shardsvrDropUnshardedCollections: 'keep' },
    { _shardsvrClusterCollection: 'keep.c', key: { x: 1 } },
    { _shardsvrChunkStats: 'fuzz.c', ranges: [[{ x: 100 }, { x: 200 }]], exact: true },
    { _shardsvrSplitPoint: 'fuzz.c', ...range, maxChunkBytes: 1024 },
    { _shardsvrCoordinateCommitTransaction: 1, ...lsidTxn, participants: ['shard0'], stage: 'prepare', decision: 'commit', durablePrepare: false },
    { _shardsvrRecordRetryableWrite: 1, txnNumber: new Long(1), of: 'fuzz.c', result: {} },
    { prepareTransaction: 1, ...lsidTxn, coordinator: 'shard9', notifyCoordinatorWhenDurable: false },
    { commitTransaction: 1, ...lsidTxn, commitTimestamp: new Timestamp({ t: 1, i: 1 }) },
    { abortTransaction: 1, ...lsidTxn },
];

/** Mutations of one command, field by field: removed, replaced by each value, an extra field. */
function* fieldMutations(base) {
    const keys = Object.keys(base);
    for (const key of keys) {
        for (const v of VALUES) {
            const cmd = {};
            for (const k of keys) cmd[k] = k === key ? v : base[k];
            yield cmd;
        }
        if (key !== keys[0]) {
            const cmd = { ...base };
            delete cmd[key];
            yield cmd;
        }
    }
    yield { ...base, fuzzUnknownField: 1 };
}

/** Random combinations: each field replaced with probability 1/3. */
function* randomMutations(bases, count, next) {
    for (let i = 0; i < count; i++) {
        const base = bases[Math.floor(next() * bases.length)];
        const cmd = {};
        for (const [k, v] of Object.entries(base)) {
            const r = next();
            if (r < 0.33) cmd[k] = VALUES[Math.floor(next() * VALUES.length)];
            else if (r < 0.4 && k !== Object.keys(base)[0]) continue;
            else cmd[k] = v;
        }
        yield cmd;
    }
}

/** Sends every mutation; returns how many replies came, and the slowest. */
async function fuzzRole(client, label, bases) {
    const admin = client.db('admin');
    const next = rng(SEED);
    let sent = 0;
    let slowest = { ms: 0, cmd: null };
    const send = async (cmd) => {
        if (!harmless(cmd)) return;
        const start = Date.now();
        let timer;
        const deadline = new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`${label}: no answer within ${MESSAGE_DEADLINE_MS} ms to ${JSON.stringify(cmd)}`)), MESSAGE_DEADLINE_MS);
        });
        try {
            await Promise.race([admin.command(cmd).catch((err) => {
                // An error reply carries a code; a network error means the process went away.
                if (err.code === undefined && !/no such command|CommandNotFound/.test(err.message)) {
                    throw new Error(`${label}: ${err.name} ${err.message} for ${JSON.stringify(cmd)}`);
                }
            }), deadline]);
        } finally {
            clearTimeout(timer);
        }
        const ms = Date.now() - start;
        if (ms > slowest.ms) slowest = { ms, cmd };
        sent++;
    };
    for (const base of bases) {
        for (const cmd of fieldMutations(base)) await send(cmd);
    }
    for (const cmd of randomMutations(bases, RANDOM_PER_ROLE, next)) await send(cmd);
    return { sent, slowest };
}

describeWithCluster('internal commands fuzzed on every role', (ctx) => {
    const test = ctx.test;
    const c = () => ctx.cluster;
    const admin = async (cmd) => (await c().router()).db('admin').command(cmd);

    test('mutated internal commands: every one answered, no process dies, DDL still answers', async () => {
        // A sharded collection for the commands that name one: [MinKey, 100) [100, 200) [200, MaxKey).
        assert.equal((await admin({ enableSharding: 'fuzz' })).ok, 1);
        assert.equal((await admin({ shardCollection: 'fuzz.c', key: { x: 1 } })).ok, 1);
        await (await c().router()).db('fuzz').collection('c').insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: i, x: i })));
        for (const x of [100, 200]) assert.equal((await admin({ split: 'fuzz.c', middle: { x } })).ok, 1);
        // One the fuzzer never names: its placement and documents must come through untouched.
        assert.equal((await admin({ shardCollection: 'fuzz.untouched', key: { x: 1 } })).ok, 1);
        await (await c().router()).db('fuzz').collection('untouched').insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: i, x: i })));
        assert.equal((await admin({ split: 'fuzz.untouched', middle: { x: 150 } })).ok, 1);
        assert.equal((await admin({ moveRange: 'fuzz.untouched', min: { x: 150 }, toShard: 'shard1' })).ok, 1);

        const single = await startServer({ args: ['--enableTestCommands'] });
        const singleClient = await single.client();
        const roles = [
            ['config', await c().config(), [...CONFIG_COMMANDS, ...SHARD_COMMANDS]],
            ['shard0', await c().shard(0), [...SHARD_COMMANDS, ...CONFIG_COMMANDS]],
            ['shard1', await c().shard(1), SHARD_COMMANDS],
            ['router', await c().router(), [...CONFIG_COMMANDS, ...SHARD_COMMANDS]],
            ['single node', singleClient, [...SHARD_COMMANDS, ...CONFIG_COMMANDS]],
        ];
        const report = [];
        try {
            for (const [label, client, bases] of roles) {
                const { sent, slowest } = await fuzzRole(client, label, bases);
                assert.ok(sent > 500, `${label}: ${sent} messages`);
                report.push(`${label}: ${sent} messages, slowest ${slowest.ms} ms`);
            }
            // Every process is alive and answers.
            for (const [label, client] of roles) {
                assert.equal((await client.db('admin').command({ ping: 1 })).ok, 1, `${label} answers a ping`);
            }
            assert.ok(c().alive, 'tessera up and its children are alive');
            assert.ok(single.alive, 'the single node is alive');
        } finally {
            await singleClient.close();
            await single.stop();
            single.cleanup();
        }
        // The names the fuzzer used are still usable by DDL, promptly (the hang blocked these).
        const quick = (p, what) => Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what} hung`)), 20000))]);
        await quick(admin({ enableSharding: 'keep' }).catch(() => {}), 'enableSharding keep');
        await quick(admin({ shardCollection: 'keep.c2', key: { x: 1 } }), 'shardCollection keep.c2');
        await quick(admin({ split: 'keep.c2', middle: { x: 5 } }), 'split keep.c2');
        await quick((await c().router()).db('keep').dropDatabase(), 'dropDatabase keep');
        await quick(admin({ moveRange: 'fuzz.c', min: { x: 100 }, max: { x: 200 }, toShard: 'shard1' }).catch((e) => {
            if (e.code === undefined) throw e;
        }), 'moveRange fuzz.c');
        await c().checkConsistency('fuzz.untouched', 300);
        console.log(report.join('\n'));
    });
}, { shards: 2, routers: 1 });
