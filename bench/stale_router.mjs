// The cost of a stale router: the first operation through a router whose cached routing table
// is out of date (another router moved the range since), as a ratio of a normal operation
// through the same router. Prints one JSON line.
//
// usage: node bench/stale_router.mjs --a URI_A --b URI_B [--rounds 9] [--samples 200]
//
// Each round: router B reads a key (so B caches the routing table), router A moves the chunk
// holding that key to the other shard, then B's next read of that key is timed (B must learn from
// the shard that its version is stale, refresh, and retry). The normal latency is the median of
// `samples` reads of the same key through B once it is fresh again. Loopback only.

import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'tests', 'integration', 'package.json'));
const { MongoClient } = require('mongodb');

function arg(name, def) {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : def;
}
const uriA = arg('a');
const uriB = arg('b');
const rounds = Number(arg('rounds', 9));
const samples = Number(arg('samples', 200));
if (!uriA || !uriB) {
    console.error('usage: node bench/stale_router.mjs --a URI_A --b URI_B [--rounds 9] [--samples 200]');
    process.exit(2);
}

const median = (xs) => {
    const s = [...xs].sort((x, y) => x - y);
    return s[Math.floor(s.length / 2)];
};
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

const a = new MongoClient(uriA, { maxPoolSize: 1 });
const b = new MongoClient(uriB, { maxPoolSize: 1 });
await a.connect();
await b.connect();
try {
    const dbName = 'tessera_bench_stale';
    const ns = `${dbName}.c`;
    await a.db(dbName).dropDatabase();
    const shards = (await a.db('admin').command({ listShards: 1 })).shards.map((s) => s._id);
    if (shards.length < 2) throw new Error('needs a cluster with at least 2 shards');
    await a.db('admin').command({ enableSharding: dbName, primaryShard: shards[0] });
    await a.db('admin').command({ shardCollection: ns, key: { k: 1 } });
    const docs = [];
    for (let k = 0; k < 1000; k++) docs.push({ k, pad: 'x'.repeat(100) });
    await a.db(dbName).collection('c').insertMany(docs);
    await a.db('admin').command({ split: ns, middle: { k: 500 } });

    const coll = b.db(dbName).collection('c');
    const firstOps = [];
    const normalOps = [];
    let owner = shards[0];
    for (let r = 0; r < rounds; r++) {
        await coll.findOne({ k: 700 });  // B caches the current routing table
        const to = owner === shards[0] ? shards[1] : shards[0];
        await a.db('admin').command({ moveRange: ns, min: { k: 500 }, toShard: to });
        owner = to;
        const t0 = nowUs();
        const doc = await coll.findOne({ k: 700 });
        firstOps.push(nowUs() - t0);
        if (!doc || doc.k !== 700) throw new Error('stale router returned a wrong answer');
        const lat = [];
        for (let i = 0; i < samples; i++) {
            const t = nowUs();
            await coll.findOne({ k: 700 });
            lat.push(nowUs() - t);
        }
        normalOps.push(median(lat));
    }
    const first = median(firstOps);
    const normal = median(normalOps);
    console.log(JSON.stringify({
        tool: 'stale_router', phase: 'first_op_after_move', rounds,
        first_op_p50_us: first, normal_op_p50_us: normal, ratio: first / normal,
    }));
    await a.db(dbName).dropDatabase();
} finally {
    await a.close();
    await b.close();
}
