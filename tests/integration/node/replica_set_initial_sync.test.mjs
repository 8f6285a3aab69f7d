// Initial sync (src/repl/README.md "Initial sync"): a member whose data was wiped, or that was
// away while the others compacted their logs (here every 32 entries, --setParameter
// replSnapshotEntries=32), copies a healthy member's data while the set keeps serving an
// application that writes, starts again on the copy and follows the log; rs.status() on it shows
// the copy's progress meanwhile, and its data ends equal to the primary's.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MongoClient } from 'mongodb';

import { waitFor } from './cluster_harness.mjs';
import { freePort, rawCommand, spawnServer, uniqueDbName } from './harness.mjs';

const SET = 'rsInitialSync';
const until = (what, probe, timeoutMs = 60000) => waitFor(what, probe, { timeoutMs });

describe('replica set: initial sync of a member too far behind the log', () => {
    const members = []; // {port, server, dbpath}
    let seeds;
    let client;
    let coll;

    const hello = (m) => rawCommand(m.port, { hello: 1, $db: 'admin' }, 3000);
    const primary = () =>
        until('a writable primary', async () => {
            for (const m of members.filter((x) => x.server?.alive)) {
                const h = await hello(m).catch(() => null);
                if (h?.isWritablePrimary) return m;
            }
            return null;
        });
    const start = async (m) => {
        m.server = await spawnServer({
            port: m.port,
            dbpath: m.dbpath,
            args: [
                '--bind_ip', '127.0.0.1', '--replSet', `${SET}/${seeds}`, '--enableTestCommands',
                '--setParameter', 'replSnapshotEntries=32',
            ],
        });
        await m.server.waitReady();
    };
    const documentsOf = async (m) => {
        const r = await rawCommand(m.port, {
            find: coll.collectionName,
            $db: coll.dbName,
            sort: { _id: 1 },
            batchSize: 100000,
            $readPreference: { mode: 'secondaryPreferred' },
        });
        return r.cursor?.firstBatch;
    };
    const logOf = (m) =>
        fs.readFileSync(m.server.stdoutPath, 'utf8') + fs.readFileSync(m.server.stderrPath, 'utf8');
    // An application inserting while the member syncs; returns a stop function that resolves
    // with the acknowledged ids.
    const writeMeanwhile = (from) => {
        let stop = false;
        const acked = [];
        const errors = [];
        const done = (async () => {
            for (let i = from; !stop; i++) {
                try {
                    await coll.insertOne({ _id: i, pad: 'x'.repeat(200) }, { writeConcern: { w: 'majority' } });
                    acked.push(i);
                } catch (err) {
                    errors.push(err);
                }
            }
        })();
        return async () => {
            stop = true;
            await done;
            assert.deepEqual(errors.map(String), [], 'the application saw no error');
            return acked;
        };
    };
    const insertRange = async (from, to) => {
        for (let i = from; i < to; i++) {
            await coll.insertOne({ _id: i, pad: 'x'.repeat(200) }, { writeConcern: { w: 'majority' } });
        }
    };
    // Its data equals the primary's once the application stopped.
    const converged = async (m) => {
        const p = await primary();
        const expected = await documentsOf(p);
        await until(`member ${m.port} holding what the primary holds`, async () => {
            const docs = await documentsOf(m).catch(() => null);
            return docs && docs.length === expected.length &&
                JSON.stringify(docs) === JSON.stringify(expected);
        });
        return expected;
    };

    before(async () => {
        for (let i = 0; i < 3; i++) members.push({ port: await freePort() });
        seeds = members.map((m) => `127.0.0.1:${m.port}`).join(',');
        await Promise.all(members.map(start));
        for (const m of members) m.dbpath = m.server.dbpath;
        client = new MongoClient(`mongodb://${seeds}/?replicaSet=${SET}`, {
            serverSelectionTimeoutMS: 30000,
        });
        await client.connect();
        coll = client.db(uniqueDbName('isync')).collection('docs');
        await insertRange(0, 100);
    });

    after(async () => {
        await client?.close().catch(() => {});
        for (const m of members) {
            await m.server?.stop();
            m.server?.cleanup();
            if (!process.env.TESSERA_KEEP_DATA) fs.rmSync(m.dbpath, { recursive: true, force: true });
        }
    });

    it('a member whose data was wiped copies a member\'s data under writes, then follows the log', async () => {
        const p = await primary();
        const victim = members.find((m) => m !== p);
        await victim.server.kill9();
        fs.rmSync(victim.dbpath, { recursive: true, force: true });
        await insertRange(100, 300); // the others' logs no longer reach back to the start

        const stopWriting = writeMeanwhile(1000);
        await start(victim);
        await until('the wiped member secondary again', async () => (await hello(victim)).secondary);
        const acked = await stopWriting();
        assert.ok(acked.length > 0, 'the application wrote during the sync');
        const docs = await converged(victim);
        assert.equal(docs.length, 300 + acked.length);
        const log = logOf(victim);
        assert.match(log, /Initial sync: the copy is complete/);
        assert.match(log, /Installed the copy of an initial sync/);
        assert.equal(fs.existsSync(path.join(victim.dbpath, 'initial-sync')), false);
    });

    it('rs.status() on a syncing member shows STARTUP2 and the copy\'s progress', async () => {
        const p = await primary();
        const victim = members.find((m) => m !== p);
        await victim.server.kill9();
        await insertRange(300, 450);
        // The sources hold every read of the copy until the test has looked.
        for (const m of members.filter((x) => x !== victim)) {
            const on = await rawCommand(m.port, {
                configureFailPoint: 'initialSyncSourceHangBeforeRead',
                mode: 'alwaysOn',
                $db: 'admin',
            });
            assert.equal(on.ok, 1, JSON.stringify(on));
        }
        try {
            await start(victim);
            const status = await until('the member reporting its initial sync', async () => {
                const s = await rawCommand(victim.port, { replSetGetStatus: 1, $db: 'admin' }, 3000);
                // Once the source answered with the copy's files (its reads are held).
                return s.initialSyncStatus?.files > 0 ? s : null;
            });
            assert.equal(status.myState, 5, JSON.stringify(status));
            const self = status.members.find((m) => m.self);
            assert.equal(self.stateStr, 'STARTUP2');
            const progress = status.initialSyncStatus;
            assert.ok(seeds.split(',').includes(progress.syncSourceHost), JSON.stringify(progress));
            assert.notEqual(progress.syncSourceHost, `127.0.0.1:${victim.port}`);
            assert.ok(progress.files > 0 && progress.approxTotalDataSize > 0, JSON.stringify(progress));
            assert.equal(progress.filesCopied, 0);
            assert.ok(progress.copyLogIndex >= progress.neededLogIndex, JSON.stringify(progress));
        } finally {
            for (const m of members.filter((x) => x !== victim)) {
                await rawCommand(m.port, {
                    configureFailPoint: 'initialSyncSourceHangBeforeRead',
                    mode: 'off',
                    $db: 'admin',
                });
            }
        }
        await until('the member secondary again', async () => (await hello(victim)).secondary);
        const ids = new Set((await converged(victim)).map((d) => d._id));
        for (let i = 0; i < 450; i++) assert.ok(ids.has(i), `document ${i} on the synced member`);
    });

    it('a member away while the others compacted their logs catches up, and can be primary', async () => {
        const p = await primary();
        const victim = members.find((m) => m !== p);
        await victim.server.kill9();
        await insertRange(450, 600);
        await start(victim);
        await until('the member secondary again', async () => (await hello(victim)).secondary);
        await converged(victim);
        // It takes over: its copy is a full member's data.
        const reply = await rawCommand(p.port, { replSetStepDown: 60, $db: 'admin' }, 15000);
        assert.equal(reply.ok, 1, JSON.stringify(reply));
        const next = await primary();
        await insertRange(600, 610);
        const docs = await converged(next === victim ? p : victim);
        assert.ok(docs.length >= 610);
    });

    it('the internal commands of a copy refuse what they do not carry out', async () => {
        const m = members[0];
        const unknown = await rawCommand(m.port, { _replSyncStart: 1, extra: 1, $db: 'admin' });
        assert.equal(unknown.code, 40415, JSON.stringify(unknown));
        const noCopy = await rawCommand(m.port, {
            _replSyncRead: 'none', file: 'CURRENT', offset: 0, length: 10, $db: 'admin',
        });
        assert.equal(noCopy.codeName, 'NoSuchKey', JSON.stringify(noCopy));
        const badArgs = await rawCommand(m.port, {
            _replSyncRead: 'none', file: 'CURRENT', offset: -1, length: 10, $db: 'admin',
        });
        assert.equal(badArgs.codeName, 'BadValue', JSON.stringify(badArgs));
        const notAdmin = await rawCommand(m.port, { _replSyncStart: 1, $db: 'test' });
        assert.equal(notAdmin.code, 13, JSON.stringify(notAdmin));
    });
});
