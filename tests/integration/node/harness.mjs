// Test harness: starts real `tessera serve` processes for the Node integration tests.
//
// Each server gets a free loopback port and a fresh temporary dbpath (unless one is given), is
// polled until it answers an OP_MSG `ping` (TCP connect + ping, with a deadline; no fixed sleeps),
// writes its stdout/stderr to files that are shown when something fails, and is stopped with
// SIGTERM, then SIGKILL after a deadline.
//
// Environment: TESSERA_BIN (default <repo>/build/tessera), TESSERA_START_TIMEOUT_MS (default 30000),
// TESSERA_KEEP_DATA=1 keeps temporary dbpaths and logs.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { before, after, describe } from 'node:test';
import { BSON, MongoClient } from 'mongodb';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..', '..');
export const tesseraBin = process.env.TESSERA_BIN || path.join(repoRoot, 'build', 'tessera');
export const mongoshBin = path.join(repoRoot, 'tests', 'integration', 'node_modules', '.bin', 'mongosh');
const startTimeoutMs = Number(process.env.TESSERA_START_TIMEOUT_MS || 30000);
const stopTimeoutMs = 10000;

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Returns a TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort() {
    return new Promise((resolve, reject) => {
        const srv = net.createServer();
        srv.unref();
        srv.on('error', reject);
        srv.listen(0, '127.0.0.1', () => {
            const { port } = srv.address();
            srv.close(() => resolve(port));
        });
    });
}

let requestId = 1;

/** Encodes an OP_MSG with one kind-0 section (and optional kind-1 sequences). */
export function encodeOpMsg(body, { flags = 0, sequences = [] } = {}) {
    const parts = [Buffer.from([0]), Buffer.from(BSON.serialize(body))];
    for (const { identifier, documents } of sequences) {
        const docs = documents.map((d) => Buffer.from(BSON.serialize(d)));
        const id = Buffer.from(identifier + '\0', 'utf8');
        const size = Buffer.alloc(4);
        size.writeInt32LE(4 + id.length + docs.reduce((n, d) => n + d.length, 0));
        parts.push(Buffer.from([1]), size, id, ...docs);
    }
    const payload = Buffer.concat(parts);
    const header = Buffer.alloc(20);
    header.writeInt32LE(20 + payload.length, 0);
    header.writeInt32LE(requestId++, 4);
    header.writeInt32LE(0, 8);
    header.writeInt32LE(2013, 12);
    header.writeUInt32LE(flags, 16);
    return Buffer.concat([header, payload]);
}

/**
 * Connects to 127.0.0.1:port, sends OP_MSG `body` (with $db) and resolves with the reply body, or
 * rejects (connection refused, closed, garbage, timeout). No driver in between: what the server
 * answers to exactly this request.
 */
export function rawCommand(port, body, timeoutMs = 2000) {
    return new Promise((resolve, reject) => {
        const sock = net.connect({ host: '127.0.0.1', port });
        let buf = Buffer.alloc(0);
        const fail = (err) => {
            sock.destroy();
            reject(err);
        };
        sock.setTimeout(timeoutMs, () => fail(new Error('command timed out')));
        sock.on('error', fail);
        sock.on('connect', () => sock.write(encodeOpMsg(body)));
        sock.on('data', (chunk) => {
            buf = Buffer.concat([buf, chunk]);
            if (buf.length < 4) return;
            const len = buf.readInt32LE(0);
            if (len < 21 || len > 48000000) return fail(new Error(`bad reply length ${len}`));
            if (buf.length < len) return;
            sock.destroy();
            try {
                const opCode = buf.readInt32LE(12);
                if (opCode !== 2013) throw new Error(`reply opCode ${opCode}, want 2013`);
                if (buf[20] !== 0) throw new Error(`reply section kind ${buf[20]}, want 0`);
                const bodyLen = buf.readInt32LE(21);
                resolve(BSON.deserialize(buf.subarray(21, 21 + bodyLen)));
            } catch (err) {
                reject(err);
            }
        });
        sock.on('end', () => fail(new Error('connection closed before a full reply')));
    });
}

/** rawCommand {ping: 1} on admin. */
export function rawPing(port, timeoutMs = 2000) {
    return rawCommand(port, { ping: 1, $db: 'admin' }, timeoutMs);
}

