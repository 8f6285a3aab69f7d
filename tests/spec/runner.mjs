// Executes unified-format test files: requirements against the pinned profile, initialData,
// entities, operations, expectEvents, outcome, cleanup, and a per-test timeout.
import fs from 'node:fs';
import path from 'node:path';
import mongodb, { EJSON } from './driver.mjs';
import { EntityMap, COMMAND_EVENT_TYPES, CMAP_EVENT_TYPES, applyUriOptions, hostsOf, withHosts } from './entities.mjs';
import { match, matchExact, describe, MatchError, UnsupportedError } from './matcher.mjs';
import { runOperation, AssertionFailure, errorSummary } from './operations.mjs';
import { requirementsMismatch, schemaProblem } from './requirements.mjs';

const { MongoClient } = mongodb;

const EJSON_WRAPPERS = new Set([
    '$oid', '$date', '$numberInt', '$numberLong', '$numberDouble', '$numberDecimal', '$binary', '$uuid',
    '$regularExpression', '$timestamp', '$code', '$symbol', '$dbPointer', '$minKey', '$maxKey', '$undefined',
]);

// Extended JSON with plain JSON numbers kept as JS numbers, but explicit $numberLong / $numberDouble
// kept typed (Long / Double) so the driver sends the intended BSON type.
function revive(v) {
    if (Array.isArray(v)) return v.map(revive);
    if (v === null || typeof v !== 'object') return v;
    const keys = Object.keys(v);
    if (keys.length > 0 && EJSON_WRAPPERS.has(keys[0])) {
        const out = EJSON.deserialize(v, { relaxed: false });
        if (out && out._bsontype === 'Int32') return out.value;
        return out;
    }
    const out = {};
    for (const k of keys) out[k] = revive(v[k]);
    return out;
}

export function parseTestFile(text) {
    return revive(JSON.parse(text));
}

/** Expands files and directories into a sorted list of .json test files. */
export function collectFiles(paths) {
    const files = [];
    const visit = (p) => {
        const st = fs.statSync(p);
        if (st.isDirectory()) {
            for (const name of fs.readdirSync(p).sort()) {
                const child = path.join(p, name);
                if (fs.statSync(child).isDirectory() || name.endsWith('.json')) visit(child);
            }
        } else {
            files.push(p);
        }
    };
    for (const p of paths) visit(p);
    return files;
}

function displayName(file) {
    return `${path.basename(path.dirname(file))}/${path.basename(file)}`;
}

// The Node driver (7.9, lib/sessions.js commitTransaction/abortTransaction) adds `wtimeout: 10000`
// to every commit or abort that carries a write concern; the transactions specification, and so
// the tests, expect it only on a retried commit. This is the one driver deviation the runner
// absorbs: when the expected command's writeConcern names no wtimeout, the driver's 10000 is not
// compared. Any other field, and any other wtimeout value, is still matched strictly.
const DRIVER_COMMIT_WTIMEOUT = 10000;
const DRIVER_WTIMEOUT_COMMANDS = new Set(['commitTransaction', 'abortTransaction']);

function withoutDriverCommitWtimeout(expectedCommand, actual) {
    const actualWc = actual.command?.writeConcern;
    const expectedWc = expectedCommand?.writeConcern;
    if (!DRIVER_WTIMEOUT_COMMANDS.has(actual.commandName)) return actual.command;
    if (actualWc == null || Number(actualWc.wtimeout) !== DRIVER_COMMIT_WTIMEOUT) return actual.command;
    if (expectedWc == null || typeof expectedWc !== 'object' || 'wtimeout' in expectedWc) return actual.command;
    if (Object.keys(expectedWc).some((k) => k.startsWith('$$'))) return actual.command;
    const { wtimeout, ...rest } = actualWc;
    return { ...actual.command, writeConcern: rest };
}

class TestTimeout extends Error {}

function reasonOf(err) {
    if (err instanceof AssertionFailure || err instanceof MatchError) return err.message;
    if (err instanceof UnsupportedError) return err.message;
    if (err instanceof TestTimeout) return err.message;
    return `unexpected error: ${errorSummary(err)}`;
}

const SYSTEM_DBS = new Set(['admin', 'config', 'local']);

// Failures caused by the Node driver rather than the server. They still count as failed (the runner
// cannot run these tests faithfully), but the reason says so.
const DRIVER_DEVIATIONS = [
    {
        file: /bypassDocumentValidation\.json$/,
        reason: /bypassDocumentValidation: missing field/,
        note: 'Node driver 7.9 sends bypassDocumentValidation only when true (NODE driver deviation, not a server bug)',
    },
    {
        file: /client-bulkWrite-partialResults\.json$/,
        reason: /^error\.result\.\w+: expected no field/,
        note: 'Node driver 7.9 attaches a partialResult even when no write succeeded (NODE driver deviation, not a server bug)',
    },
];

