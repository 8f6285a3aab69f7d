// What one cluster time for a read of several shards costs (issue 42, point 1). Prints one JSON
// line.
//
// usage: node bench/scatter_reads.mjs --a URI_A --b URI_B [--reads 2000] [--repeat 4]
//
// A bank of 100 accounts sharded by _id, 50 on each of the two shards. One client on router A
// reads them all with a plain find (no session, readConcern local: the router sends both shards
// the same `$readAtClusterTime`), timed one read at a time. Compared in the same run with the
// way reads went before: each shard at its own latest time (router A's test-only failpoint
// `readEachShardAtItsLatestTime`; the cluster runs with --enableTestCommands). The two modes
// alternate `repeat` times in ABBA order; each figure is the median of the repetitions' p50s.
// Then the same reads while another client transfers money between the shards in transactions
// through router B, so that reads meet prepared transactions: their p50, p99 and worst latency
// in each mode — the worst wait a prepared transaction causes is the worst read with one time
// less the worst read without it. Loopback only.

import { arg, median, mongodb, nowUs, percentile } from './bench_util.mjs';

const { MongoClient } = mongodb;
const uriA = arg('a');
const uriB = arg('b');
const reads = Number(arg('reads', 2000));
const repeat = Number(arg('repeat', 4));
if (!uriA || !uriB) {
    console.error('usage: node bench/scatter_reads.mjs --a URI_A --b URI_B [--reads 2000] [--repeat 4]');
    process.exit(2);
}

const kAccounts = 100;
const kInitial = 1000;

const a = new MongoClient(uriA, { maxPoolSize: 1 });
const b = new MongoClient(uriB, { maxPoolSize: 1 });
await a.connect();
await b.connect();
const dbName = 'tessera_bench_scatter';
const accounts = a.db(dbName).collection('accounts');

async function setMode(mode) {
    await a.db('admin').command({
        configureFailPoint: 'readEachShardAtItsLatestTime',
        mode: mode === 'latest' ? 'alwaysOn' : 'off',
    });
}

// `n` plain reads of every account, one at a time: their latencies (µs). Each must see the
// whole bank.
async function timedReads(n) {
    const out = [];
    for (let i = 0; i < n; i++) {
        const t0 = nowUs();
        const docs = await accounts.find({}).toArray();
        out.push(nowUs() - t0);
        if (docs.length !== kAccounts) throw new Error(`a read saw ${docs.length} accounts`);
    }
    return out;
}

try {
    await a.db(dbName).dropDatabase();
    const shards = (await a.db('admin').command({ listShards: 1 })).shards.map((s) => s._id);
    if (shards.length < 2) throw new Error('needs a cluster with at least 2 shards');
    await a.db('admin').command({ enableSharding: dbName, primaryShard: shards[0] });
    await a.db('admin').command({ shardCollection: `${dbName}.accounts`, key: { _id: 1 } });
    const docs = [];
    for (let i = 0; i < kAccounts; i++) docs.push({ _id: i, balance: kInitial, pad: 'x'.repeat(200) });
    await accounts.insertMany(docs);
    await a.db('admin').command({ split: `${dbName}.accounts`, middle: { _id: kAccounts / 2 } });
    await a.db('admin').command({
        moveChunk: `${dbName}.accounts`, find: { _id: kAccounts / 2 }, to: shards[1], _waitForDelete: true,
    });
    await timedReads(200); // warm both paths' connections and caches
    await setMode('latest');
    await timedReads(200);

    // Alone: ABBA.
    const p50s = { one: [], latest: [] };
    for (let rep = 0; rep < repeat; rep++) {
        const order = rep % 2 === 0 ? ['one', 'latest'] : ['latest', 'one'];
        for (const mode of order) {
            await setMode(mode);
            p50s[mode].push(median(await timedReads(reads)));
        }
    }

    // Beside transfers through router B (a transaction across both shards, back to back).
    const withTransfers = {};
    for (const mode of ['one', 'latest', 'one', 'latest']) {
        await setMode(mode);
        let done = false;
        let transfers = 0;
        const transferer = (async () => {
            const c = b.db(dbName).collection('accounts');
            for (let n = 0; !done; n++) {
                const from = n % (kAccounts / 2);
                const to = kAccounts / 2 + ((n * 7) % (kAccounts / 2));
                const session = b.startSession();
                try {
                    await session.withTransaction(async () => {
                        await c.updateOne({ _id: from }, { $inc: { balance: -1 } }, { session });
                        await c.updateOne({ _id: to }, { $inc: { balance: 1 } }, { session });
                    });
                } finally {
                    await session.endSession();
                }
                transfers++;
            }
        })();
        let lat;
        try {
            lat = await timedReads(reads);
        } finally {
            done = true;
            await transferer;
        }
        const prev = withTransfers[mode] ?? { lat: [], transfers: 0 };
        withTransfers[mode] = { lat: prev.lat.concat(lat), transfers: prev.transfers + transfers };
    }
    await setMode('one');

    const result = { tool: 'scatter_reads', reads, repeat };
    result.one_p50_us = median(p50s.one);
    result.latest_p50_us = median(p50s.latest);
    for (const mode of ['one', 'latest']) {
        const { lat, transfers } = withTransfers[mode];
        result[`${mode}_with_transfers_p50_us`] = median(lat);
        result[`${mode}_with_transfers_p99_us`] = percentile(lat, 99);
        result[`${mode}_with_transfers_max_us`] = percentile(lat, 100);
        result[`${mode}_transfers`] = transfers;
    }
    console.log(JSON.stringify(result));
} finally {
    await a.db('admin').command({ configureFailPoint: 'readEachShardAtItsLatestTime', mode: 'off' }).catch(() => {});
    await a.close();
    await b.close();
}
