// A three-member replica set of real `tessera serve --replSet` processes, used as applications use
// one: the Node driver discovers it from a seed list (`?replicaSet=rs0`), writes and reads through
// it, and follows its elections — `kill -9` of the primary under a writing application, and
// rs.stepDown(). Each member's own answers (hello, the refusals of a secondary) are checked with
// raw OP_MSG requests, as a driver's server discovery sees them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MongoClient } from 'mongodb';

import { freePort, mongosh, rawCommand, spawnServer, uniqueDbName } from './harness.mjs';

const SET = 'rs0';
const deadlineMs = 60000;
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what, probe, timeoutMs = deadlineMs) {
    const deadline = Date.now() + timeoutMs;
    let last;
    while (Date.now() < deadline) {
        try {
            last = await probe();
            if (last) return last;
        } catch (err) {
            last = err;
        }
        await delay(50);
    }
    throw new Error(`${what}: not within ${timeoutMs} ms (last: ${last})`);
}

describe('replica set: three members through the Node driver', () => {
    const members = []; // {port, server, dbpath}
    let seeds;
    let client;

    const hello = (m) => rawCommand(m.port, { hello: 1, $db: 'admin' }, 3000);
    const alive = () => members.filter((m) => m.server.alive);
    const primary = () =>
        until('a writable primary', async () => {
            for (const m of alive()) {
                const h = await hello(m).catch(() => null);
                if (h?.isWritablePrimary) return m;
            }
            return null;
        });
    const start = async (m) => {
        m.server = await spawnServer({
            port: m.port,
            dbpath: m.dbpath,
            args: ['--bind_ip', '127.0.0.1', '--replSet', `${SET}/${seeds}`],
        });
        m.dbpath = m.server.dbpath;
        await m.server.waitReady();
    };
    const logs = () => members.map((m) => m.server.logTail(30)).join('\n');

    before(async () => {
        for (let i = 0; i < 3; i++) members.push({ port: await freePort() });
        seeds = members.map((m) => `127.0.0.1:${m.port}`).join(',');
        await Promise.all(members.map(start));
        client = new MongoClient(`mongodb://${seeds}/?replicaSet=${SET}`, {
            serverSelectionTimeoutMS: 30000,
        });
        await client.connect();
    });

    after(async () => {
        await client?.close().catch(() => {});
        for (const m of members) {
            await m.server?.stop();
            m.server?.cleanup();
        }
    });

    it('elects one primary, and every member names it in hello', async () => {
        const p = await primary();
        await until('every member following the primary', async () => {
            for (const m of members) {
                const h = await hello(m);
                assert.equal(h.setName, SET);
                assert.deepEqual([...h.hosts].sort(), seeds.split(',').sort());
                if (h.primary !== `127.0.0.1:${p.port}`) return false;
                if (m === p) {
                    assert.equal(h.isWritablePrimary, true);
                    assert.equal(h.secondary, false);
                    assert.ok(h.electionId, 'a primary reports its electionId');
                } else if (!h.secondary || h.isWritablePrimary) {
                    return false;
                }
                assert.equal(h.me, `127.0.0.1:${m.port}`);
            }
            return true;
        });
    });

    it('replicates every write: w: 3 returns once all three have it, every secondary applies it', async () => {
        const coll = client.db(uniqueDbName('rs')).collection('docs');
        const docs = Array.from({ length: 50 }, (_, i) => ({ _id: i, v: `value ${i}` }));
        await coll.insertMany(docs, { writeConcern: { w: 3, wtimeoutMS: 30000 } });
        await coll.createIndex({ v: 1 });
        // w: 3 was acknowledged: every member has every document in its log, and applies it
        // once it hears that it is committed (the next heartbeat at the latest).
        for (const m of members) {
            await until(`member ${m.port} applied the documents`, async () => {
                const r = await rawCommand(m.port, {
                    find: 'docs',
                    $db: coll.dbName,
                    sort: { _id: 1 },
                    $readPreference: { mode: 'secondaryPreferred' },
                });
                return JSON.stringify(r.cursor?.firstBatch) === JSON.stringify(docs);
            }, 5000);
            // Its last write is the newest it applied (what drivers' maxStalenessSeconds reads).
            const h = await hello(m);
            assert.ok(h.lastWrite.lastWriteDate.getTime() > 0, JSON.stringify(h.lastWrite));
        }
        const fromSecondary = await coll
            .find({}, { readPreference: 'secondary' })
            .sort({ _id: 1 })
            .toArray();
        assert.deepEqual(fromSecondary, docs);
        // More members than the set has: an error about the write concern, the write done.
        await assert.rejects(
            coll.insertOne({ _id: 'w4' }, { writeConcern: { w: 4 } }),
            (err) => err.code === 100 || err.errInfo?.writeConcernError?.code === 100 ||
                err.writeConcernError?.code === 100 || /Not enough data-bearing/.test(err.message),
        );
        assert.equal(await coll.countDocuments({ _id: 'w4' }), 1);
        // Every member has the index too.
        for (const m of members) {
            const idx = await rawCommand(m.port, {
                listIndexes: 'docs',
                $db: coll.dbName,
                $readPreference: { mode: 'secondaryPreferred' },
            });
            assert.equal(idx.ok, 1, JSON.stringify(idx));
            assert.ok(idx.cursor.firstBatch.some((i) => i.name === 'v_1'), `index on ${m.port}`);
        }
    });

    it('a secondary refuses writes and reads that did not allow a secondary', async () => {
        const p = await primary();
        const s = members.find((m) => m !== p && m.server.alive);
        const db = uniqueDbName('rs');
        const write = await rawCommand(s.port, { insert: 'c', documents: [{ _id: 1 }], $db: db });
        assert.equal(write.ok, 0);
        assert.equal(write.code, 10107, JSON.stringify(write));
        const read = await rawCommand(s.port, { find: 'c', $db: db });
        assert.equal(read.code, 13435, JSON.stringify(read));
        const allowed = await rawCommand(s.port, {
            find: 'c',
            $db: db,
            $readPreference: { mode: 'secondaryPreferred' },
        });
        assert.equal(allowed.ok, 1, JSON.stringify(allowed));
        const status = await rawCommand(s.port, { replSetGetStatus: 1, $db: 'admin' });
        assert.equal(status.myState, 2);
        // A linearizable read needs the primary: only it can prove that it still leads.
        const linearizable = { find: 'c', $db: db, readConcern: { level: 'linearizable' } };
        const onSecondary = await rawCommand(s.port, {
            ...linearizable,
            $readPreference: { mode: 'secondaryPreferred' },
        });
        assert.equal(onSecondary.code, 10107, JSON.stringify(onSecondary));
        const onPrimary = await rawCommand(p.port, linearizable);
        assert.equal(onPrimary.ok, 1, JSON.stringify(onPrimary));
        // A secondary's retryable write is refused with the label that makes a driver retry it
        // on the primary.
        const retryable = await rawCommand(s.port, {
            insert: 'c',
            documents: [{ _id: 2 }],
            lsid: { id: new (await import('mongodb')).UUID() },
            txnNumber: 1,
            $db: db,
        });
        assert.equal(retryable.code, 10107);
        assert.ok(retryable.errorLabels?.includes('RetryableWriteError'), JSON.stringify(retryable));
    });

    it('rs.status() on the primary: one PRIMARY, two healthy SECONDARYs', async () => {
        const p = await primary();
        await until('two secondaries reported', async () => {
            const status = await rawCommand(p.port, { replSetGetStatus: 1, $db: 'admin' });
            assert.equal(status.ok, 1, JSON.stringify(status));
            const states = status.members.map((m) => m.stateStr).sort();
            return (
                JSON.stringify(states) === JSON.stringify(['PRIMARY', 'SECONDARY', 'SECONDARY']) &&
                status.members.every((m) => m.health === 1)
            );
        });
    });

    it('kill -9 of the primary under a writing application: no error, nothing lost', async () => {
        const coll = client.db(uniqueDbName('rs')).collection('failover');
        const acked = [];
        const errors = [];
        let stop = false;
        let longestPauseMs = 0;
        let lastAck = Date.now();
        const writer = (async () => {
            for (let i = 0; !stop; i++) {
                try {
                    await coll.insertOne({ _id: i, at: Date.now() });
                    const now = Date.now();
                    longestPauseMs = Math.max(longestPauseMs, now - lastAck);
                    lastAck = now;
                    acked.push(i);
                } catch (err) {
                    errors.push(err);
                    if (errors.length > 20) break;
                }
            }
        })();
        await until('100 writes before the kill', async () => acked.length >= 100);
        const old = await primary();
        const ackedBefore = acked.length;
        await old.server.kill9();
        const next = await primary();
        assert.notEqual(next, old);
        await until('200 writes after the kill', async () => acked.length >= ackedBefore + 200);
        stop = true;
        await writer;
        console.log(
            `failover: ${acked.length} writes acknowledged, longest pause ${longestPauseMs} ms`,
        );
        assert.deepEqual(errors.map(String), [], 'the application saw no error');
        // Every acknowledged write is there, once.
        const ids = (await coll.find({}, { projection: { _id: 1 } }).toArray()).map((d) => d._id);
        const have = new Set(ids);
        assert.equal(have.size, ids.length);
        for (const id of acked) assert.ok(have.has(id), `acknowledged ${id} lost\n${logs()}`);

        // The killed member comes back from its own files and catches up.
        await start(old);
        await until('the restarted member caught up', async () => {
            const count = await rawCommand(old.port, {
                count: 'failover',
                $db: coll.dbName,
                $readPreference: { mode: 'secondaryPreferred' },
            });
            return count.ok === 1 && count.n === ids.length;
        });
        const h = await hello(old);
        assert.equal(h.secondary, true, JSON.stringify(h));
    });

    it('a paused primary (SIGSTOP) is replaced; resumed, it follows the new one and diverges in nothing', async (t) => {
        // A paused server answers nothing: the driver gives up on it when its monitor's hello
        // times out (connectTimeoutMS, 30 s by default), which also fails the writes waiting on
        // it so that they are retried on the new primary. An application that cares tunes it.
        const tuned = new MongoClient(`mongodb://${seeds}/?replicaSet=${SET}`, {
            serverSelectionTimeoutMS: 30000,
            connectTimeoutMS: 2000,
            heartbeatFrequencyMS: 500,
        });
        await tuned.connect();
        t.after(() => tuned.close());
        const coll = tuned.db(uniqueDbName('rs')).collection('paused');
        const acked = [];
        const errors = [];
        let stop = false;
        // Four writers: those whose write reached the paused primary wait for it (a driver has no
        // socket timeout by default); the others go on once the driver hears of the new primary.
        const writer = Promise.all(
            [0, 1, 2, 3].map(async (w) => {
                for (let i = 0; !stop; i++) {
                    const id = `${w}-${i}`;
                    try {
                        await coll.insertOne({ _id: id });
                        acked.push(id);
                    } catch (err) {
                        errors.push(err);
                        if (errors.length > 20) break;
                    }
                }
            }),
        );
        await until('50 writes before the pause', async () => acked.length >= 50);
        const old = await primary();
        const ackedBefore = acked.length;
        old.server.proc.kill('SIGSTOP');
        try {
            await until('a new primary while the old one is paused', async () => {
                for (const m of alive()) {
                    if (m === old) continue;
                    const h = await hello(m).catch(() => null);
                    if (h?.isWritablePrimary) return true;
                }
                return false;
            });
            await until('100 writes during the pause', async () => acked.length >= ackedBefore + 100);
        } finally {
            old.server.proc.kill('SIGCONT');
        }
        await until('the resumed member is a secondary', async () => (await hello(old)).secondary);
        stop = true;
        await writer;
        assert.deepEqual(errors.map(String), [], 'the application saw no error');
        // Every member ends with exactly the acknowledged documents: nothing the paused primary
        // had in flight was applied anywhere without being acknowledged twice or lost.
        const ids = (await coll.find({}, { projection: { _id: 1 } }).toArray()).map((d) => d._id);
        for (const id of acked) assert.ok(ids.includes(id), `acknowledged ${id} lost`);
        for (const m of members) {
            await until(`member ${m.port} has every document`, async () => {
                const r = await rawCommand(m.port, {
                    count: 'paused',
                    $db: coll.dbName,
                    $readPreference: { mode: 'secondaryPreferred' },
                });
                return r.n === ids.length;
            }, 10000);
        }
    });

    it('rs.stepDown() hands the primary role to a caught-up secondary', async () => {
        const old = await primary();
        const before = (await hello(old)).electionId;
        const reply = await rawCommand(old.port, { replSetStepDown: 60, $db: 'admin' }, 15000);
        assert.equal(reply.ok, 1, JSON.stringify(reply));
        const next = await primary();
        assert.notEqual(next.port, old.port);
        const after = (await hello(next)).electionId;
        assert.ok(after.toHexString() > before.toHexString(), 'a later term, a greater electionId');
        // The application's writes go to the new primary.
        const coll = client.db(uniqueDbName('rs')).collection('after_stepdown');
        await coll.insertOne({ _id: 1 }, { writeConcern: { w: 'majority' } });
        assert.equal(await coll.countDocuments(), 1);
    });

    it('a stepped-down primary is frozen for its period: its successor steps down to the third member; rs.freeze(0) lifts it', async () => {
        const first = await primary();
        // The member the last test stepped down is still frozen: lifted first.
        for (const m of alive().filter((x) => x !== first)) {
            assert.equal((await rawCommand(m.port, { replSetFreeze: 0, $db: 'admin' })).ok, 1);
        }
        assert.equal((await rawCommand(first.port, { replSetStepDown: 60, $db: 'admin' }, 15000)).ok, 1);
        const second = await primary();
        assert.notEqual(second.port, first.port);
        // Both stepped-down members are frozen: the role ends on the third, whichever member
        // libraft hands it to first.
        assert.equal((await rawCommand(second.port, { replSetStepDown: 60, $db: 'admin' }, 15000)).ok, 1);
        const third = await until('a primary that is neither frozen member', async () => {
            const p = await primary();
            return p !== first && p !== second ? p : null;
        });
        for (const m of [first, second]) {
            const log = m.server.logTail(400);
            assert.match(log, /Frozen: this member may not become primary until then/);
            assert.equal((await hello(m)).isWritablePrimary, false);
        }
        // rs.freeze: refused on the primary, lifted on the frozen members; the role can go back.
        const refused = await rawCommand(third.port, { replSetFreeze: 30, $db: 'admin' });
        assert.equal(refused.codeName, 'IllegalOperation', JSON.stringify(refused));
        for (const m of [first, second]) {
            const r = await rawCommand(m.port, { replSetFreeze: 0, $db: 'admin' });
            assert.equal(r.ok, 1, JSON.stringify(r));
            assert.equal(r.info, 'unfreezing');
        }
        assert.equal((await rawCommand(third.port, { replSetStepDown: 5, $db: 'admin' }, 15000)).ok, 1);
        const fourth = await primary();
        assert.ok(fourth === first || fourth === second, 'an unfrozen member took the role');
    });

    it('a transaction open across rs.stepDown() is retried by withTransaction and commits once on the new primary', async () => {
        const coll = client.db(uniqueDbName('rs')).collection('txn');
        await coll.insertOne({ _id: 'counter', n: 0 }, { writeConcern: { w: 'majority' } });
        const session = client.startSession();
        let attempts = 0;
        try {
            await session.withTransaction(async () => {
                attempts += 1;
                await coll.updateOne({ _id: 'counter' }, { $inc: { n: 1 } }, { session });
                if (attempts === 1) {
                    // The primary steps down between the transaction's two statements.
                    const old = await primary();
                    const r = await rawCommand(old.port, { replSetStepDown: 60, $db: 'admin' }, 15000);
                    assert.equal(r.ok, 1, JSON.stringify(r));
                }
                await coll.insertOne({ _id: `attempt-${attempts}` }, { session });
            });
        } finally {
            await session.endSession();
        }
        assert.ok(attempts >= 2, `the first attempt could not commit (attempts: ${attempts})`);
        // Exactly one attempt's writes: the counter once, one attempt document.
        assert.equal((await coll.findOne({ _id: 'counter' })).n, 1);
        assert.equal(await coll.countDocuments({ _id: /^attempt-/ }), 1);
    });

    it('rs.add() of a member started empty: it catches up and votes; rs.remove() takes it out', async () => {
        const joiner = { port: await freePort() };
        await start(joiner); // not among the initial members: it waits to be added
        try {
            const uri = `mongodb://${seeds}/admin?replicaSet=${SET}&serverSelectionTimeoutMS=30000`;
            const host = `127.0.0.1:${joiner.port}`;
            const added = await mongosh(uri, `const r = rs.add('${host}'); print('RESULT ' + r.ok)`);
            assert.equal(added.code, 0, `${added.stdout}\n${added.stderr}\n${logs()}`);
            assert.match(added.stdout, /RESULT 1/);
            await until('the new member a voting secondary', async () => {
                const h = await hello(joiner);
                return h.secondary === true && h.hosts?.length === 4 && h.hosts.includes(host);
            });
            // It has every earlier write, and takes part in w: 4.
            const coll = client.db(uniqueDbName('rs')).collection('four');
            await coll.insertOne({ _id: 1 }, { writeConcern: { w: 4, wtimeoutMS: 30000 } });
            await until('the new member applied the write', async () => {
                const count = await rawCommand(joiner.port, {
                    count: 'four',
                    $db: coll.dbName,
                    $readPreference: { mode: 'secondary' },
                });
                return count.n === 1;
            }, 5000);
            const removed = await mongosh(uri, `const r = rs.remove('${host}'); print('RESULT ' + r.ok)`);
            assert.equal(removed.code, 0, `${removed.stdout}\n${removed.stderr}`);
            assert.match(removed.stdout, /RESULT 1/);
            const p = await primary();
            const h = await hello(p);
            assert.deepEqual([...h.hosts].sort(), seeds.split(',').sort());
        } finally {
            await joiner.server.stop();
            joiner.server.cleanup();
        }
    });
});
