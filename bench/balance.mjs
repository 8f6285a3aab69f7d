// The balancer on the seed's data (issue 13, point 8): 2,000,000 orders of ≈ 340 bytes loaded
// unsharded through the router, sharded by hashed _id with the default chunk size, and left to
// the balancer; then a third shard is added and later drained and removed. Nothing is moved by
// hand. Prints one JSON line (bench/balance.sh turns it into the report).
//
// usage: node bench/balance.mjs --uri ROUTER_URI [--docs 2000000] [--third-shard HOST:PORT]
//        [--tolerance 1.10] [--timeout-s 1800]
//
//  - phase "shard": from shardCollection until the collection is balanced: owned bytes per shard
//    ($shardedDataDistribution, owned documents only) within max/min ≤ tolerance and
//    balancerCollectionStatus compliant, twice in a row one second apart;
//  - phase "add": addShard of the already running third shard, until balanced over three;
//  - phase "drain": removeShard (startShardDraining) until shardDrainingStatus reports nothing
//    left, then removeShard again (completed): time, MB that were on the shard, MB/s;
//  - throughout, estimatedDocumentCount through the router once a second: every sample must be
//    exactly --docs (no orphan or in-flight copy ever counted).
// Loopback only; stops by itself (each phase fails after --timeout-s).

import { mongodb, arg } from './bench_util.mjs';

import { order } from './orders.mjs';

const { MongoClient } = mongodb;
const uri = arg('uri');
const docs = Number(arg('docs', '2000000'));
const thirdShard = arg('third-shard', '');
const tolerance = Number(arg('tolerance', '1.10'));
const timeoutMs = Number(arg('timeout-s', '1800')) * 1000;
if (!uri) {
    console.error('usage: node bench/balance.mjs --uri ROUTER_URI [--docs 2000000] [--third-shard HOST:PORT] [--tolerance 1.10] [--timeout-s 1800]');
    process.exit(2);
}

const DB = 'bench_balance';
const NS = `${DB}.orders`;
const MB = 1024 * 1024;


