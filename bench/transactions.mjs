// The cost of a cross-shard transaction (issue 14, point 8): through one router, C clients run,
// phase after phase,
//   plain  one updateOne {$inc} by _id, outside any transaction;
//   txn1   a transaction of two updateOnes on two documents of the same shard (one participant:
//          the shard's own commit);
//   txn2   a transaction of two updateOnes on documents of different shards (two participants:
//          two-phase commit by the first one, prepare on both, durable decision, commit on both).
// Phases alternate in ABBA order over --repeat rounds; per phase the ops/s, p50 and p99 of whole
// operations (a transaction from startTransaction to its acknowledged commit, retries on
// TransientTransactionError included) and the retries are printed as one JSON line
// ({"tool":"transactions",...}), then a summary line with the median ratio
// p50(txn2) / p50(txn1) against the target 1.5. Then --repeat `mixed` phases, in which every
// client alternates blocks of both kinds of transaction (mixedPhase below): the same ratio
// taken under one machine state and one load. Loopback only; stops by itself.
// With --pids (the cluster's processes, as `tessera up` lists them: name=pid,...), each phase
// also reports the CPU time per operation of every process and of this client
// (`cpu_us_per_op`), read from /proc before and after the phase: with several clients on two
// cores CPU is latency, so the CPU a two-shard transaction costs the whole cluster bounds its
// ratio to a one-shard one.
//
// usage: node bench/transactions.mjs --uri URI [--clients 8] [--seconds 5] [--repeat 3]
//                                    [--docs 2000] [--only plain|txn1|txn2|mixed]
//                                    [--pids config=1,shard0=2,... --clk-tck 100]
//                                    [--write-concern 1|majority]

import { mongodb, arg, median, nowUs, percentile, pidsArg, processCpuUs } from './bench_util.mjs';

const { MongoClient } = mongodb;
const uri = arg('uri');
const clients = Number(arg('clients', 8));
const seconds = Number(arg('seconds', 5));
const repeat = Number(arg('repeat', 3));
const docs = Number(arg('docs', 2000));
// One kind of phase only (plain, txn1, txn2 or mixed), no summary: for a profiler attached meanwhile.
const only = arg('only');
// name -> pid of the cluster's processes whose CPU each phase reports; clock ticks per second
// of /proc/PID/stat's utime and stime (`getconf CLK_TCK`).
const pids = pidsArg();
const clkTck = Number(arg('clk-tck', 100));
// The write concern of every commit and plain update: the server's default when absent (w: 1,
// unjournaled), or `majority` — journaled on Tessera, MongoDB's implicit default since 5.0 and
// the setting of the MongoDB figures the target is set against.
const writeConcernArg = arg('write-concern');
const writeConcern = writeConcernArg === undefined ? undefined
    : { w: /^[0-9]+$/.test(writeConcernArg) ? Number(writeConcernArg) : writeConcernArg };
if (!uri || !(clients > 0) || !['1', 'majority', undefined].includes(writeConcernArg) || !(seconds > 0) || !(repeat > 0) || !(docs >= 4) || !(clkTck > 0) ||
    Object.values(pids).some((p) => !/^[0-9]+$/.test(p ?? ''))) {
    console.error('usage: node bench/transactions.mjs --uri URI [--clients 8] [--seconds 5] [--repeat 3] [--docs 2000] [--pids name=pid,...] [--clk-tck 100] [--write-concern 1|majority]');
    process.exit(2);
}


// CPU time used so far, in µs: per process of --pids (processCpuUs) and of this client.
function cpuNow() {
    const self = process.cpuUsage();
    const used = { client: self.user + self.system };
    for (const [name, pid] of Object.entries(pids)) used[name] = processCpuUs(pid, clkTck);
    return used;
}

// Per process, µs of CPU per operation between two cpuNow() readings; `total` sums them.
function cpuPerOp(before, after, ops) {
    const perOp = {};
    let total = 0;
    for (const name of Object.keys(after)) {
        perOp[name] = Math.round((after[name] - before[name]) / ops);
        total += perOp[name];
    }
    perOp.total = total;
    return perOp;
}

const half = Math.floor(docs / 2); // _id < half on the first shard, the rest on the second
const client = new MongoClient(uri, { maxPoolSize: clients + 2 });
await client.connect();
const dbName = 'tessera_bench_txn';
const coll = client.db(dbName).collection('accounts');