export function annotateDriverDeviation(file, reason) {
    for (const d of DRIVER_DEVIATIONS) {
        if (d.file.test(file) && d.reason.test(reason)) return `[driver] ${d.note}: ${reason}`;
    }
    return reason;
}

export class Runner {
    /**
     * options: { uri, profile, timeoutMs, filter (RegExp), onResult(result) }
     */
    constructor(options) {
        this.options = options;
        this.results = [];
        this.connectFailures = 0;
        this.lastConnectError = '';
    }

    record(result) {
        this.results.push(result);
        this.options.onResult?.(result);
    }

    // The routers of a sharded run's URI (one per host); elsewhere the URI is one deployment.
    routerHosts() {
        const hosts = hostsOf(this.options.uri);
        return this.options.profile.topology === 'sharded' ? hosts : hosts.slice(0, 1);
    }

    // The internal client (data, outcome, fail points set through it) talks to the first router
    // only: with several, every preparation goes through one, as the tests assume.
    async newInternalClient() {
        const hosts = this.routerHosts();
        const first = hosts.length > 1 ? withHosts(this.options.uri, hosts.slice(0, 1)) : this.options.uri;
        const uri = applyUriOptions(first, {}, { serverSelectionTimeoutMS: 5000 });
        const client = new MongoClient(uri);
        await client.connect();
        return client;
    }

    async runFiles(files) {
        for (const file of files) await this.runFile(file);
        return this.results;
    }

    async runFile(file) {
        const name = displayName(file);
        let text;
        let doc;
        try {
            text = fs.readFileSync(file, 'utf8');
            doc = parseTestFile(text);
        } catch (err) {
            this.record({ file: name, test: '(file)', status: 'fail', reason: `cannot load test file: ${err.message}` });
            return;
        }
        const tests = Array.isArray(doc.tests) ? doc.tests : [];
        const selected = tests
            .map((t, index) => ({ t, index }))
            .filter(({ t }) => !this.options.filter || this.options.filter.test(`${name} :: ${t.description}`));
        if (selected.length === 0) return;

        const schemaWhy = schemaProblem(doc.schemaVersion);
        if (schemaWhy) {
            for (const { t } of selected) this.record({ file: name, test: t.description, status: 'fail', reason: schemaWhy });
            return;
        }
        let fileWhy;
        try {
            fileWhy = requirementsMismatch(doc.runOnRequirements, this.options.profile);
        } catch (err) {
            for (const { t } of selected) this.record({ file: name, test: t.description, status: 'fail', reason: reasonOf(err) });
            return;
        }
        if (fileWhy) {
            for (const { t } of selected) this.record({ file: name, test: t.description, status: 'na', reason: fileWhy });
            return;
        }

        let internal = null;
        try {
            for (const { t, index } of selected) {
                if (t.skipReason) {
                    this.record({ file: name, test: t.description, status: 'skip', reason: t.skipReason });
                    continue;
                }
                let why;
                try {
                    why = requirementsMismatch(t.runOnRequirements, this.options.profile);
                } catch (err) {
                    this.record({ file: name, test: t.description, status: 'fail', reason: reasonOf(err) });
                    continue;
                }
                if (why) {
                    this.record({ file: name, test: t.description, status: 'na', reason: why });
                    continue;
                }
                if (!internal) {
                    if (this.connectFailures >= 2) {
                        this.record({ file: name, test: t.description, status: 'fail', reason: `server unreachable: ${this.lastConnectError}` });
                        continue;
                    }
                    try {
                        internal = await this.newInternalClient();
                        await this.killAllSessions(internal);
                        this.connectFailures = 0;
                    } catch (err) {
                        internal = null;
                        this.connectFailures++;
                        this.lastConnectError = errorSummary(err);
                        this.record({ file: name, test: t.description, status: 'fail', reason: `cannot connect: ${this.lastConnectError}` });
                        continue;
                    }
                }
                // A fresh parse per test: the driver mutates argument documents (e.g. adds _id).
                const fresh = parseTestFile(text);
                let reason = await this.runTestWithTimeout(fresh, fresh.tests[index], internal);
                if (reason !== null) reason = annotateDriverDeviation(name, reason);
                this.record({ file: name, test: t.description, status: reason === null ? 'pass' : 'fail', reason });
                if (reason !== null && /timed out/.test(reason)) {
                    // The server may still be busy with the abandoned operation: use new connections.
                    await internal.close(true).catch(() => {});
                    internal = null;
                }
            }
        } finally {
            if (internal) await internal.close(true).catch(() => {});
        }
    }

