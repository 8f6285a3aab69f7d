// Failover as an application sees it (issue 43): the longest gap between acknowledged writes
// through a router when a shard's primary is killed (kill -9), median of `rounds` kills (target
// ≤ 2 s), and the same when the config service's primary is killed (target: no data-plane gap —
// no longer than the longest gap of a window without faults, measured in the same run). Starts
// its own `tessera up --shards 2 --replicas 3` on loopback; 8 writers insert at w: "majority"
// with retryable writes into the ranges of shard0. After each kill the member is started again
// and caught up before the next round. Prints one JSON line; bench/README.md "Replica sets"
// records a run and its verdict.
//
// usage: node bench/failover.mjs --bin build/tessera [--rounds 5] [--window-ms 5000] [--port 29400]

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { arg, median, mongodb } from './bench_util.mjs';

const { MongoClient } = mongodb;
const bin = arg('bin');
const rounds = Number(arg('rounds', 5));
const windowMs = Number(arg('window-ms', 5000));
const base = Number(arg('port', 29400));
const writers = 8;
if (!bin) {
    console.error('usage: node bench/failover.mjs --bin build/tessera [--rounds 5] [--window-ms 5000] [--port 29400]');
    process.exit(2);
}
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Layout of `tessera up --routers 1 --replicas 3`: router on base, config members on base+1+j,
// shard i's members on base+1+3*(1+i)+j.
const configPort = (j) => base + 1 + j;
const shardPort = (i, j) => base + 1 + 3 * (1 + i) + j;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-failover-'));
const up = spawn(bin, ['up', '--shards', '2', '--replicas', '3', '--routers', '1', '--port', String(base), '--dbpath', dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
});
let upOut = '';
up.stdout.on('data', (d) => (upOut += d));
const restarted = [];
const cleanup = async () => {
    for (const p of restarted) p.kill('SIGTERM');
    up.kill('SIGTERM');
    await new Promise((resolve) => up.once('exit', resolve));
    if (!process.env.TESSERA_KEEP_DATA) fs.rmSync(dir, { recursive: true, force: true });
};

async function until(what, probe, timeoutMs = 60000) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
        if (await probe().catch(() => false)) return;
        await delay(50);
    }
    throw new Error(`${what}: not within ${timeoutMs} ms`);
}
const pidOf = (name) => Number(new RegExp(`^\\s*${name.replace('.', '\\.')}\\s+\\S+\\s+pid (\\d+)`, 'm').exec(upOut)[1]);
const members = new Map(); // port → {name, pid, argv}

try {
    await until('tessera up', async () => /Connect with:/.test(upOut), 120000);
    for (const [name, port] of [
        ...[0, 1, 2].map((j) => [`config.${j}`, configPort(j)]),
        ...[0, 1, 2].map((j) => [`shard0.${j}`, shardPort(0, j)]),
        ...[0, 1, 2].map((j) => [`shard1.${j}`, shardPort(1, j)]),
    ]) {
        const pid = pidOf(name);
        members.set(port, { name, pid, argv: fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean) });
    }
    const client = new MongoClient(`mongodb://127.0.0.1:${base}/?retryWrites=true`, { maxPoolSize: writers * 2 });
    await client.connect();
    const admin = client.db('admin');
    await admin.command({ enableSharding: 'failover' });
    await admin.command({ shardCollection: 'failover.c', key: { k: 1 } });
    await admin.command({ split: 'failover.c', middle: { k: 1000000 } });
    await admin.command({ moveChunk: 'failover.c', find: { k: 1000000 }, to: 'shard1' });
    const coll = client.db('failover').collection('c');
    const direct = async (port, cmd) => {
        const c = new MongoClient(`mongodb://127.0.0.1:${port}/?directConnection=true`, { serverSelectionTimeoutMS: 2000 });
        try {
            await c.connect();
            return await c.db('admin').command(cmd);
        } finally {
            await c.close();
        }
    };
    const primaryOf = async (ports) => {
        for (;;) {
            for (const p of ports) {
                const h = await direct(p, { hello: 1 }).catch(() => null);
                if (h?.isWritablePrimary) return p;
            }
            await delay(50);
        }
    };

    // The longest gap between acknowledgements over `windowMs`, with `fault` run at its start.
    let counter = 0;
    async function window(fault) {
        let stop = false;
        let last = Date.now();
        let longest = 0;
        let acked = 0;
        const errors = [];
        const running = [...Array(writers).keys()].map(async () => {
            while (!stop) {
                try {
                    await coll.insertOne({ k: counter++ % 1000000 }, { writeConcern: { w: 'majority' } });
                    const now = Date.now();
                    longest = Math.max(longest, now - last);
                    last = now;
                    acked++;
                } catch (err) {
                    errors.push(String(err.code ?? err.message));
                }
            }
        });
        await delay(500);
        last = Date.now();
        longest = 0;
        await fault();
        await delay(windowMs);
        // A window that ends without acknowledgements counts its silence too.
        longest = Math.max(longest, Date.now() - last);
        stop = true;
        await Promise.all(running);
        return { longest, acked, errors };
    }
    // The log index a member has applied (rs.status: its own entry's logIndex).
    const appliedIndexOf = async (port) => {
        const status = await direct(port, { replSetGetStatus: 1 });
        return status.members.find((x) => x.self)?.logIndex ?? 0;
    };
    async function killAndRestart(port) {
        const m = members.get(port);
        const ports = [...members.keys()].filter((p) => members.get(p).name.split('.')[0] === m.name.split('.')[0]);
        process.kill(m.pid, 'SIGKILL');
        return async () => {
            const fd = fs.openSync(path.join(dir, `${m.name}.log`), 'a');
            const proc = spawn(m.argv[0], m.argv.slice(1), { stdio: ['ignore', fd, fd] });
            fs.closeSync(fd);
            restarted.push(proc);
            m.pid = proc.pid;
            await until(`${m.name} back`, async () => (await direct(port, { hello: 1 })).secondary === true);
            // ... and caught up with its primary, so that the next round's kill leaves a
            // majority that holds the log (a lagging member would hold the next election up).
            const target = await appliedIndexOf(await primaryOf(ports));
            await until(`${m.name} caught up`, async () => (await appliedIndexOf(port)) >= target);
        };
    }

    const result = { rounds, windowMs, writers, baselineMs: [], shardKillMs: [], configKillMs: [], errors: [] };
    for (let r = 0; r < rounds; r++) {
        const quiet = await window(async () => {});
        result.baselineMs.push(quiet.longest);
        let back;
        const shard = await window(async () => {
            back = await killAndRestart(await primaryOf([0, 1, 2].map((j) => shardPort(0, j))));
        });
        result.shardKillMs.push(shard.longest);
        result.errors.push(...shard.errors.map((e) => `round ${r} shard kill: ${e}`));
        await back();
        const config = await window(async () => {
            back = await killAndRestart(await primaryOf([0, 1, 2].map((j) => configPort(j))));
        });
        result.configKillMs.push(config.longest);
        result.errors.push(...config.errors.map((e) => `round ${r} config kill: ${e}`));
        await back();
    }
    await client.close();
    const summary = {
        bench: 'failover',
        ...result,
        medianBaselineMs: median(result.baselineMs),
        medianShardKillMs: median(result.shardKillMs),
        medianConfigKillMs: median(result.configKillMs),
        cores: os.cpus().length,
    };
    console.log(JSON.stringify(summary));
} finally {
    await cleanup();
}