async function setup() {
    const admin = client.db('admin');
    const shards = (await admin.command({ listShards: 1 })).shards.map((s) => s._id);
    if (shards.length < 2) throw new Error('needs a cluster with at least 2 shards');
    await client.db(dbName).dropDatabase();
    await admin.command({ enableSharding: dbName, primaryShard: shards[0] });
    await admin.command({ shardCollection: `${dbName}.accounts`, key: { _id: 1 } });
    const batch = [];
    for (let i = 0; i < docs; i++) batch.push({ _id: i, balance: 1000, pad: 'x'.repeat(100) });
    await coll.insertMany(batch);
    await admin.command({ split: `${dbName}.accounts`, middle: { _id: half } });
    await admin.command({ moveChunk: `${dbName}.accounts`, find: { _id: half }, to: shards[1] });
}

const rand = (lo, hi) => lo + Math.floor(Math.random() * (hi - lo));
// Two distinct documents: on one shard (`same`) or one on each.
function pair(same) {
    const a = rand(0, half);
    if (!same) return [a, rand(half, docs)];
    let b = rand(0, half - 1);
    if (b >= a) b++;
    return [a, b];
}

async function transfer(session, [from, to]) {
    let retries = 0;
    for (;;) {
        session.startTransaction(writeConcern ? { writeConcern } : {});
        try {
            await coll.updateOne({ _id: from }, { $inc: { balance: -1 } }, { session });
            await coll.updateOne({ _id: to }, { $inc: { balance: 1 } }, { session });
            await session.commitTransaction();
            return retries;
        } catch (err) {
            if (session.inTransaction()) await session.abortTransaction().catch(() => {});
            if (!err.hasErrorLabel?.('TransientTransactionError') || retries >= 50) throw err;
            retries++;
        }
    }
}

async function phase(kind) {
    const deadline = nowUs() + seconds * 1e6;
    const latencies = [];
    let retries = 0;
    const worker = async () => {
        const session = client.startSession();
        try {
            while (nowUs() < deadline) {
                const t0 = nowUs();
                if (kind === 'plain') {
                    const r = await coll.updateOne({ _id: rand(0, docs) }, { $inc: { balance: 0 } }, writeConcern ? { writeConcern } : {});
                    if (r.matchedCount !== 1) throw new Error('plain update matched nothing');
                } else {
                    retries += await transfer(session, pair(kind === 'txn1'));
                }
                latencies.push(nowUs() - t0);
            }
        } finally {
            await session.endSession();
        }
    };
    const t0 = nowUs();
    const cpu0 = cpuNow();
    await Promise.all(Array.from({ length: clients }, worker));
    const cpu1 = cpuNow();
    const elapsed = (nowUs() - t0) / 1e6;
    latencies.sort((x, y) => x - y);
    return {
        tool: 'transactions',
        phase: kind,
        clients,
        write_concern: writeConcernArg ?? 'default',
        ops: latencies.length,
        ops_per_sec: Math.round(latencies.length / elapsed),
        p50_us: percentile(latencies, 50),
        p99_us: percentile(latencies, 99),
        retries,
        cpu_us_per_op: cpuPerOp(cpu0, cpu1, Math.max(1, latencies.length)),
    };
}

// Both kinds of transaction in one phase: each client alternates blocks of kBlock one-shard and
// kBlock two-shard transactions (half the clients starting with each kind, so the load is
// mixed at every moment). Their p50s are then taken under the same machine state and the same
// load — this machine's speed drifts between 5 s phases by more than the effect measured — and
// the ratio of the two is the latency a transaction pays for spanning two shards. (The phases
// of one kind each, above, measure instead a cluster running only that kind: at saturation
// their ratio is the ratio of the CPU each kind costs.)
const kBlock = 25;
async function mixedPhase() {
    const deadline = nowUs() + seconds * 1e6;
    const latencies = { txn1: [], txn2: [] };
    const worker = async (index) => {
        const session = client.startSession();
        try {
            for (let n = 0; nowUs() < deadline; n++) {
                const block = Math.floor(n / kBlock) + index;
                const kind = block % 2 === 0 ? 'txn1' : 'txn2';
                const t0 = nowUs();
                await transfer(session, pair(kind === 'txn1'));
                latencies[kind].push(nowUs() - t0);
            }
        } finally {
            await session.endSession();
        }
    };
    await Promise.all(Array.from({ length: clients }, (_, i) => worker(i)));
    const result = { tool: 'transactions', phase: 'mixed', clients, write_concern: writeConcernArg ?? 'default' };
    for (const kind of ['txn1', 'txn2']) {
        const sorted = latencies[kind].sort((x, y) => x - y);
        result[kind] = { ops: sorted.length, p50_us: percentile(sorted, 50), p99_us: percentile(sorted, 99) };
    }
    result.ratio = Number((result.txn2.p50_us / result.txn1.p50_us).toFixed(2));
    return result;
}

