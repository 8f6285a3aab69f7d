// Range migration under load: one range of ≈ 340-byte orders (the seed's documents) moved between
// two shards, (i) idle and (ii) while 16 clients read and update the collection through the
// router. Prints one JSON line (bench/migration.sh turns it into the report).
//
// usage: node bench/migration.mjs --uri ROUTER_URI [--mb 128] [--clients 16] [--seconds 10]
//        [--moves 3]
//
//  - load: `mb` MB of orders (_id 0..n-1, shard key {_id: 1}) inserted through the router into
//    db bench_migration.orders, sharded, one chunk [MinKey, n/2) kept, [n/2, MaxKey) moved;
//  - idle: the range moved to the other shard and back once each: total time per move, MB/s,
//    and the changelog's steps (clone, critical section) of each;
//  - load: the clients run for `seconds` (p50/p99 "before"), then for `moves` moves back and
//    forth (p50/p99 "during", the worst write latency), then `seconds` again ("after").
//    Half the clients read a random order by _id, half update one ($inc) — over the whole
//    collection, so half of them hit the migrating range.
// Loopback only.

import { mongodb, arg } from './bench_util.mjs';

import { order } from './orders.mjs';

const { MongoClient, MaxKey } = mongodb;
const uri = arg('uri');
const mb = Number(arg('mb', '128'));
const clients = Number(arg('clients', '16'));
const seconds = Number(arg('seconds', '10'));
const moves = Number(arg('moves', '3'));
const countDocs = Number(arg('count-docs', '2000000'));
if (!uri) {
    console.error('usage: node bench/migration.mjs --uri ROUTER_URI [--mb 128] [--clients 16] [--seconds 10] [--moves 3]');
    process.exit(2);
}

const DB = 'bench_migration';
const NS = `${DB}.orders`;


