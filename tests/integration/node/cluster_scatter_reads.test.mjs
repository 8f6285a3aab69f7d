// Plain reads through routers see every cross-shard transaction whole (issue 42, point 1), with
// the Node driver against `tessera up --shards 2 --routers 2`. The user's check: a bank of
// accounts on two shards, transfers between them in transactions through both routers, while
// plain reads (no session, readConcern local, majority or none) through both routers add up the
// balances — and chunks of the accounts move between the shards all along. Before a read that
// reaches several shards read them all at one cluster time, 8 % of such reads saw one account
// debited and the other not yet credited. What must hold: every read, of every kind (find, its
// getMores, count, distinct, aggregate), sees the total and every account, and the cluster is
// consistent afterwards; and a document a transaction moves between the shards (deleted on one,
// inserted on the other) is counted exactly once by every count, distinct and aggregate.
import assert from 'node:assert/strict';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster, transferInTransaction } from './cluster_harness.mjs';

const kAccounts = 4;
const kInitial = 1000;
const kTotal = kAccounts * kInitial;
const kReads = 10000; // plain reads in all, through both routers

describeWithCluster(
    'plain scatter reads see whole transactions (2 shards, 2 routers)',
    (ctx) => {
        const test = ctx.test;
        const dbName = uniqueDbName('scatter');
        const ns = `${dbName}.accounts`;
        const router = (i = 0) => ctx.cluster.router(i);
        const admin = async (cmd, i = 0) => (await router(i)).db('admin').command(cmd);
        const accounts = async (i = 0) => (await router(i)).db(dbName).collection('accounts');
        let shards = [];
        const owner = {}; // account -> shard (this test makes every move)

        async function transfer(i, from, to, amount) {
            const client = await router(i);
            await transferInTransaction(client, client.db(dbName).collection('accounts'), from, to, amount);
        }

        test('setup: one chunk per account, the accounts alternating between the two shards', async () => {
            await admin({ enableSharding: dbName });
            await admin({ shardCollection: ns, key: { _id: 1 } });
            const docs = [];
            for (let i = 0; i < kAccounts; i++) docs.push({ _id: i, balance: kInitial });
            await (await accounts()).insertMany(docs);
            for (let i = 1; i < kAccounts; i++) await admin({ split: ns, middle: { _id: i } });
            shards = (await (await router()).db('config').collection('shards').find().sort({ _id: 1 }).toArray()).map((s) => s._id);
            assert.equal(shards.length, 2);
            for (let i = 0; i < kAccounts; i++) {
                owner[i] = shards[i % 2];
                await admin({ moveChunk: ns, find: { _id: i }, to: owner[i], _waitForDelete: true });
            }
            const { chunks } = await ctx.cluster.checkConsistency(ns, kAccounts);
            assert.equal(new Set(chunks.map((ch) => ch.shard)).size, 2);
        });

        test('bank: no plain read through either router sees half a transfer, with migrations running', async () => {
            let done = false;
            let transfers = 0;
            let migrations = 0;
            const kinds = {};
            const wrong = [];
            let wrongReads = 0;
            const note = (kind, what) => {
                wrongReads++;
                if (wrong.length < 20) wrong.push(`${kind}: ${what}`);
            };
            // Two transferring clients, one per router.
            const transferers = [0, 1].map(async (i) => {
                for (let n = 0; !done; n++) {
                    const from = (n + i) % kAccounts;
                    const to = (from + 1 + (n % (kAccounts - 1))) % kAccounts;
                    await transfer(i, from, to, 1 + (n % 37));
                    transfers++;
                }
            });
            // One mover: each account's chunk to the other shard, in turn.
            const mover = (async () => {
                for (let n = 0; !done; n++) {
                    const account = n % kAccounts;
                    const to = shards.find((s) => s !== owner[account]);
                    await admin({ moveChunk: ns, find: { _id: account }, to }, n % 2);
                    owner[account] = to;
                    migrations++;
                }
            })();
            // Readers: through both routers, every kind of read that may reach both shards.
            const reads = [
                ['find', async (c) => {
                    const docs = await c.find({}).toArray();
                    return { n: docs.length, total: docs.reduce((s, d) => s + d.balance, 0) };
                }],
                ['find majority, one document per batch', async (c) => {
                    const docs = await c.find({}, { batchSize: 1, readConcern: { level: 'majority' } }).toArray();
                    return { n: docs.length, total: docs.reduce((s, d) => s + d.balance, 0) };
                }],
                ['find sorted by balance', async (c) => {
                    const docs = await c.find({ _id: { $gte: 0 } }, { readConcern: { level: 'local' } }).sort({ balance: 1 }).toArray();
                    return { n: docs.length, total: docs.reduce((s, d) => s + d.balance, 0) };
                }],
                ['aggregate $group', async (c) => {
                    const [g] = await c.aggregate([{ $group: { _id: null, n: { $sum: 1 }, total: { $sum: '$balance' } } }]).toArray();
                    return { n: g.n, total: g.total };
                }],
                ['count and distinct', async (c, db) => {
                    // Neither sees balances as a sum: count must see every account once (no
                    // orphan, none missing mid-migration); distinct the same set of ids.
                    const n = await c.countDocuments({ balance: { $gte: -1e9 } });
                    const counted = (await db.command({ count: 'accounts', query: { balance: { $gte: -1e9 } } })).n;
                    const ids = await c.distinct('_id');
                    return { n: Math.min(n, counted, ids.length), nMax: Math.max(n, counted, ids.length), total: kTotal };
                }],
            ];
            let readCount = 0;
            const readers = [0, 1, 0, 1].map(async (i, r) => {
                const db = (await router(i)).db(dbName);
                const c = db.collection('accounts');
                for (let n = 0; readCount < kReads; n++) {
                    const [kind, read] = reads[(n + r) % reads.length];
                    const got = await read(c, db);
                    readCount++;
                    kinds[kind] = (kinds[kind] ?? 0) + 1;
                    if (got.n !== kAccounts || (got.nMax ?? got.n) !== kAccounts) note(kind, `saw ${got.n}..${got.nMax ?? got.n} accounts`);
                    if (got.total !== kTotal) note(kind, `saw a total of ${got.total}`);
                }
            });
            try {
                await Promise.all(readers);
            } finally {
                done = true;
                await Promise.all([...transferers, mover]);
            }
            console.log(`bank: ${readCount} plain reads (${JSON.stringify(kinds)}), ${transfers} transfers, ${migrations} migrations`);
            assert.deepEqual(wrong, [], `${wrongReads} plain reads saw part of a transfer or of a migration`);
            assert.ok(transfers >= 100, `only ${transfers} transfers ran beside the reads`);
            assert.ok(migrations >= 4, `only ${migrations} migrations ran beside the reads`);
            // Every cursor a read opened is gone: read to its end, or killed by the router when
            // its round was discarded (a shard stale, or refusing the time, mid-migration).
            for (const name of shards) {
                const shard = await ctx.cluster.shardByName(name);
                const open = (await shard.db('admin').command({ serverStatus: 1 })).metrics.cursor.open.total;
                assert.equal(open, 0, `${open} cursors left open on ${name}`);
            }
            const final = await (await accounts(1)).find({}).toArray();
            assert.equal(final.reduce((s, d) => s + d.balance, 0), kTotal);
            await ctx.cluster.checkConsistency(ns, kAccounts);
        });

        test('counts, distinct and aggregates see a document a transaction moves between shards exactly once', async () => {
            // Tokens sharded by _id: below 1000 on one shard, from 1000 on the other. A transaction
            // moves a token by deleting it on one side and inserting it (a new _id, the same
            // name) on the other, so between the two shards' commits a reader of each shard at
            // its own time could count it twice or not at all.
            const tokensNs = `${dbName}.tokens`;
            await admin({ shardCollection: tokensNs, key: { _id: 1 } });
            await admin({ split: tokensNs, middle: { _id: 1000 } });
            await admin({ moveChunk: tokensNs, find: { _id: 1000 }, to: shards[1], _waitForDelete: true });
            await admin({ moveChunk: tokensNs, find: { _id: 0 }, to: shards[0], _waitForDelete: true });
            const kTokens = 10;
            await (await router(0)).db(dbName).collection('tokens').insertMany(
                Array.from({ length: kTokens }, (_, i) => ({ _id: i, name: `t${i}` })));
            let done = false;
            let moves = 0;
            const mover = (async () => {
                const client = await router(0);
                const c = client.db(dbName).collection('tokens');
                for (let n = 0; !done; n++) {
                    const name = `t${n % kTokens}`;
                    const session = client.startSession();
                    try {
                        await session.withTransaction(async () => {
                            const doc = await c.findOne({ name }, { session });
                            await c.deleteOne({ _id: doc._id }, { session });
                            const to = doc._id < 1000 ? doc._id + 1000 : doc._id - 1000;
                            await c.insertOne({ _id: to, name }, { session });
                        });
                    } finally {
                        await session.endSession();
                    }
                    moves++;
                }
            })();
            const wrong = [];
            let reads = 0;
            try {
                const db = (await router(1)).db(dbName);
                const c = db.collection('tokens');
                for (let n = 0; n < 1500; n++) {
                    const counted = (await db.command({ count: 'tokens', query: { name: { $exists: true } } })).n;
                    const names = await c.distinct('name');
                    const [g] = await c.aggregate([{ $group: { _id: null, n: { $sum: 1 } } }]).toArray();
                    reads += 3;
                    if (counted !== kTokens || names.length !== kTokens || g.n !== kTokens) {
                        if (wrong.length < 10) wrong.push(`count ${counted}, distinct ${names.length}, aggregate ${g.n}`);
                    }
                }
            } finally {
                done = true;
                await mover;
            }
            console.log(`tokens: ${reads} reads beside ${moves} moves between the shards`);
            assert.deepEqual(wrong, []);
            assert.ok(moves >= 50, `only ${moves} moves ran beside the reads`);
        });
    },
    { shards: 2, routers: 2 },
);