    // On every router: a transaction a test left open holds its session (and its documents) on
    // whichever router the driver had pinned.
    async killAllSessions(internal) {
        const hosts = this.routerHosts();
        for (let i = 0; i < hosts.length; i++) {
            if (i === 0) {
                await internal.db('admin').command({ killAllSessions: [] }).catch(() => {});
                continue;
            }
            const uri = applyUriOptions(withHosts(this.options.uri, [hosts[i]]), {},
                { serverSelectionTimeoutMS: 5000, directConnection: true });
            const direct = new MongoClient(uri);
            try {
                await direct.db('admin').command({ killAllSessions: [] });
            } catch {
                // As on the first host: a router that is down has no sessions to end.
            } finally {
                await direct.close(true).catch(() => {});
            }
        }
    }

    /** Returns null on success or the failure reason. */
    async runTestWithTimeout(file, test, internal) {
        const ctx = {
            entities: new EntityMap({
                uri: this.options.uri,
                profile: this.options.profile,
                clientDefaults: { serverSelectionTimeoutMS: 5000 },
            }),
            internalClient: internal,
            profile: this.options.profile,
            state: { failPoints: [], usedTransactions: false },
            aborted: false,
        };
        let timer;
        const timeout = new Promise((_, reject) => {
            timer = setTimeout(
                () => reject(new TestTimeout(`timed out after ${this.options.timeoutMs} ms`)),
                this.options.timeoutMs
            );
        });
        const body = this.runTest(file, test, ctx);
        body.catch(() => {});
        try {
            await Promise.race([body, timeout]);
            return null;
        } catch (err) {
            if (err instanceof TestTimeout) {
                ctx.aborted = true;
                await this.cleanup(ctx, internal).catch(() => {});
            }
            return reasonOf(err);
        } finally {
            clearTimeout(timer);
        }
    }

    async runTest(file, test, ctx) {
        const internal = ctx.internalClient;
        try {
            for (const key of Object.keys(test)) {
                if (!['description', 'runOnRequirements', 'skipReason', 'operations', 'expectEvents', 'outcome'].includes(key)) {
                    throw new UnsupportedError(`test field ${key}`);
                }
            }
            await this.prepareData(file, test, internal);
            await ctx.entities.create(file.createEntities ?? []);
            for (const op of test.operations ?? []) {
                if (ctx.aborted) return;
                await runOperation(op, ctx);
            }
            ctx.entities.stopRecording();
            await this.disableFailPoints(ctx, internal);
            await this.flushClients(ctx);
            if (ctx.aborted) return;
            this.checkEvents(test.expectEvents ?? [], ctx);
            await this.checkOutcome(test.outcome ?? [], internal);
        } finally {
            if (!ctx.aborted) await this.cleanup(ctx, internal);
        }
    }

    async cleanup(ctx, internal) {
        ctx.entities.stopRecording();
        await this.disableFailPoints(ctx, internal).catch(() => {});
        await ctx.entities.closeAll().catch(() => {});
        if (ctx.state.usedTransactions) await this.killAllSessions(internal);
    }

    async prepareData(file, test, internal) {
        const dbNames = new Set();
        for (const cd of file.initialData ?? []) dbNames.add(cd.databaseName);
        for (const cd of test.outcome ?? []) dbNames.add(cd.databaseName);
        for (const e of file.createEntities ?? []) if (e.database) dbNames.add(e.database.databaseName);
        for (const db of dbNames) {
            if (SYSTEM_DBS.has(db)) continue;
            await internal
                .db(db)
                .dropDatabase()
                .catch(() => {});
        }
        const wc = this.options.profile.initialDataWriteConcern;
        const wcOpt = wc ? { writeConcern: wc } : {};
        for (const cd of file.initialData ?? []) {
            const db = internal.db(cd.databaseName);
            try {
                await db.collection(cd.collectionName).drop(wcOpt);
            } catch (err) {
                if (err.code !== 26 && !/ns not found/i.test(err.message)) {
                    throw new AssertionFailure(`initialData: drop ${cd.collectionName} failed: ${errorSummary(err)}`);
                }
            }
            const docs = cd.documents ?? [];
            try {
                if (cd.createOptions || docs.length === 0) {
                    await db.createCollection(cd.collectionName, { ...(cd.createOptions ?? {}), ...wcOpt });
                }
                if (docs.length > 0) await db.collection(cd.collectionName).insertMany(docs, wcOpt);
            } catch (err) {
                throw new AssertionFailure(`initialData for ${cd.databaseName}.${cd.collectionName} failed: ${errorSummary(err)}`);
            }
        }
    }

