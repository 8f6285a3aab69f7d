// A write without the shard key against a targeted one (issue 42, point 2). Prints one JSON line.
//
// usage: node bench/no_key_writes.mjs --uri ROUTER_URI [--ops 2000] [--repeat 4]
//                                     [--pids router=PID,shard0=PID,shard1=PID]
//
// `orders` sharded by {customerId: 1} over two shards (half the customers each), 10 000 orders
// with a unique-looking `orderNo` (indexed) and `_id`. One client, one write at a time:
//   targeted: updateOne({customerId, _id}, {$inc: {n: 1}}) — one shard, one exchange;
//   no key:   updateOne({orderNo}, {$inc: {n: 1}}) — the router finds the document on every
//             shard, then writes it where it is (MongoDB's two-phase write without shard key).
// Each kind runs `ops` writes per repetition, the kinds alternating `repeat` times in ABBA
// order; each figure is the median of the repetitions' p50s. With --pids, the CPU time each
// process spent per write (utime + stime from /proc, in µs) in each kind: where the extra goes.
// Loopback only.

import { arg, median, mongodb, nowUs, pidsArg, processCpuUs } from './bench_util.mjs';

const { MongoClient } = mongodb;
const uri = arg('uri');
const ops = Number(arg('ops', 2000));
const repeat = Number(arg('repeat', 4));
const pids = pidsArg();
if (!uri) {
    console.error('usage: node bench/no_key_writes.mjs --uri ROUTER_URI [--ops 2000] [--repeat 4] [--pids name=PID,...]');
    process.exit(2);
}

const kOrders = 10000;
const kCustomers = 1000;
const cpuAll = () => Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, processCpuUs(pid)]));

const retryWrites = arg('retryWrites', 'true') === 'true';
const client = new MongoClient(uri, { maxPoolSize: 1, retryWrites });
await client.connect();
const dbName = 'tessera_bench_nokey';
const orders = client.db(dbName).collection('orders');

async function timed(kind, n, offset) {
    const lat = [];
    for (let i = 0; i < n; i++) {
        const id = (offset + i * 7919) % kOrders;
        const t0 = nowUs();
        const r = kind === 'targeted'
            ? await orders.updateOne({ customerId: id % kCustomers, _id: id }, { $inc: { n: 1 } })
            : await orders.updateOne({ orderNo: `ORD-${id}` }, { $inc: { n: 1 } });
        lat.push(nowUs() - t0);
        if (r.modifiedCount !== 1) throw new Error(`${kind} write of order ${id} modified ${r.modifiedCount}`);
    }
    return lat;
}

try {
    await client.db(dbName).dropDatabase();
    const shards = (await client.db('admin').command({ listShards: 1 })).shards.map((s) => s._id);
    if (shards.length < 2) throw new Error('needs a cluster with at least 2 shards');
    await client.db('admin').command({ enableSharding: dbName, primaryShard: shards[0] });
    await client.db('admin').command({ shardCollection: `${dbName}.orders`, key: { customerId: 1 } });
    await orders.createIndex({ orderNo: 1 });
    const docs = [];
    for (let i = 0; i < kOrders; i++) docs.push({ _id: i, customerId: i % kCustomers, orderNo: `ORD-${i}`, n: 0, pad: 'x'.repeat(200) });
    await orders.insertMany(docs);
    await client.db('admin').command({ split: `${dbName}.orders`, middle: { customerId: kCustomers / 2 } });
    await client.db('admin').command({
        moveChunk: `${dbName}.orders`, find: { customerId: kCustomers / 2 }, to: shards[1], _waitForDelete: true,
    });
    await timed('targeted', 300, 1);
    await timed('nokey', 300, 2);

    const p50s = { targeted: [], nokey: [] };
    const cpu = { targeted: {}, nokey: {} };
    for (let rep = 0; rep < repeat; rep++) {
        const order = rep % 2 === 0 ? ['targeted', 'nokey'] : ['nokey', 'targeted'];
        for (const kind of order) {
            const before = cpuAll();
            p50s[kind].push(median(await timed(kind, ops, rep * 13 + 3)));
            const after = cpuAll();
            for (const name of Object.keys(after)) {
                cpu[kind][name] = (cpu[kind][name] ?? 0) + (after[name] - before[name]);
            }
        }
    }
    const result = { tool: 'no_key_writes', ops, repeat, retryWrites };
    result.targeted_p50_us = median(p50s.targeted);
    result.nokey_p50_us = median(p50s.nokey);
    result.ratio = result.nokey_p50_us / result.targeted_p50_us;
    for (const kind of ['targeted', 'nokey']) {
        for (const [name, us] of Object.entries(cpu[kind])) {
            result[`${kind}_cpu_us_per_op_${name}`] = Math.round(us / (ops * repeat));
        }
    }
    console.log(JSON.stringify(result));
} finally {
    await client.close();
}