// The rounds of every kind in ABBA order, then the summary line against the target.
async function compare(total, before) {
    const results = { plain: [], txn1: [], txn2: [] };
    await phase('txn2'); // warm-up: connections, sessions, routing tables
    for (let r = 0; r < repeat; r++) {
        const order = r % 2 === 0 ? ['plain', 'txn1', 'txn2'] : ['txn2', 'txn1', 'plain'];
        for (const kind of order) {
            const res = await phase(kind);
            res.round = r;
            results[kind].push(res);
            console.log(JSON.stringify(res));
        }
    }
    const mixed = [];
    for (let r = 0; r < repeat; r++) {
        const res = await mixedPhase();
        res.round = r;
        mixed.push(res);
        console.log(JSON.stringify(res));
    }
    const after = await total();
    if (after !== before) throw new Error(`the total changed: ${before} -> ${after}`);
    const ratios = results.txn2.map((t2, i) => t2.p50_us / results.txn1[i].p50_us);
    const ratio = median(ratios);
    // What two-phase commit adds, in µs: steadier than the ratio on a machine whose speed drifts
    // (its fsync and round trips do not scale with the CPU the one-shard transaction needs).
    const extra = median(results.txn2.map((t2, i) => t2.p50_us - results.txn1[i].p50_us));
    // Per process, the median over the rounds of its CPU per operation, for each kind.
    const cpu = {};
    for (const kind of Object.keys(results)) {
        cpu[kind] = {};
        for (const name of Object.keys(results[kind][0].cpu_us_per_op)) {
            cpu[kind][name] = median(results[kind].map((x) => x.cpu_us_per_op[name]));
        }
    }
    const cpuRatio = median(
        results.txn2.map((t2, i) => t2.cpu_us_per_op.total / Math.max(1, results.txn1[i].cpu_us_per_op.total)),
    );
    console.log(
        JSON.stringify({
            tool: 'transactions',
            phase: 'summary',
            clients,
            write_concern: writeConcernArg ?? 'default',
            p50_plain_us: median(results.plain.map((x) => x.p50_us)),
            p50_txn1_us: median(results.txn1.map((x) => x.p50_us)),
            p50_txn2_us: median(results.txn2.map((x) => x.p50_us)),
            p99_txn1_us: median(results.txn1.map((x) => x.p99_us)),
            p99_txn2_us: median(results.txn2.map((x) => x.p99_us)),
            ratio_txn2_txn1_p50: Number(ratio.toFixed(2)),
            ratios: ratios.map((x) => Number(x.toFixed(2))),
            p50_extra_us: extra,
            cpu_us_per_op: cpu,
            cpu_ratio_txn2_txn1: Number(cpuRatio.toFixed(2)),
            mixed_p50_txn1_us: median(mixed.map((m) => m.txn1.p50_us)),
            mixed_p50_txn2_us: median(mixed.map((m) => m.txn2.p50_us)),
            mixed_ratio_txn2_txn1_p50: median(mixed.map((m) => m.ratio)),
            mixed_ratios: mixed.map((m) => m.ratio),
            target: 1.5,
            verdict: ratio <= 1.5 ? 'PASS' : 'FAIL',
            total_unchanged: true,
        }),
    );
}

try {
    await setup();
    const total = async () => (await coll.aggregate([{ $group: { _id: null, s: { $sum: '$balance' } } }]).toArray())[0].s;
    const before = await total();
    if (only) {
        for (let r = 0; r < repeat; r++) {
            const res = only === 'mixed' ? await mixedPhase() : await phase(only);
            console.log(JSON.stringify({ ...res, round: r }));
        }
        if ((await total()) !== before) throw new Error('the total changed');
    } else {
        await compare(total, before);
    }
} finally {
    await client.close();
}