function percentile(sorted, p) {
    if (sorted.length === 0) return 0;
    return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

const client = new MongoClient(uri, { maxPoolSize: clients + 4 });
await client.connect();
const admin = client.db('admin');
const coll = client.db(DB).collection('orders');

// ---- load (the balancer off: this run moves the range itself)
await admin.command({ balancerStop: 1 });
await client.db(DB).dropDatabase().catch(() => {});
await admin.command({ enableSharding: DB });
await admin.command({ shardCollection: NS, key: { _id: 1 } });
const docBytes = 340;
const n = Math.round((mb * 2 * 1024 * 1024) / docBytes); // the moved half is `mb` MB
const loadStart = Date.now();
const batch = 2000;
let next = 0;
await Promise.all(Array.from({ length: 4 }, async () => {
    for (;;) {
        const from = next;
        next += batch;
        if (from >= n) return;
        const docs = [];
        for (let i = from; i < Math.min(n, from + batch); i++) docs.push(order(i));
        await coll.insertMany(docs, { ordered: false });
    }
}));
const loadSeconds = (Date.now() - loadStart) / 1000;
const mid = Math.floor(n / 2);
await admin.command({ split: NS, middle: { _id: mid } });
const shards = (await client.db('config').collection('shards').find().sort({ _id: 1 }).toArray()).map((s) => s._id);
const primary = (await client.db('config').collection('databases').findOne({ _id: DB })).primary;
const other = shards.find((s) => s !== primary);
const stats = await client.db(DB).command({ collStats: 'orders' });
const avgObjSize = Number(stats.avgObjSize);
const movedBytes = avgObjSize * (n - mid);

async function moveTo(shard) {
    const t = Date.now();
    await admin.command({ moveRange: NS, min: { _id: mid }, max: { _id: new MaxKey() }, toShard: shard });
    const ms = Date.now() - t;
    const [log] = await client.db('config').collection('changelog')
        .find({ what: 'moveChunk.from', ns: NS }).sort({ time: -1 }).limit(1).toArray();
    const d = log ? log.details : {};
    return {
        ms,
        cloneMs: Number(d['step 2 of 6'] ?? -1),
        criticalSectionMs: Number(d.criticalSectionMs ?? -1),
        docsCloned: Number(d.docsCloned ?? 0),
    };
}

// ---- idle
const idle = [await moveTo(other), await moveTo(primary)];

// ---- under load
let phase = 'before';
const lat = { before: { r: [], w: [] }, during: { r: [], w: [] }, after: { r: [], w: [] } };
let stop = false;
let errors = 0;
let countWrong = 0;
const workers = Array.from({ length: clients }, (_, k) => (async () => {
    const write = k % 2 === 1;
    let x = k * 2654435761;
    while (!stop) {
        x = (x * 1103515245 + 12345) >>> 0;
        const id = x % n;
        const t = process.hrtime.bigint();
        try {
            if (write) await coll.updateOne({ _id: id }, { $inc: { total: 1 } });
            else await coll.findOne({ _id: id });
        } catch {
            errors++;
            continue;
        }
        const us = Number(process.hrtime.bigint() - t) / 1000;
        lat[phase][write ? 'w' : 'r'].push(us);
    }
})());
const counter = (async () => {
    while (!stop) {
        if ((await coll.estimatedDocumentCount()) !== n) countWrong++;
        await new Promise((r) => setTimeout(r, 100));
    }
})();
await new Promise((r) => setTimeout(r, seconds * 1000));
phase = 'during';
const loaded = [];
for (let i = 0; i < moves; i++) loaded.push(await moveTo(i % 2 === 0 ? other : primary));
phase = 'after';
await new Promise((r) => setTimeout(r, seconds * 1000));
stop = true;
await Promise.all([...workers, counter]);
await client.close();

// ---- estimatedDocumentCount of a `countDocs`-document collection right after a migration: the
// collection is topped up, a 10 000-document range is moved, then the count is timed (the first
// call pays the router's refresh after the move; then 20 more).
const topUpStart = Date.now();
const client2 = new MongoClient(uri, { maxPoolSize: 8 });
await client2.connect();
const coll2 = client2.db(DB).collection('orders');
let nextId = n;
await Promise.all(Array.from({ length: 4 }, async () => {
    for (;;) {
        const from = nextId;
        nextId += batch;
        if (from >= countDocs) return;
        const docs = [];
        for (let i = from; i < Math.min(countDocs, from + batch); i++) docs.push(order(i));
        await coll2.insertMany(docs, { ordered: false });
    }
}));
const topUpSeconds = (Date.now() - topUpStart) / 1000;
const total = Math.max(n, countDocs);
const admin2 = client2.db('admin');
await admin2.command({ split: NS, middle: { _id: mid + 10000 } });
const owner = (await client2.db('config').collection('chunks').findOne({ 'min._id': mid })).shard;
await admin2.command({ moveRange: NS, min: { _id: mid }, max: { _id: mid + 10000 }, toShard: shards.find((s) => s !== owner) });
const timeCount = async () => {
    const t = process.hrtime.bigint();
    const v = await coll2.estimatedDocumentCount();
    return { v, ms: Number(process.hrtime.bigint() - t) / 1e6 };
};
const firstCount = await timeCount();
const laterCounts = [];
for (let i = 0; i < 20; i++) laterCounts.push(await timeCount());
await client2.close();
const laterMs = laterCounts.map((c) => c.ms).sort((a, b) => a - b);
const est = { docs: total, topUpSeconds, first: firstCount, medianMs: laterMs[10], maxMs: laterMs[laterMs.length - 1],
    exact: firstCount.v === total && laterCounts.every((c) => c.v === total) };

const summary = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return { ops: s.length, p50us: Math.round(percentile(s, 50)), p99us: Math.round(percentile(s, 99)), maxus: Math.round(s[s.length - 1] || 0) };
};
const all = (p) => [...lat[p].r, ...lat[p].w];
console.log(JSON.stringify({
    tool: 'migration',
    docs: n,
    avgObjSize,
    movedMB: movedBytes / (1 << 20),
    loadSeconds,
    idle,
    estimatedDocumentCount: est,
    load: {
        clients,
        before: summary(all('before')),
        during: summary(all('during')),
        after: summary(all('after')),
        writesDuring: summary(lat.during.w),
        moves: loaded,
        errors,
        countSamplesWrong: countWrong,
    },
}));