    async disableFailPoints(ctx, internal) {
        const fps = ctx.state.failPoints.splice(0);
        for (const fp of fps) {
            const cmd = { configureFailPoint: fp.name, mode: 'off' };
            try {
                await fp.client.db('admin').command(cmd);
            } catch {
                await internal
                    .db('admin')
                    .command(cmd)
                    .catch(() => {});
            }
            if (fp.closeAfter) await fp.client.close(true).catch(() => {});
        }
    }

    // Lets unacknowledged (w:0) writes reach the server before outcome is read: a ping on the same
    // pool follows them on the connection.
    async flushClients(ctx) {
        for (const ce of ctx.entities.clientEntities()) {
            await ce.client
                .db('admin')
                .command({ ping: 1 })
                .catch(() => {});
        }
    }

    checkEvents(expectEvents, ctx) {
        for (const exp of expectEvents) {
            const ce = ctx.entities.get(exp.client, 'client');
            const eventType = exp.eventType ?? 'command';
            let actual;
            if (eventType === 'command') actual = ce.events.filter((e) => COMMAND_EVENT_TYPES.has(e.type));
            else if (eventType === 'cmap') actual = ce.events.filter((e) => CMAP_EVENT_TYPES.has(e.type));
            else throw new UnsupportedError(`expectEvents eventType ${eventType}`);
            const expected = exp.events ?? [];
            const summary = () =>
                actual.map((e) => (e.commandName ? `${e.type.replace('Event', '')}:${e.commandName}` : e.type)).join(', ');
            if (exp.ignoreExtraEvents ? actual.length < expected.length : actual.length !== expected.length) {
                throw new AssertionFailure(
                    `${exp.client}: expected ${expected.length} ${eventType} event(s), got ${actual.length} [${summary()}]`
                );
            }
            expected.forEach((e, i) => this.matchEvent(e, actual[i], `${exp.client} event[${i}]`, ctx));
        }
    }

    matchEvent(expected, actual, where, ctx) {
        const keys = Object.keys(expected);
        if (keys.length !== 1) throw new UnsupportedError(`expected event ${describe(expected)}`);
        const type = keys[0];
        const spec = expected[type] ?? {};
        if (actual.type !== type) {
            throw new AssertionFailure(
                `${where}: expected ${type}${spec.commandName ? ` (${spec.commandName})` : ''}, got ${actual.type}${
                    actual.commandName ? ` (${actual.commandName})` : ''
                }`
            );
        }
        for (const [k, v] of Object.entries(spec)) {
            const fail = (msg) => {
                throw new AssertionFailure(`${where} ${type}${actual.commandName ? ` ${actual.commandName}` : ''}: ${msg}`);
            };
            try {
                switch (k) {
                    case 'command':
                        match(v, withoutDriverCommitWtimeout(v, actual), { entities: ctx.entities, path: 'command' });
                        break;
                    case 'reply':
                        match(v, actual.reply, { entities: ctx.entities, path: 'reply' });
                        break;
                    case 'commandName':
                    case 'databaseName':
                        if (actual[k] !== v) fail(`${k} is ${actual[k]}, expected ${v}`);
                        break;
                    case 'hasServiceId':
                        if ((actual.serviceId != null) !== v) fail(`hasServiceId is ${actual.serviceId != null}`);
                        break;
                    case 'hasServerConnectionId':
                        if ((actual.serverConnectionId != null) !== v) fail(`hasServerConnectionId is ${!v}`);
                        break;
                    default:
                        if (COMMAND_EVENT_TYPES.has(type)) throw new UnsupportedError(`event field ${type}.${k}`);
                        match(v, actual[k], { entities: ctx.entities, path: k });
                }
            } catch (err) {
                if (err instanceof MatchError) fail(err.message);
                throw err;
            }
        }
    }

    async checkOutcome(outcome, internal) {
        for (const cd of outcome) {
            const docs = await internal
                .db(cd.databaseName)
                .collection(cd.collectionName)
                .find({}, { sort: { _id: 1 }, readConcern: { level: 'local' }, readPreference: 'primary' })
                .toArray();
            try {
                matchExact(cd.documents, docs, `outcome ${cd.databaseName}.${cd.collectionName}`);
            } catch (err) {
                if (err instanceof MatchError) throw new AssertionFailure(err.message);
                throw err;
            }
        }
    }
}
