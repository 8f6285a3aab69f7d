// The cost of a stale router: the first operation through a router whose cached routing table
// is out of date (another router moved the range since), as a ratio of a normal operation
// through the same router. Prints one JSON line.
//
// usage: node bench/stale_router.mjs --a URI_A --b URI_B [--rounds 9] [--samples 200]
//
// Each round: router B reads a key of collection `c` (so B caches its routing table), then
//   1. control: router A moves a range of another collection (`control`); B's next read of the key
//      in `c` is timed — B is not stale for `c`, but the read comes after the same pause and the
//      same burst of migration work on the machine as the stale one;
//   2. stale: router A moves the chunk holding the key to the other shard; B's next read is
//      timed (B must learn from the shard that its version is stale, catch up, and retry).
// The ratio is median(stale) / median(control): the cost of being stale, not of the pause
// (a client's first operation after idling is slower on its own). The median of `samples`
// back-to-back reads is reported too. Loopback only.

import { mongodb, arg, median, nowUs } from './bench_util.mjs';

const { MongoClient } = mongodb;
const uriA = arg('a');
const uriB = arg('b');
const rounds = Number(arg('rounds', 9));
const samples = Number(arg('samples', 200));
if (!uriA || !uriB) {
    console.error('usage: node bench/stale_router.mjs --a URI_A --b URI_B [--rounds 9] [--samples 200]');
    process.exit(2);
}


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

    // The control collection: two chunks whose range moves back and forth.
    await a.db('admin').command({ shardCollection: `${dbName}.control`, key: { k: 1 } });
    await a.db(dbName).collection('control').insertMany(docs.map(({ k }) => ({ k })));
    await a.db('admin').command({ split: `${dbName}.control`, middle: { k: 500 } });

    const coll = b.db(dbName).collection('c');
    const timedRead = async () => {
        const t0 = nowUs();
        const doc = await coll.findOne({ k: 700 });
        const us = nowUs() - t0;
        if (!doc || doc.k !== 700) throw new Error('router B returned a wrong answer');
        return us;
    };
    const other = (s) => (s === shards[0] ? shards[1] : shards[0]);
    const staleOps = [];
    const controlOps = [];
    const normalOps = [];
    let owner = shards[0];
    let controlOwner = shards[0];
    for (let r = 0; r < rounds; r++) {
        await coll.findOne({ k: 700 });  // B caches the current routing table of `c`
        controlOwner = other(controlOwner);
        await a.db('admin').command({
            moveRange: `${dbName}.control`, min: { k: 500 }, toShard: controlOwner,
        });
        controlOps.push(await timedRead());
        owner = other(owner);
        await a.db('admin').command({ moveRange: ns, min: { k: 500 }, toShard: owner });
        staleOps.push(await timedRead());
        const lat = [];
        for (let i = 0; i < samples; i++) lat.push(await timedRead());
        normalOps.push(median(lat));
    }
    const stale = median(staleOps);
    const control = median(controlOps);
    console.log(JSON.stringify({
        tool: 'stale_router', phase: 'first_op_after_move', rounds,
        first_op_p50_us: stale, control_first_op_p50_us: control,
        normal_op_p50_us: median(normalOps), ratio: stale / control,
    }));
    await a.db(dbName).dropDatabase();
} finally {
    await a.close();
    await b.close();
}