function tail(file, lines = 60) {
    try {
        const text = fs.readFileSync(file, 'utf8');
        return text.split('\n').slice(-lines).join('\n');
    } catch {
        return '<no log>';
    }
}

/** A running `tessera serve` child process. */
export class TesseraServer {
    constructor({ port, dbpath, ownsDbpath, logDir, proc }) {
        this.port = port;
        this.dbpath = dbpath;
        this.ownsDbpath = ownsDbpath;
        this.logDir = logDir;
        this.stdoutPath = path.join(logDir, 'stdout.log');
        this.stderrPath = path.join(logDir, 'stderr.log');
        this.proc = proc;
        this.exit = null; // {code, signal} once exited
        this.stopping = false;
        this.exited = new Promise((resolve) => {
            proc.on('exit', (code, signal) => {
                this.exit = { code, signal };
                resolve(this.exit);
            });
        });
    }

    get host() {
        return `127.0.0.1:${this.port}`;
    }

    /** Connection string for the drivers; `db` is the default database. */
    uri(db = '', params = 'serverSelectionTimeoutMS=10000') {
        return `mongodb://127.0.0.1:${this.port}/${db}?directConnection=true&${params}`;
    }

    /** A connected MongoClient (caller closes it). */
    async client(options = {}) {
        const client = new MongoClient(this.uri(), {
            serverSelectionTimeoutMS: 10000,
            connectTimeoutMS: 5000,
            socketTimeoutMS: 60000,
            ...options,
        });
        await client.connect();
        return client;
    }

    /** The last lines of the server's stderr and stdout, for failure messages. */
    logTail(lines = 60) {
        return (
            `--- tessera stderr (${this.stderrPath}) ---\n${tail(this.stderrPath, lines)}\n` +
            `--- tessera stdout (${this.stdoutPath}) ---\n${tail(this.stdoutPath, lines)}`
        );
    }

    get alive() {
        return this.exit === null;
    }