const log = (msg) => console.error(`[balance] ${new Date().toISOString().slice(11, 19)} ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const client = new MongoClient(uri, { maxPoolSize: 16 });
await client.connect();
const admin = client.db('admin');
const config = client.db('config');
const coll = client.db(DB).collection('orders');

/** Owned documents and bytes per shard, from the router's $shardedDataDistribution. */
async function distribution() {
    const rows = await admin.aggregate([{ $shardedDataDistribution: {} }, { $match: { ns: NS } }]).toArray();
    const out = {};
    for (const s of rows[0]?.shards ?? []) {
        out[s.shardName] = { docs: Number(s.numOwnedDocuments), bytes: Number(s.ownedSizeBytes), orphans: Number(s.numOrphanedDocs) };
    }
    return out;
}

async function chunkCounts() {
    const uuid = (await config.collection('collections').findOne({ _id: NS }))?.uuid;
    const rows = await config.collection('chunks').aggregate([
        { $match: uuid ? { uuid } : { ns: NS } },
        { $group: { _id: '$shard', n: { $sum: 1 } } },
    ]).toArray();
    return Object.fromEntries(rows.map((r) => [r._id, r.n]));
}

async function migrationsSince(t) {
    return config.collection('changelog').countDocuments({ what: 'moveChunk.commit', time: { $gte: t } });
}

/** max/min of owned bytes over `shards` (a shard with nothing counts as 0: never balanced). */
function ratio(dist, shards) {
    const bytes = shards.map((s) => dist[s]?.bytes ?? 0);
    const min = Math.min(...bytes);
    return min > 0 ? Math.max(...bytes) / min : Infinity;
}

/** Polls once a second until `shards` are balanced twice in a row; returns the trace. */
async function untilBalanced(label, shards, t0) {
    const trace = [];
    let inARow = 0;
    for (;;) {
        const elapsed = Date.now() - t0;
        if (elapsed > timeoutMs) throw new Error(`${label}: not balanced after ${timeoutMs / 1000} s: ${JSON.stringify(trace.at(-1))}`);
        const [dist, status] = await Promise.all([distribution(), admin.command({ balancerCollectionStatus: NS })]);
        const r = ratio(dist, shards);
        const point = { s: Math.round(elapsed / 100) / 10, ratio: Number.isFinite(r) ? Math.round(r * 1000) / 1000 : null,
            mb: Object.fromEntries(shards.map((s) => [s, Math.round((dist[s]?.bytes ?? 0) / MB)])),
            compliant: status.balancerCompliant, violation: status.firstComplianceViolation ?? null };
        trace.push(point);
        if (trace.length % 10 === 1) log(`${label} ${JSON.stringify(point)}`);
        inARow = r <= tolerance && status.balancerCompliant ? inARow + 1 : 0;
        if (inARow >= 2) return { seconds: point.s, ratio: r, dist, trace };
        await sleep(1000);
    }
}

// ---- load, unsharded, the balancer stopped
await admin.command({ balancerStop: 1 });
await client.db(DB).dropDatabase().catch(() => {});
const loadStart = Date.now();
const batch = 2000;
let next = 0;
await Promise.all(Array.from({ length: 4 }, async () => {
    for (;;) {
        const from = next;
        next += batch;
        if (from >= docs) return;
        const chunk = [];
        for (let i = from; i < Math.min(docs, from + batch); i++) chunk.push(order(i));
        await coll.insertMany(chunk, { ordered: false });
    }
}));
const loadSeconds = (Date.now() - loadStart) / 1000;
const stats = await client.db(DB).command({ collStats: 'orders' });
const totalMB = Number(stats.size) / MB;
log(`loaded ${docs} orders, ${totalMB.toFixed(1)} MB, avgObjSize ${Number(stats.avgObjSize).toFixed(1)}, in ${loadSeconds.toFixed(1)} s`);

// ---- estimatedDocumentCount once a second for the rest of the run
let sampling = true;
const samples = { n: 0, wrong: [] };
const sampler = (async () => {
    while (sampling) {
        const t = Date.now();
        try {
            const v = await coll.estimatedDocumentCount();
            samples.n++;
            if (v !== docs) samples.wrong.push({ at: new Date(t).toISOString(), v });
        } catch (err) {
            samples.n++;
            samples.wrong.push({ at: new Date(t).toISOString(), error: String(err.message ?? err) });
        }
        await sleep(Math.max(0, 1000 - (Date.now() - t)));
    }
})();

const result = { tool: 'balance', docs, avgObjSize: Number(stats.avgObjSize), totalMB, loadSeconds, tolerance };
try {
    // ---- shard by hashed _id with the default chunk size; the balancer does the rest
    const settings = await config.collection('settings').findOne({ _id: 'chunksize' });
    result.chunkSizeMB = settings?.value ?? 128;
    await admin.command({ enableSharding: DB });
    await admin.command({ balancerStart: 1 });
    const t0 = Date.now();
    const since0 = new Date();
    await admin.command({ shardCollection: NS, key: { _id: 'hashed' } });
    result.shardCollectionSeconds = (Date.now() - t0) / 1000;
    log(`shardCollection took ${result.shardCollectionSeconds.toFixed(1)} s`);
    const two = (await config.collection('shards').find().sort({ _id: 1 }).toArray()).map((s) => s._id);
    const b = await untilBalanced('shard', two, t0);
    result.shard = { seconds: b.seconds, ratio: b.ratio, mb: b.trace.at(-1).mb, chunks: await chunkCounts(),
        migrations: await migrationsSince(since0), trace: b.trace.filter((_, i) => i % 5 === 0 || i === b.trace.length - 1) };
    log(`balanced over ${two.length} shards in ${b.seconds} s, max/min ${b.ratio.toFixed(3)}`);

    if (thirdShard) {
        // ---- add a third shard and let it fill
        const t1 = Date.now();
        const since1 = new Date();
        const added = await admin.command({ addShard: thirdShard });
        const third = added.shardAdded;
        const b3 = await untilBalanced('add', [...two, third], t1);
        result.add = { shard: third, seconds: b3.seconds, ratio: b3.ratio, mb: b3.trace.at(-1).mb, chunks: await chunkCounts(),
            migrations: await migrationsSince(since1), movedMB: (b3.dist[third]?.bytes ?? 0) / MB,
            trace: b3.trace.filter((_, i) => i % 5 === 0 || i === b3.trace.length - 1) };
        log(`balanced over three in ${b3.seconds} s, max/min ${b3.ratio.toFixed(3)}`);

        // ---- drain it and remove it
        const drainMB = (await distribution())[third]?.bytes / MB;
        const t2 = Date.now();
        const since2 = new Date();
        const started = await admin.command({ removeShard: third });
        if (started.state !== 'started') throw new Error(`removeShard: ${JSON.stringify(started)}`);
        let remaining;
        for (;;) {
            if (Date.now() - t2 > timeoutMs) throw new Error(`drain: not done after ${timeoutMs / 1000} s: ${JSON.stringify(remaining)}`);
            remaining = (await admin.command({ shardDrainingStatus: third })).remaining;
            if (remaining.chunks === 0 && remaining.dbs === 0) break;
            await sleep(250);
        }
        const drainSeconds = (Date.now() - t2) / 1000;
        const done = await admin.command({ removeShard: third });
        const after = await distribution();
        result.drain = { seconds: drainSeconds, mb: drainMB, mbPerSec: drainMB / drainSeconds, state: done.state,
            migrations: await migrationsSince(since2), ratioAfter: ratio(after, two),
            mbAfter: Object.fromEntries(two.map((s) => [s, Math.round((after[s]?.bytes ?? 0) / MB)])) };
        log(`drained ${drainMB.toFixed(1)} MB in ${drainSeconds.toFixed(1)} s (${result.drain.mbPerSec.toFixed(1)} MB/s), removeShard: ${done.state}`);
    }
} finally {
    sampling = false;
    await sampler;
}

// ---- the end state: every document once, counted exactly; the donors' range deletions
// finish in the background (orphans are never counted meanwhile): how long until none is left
const orphansStart = Date.now();
let dist = await distribution();
while (Object.values(dist).some((s) => s.orphans > 0) && Date.now() - orphansStart < 300000) {
    await sleep(500);
    dist = await distribution();
}
result.orphansGoneSeconds = (Date.now() - orphansStart) / 1000;
result.final = {
    estimatedDocumentCount: await coll.estimatedDocumentCount(),
    countDocuments: await coll.countDocuments({}),
    ownedDocs: Object.values(dist).reduce((a, s) => a + s.docs, 0),
    orphans: Object.values(dist).reduce((a, s) => a + s.orphans, 0),
};
result.countSamples = samples.n;
result.countSamplesWrong = samples.wrong.length;
result.countSamplesWrongFirst = samples.wrong.slice(0, 5);
await client.close();
console.log(JSON.stringify(result));
