// Bulk loads (issue 40): the Node driver's insertMany — one OP_MSG with a document sequence per
// 100,000 statements, as drivers and mongoimport send — timed against each target given.
// Prints one JSON line per target: {"tool":"bulk_load","target":…,"docsPerSec":[…], …}.
//
// usage: node bench/bulk_load.mjs --target NAME=URI[,sharded=hashed|none] ... [--docs 200000]
//        [--repeat 3] [--ordered true|false]
// Each repeat loads `docs` documents of ≈ 160 BSON bytes ({_id, k, pad}) into a fresh collection
// (sharded by {_id: "hashed"} through a router when the target says so) in insertMany calls of
// 100,000 documents. Loopback only.

import { mongodb } from './bench_util.mjs';

const { MongoClient } = mongodb;

const args = process.argv.slice(2);
const opt = (name, def) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : def;
};
const targets = [];
for (let i = 0; i < args.length; i++) {
    if (args[i] !== '--target') continue;
    const [name, rest] = args[i + 1].split(/=(.*)/s);
    const [uri, ...flags] = rest.split(',sharded=');
    targets.push({ name, uri, sharded: flags[0] || 'none' });
}
const docs = Number(opt('docs', '200000'));
const repeat = Number(opt('repeat', '3'));
const ordered = opt('ordered', 'true') !== 'false';
if (targets.length === 0) {
    console.error('usage: node bench/bulk_load.mjs --target NAME=URI[,sharded=hashed] ... [--docs N] [--repeat R] [--ordered true|false]');
    process.exit(2);
}
const pad = 'x'.repeat(120);
const CALL = 100000;

for (const t of targets) {
    const client = new MongoClient(t.uri, { directConnection: true });
    await client.connect();
    const db = client.db('bench_bulk');
    const rates = [];
    for (let r = 0; r < repeat; r++) {
        const name = `c${r}`;
        await db.collection(name).drop().catch(() => {});
        if (t.sharded === 'hashed') {
            await client.db('admin').command({ enableSharding: 'bench_bulk' }).catch(() => {});
            await client.db('admin').command({ shardCollection: `bench_bulk.${name}`, key: { _id: 'hashed' } });
        } else {
            await db.createCollection(name);
        }
        const coll = db.collection(name);
        const start = process.hrtime.bigint();
        for (let from = 0; from < docs; from += CALL) {
            const batch = [];
            for (let i = from; i < Math.min(docs, from + CALL); i++) batch.push({ _id: i, k: i, pad });
            await coll.insertMany(batch, { ordered });
        }
        const secs = Number(process.hrtime.bigint() - start) / 1e9;
        if ((await coll.countDocuments({})) !== docs) throw new Error(`${t.name}: lost documents`);
        rates.push(Math.round(docs / secs));
    }
    await db.dropDatabase();
    await client.close();
    const sorted = [...rates].sort((a, b) => a - b);
    console.log(JSON.stringify({ tool: 'bulk_load', target: t.name, sharded: t.sharded, ordered, docs,
        docsPerSec: rates, median: sorted[Math.floor(sorted.length / 2)] }));
}