    async waitReady(deadlineMs = startTimeoutMs) {
        const deadline = Date.now() + deadlineMs;
        let lastErr = null;
        while (Date.now() < deadline) {
            if (!this.alive) {
                throw new Error(
                    `tessera exited during startup (${JSON.stringify(this.exit)})\n${this.logTail()}`,
                );
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
        throw new Error(
            `tessera not ready on port ${this.port} after ${deadlineMs} ms: ${lastErr}\n${this.logTail()}`,
        );
    }

    /** SIGTERM, then SIGKILL after a deadline. Resolves with {code, signal}. */
    async stop({ timeoutMs = stopTimeoutMs } = {}) {
        this.stopping = true;
        if (this.alive) {
            this.proc.kill('SIGTERM');
            let timer;
            const timeout = new Promise((resolve) => {
                timer = setTimeout(() => resolve('timeout'), timeoutMs);
            });
            const first = await Promise.race([this.exited, timeout]);
            clearTimeout(timer);
            if (first === 'timeout' && this.alive) {
                this.proc.kill('SIGKILL');
            }
        }
        return this.exited;
    }

    /** kill -9, as a crash. */
    async kill9() {
        this.stopping = true;
        if (this.alive) this.proc.kill('SIGKILL');
        return this.exited;
    }

    /** Removes the temporary dbpath and logs (unless TESSERA_KEEP_DATA is set). */
    cleanup() {
        if (process.env.TESSERA_KEEP_DATA) return;
        if (this.ownsDbpath) fs.rmSync(this.dbpath, { recursive: true, force: true });
        fs.rmSync(this.logDir, { recursive: true, force: true });
    }
}

/** Spawns `tessera serve` without waiting for readiness. */
export async function spawnServer({ dbpath, port, args = [] } = {}) {
    if (!fs.existsSync(tesseraBin)) {
        throw new Error(`tessera binary not found at ${tesseraBin} (set TESSERA_BIN or build it)`);
    }
    const ownsDbpath = !dbpath;
    dbpath = dbpath || fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-node-db-'));
    const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-node-log-'));
    port = port || (await freePort());
    const out = fs.openSync(path.join(logDir, 'stdout.log'), 'a');
    const err = fs.openSync(path.join(logDir, 'stderr.log'), 'a');
    const proc = spawn(tesseraBin, ['serve', '--port', String(port), '--dbpath', dbpath, ...args], {
        stdio: ['ignore', out, err],
    });
    fs.closeSync(out);
    fs.closeSync(err);
    const server = new TesseraServer({ port, dbpath, ownsDbpath, logDir, proc });
    await new Promise((resolve, reject) => {
        proc.once('spawn', resolve);
        proc.once('error', reject);
    });
    return server;
}

/** Starts `tessera serve` and waits until it answers ping. Retries if the port was taken. */
export async function startServer(opts = {}) {
    for (let attempt = 1; ; attempt++) {
        const server = await spawnServer(opts);
        try {
            await server.waitReady();
            return server;
        } catch (err) {
            await server.stop({ timeoutMs: 2000 });
            const portRace = !opts.port && /address already in use|EADDRINUSE/i.test(server.logTail());
            if (!portRace || attempt >= 3) {
                server.cleanup();
                throw err;
            }
            server.cleanup();
        }
    }
}

/**
 * describe() with one server and one connected MongoClient shared by its tests. The body gets a
 * context `ctx` whose `server` and `client` are set once `before` has run, plus `ctx.db(name)`.
 * A test that throws gets the server's log tail appended to its error message (use ctx.it).
 */
export function describeWithServer(name, body, { clientOptions = {}, serverOptions = {} } = {}) {
    return describe(name, () => {
        const ctx = {
            server: null,
            client: null,
            db: (dbName) => ctx.client.db(dbName),
        };
        before(async () => {
            ctx.server = await startServer(serverOptions);
            ctx.client = await ctx.server.client(clientOptions);
        });
        after(async () => {
            if (ctx.client) await ctx.client.close().catch(() => {});
            if (ctx.server) {
                const diedEarly = !ctx.server.alive && !ctx.server.stopping;
                const exit = await ctx.server.stop();
                if (diedEarly) {
                    throw new Error(
                        `tessera died during the tests (${JSON.stringify(exit)})\n${ctx.server.logTail()}`,
                    );
                }
                ctx.server.cleanup();
            }
        });
        body(ctx);
    });
}

/**
 * Wraps a test function so that its failure message carries the server's log tail and says
 * whether the process is still alive.
 */
export function withServerLog(ctxOrServer, fn) {
    return async (t) => {
        try {
            return await fn(t);
        } catch (err) {
            const server = ctxOrServer instanceof TesseraServer ? ctxOrServer : ctxOrServer.server;
            if (server && err && typeof err === 'object' && !err.tesseraLogAttached) {
                const state = server.alive ? 'alive' : `EXITED ${JSON.stringify(server.exit)}`;
                const extra = `\n[tessera on port ${server.port} is ${state}]\n${server.logTail(40)}`;
                try {
                    err.message += extra;
                    if (typeof err.stack === 'string') err.stack += extra;
                    err.tesseraLogAttached = true;
                } catch {
                    // Frozen error objects: leave as is.
                }
            }
            throw err;
        }
    };
}

/** A database name unique to this process, to keep tests independent. */
let dbCounter = 0;
/** A deterministic generator of numbers in [0, 1) (mulberry32), so a failing run can be replayed. */
export function rng(seed) {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

export function uniqueDbName(prefix = 'itest') {
    dbCounter += 1;
    return `${prefix}_${process.pid}_${dbCounter}`;
}

/** Runs mongosh --eval SCRIPT against uri; resolves {code, signal, stdout, stderr}. */
export function mongosh(uri, script, timeoutMs = 90000) {
    return new Promise((resolve, reject) => {
        const proc = spawn(mongoshBin, [uri, '--quiet', '--norc', '--eval', script], {
            stdio: ['ignore', 'pipe', 'pipe'],
            env: { ...process.env, MONGOSH_NO_TELEMETRY: '1', NO_COLOR: '1' },
        });
        let stdout = '';
        let stderr = '';
        proc.stdout.on('data', (d) => (stdout += d));
        proc.stderr.on('data', (d) => (stderr += d));
        const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
        proc.on('error', reject);
        proc.on('close', (code, signal) => {
            clearTimeout(timer);
            resolve({ code, signal, stdout, stderr });
        });
    });
}

/** The EJSON value printed by a mongosh script as `print('RESULT ' + EJSON.stringify(x))`. */
export function resultLine(out) {
    const line = out.stdout.split('\n').find((l) => l.startsWith('RESULT '));
    assert.ok(line, `no RESULT line; exit ${out.code}\nstdout:\n${out.stdout}\nstderr:\n${out.stderr}`);
    return BSON.EJSON.parse(line.slice('RESULT '.length));
}
