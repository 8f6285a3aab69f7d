// Cluster harness: starts a real sharded cluster with `tessera up` for the Node integration tests.
//
// `tessera up --shards S --routers R --port BASE --dbpath DIR --enableTestCommands` puts routers on
// BASE…BASE+R−1, the config server on BASE+R and shard i on BASE+R+1+i (src/cluster/README.md), so
// the harness picks a base with R+1+S consecutive free loopback ports, waits (with a deadline) for
// the "Connect with:" line on stdout and for every router to answer an OP_MSG ping, and stops the
// supervisor with SIGTERM (SIGKILL of the supervisor and of every child pid it printed after a
// deadline). Each child logs to DIR/<name>.log; `withClusterLog` appends their tails to a failing
// test's message.
//
// `checkConsistency(ns, expectedCount)` is the oracle of the sharding tests: it reads the
// placement from config.collections/config.chunks through a router, reads every shard directly
// (a direct read of a sharded collection must hide orphans), and checks that every document is
// on exactly one shard, that this shard owns the document's chunk, and that the router's count
// equals expectedCount. Shard key values are computed here, independently of the server,
// including MongoDB's hashed-key function (MD5-based BSONElementHasher::hash64, seed 0).
//
// Environment: TESSERA_BIN (default <repo>/build/tessera), TESSERA_CLUSTER_START_TIMEOUT_MS
// (default 120000), TESSERA_KEEP_DATA=1 keeps the data directory and logs.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BSON, MongoClient } from 'mongodb';
import { TesseraServer, freePort, mongosh, rawPing, resultLine, tesseraBin } from './harness.mjs';

export { mongosh, resultLine };

const startTimeoutMs = Number(process.env.TESSERA_CLUSTER_START_TIMEOUT_MS || 120000);
const stopTimeoutMs = 40000; // `tessera up` itself gives its children 20 s
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `fn` until it returns a truthy value or the deadline passes (then throws `what`). */
export async function waitFor(what, fn, { timeoutMs = 30000, intervalMs = 50 } = {}) {
    const deadline = Date.now() + timeoutMs;
    let lastErr = null;
    while (Date.now() < deadline) {
        try {
            const v = await fn();
            if (v) return v;
        } catch (err) {
            lastErr = err;
        }
        await delay(intervalMs);
    }
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${lastErr}` : ''}`);
}

function portIsFree(port) {
    return new Promise((resolve) => {
        const srv = net.createServer();
        srv.unref();
        srv.once('error', () => resolve(false));
        srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
}

/** A base port such that base … base+count−1 were all free a moment ago. */
export async function freePortRange(count) {
    for (let attempt = 0; attempt < 50; attempt++) {
        const base = await freePort();
        if (base + count >= 65535) continue;
        let ok = true;
        for (let p = base; p < base + count && ok; p++) ok = await portIsFree(p);
        if (ok) return base;
    }
    throw new Error(`no ${count} consecutive free ports found`);
}

function tail(file, lines) {
    try {
        return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
        return '<no log>';
    }
}

// --- shard key values, computed independently of the server --------------------------------------

const bsonType = (v) => (v && typeof v === 'object' && v._bsontype) || null;

/** MongoDB's canonical type order (bson canonicalizeBSONType) of a deserialized JS value. */
function canonicalType(v) {
    if (v === undefined) return 0;
    if (v === null) return 5;
    if (typeof v === 'number' || typeof v === 'bigint') return 10;
    if (typeof v === 'string') return 15;
    if (typeof v === 'boolean') return 40;
    if (v instanceof Date) return 45;
    switch (bsonType(v)) {
        case 'MinKey':
            return -1;
        case 'MaxKey':
            return 127;
        case 'Int32':
        case 'Double':
        case 'Long':
        case 'Decimal128':
            return 10;
        case 'ObjectId':
        case 'ObjectID':
            return 35;
        case 'Timestamp':
            return 47;
        case 'Binary':
            return 30;
        default:
            break;
    }
    if (Array.isArray(v)) return 25;
    return 20;
}

function toBigIntNumber(v) {
    if (typeof v === 'bigint') return v;
    if (typeof v === 'number') {
        if (Number.isNaN(v)) return 0n;
        if (v >= 9223372036854775807) return v === 9223372036854775808 ? -(2n ** 63n) : 2n ** 63n - 1n;
        if (v <= -9223372036854775808) return -(2n ** 63n);
        return BigInt(Math.trunc(v));
    }
    switch (bsonType(v)) {
        case 'Long':
            return BigInt(v.toString());
        case 'Int32':
        case 'Double':
            return toBigIntNumber(v.valueOf());
        default:
            throw new Error(`cannot squash ${v} to int64`);
    }
}

/**
 * MongoDB's BSONElementHasher::hash64 (seed 0) for the value types the tests use as hashed keys:
 * numbers, strings, null/missing, booleans, dates and ObjectIds. Returns a BigInt.
 */
export function hashedValue(v) {
    const parts = [];
    const int32 = (n) => {
        const b = Buffer.alloc(4);
        b.writeInt32LE(n);
        parts.push(b);
    };
    const int64 = (n) => {
        const b = Buffer.alloc(8);
        b.writeBigInt64LE(BigInt.asIntN(64, n));
        parts.push(b);
    };
    int32(0); // seed
    const ct = canonicalType(v === undefined ? null : v);
    int32(ct);
    if (v === undefined || v === null) {
        // no value bytes
    } else if (ct === 10) {
        int64(toBigIntNumber(v));
    } else if (typeof v === 'string') {
        const s = Buffer.from(v, 'utf8');
        int32(s.length + 1);
        parts.push(s, Buffer.from([0]));
    } else if (typeof v === 'boolean') {
        parts.push(Buffer.from([v ? 1 : 0]));
    } else if (v instanceof Date) {
        int64(BigInt(v.getTime()));
    } else if (ct === 35) {
        parts.push(Buffer.from(v.id));
    } else {
        throw new Error(`hashedValue: unsupported value ${BSON.EJSON.stringify(v)}`);
    }
    const digest = crypto.createHash('md5').update(Buffer.concat(parts)).digest();
    return digest.readBigInt64LE(0);
}

/** Compares two deserialized BSON values in MongoDB's order (simple collation). */
export function compareValues(a, b) {
    const ca = canonicalType(a);
    const cb = canonicalType(b);
    if (ca !== cb) return ca < cb ? -1 : 1;
    switch (ca) {
        case -1:
        case 0:
        case 5:
        case 127:
            return 0;
        case 10: {
            const x = typeof a === 'object' ? (bsonType(a) === 'Long' ? BigInt(a.toString()) : a.valueOf()) : a;
            const y = typeof b === 'object' ? (bsonType(b) === 'Long' ? BigInt(b.toString()) : b.valueOf()) : b;
            return x < y ? -1 : x > y ? 1 : 0;
        }
        case 15:
            return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
        case 35:
            return Buffer.compare(Buffer.from(a.id), Buffer.from(b.id));
        case 40:
            return a === b ? 0 : a ? 1 : -1;
        case 45:
            return a.getTime() - b.getTime() < 0 ? -1 : a.getTime() === b.getTime() ? 0 : 1;
        default:
            throw new Error(`compareValues: unsupported ${BSON.EJSON.stringify(a)} vs ${BSON.EJSON.stringify(b)}`);
    }
}

function getPath(doc, dotted) {
    let cur = doc;
    for (const part of dotted.split('.')) {
        if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return null;
        cur = cur[part];
        if (cur === undefined) return null;
    }
    return cur;
}

/** The shard key of `doc` under `keyPattern` as an array of values (hashed fields hashed). */
export function shardKeyOf(doc, keyPattern) {
    return Object.entries(keyPattern).map(([field, kind]) => {
        const v = getPath(doc, field);
        return kind === 'hashed' ? hashedValue(v) : v;
    });
}

function compareKey(values, bound, keyPattern) {
    const fields = Object.keys(keyPattern);
    for (let i = 0; i < fields.length; i++) {
        const c = compareValues(values[i], bound[fields[i]]);
        if (c !== 0) return c;
    }
    return 0;
}

/** The chunk of config.chunks (sorted or not) that contains `doc`, or null. */
export function chunkFor(doc, keyPattern, chunks) {
    const key = shardKeyOf(doc, keyPattern);
    return (
        chunks.find((c) => compareKey(key, c.min, keyPattern) >= 0 && compareKey(key, c.max, keyPattern) < 0) ||
        null
    );
}

const ejson = (v) => BSON.EJSON.stringify(v, { relaxed: true });

// --- the cluster ---------------------------------------------------------------------------------

/** A running `tessera up` cluster. */
export class TesseraCluster {
    constructor({ base, shards, routers, replicas = 1, dbpath, proc, upLog }) {
        this.base = base;
        this.numShards = shards;
        this.replicas = replicas; // members of each shard's replica set (1: plain shard processes)
        this.numRouters = routers;
        this.dbpath = dbpath;
        this.proc = proc;
        this.upLog = upLog;
        this.stdout = '';
        this.childPids = [];
        this.survivors = [];
        this.exit = null;
        this.extraServers = []; // shards started by tests (startExtraShard)
        this._clients = new Map();
        this.exited = new Promise((resolve) => {
            proc.on('exit', (code, signal) => {
                this.exit = { code, signal };
                resolve(this.exit);
            });
        });
    }

    get alive() {
        return this.exit === null;
    }
    routerPort(i = 0) {
        return this.base + i;
    }
    get configPort() {
        return this.base + this.numRouters;
    }
    /** Shard i's port (with --replicas: its first member's). */
    shardPort(i) {
        return this.memberPort(i, 0);
    }
    /**
     * Member j of shard i (`tessera up --replicas R`: the config service's R members after the
     * routers, then each shard's R members, on consecutive ports).
     */
    memberPort(i, j) {
        return this.base + this.numRouters + this.replicas * (1 + i) + j;
    }
    /** Member j of the config service (its only process without --replicas). */
    configMemberPort(j) {
        return this.base + this.numRouters + j;
    }
    /** The pid `tessera up` printed for a child ("shard0.1 127.0.0.1:p  pid N …"). */
    childPid(name) {
        const m = new RegExp(`^\\s*${name.replace('.', '\\.')}\\s+\\S+\\s+pid (\\d+)`, 'm').exec(this.stdout);
        assert.ok(m, `tessera up printed no pid for ${name}`);
        return Number(m[1]);
    }
    get configHost() {
        return `127.0.0.1:${this.configPort}`;
    }
    shardName(i) {
        return `shard${i}`;
    }
    /** One router, direct connection (the driver still sees a mongos). */
    routerUri(i = 0, db = '') {
        return `mongodb://127.0.0.1:${this.routerPort(i)}/${db}?directConnection=true&serverSelectionTimeoutMS=10000`;
    }
    /** Every router in one seed list: the driver's sharded topology. */
    clusterUri(db = '') {
        const hosts = [];
        for (let i = 0; i < this.numRouters; i++) hosts.push(`127.0.0.1:${this.routerPort(i)}`);
        return `mongodb://${hosts.join(',')}/${db}?serverSelectionTimeoutMS=10000`;
    }
    shardUri(i, db = '') {
        return `mongodb://127.0.0.1:${this.shardPort(i)}/${db}?directConnection=true&serverSelectionTimeoutMS=10000`;
    }
    configUri(db = '') {
        return `mongodb://127.0.0.1:${this.configPort}/${db}?directConnection=true&serverSelectionTimeoutMS=10000`;
    }

    /** A MongoClient for `uri`, cached and closed by stop() (do not close it yourself). */
    async clientFor(uri) {
        let c = this._clients.get(uri);
        if (!c) {
            c = new MongoClient(uri, { connectTimeoutMS: 5000, socketTimeoutMS: 120000 });
            this._clients.set(uri, c);
            await c.connect();
        }
        return c;
    }
    router(i = 0) {
        return this.clientFor(this.routerUri(i));
    }
    shard(i) {
        return this.clientFor(this.shardUri(i));
    }
    config() {
        return this.clientFor(this.configUri());
    }
    /** A client connected directly to the shard registered under `name` (config.shards host). */
    async shardByName(name) {
        const r = await this.router();
        const doc = await r.db('config').collection('shards').findOne({ _id: name });
        assert.ok(doc, `shard ${name} not in config.shards`);
        const host = doc.host.includes('/') ? doc.host.split('/')[1].split(',')[0] : doc.host;
        return this.clientFor(`mongodb://${host}/?directConnection=true&serverSelectionTimeoutMS=10000`);
    }

    logFiles() {
        let names = [];
        try {
            names = fs.readdirSync(this.dbpath).filter((n) => n.endsWith('.log'));
        } catch {
            // gone
        }
        return names.sort().map((n) => path.join(this.dbpath, n));
    }

    /** The tails of `tessera up`'s output and of every child's log, for failure messages. */
    logTail(lines = 40) {
        let s = `--- tessera up (${this.upLog}) ---\n${tail(this.upLog, lines)}\n`;
        for (const f of this.logFiles()) {
            if (f === this.upLog) continue;
            s += `--- ${path.basename(f)} (${f}) ---\n${tail(f, lines)}\n`;
        }
        for (const srv of this.extraServers) s += `--- extra shard :${srv.port} ---\n${srv.logTail(lines)}\n`;
        return s;
    }

    async waitReady(timeoutMs = startTimeoutMs) {
        const deadline = Date.now() + timeoutMs;
        while (!/Connect with: /.test(this.stdout)) {
            if (!this.alive) {
                throw new Error(`tessera up exited during startup (${JSON.stringify(this.exit)})\n${this.logTail()}`);
            }
            if (Date.now() > deadline) {
                throw new Error(`tessera up printed no "Connect with:" line within ${timeoutMs} ms\n${this.logTail()}`);
            }
            await delay(50);
        }
        for (let i = 0; i < this.numRouters; i++) {
            let lastErr = null;
            for (;;) {
                if (!this.alive) throw new Error(`tessera up exited (${JSON.stringify(this.exit)})\n${this.logTail()}`);
                try {
                    const reply = await rawPing(this.routerPort(i), 1000);
                    if (reply.ok === 1) break;
                    lastErr = new Error(`ping replied ${JSON.stringify(reply)}`);
                } catch (err) {
                    lastErr = err;
                }
                if (Date.now() > deadline) {
                    throw new Error(`router ${i} not answering ping: ${lastErr}\n${this.logTail()}`);
                }
                await delay(50);
            }
        }
    }

    /**
     * Starts one more `tessera shard` process (not registered: the test runs addShard) on a free
     * port with its own dbpath; stop() stops it too.
     */
    async startExtraShard(args = []) {
        const port = await freePort();
        const dbpath = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-xshard-db-'));
        const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-xshard-log-'));
        const out = fs.openSync(path.join(logDir, 'stdout.log'), 'a');
        const err = fs.openSync(path.join(logDir, 'stderr.log'), 'a');
        const proc = spawn(
            tesseraBin,
            ['shard', '--port', String(port), '--dbpath', dbpath, '--configdb', this.configHost,
                '--enableTestCommands', ...args],
            { stdio: ['ignore', out, err] },
        );
        fs.closeSync(out);
        fs.closeSync(err);
        await new Promise((resolve, reject) => {
            proc.once('spawn', resolve);
            proc.once('error', reject);
        });
        const srv = new TesseraServer({ port, dbpath, ownsDbpath: true, logDir, proc });
        this.extraServers.push(srv);
        await srv.waitReady();
        return srv;
    }

    /** SIGTERM to `tessera up`; after a deadline SIGKILL to it and to every child it started. */
    async stop({ timeoutMs = stopTimeoutMs } = {}) {
        for (const c of this._clients.values()) await c.close(true).catch(() => {});
        this._clients.clear();
        for (const srv of this.extraServers) await srv.stop();
        if (this.alive) {
            this.proc.kill('SIGTERM');
            let timer;
            const timeout = new Promise((resolve) => {
                timer = setTimeout(() => resolve('timeout'), timeoutMs);
            });
            const first = await Promise.race([this.exited, timeout]);
            clearTimeout(timer);
            if (first === 'timeout' && this.alive) this.proc.kill('SIGKILL');
            await this.exited;
        }
        // Its stdout drained too, before anyone removes the folder its handler writes to.
        const out = this.proc.stdout;
        if (out && !out.destroyed && !out.readableEnded) {
            await new Promise((resolve) => {
                out.once('close', resolve);
                out.once('end', resolve);
                setTimeout(resolve, 2000).unref();
            });
        }
        // Children that outlived the supervisor (it was killed, or a child ignored SIGTERM).
        this.survivors = [];
        for (const pid of this.childPids) {
            try {
                process.kill(pid, 0);
            } catch {
                continue; // gone
            }
            this.survivors.push(pid);
            await waitFor(`child ${pid} to exit`, () => {
                try {
                    process.kill(pid, 0);
                    return false;
                } catch {
                    return true;
                }
            }, { timeoutMs: 5000 }).catch(() => {
                try {
                    process.kill(pid, 'SIGKILL');
                } catch {
                    // already gone
                }
            });
        }
        return this.exit;
    }

    cleanup() {
        if (process.env.TESSERA_KEEP_DATA) return;
        fs.rmSync(this.dbpath, { recursive: true, force: true });
        for (const srv of this.extraServers) srv.cleanup();
    }

    // --- placement oracle -------------------------------------------------------------------------

    /** {coll, chunks} of ns from the config catalog, read through router 0 (int64 as BigInt). */
    async placement(ns) {
        const r = await this.router();
        const cfg = r.db('config');
        const coll = await cfg.collection('collections').findOne({ _id: ns }, { useBigInt64: true });
        if (!coll) return { coll: null, chunks: [] };
        const filter = coll.uuid ? { $or: [{ uuid: coll.uuid }, { ns }] } : { ns };
        const chunks = await cfg.collection('chunks').find(filter, { useBigInt64: true }).sort({ min: 1 }).toArray();
        return { coll, chunks };
    }

    /**
     * Checks where the documents of ns live. Sharded: every document visible on a shard (direct
     * connection, so orphans must be hidden) is on exactly one shard, that shard owns the chunk of
     * the document's shard key in config.chunks, the chunks cover the key space without gaps or
     * overlaps; unsharded: every document is on the database primary and nowhere else. In both
     * cases the router's countDocuments and the union of the shards hold expectedCount documents.
     * Returns {perShard: {name: count}, chunks, coll}.
     */
    async checkConsistency(ns, expectedCount) {
        const [dbName, ...rest] = ns.split('.');
        const collName = rest.join('.');
        const r = await this.router();
        const shards = await r.db('config').collection('shards').find().sort({ _id: 1 }).toArray();
        assert.ok(shards.length > 0, 'config.shards is empty');
        const { coll, chunks } = await this.placement(ns);

        const perShard = {};
        const seen = new Map(); // EJSON of _id -> shard name
        const problems = [];
        for (const s of shards) {
            const client = await this.shardByName(s._id);
            const docs = await client.db(dbName).collection(collName).find({}, { useBigInt64: true }).toArray();
            perShard[s._id] = docs.length;
            for (const d of docs) {
                const id = ejson(d._id);
                if (seen.has(id)) problems.push(`_id ${id} is on ${seen.get(id)} and on ${s._id}`);
                seen.set(id, s._id);
                if (coll) {
                    const chunk = chunkFor(d, coll.key, chunks);
                    if (!chunk) {
                        problems.push(`_id ${id} on ${s._id}: no chunk contains its key ${ejson(shardKeyOf(d, coll.key).map(String))}`);
                    } else if (chunk.shard !== s._id) {
                        problems.push(
                            `_id ${id} is visible on ${s._id} (direct read, so not hidden as an orphan) but its chunk ` +
                                `${ejson(chunk.min)}..${ejson(chunk.max)} belongs to ${chunk.shard}`,
                        );
                    }
                }
            }
        }
        if (coll) {
            assert.ok(chunks.length > 0, `${ns} is sharded but has no chunks`);
            const fields = Object.keys(coll.key);
            for (const f of fields) {
                assert.equal(bsonType(chunks[0].min[f]), 'MinKey', `first chunk min ${ejson(chunks[0].min)}`);
                assert.equal(bsonType(chunks[chunks.length - 1].max[f]), 'MaxKey', `last chunk max`);
            }
            for (let i = 1; i < chunks.length; i++) {
                const prevMax = fields.map((f) => chunks[i - 1].max[f]);
                if (compareKey(prevMax, chunks[i].min, coll.key) !== 0) {
                    problems.push(`chunks not contiguous: ${ejson(chunks[i - 1].max)} then ${ejson(chunks[i].min)}`);
                }
            }
            const names = new Set(shards.map((s) => s._id));
            for (const c of chunks) {
                if (!names.has(c.shard)) problems.push(`chunk ${ejson(c.min)} on unknown shard ${c.shard}`);
            }
        } else {
            const dbDoc = await r.db('config').collection('databases').findOne({ _id: dbName });
            assert.ok(dbDoc, `database ${dbName} not in config.databases`);
            for (const [name, n] of Object.entries(perShard)) {
                if (name !== dbDoc.primary && n > 0) {
                    problems.push(`${n} documents of unsharded ${ns} on ${name}, but the primary is ${dbDoc.primary}`);
                }
            }
        }
        assert.deepEqual(problems, [], `placement problems of ${ns}:\n${problems.join('\n')}\nper shard: ${ejson(perShard)}`);
        assert.equal(seen.size, expectedCount, `${ns}: shards hold ${seen.size} documents in all (${ejson(perShard)}), want ${expectedCount}`);
        const routed = await r.db(dbName).collection(collName).countDocuments({});
        assert.equal(routed, expectedCount, `${ns}: countDocuments through the router`);
        return { perShard, chunks, coll };
    }
}

/** Starts `tessera up` and waits until it serves. Retries on a port race. */
export async function startCluster({ shards = 3, routers = 2, replicas = 1, args = [] } = {}) {
    if (!fs.existsSync(tesseraBin)) {
        throw new Error(`tessera binary not found at ${tesseraBin} (set TESSERA_BIN or build it)`);
    }
    for (let attempt = 1; ; attempt++) {
        const base = await freePortRange(routers + replicas * (1 + shards));
        const dbpath = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-cluster-'));
        const upLog = path.join(dbpath, 'up.log');
        const logFd = fs.openSync(upLog, 'a');
        const proc = spawn(
            tesseraBin,
            ['up', '--shards', String(shards), '--routers', String(routers), '--port', String(base),
                '--dbpath', dbpath, '--enableTestCommands',
                ...(replicas > 1 ? ['--replicas', String(replicas)] : []), ...args],
            { stdio: ['ignore', 'pipe', logFd] },
        );
        fs.closeSync(logFd);
        const cluster = new TesseraCluster({ base, shards, routers, replicas, dbpath, proc, upLog });
        proc.stdout.on('data', (d) => {
            cluster.stdout += d;
            // The supervisor's last words can arrive after its exit, once stop() returned and the
            // folder may be gone (docs_examples saw ENOENT here): kept in memory then.
            if (fs.existsSync(path.dirname(upLog))) fs.appendFileSync(upLog, d);
            for (const m of String(d).matchAll(/pid (\d+)/g)) cluster.childPids.push(Number(m[1]));
        });
        await new Promise((resolve, reject) => {
            proc.once('spawn', resolve);
            proc.once('error', reject);
        });
        try {
            await cluster.waitReady();
            return cluster;
        } catch (err) {
            const logs = cluster.logTail();
            await cluster.stop({ timeoutMs: 5000 });
            const portRace = /address already in use|EADDRINUSE/i.test(logs);
            cluster.cleanup();
            if (!portRace || attempt >= 3) throw err;
        }
    }
}

/** Appends the cluster's log tails to the error of a failing test. */
export function withClusterLog(ctx, fn) {
    return async (t) => {
        try {
            return await fn(t);
        } catch (err) {
            const cluster = ctx.cluster;
            if (cluster && err && typeof err === 'object' && !err.tesseraLogAttached) {
                const state = cluster.alive ? 'alive' : `EXITED ${JSON.stringify(cluster.exit)}`;
                const extra = `\n[tessera up is ${state}]\n${cluster.logTail(30)}`;
                try {
                    err.message += extra;
                    if (typeof err.stack === 'string') err.stack += extra;
                    err.tesseraLogAttached = true;
                } catch {
                    // frozen error object
                }
            }
            throw err;
        }
    };
}

/**
 * describe() with one cluster shared by its tests: `ctx.cluster` is set once `before` ran, and
 * `ctx.test(name, fn)` is `it` with the cluster's logs attached on failure.
 */
export function describeWithCluster(name, body, options = {}) {
    return describe(name, () => {
        const ctx = { cluster: null };
        ctx.test = (testName, optsOrFn, maybeFn) => {
            const [opts, fn] = typeof optsOrFn === 'function' ? [{}, optsOrFn] : [optsOrFn, maybeFn];
            return it(testName, opts, withClusterLog(ctx, fn));
        };
        before(async () => {
            ctx.cluster = await startCluster(options);
        });
        after(async () => {
            if (!ctx.cluster) return;
            const diedEarly = !ctx.cluster.alive;
            const logs = diedEarly ? ctx.cluster.logTail() : '';
            const exit = await ctx.cluster.stop();
            const survivors = ctx.cluster.survivors;
            const stopLogs = survivors.length || exit.code !== 0 ? ctx.cluster.logTail() : '';
            ctx.cluster.cleanup();
            if (diedEarly) throw new Error(`tessera up died during the tests\n${logs}`);
            // SIGTERM of `tessera up` must stop every child and exit 0.
            assert.equal(exit.code, 0, `tessera up exit ${JSON.stringify(exit)}\n${stopLogs}`);
            assert.deepEqual(survivors, [], `children alive after tessera up exited\n${stopLogs}`);
        });
        body(ctx);
    });
}

// --- a cluster of individually started roles (crash tests) ---------------------------------------
//
// `tessera up` never restarts its children, so the crash tests start every role themselves:
// `tessera config`, `tessera shard` ×S, `tessera router` ×R (all with --enableTestCommands), on
// ports chosen once (a restart reuses the port and the dbpath), each logging stdout+stderr to
// DIR/<name>.log (appended across restarts). `kill9`, `restart`, `sigstop`/`sigcont` act on one
// role by its child pid. The placement oracle (`placement`, `checkConsistency`) is
// TesseraCluster's, reading through router 0.

/** One role process of a ManualCluster: restartable on the same port and dbpath. */
export class RoleProcess {
    constructor({ name, role, port, dbpath, logPath, extraArgs }) {
        this.name = name;
        this.role = role;
        this.port = port;
        this.dbpath = dbpath;
        this.logPath = logPath;
        this.extraArgs = extraArgs;
        this.proc = null;
        this.exit = null;
        this.exited = Promise.resolve(null);
        this.stopped = false; // SIGSTOPped
    }

    get alive() {
        return this.proc !== null && this.exit === null;
    }
    get host() {
        return `127.0.0.1:${this.port}`;
    }
    get pid() {
        return this.proc ? this.proc.pid : null;
    }
    uri(db = '') {
        return `mongodb://${this.host}/${db}?directConnection=true&serverSelectionTimeoutMS=10000`;
    }

    args() {
        const a = [this.role, '--port', String(this.port)];
        if (this.dbpath) a.push('--dbpath', this.dbpath);
        return [...a, ...this.extraArgs, '--enableTestCommands'];
    }

    async spawn() {
        if (this.dbpath) fs.mkdirSync(this.dbpath, { recursive: true });
        const fd = fs.openSync(this.logPath, 'a');
        fs.writeSync(fd, `\n=== ${new Date().toISOString()} start: tessera ${this.args().join(' ')}\n`);
        const proc = spawn(tesseraBin, this.args(), { stdio: ['ignore', fd, fd] });
        fs.closeSync(fd);
        this.proc = proc;
        this.exit = null;
        this.stopped = false;
        this.exited = new Promise((resolve) => {
            proc.on('exit', (code, signal) => {
                this.exit = { code, signal };
                resolve(this.exit);
            });
        });
        await new Promise((resolve, reject) => {
            proc.once('spawn', resolve);
            proc.once('error', reject);
        });
    }

    /** Waits (deadline) until the process answers an OP_MSG ping. */
    async waitReady(timeoutMs = startTimeoutMs) {
        const deadline = Date.now() + timeoutMs;
        let lastErr = null;
        while (Date.now() < deadline) {
            if (!this.alive) {
                throw new Error(`${this.name} exited during startup (${JSON.stringify(this.exit)})\n${this.logTail()}`);
            }
            try {
                const reply = await rawPing(this.port, 1000);
                if (reply.ok === 1) return;
                lastErr = new Error(`ping replied ${JSON.stringify(reply)}`);
            } catch (err) {
                lastErr = err;
            }
            await delay(50);
        }
        throw new Error(`${this.name} not answering ping on ${this.port} after ${timeoutMs} ms: ${lastErr}\n${this.logTail()}`);
    }

    /** kill -9 (a crash); resolves once the process is gone. */
    async kill9() {
        if (this.alive) this.proc.kill('SIGKILL');
        await this.exited;
        this.stopped = false;
    }

    sigstop() {
        assert.ok(this.alive, `${this.name} is not running`);
        this.proc.kill('SIGSTOP');
        this.stopped = true;
    }

    sigcont() {
        if (this.alive && this.stopped) this.proc.kill('SIGCONT');
        this.stopped = false;
    }

    /** Number of log lines (all runs of this role) that match `re`. */
    countLog(re) {
        let text = '';
        try {
            text = fs.readFileSync(this.logPath, 'utf8');
        } catch {
            return 0;
        }
        const g = new RegExp(re.source, re.flags.includes('g') ? re.flags : `${re.flags}g`);
        return (text.match(g) || []).length;
    }

    logTail(lines = 40) {
        return `--- ${this.name} (${this.logPath}) ${this.alive ? `pid ${this.pid}` : `exited ${JSON.stringify(this.exit)}`} ---\n${tail(this.logPath, lines)}`;
    }
}

/**
 * A sharded cluster of individually started roles: config on base, shard i on base+1+i, router i
 * on base+1+S+i. Shards are registered through router 0 with addShard {name: "shard<i>"}.
 */
export class ManualCluster {
    constructor({ base, shards, routers, dir }) {
        this.base = base;
        this.numShards = shards;
        this.numRouters = routers;
        this.dir = dir;
        this.dbpath = dir;
        this._clients = new Map();
        const role = (name, r, port, dbpath, extraArgs = []) =>
            new RoleProcess({ name, role: r, port, dbpath, logPath: path.join(dir, `${name}.log`), extraArgs });
        this.configProc = role('config', 'config', base, path.join(dir, 'config'));
        const configdb = ['--configdb', this.configProc.host];
        this.shardProcs = [];
        for (let i = 0; i < shards; i++) {
            this.shardProcs.push(role(`shard${i}`, 'shard', base + 1 + i, path.join(dir, `shard${i}`), configdb));
        }
        this.routerProcs = [];
        for (let i = 0; i < routers; i++) {
            this.routerProcs.push(role(`router${i}`, 'router', base + 1 + shards + i, null, configdb));
        }
    }

    get processes() {
        return [this.configProc, ...this.shardProcs, ...this.routerProcs];
    }
    shardName(i) {
        return `shard${i}`;
    }
    /** The RoleProcess of the shard registered as `name`. */
    shardProc(name) {
        const i = this.shardProcs.findIndex((p, idx) => this.shardName(idx) === name);
        assert.ok(i >= 0, `no shard process named ${name}`);
        return this.shardProcs[i];
    }
    routerUri(i = 0, db = '') {
        return this.routerProcs[i].uri(db);
    }
    configUri(db = '') {
        return this.configProc.uri(db);
    }

    async clientFor(uri) {
        let c = this._clients.get(uri);
        if (!c) {
            c = new MongoClient(uri, { connectTimeoutMS: 5000, socketTimeoutMS: 120000 });
            this._clients.set(uri, c);
            await c.connect();
        }
        return c;
    }
    /**
     * Closes and forgets the cached clients of one process. close() sends endSessions, which
     * waits for server selection when the process is gone or stopped: bounded to 2 s.
     */
    async dropClientsOf(p) {
        for (const [uri, c] of [...this._clients]) {
            if (uri.includes(`//${p.host}/`)) {
                this._clients.delete(uri);
                await Promise.race([c.close(true).catch(() => {}), delay(2000)]);
            }
        }
    }
    router(i = 0) {
        return this.clientFor(this.routerUri(i));
    }
    config() {
        return this.clientFor(this.configUri());
    }
    shard(i) {
        return this.clientFor(this.shardProcs[i].uri());
    }
    async shardByName(name) {
        return this.clientFor(this.shardProc(name).uri());
    }

    /** kill -9 one role (a crash), after closing the test's own clients of it. */
    async kill9(p) {
        await this.dropClientsOf(p);
        await p.kill9();
    }
    /** Starts a killed role again on the same port and dbpath and waits until it answers. */
    async restart(p) {
        assert.ok(!p.alive, `${p.name} is still running`);
        await this.dropClientsOf(p);
        await p.spawn();
        await p.waitReady();
    }

    /** Starts every role, then registers the shards through router 0. */
    async startAll() {
        await this.configProc.spawn();
        await this.configProc.waitReady();
        for (const p of this.shardProcs) await p.spawn();
        for (const p of this.routerProcs) await p.spawn();
        for (const p of [...this.shardProcs, ...this.routerProcs]) await p.waitReady();
        const admin = (await this.router()).db('admin');
        for (let i = 0; i < this.numShards; i++) {
            const r = await admin.command({ addShard: this.shardProcs[i].host, name: this.shardName(i) });
            assert.equal(r.ok, 1, `addShard ${this.shardName(i)}: ${JSON.stringify(r)}`);
        }
    }

    logTail(lines = 40) {
        return this.processes.map((p) => p.logTail(lines)).join('\n');
    }

    /** Closes the clients and SIGKILLs every role still running (crash tests need no clean exit). */
    async stop() {
        for (const c of this._clients.values()) await c.close(true).catch(() => {});
        this._clients.clear();
        for (const p of this.processes) await p.kill9();
    }

    cleanup() {
        if (process.env.TESSERA_KEEP_DATA) return;
        fs.rmSync(this.dir, { recursive: true, force: true });
    }
}
ManualCluster.prototype.placement = TesseraCluster.prototype.placement;
ManualCluster.prototype.checkConsistency = TesseraCluster.prototype.checkConsistency;

/** Starts a ManualCluster (retrying on a port race). */
export async function startManualCluster({ shards = 3, routers = 1 } = {}) {
    if (!fs.existsSync(tesseraBin)) {
        throw new Error(`tessera binary not found at ${tesseraBin} (set TESSERA_BIN or build it)`);
    }
    for (let attempt = 1; ; attempt++) {
        const base = await freePortRange(1 + shards + routers);
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-crash-'));
        const cluster = new ManualCluster({ base, shards, routers, dir });
        // If the test process dies without its `after` hook (timeout, Ctrl-C), no role outlives it.
        const killAll = () => {
            for (const p of cluster.processes) if (p.alive) p.proc.kill('SIGKILL');
        };
        process.once('exit', killAll);
        try {
            await cluster.startAll();
            return cluster;
        } catch (err) {
            const logs = cluster.logTail();
            await cluster.stop();
            cluster.cleanup();
            if (!/address already in use|EADDRINUSE/i.test(logs) || attempt >= 3) {
                err.message += `\n${logs}`;
                throw err;
            }
        }
    }
}

/**
 * describe() with one ManualCluster shared by its tests (`ctx.cluster`); `ctx.test` is `it` with
 * every role's log tail attached on failure. The cluster is SIGKILLed and removed at the end.
 */
export function describeWithManualCluster(name, body, options = {}) {
    return describe(name, () => {
        const ctx = { cluster: null };
        ctx.test = (testName, fn, opts = {}) =>
            it(testName, opts, async (t) => {
                try {
                    return await fn(t);
                } catch (err) {
                    if (ctx.cluster && err && typeof err === 'object') {
                        const extra = `\n${ctx.cluster.logTail(30)}`;
                        try {
                            err.message += extra;
                            if (typeof err.stack === 'string') err.stack += extra;
                        } catch {
                            // frozen error object
                        }
                    }
                    throw err;
                }
            });
        before(async () => {
            ctx.cluster = await startManualCluster(options);
        });
        after(async () => {
            if (!ctx.cluster) return;
            await ctx.cluster.stop();
            ctx.cluster.cleanup();
        });
        body(ctx);
    });
}

/** Resolves a command promise to {reply} or {error} (never rejects): a held command's outcome. */
export const settle = (promise) => promise.then((reply) => ({ reply }), (error) => ({ error }));

/** Moves `amount` from account `from` to account `to` of `collection` (balances in `balance`) in
 *  one transaction (withTransaction, with `options`) through `client`. */
export async function transferInTransaction(client, collection, from, to, amount, options = {}) {
    const session = client.startSession();
    try {
        await session.withTransaction(async () => {
            await collection.updateOne({ _id: from }, { $inc: { balance: -amount } }, { session });
            await collection.updateOne({ _id: to }, { $inc: { balance: amount } }, { session });
        }, options);
    } finally {
        await session.endSession();
    }
}
