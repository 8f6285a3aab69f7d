// Crash tests of the persisted coordinators (house rule: "Long operations are persisted state
// machines that resume after kill -9 of any process, with failpoints at each phase, tests that
// crash there"). The roles are started one by one (ManualCluster: config, 3 shards, 1 router, all
// with --enableTestCommands) so that a killed process can be restarted on its port and dbpath.
//
// moveRange: the config server's failpoints hold the migration at a phase (observed in
// config.system.coordinators and in the config log), then a process is killed with SIGKILL and
// restarted; once config.system.coordinators is empty (recovery done) the placement must be the
// expected one and checkConsistency (every document on exactly the shard owning its chunk, orphans
// hidden on direct reads, router count == inserted) must hold.
// movePrimary has no failpoints: the new primary is SIGSTOPped, which holds the coordinator in
// phase "cloning" (it waits for _shardsvrCloneDatabase) deterministically.
import assert from 'node:assert/strict';
import { Long, MaxKey } from 'mongodb';
import { uniqueDbName } from './harness.mjs';
import { describeWithManualCluster, waitFor, settle } from './cluster_harness.mjs';

const withTimeout = (promise, ms, what) => {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
};

describeWithManualCluster('crash recovery of migrations and movePrimary (kill -9)', (ctx) => {
    const test = ctx.test;
    const c = () => ctx.cluster;
    const admin = async (cmd) => (await c().router()).db('admin').command(cmd);
    const cfgAdmin = async (cmd) => (await c().config()).db('admin').command(cmd);
    const configDoc = async (coll, id) => (await c().router()).db('config').collection(coll).findOne({ _id: id });
    const coordinators = async (filter = {}) =>
        (await c().config()).db('config').collection('system.coordinators').find(filter).toArray();
    const failpointHits = (name) => c().configProc.countLog(new RegExp(`"failpoint":"${name}"`));

    /** Recovery is done when config.system.coordinators is empty (read on the config server). */
    const waitRecovered = () =>
        waitFor('config.system.coordinators to be empty (recovery finished)', async () => (await coordinators()).length === 0, {
            timeoutMs: 45000,
            intervalMs: 100,
        });

    /**
     * While the config server is down, every shard and the router are made to notice it (their
     * commands to it fail with a connect error), so that the restart is seen by processes whose
     * pools held connections to the old process; the test at the end checks that such pooled
     * connections are never used after the peer restarted.
     */
    async function drainPoolsToConfig(ns) {
        const stale = /closed by the remote|Broken pipe|reset by peer/i;
        const drain = async (what, run) => {
            for (let i = 0; i < 200; i++) {
                let reached = false;
                try {
                    await run();
                    reached = true;
                } catch (err) {
                    if (!stale.test(err.message)) return;  // a connect error: the pool is drained
                }
                // Outside the try: this failure must not be taken for a stale connection.
                if (reached) throw new Error(`${what} reached the config server while it was down`);
            }
            throw new Error(`${what}: more than 200 stale pooled connections to the config server`);
        };
        for (let i = 0; i < c().shardProcs.length; i++) {
            const p = c().shardProcs[i];
            if (!p.alive || p.stopped) continue;
            const admin = (await c().shard(i)).db('admin');
            await drain(p.name, () => admin.command({ _flushRoutingTableCacheUpdates: ns }));
        }
        for (let i = 0; i < c().routerProcs.length; i++) {
            if (!c().routerProcs[i].alive) continue;
            const r = await c().router(i);
            await drain(`router${i}`, () => r.db('config').collection('shards').findOne({}, { maxTimeMS: 5000 }));
        }
    }

    /** kill -9 of the config server, then a restart on the same port and dbpath. */
    async function crashConfig(ns, { before } = {}) {
        await c().kill9(c().configProc);
        if (before) await before();
        await drainPoolsToConfig(ns);
        await c().restart(c().configProc);
    }

    /** Every role running again (a failed test must not break the next ones); failpoints off. */
    async function restoreCluster() {
        for (const p of c().processes) {
            p.sigcont();
            if (!p.alive) await c().restart(p);
        }
        for (let i = 0; i < c().shardProcs.length; i++) {
            const p = c().shardProcs[i];
            if (!p.alive) continue;
            await (await c().shard(i)).db('admin')
                .command({ configureFailPoint: 'migrationRecipientHangAfterClone', mode: 'off' }).catch(() => {});
        }
        for (const fp of ['moveRangeHangAfterDonorStart', 'moveRangeHangInCriticalSection', 'moveRangeHangBeforeCommit', 'moveRangeHangAfterCommit']) {
            await cfgAdmin({ configureFailPoint: fp, mode: 'off' }).catch(() => {});
        }
        await waitRecovered();
    }

    /** db.c sharded on {x: 1}, 200 documents, chunks [MinKey, 100) [100, MaxKey) on the primary. */
    async function rangedCollection(prefix) {
        const dbName = uniqueDbName(prefix);
        const ns = `${dbName}.c`;
        assert.equal((await admin({ enableSharding: dbName })).ok, 1);
        assert.equal((await admin({ shardCollection: ns, key: { x: 1 } })).ok, 1);
        const coll = (await c().router()).db(dbName).collection('c');
        await coll.insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i, x: i })));
        assert.equal((await admin({ split: ns, middle: { x: 100 } })).ok, 1);
        const donor = (await configDoc('databases', dbName)).primary;
        const names = (await (await c().router()).db('config').collection('shards').find().sort({ _id: 1 }).toArray()).map((s) => s._id);
        const recipient = names[(names.indexOf(donor) + 1) % names.length];
        return { dbName, ns, coll, donor, recipient };
    }

    /** The chunk of config.chunks with min {x: min}. */
    async function chunkAt(ns, min) {
        const { chunks } = await c().placement(ns);
        return chunks.find((ch) => ch.min.x === min);
    }

    /** Documents stored on a shard, orphans included (collStats: owned count + numOrphanDocs). */
    async function storedCount(shardName, dbName, collName) {
        try {
            const r = await (await c().shardByName(shardName)).db(dbName).command({ collStats: collName });
            return Number(r.count) + Number(r.numOrphanDocs || 0);
        } catch (err) {
            if (err.code === 26) return 0; // NamespaceNotFound: never created there
            throw err;
        }
    }

    /**
     * Turns failpoint `fp` on, starts moveRange [100, 200) → recipient through the router, and
     * waits until the coordinator document shows `phase` and the config server logged the hang.
     */
    async function moveAndHang(setup, fp, phase) {
        const hitsBefore = failpointHits(fp);
        await cfgAdmin({ configureFailPoint: fp, mode: 'alwaysOn' });
        const moving = settle(admin({ moveRange: setup.ns, min: { x: 100 }, max: { x: 200 }, toShard: setup.recipient }));
        await waitFor(`moveRange of ${setup.ns} to hang at ${fp} in phase ${phase}`, async () => {
            if (failpointHits(fp) <= hitsBefore) return false;
            const docs = await coordinators({ type: 'moveRange', ns: setup.ns });
            return docs.length === 1 && docs[0].phase === phase;
        }, { timeoutMs: 30000 });
        return { moving }; // not the promise itself: an async function would wait for it
    }

    /** After a move was aborted: placement unchanged, the donor takes writes, a new move works. */
    async function checkAborted(setup, moving) {
        const { ns, dbName, coll, donor, recipient } = setup;
        const outcome = await withTimeout(moving, 30000, 'the interrupted moveRange to return');
        assert.ok(outcome.error || outcome.reply, 'moveRange settled');
        const moved = await chunkAt(ns, 100);
        assert.ok(moved, 'chunk [100, 200) exists');
        assert.equal(moved.shard, donor, 'aborted: [100, 200) still on the donor');
        assert.equal(await storedCount(recipient, dbName, 'c'), 0, 'aborted: the recipient deleted its copy');
        // The donor left its critical section: a write in the range is taken at once.
        await withTimeout(coll.insertOne({ _id: 'after', x: 150 }), 10000, 'insert into the range after the abort');
        const onDonor = await (await c().shardByName(donor)).db(dbName).collection('c').countDocuments({ x: { $gte: 100, $lt: 200 } });
        assert.equal(onDonor, 101, 'the donor holds the range and the new document');
        await c().checkConsistency(ns, 201);
        // Change the range on the donor, then move it again: nothing is wedged, and no copy from
        // the aborted attempt comes back (a stale version or a deleted document).
        assert.equal((await coll.updateOne({ _id: 150 }, { $set: { v: 'new' } })).modifiedCount, 1);
        assert.equal((await coll.deleteOne({ _id: 151 })).deletedCount, 1);
        const again = await admin({ moveRange: ns, min: { x: 100 }, max: { x: 200 }, toShard: recipient });
        assert.equal(again.ok, 1, JSON.stringify(again));
        assert.equal((await chunkAt(ns, 100)).shard, recipient);
        assert.deepEqual(await coll.findOne({ _id: 150 }), { _id: 150, x: 150, v: 'new' });
        assert.equal(await coll.findOne({ _id: 151 }), null, 'a deleted document came back');
        await c().checkConsistency(ns, 200);
    }

    for (const [fp, phase] of [
        ['moveRangeHangAfterDonorStart', 'start'],
        ['moveRangeHangInCriticalSection', 'criticalSection'],
        ['moveRangeHangBeforeCommit', 'criticalSection'],
    ]) {
        test(`config server killed at ${fp} (phase ${phase}): recovery aborts the migration`, async () => {
            try {
                const setup = await rangedCollection('crcfg');
                const { moving } = await moveAndHang(setup, fp, phase);
                await crashConfig(setup.ns);
                await waitRecovered();
                await checkAborted(setup, moving);
            } finally {
                await restoreCluster();
            }
        });
    }

    /**
     * Starts moveRange [100, 200) → recipient with the recipient held between its clone and its
     * catch-up (shard failpoint migrationRecipientHangAfterClone): the donor serves the range and
     * records its changes meanwhile.
     */
    async function moveHeldAfterClone(setup) {
        const fp = 'migrationRecipientHangAfterClone';
        const proc = c().shardProc(setup.recipient);
        const hits = proc.countLog(new RegExp(`"failpoint":"${fp}"`));
        await (await c().shardByName(setup.recipient)).db('admin').command({ configureFailPoint: fp, mode: 'alwaysOn' });
        const moving = settle(admin({ moveRange: setup.ns, min: { x: 100 }, max: { x: 200 }, toShard: setup.recipient }));
        await waitFor(`the recipient of ${setup.ns} to hang after its clone`, async () =>
            proc.countLog(new RegExp(`"failpoint":"${fp}"`)) > hits, { timeoutMs: 30000 });
        const release = async () => {
            await (await c().shardByName(setup.recipient)).db('admin').command({ configureFailPoint: fp, mode: 'off' }).catch(() => {});
        };
        return { moving, release };
    }

    test('config server killed while the recipient catches up (phase cloning): recovery aborts the migration', async () => {
        try {
            const setup = await rangedCollection('crcfgclone');
            const { moving, release } = await moveHeldAfterClone(setup);
            assert.equal((await coordinators({ type: 'moveRange', ns: setup.ns }))[0].phase, 'cloning');
            await crashConfig(setup.ns);
            // Recovery's abort cancels the recipient's clone (held at the failpoint) and purges it.
            await waitRecovered();
            await release();
            await checkAborted(setup, moving);
        } finally {
            await restoreCluster();
        }
    });

    test('donor killed while the recipient catches up: the migration aborts, no write is lost', async () => {
        try {
            const setup = await rangedCollection('crdonorclone');
            const { moving, release } = await moveHeldAfterClone(setup);
            // Changes the donor made after the clone's snapshot, then the donor dies with them
            // untransferred: they must survive on the donor, which keeps the range.
            assert.equal((await setup.coll.updateOne({ _id: 120 }, { $set: { v: 'changed' } })).modifiedCount, 1);
            await c().kill9(c().shardProc(setup.donor));
            await c().restart(c().shardProc(setup.donor));
            await release();
            const outcome = await withTimeout(moving, 60000, 'moveRange to return');
            assert.ok(outcome.error, 'the migration failed (its donor restarted)');
            await waitRecovered();
            assert.equal((await setup.coll.findOne({ _id: 120 })).v, 'changed');
            await checkAborted(setup, moving);
        } finally {
            await restoreCluster();
        }
    });

    test('recipient killed after its clone: the migration aborts, the restarted recipient deletes its copy', async () => {
        try {
            const setup = await rangedCollection('crrecipclone');
            const { moving } = await moveHeldAfterClone(setup);
            assert.equal(await storedCount(setup.recipient, setup.dbName, 'c'), 100, 'the recipient holds the clone');
            await c().kill9(c().shardProc(setup.recipient));
            await c().restart(c().shardProc(setup.recipient));
            const outcome = await withTimeout(moving, 60000, 'moveRange to return');
            assert.ok(outcome.error, 'the migration failed (its recipient restarted)');
            await waitRecovered();
            // The uncommitted copy is never counted, and is deleted.
            const stats = await (await c().shardByName(setup.recipient)).db(setup.dbName).command({ collStats: 'c' });
            assert.equal(Number(stats.count), 0, 'the copy is not counted as owned');
            await waitFor('the recipient to delete its uncommitted copy', async () =>
                (await storedCount(setup.recipient, setup.dbName, 'c')) === 0);
            await checkAborted(setup, moving);
        } finally {
            await restoreCluster();
        }
    });

    test('donor killed after the commit, before deleting the range: the restarted donor deletes it, counts stay exact', async () => {
        try {
            const setup = await rangedCollection('crdonorcommit');
            const { ns, dbName, donor, recipient } = setup;
            const { moving } = await moveAndHang(setup, 'moveRangeHangAfterCommit', 'committed');
            await c().kill9(c().shardProc(donor));
            await c().restart(c().shardProc(donor));
            // The donor's donation is persisted (a tracked range): its owned count is exact at once.
            const stats = await (await c().shardByName(donor)).db(dbName).command({ collStats: 'c' });
            assert.equal(Number(stats.count), 100, 'the donor counts only what it owns');
            await cfgAdmin({ configureFailPoint: 'moveRangeHangAfterCommit', mode: 'off' });
            await withTimeout(moving, 60000, 'moveRange to return');
            await waitRecovered();
            await waitFor('the restarted donor to delete the donated range', async () =>
                (await storedCount(donor, dbName, 'c')) === 100);
            assert.equal(await storedCount(recipient, dbName, 'c'), 100);
            await c().checkConsistency(ns, 200);
        } finally {
            await restoreCluster();
        }
    });

    test('config server killed at moveRangeHangAfterCommit: recovery finishes the migration', async () => {
        try {
            const setup = await rangedCollection('crcommit');
            const { ns, dbName, coll, donor, recipient } = setup;
            const { moving } = await moveAndHang(setup, 'moveRangeHangAfterCommit', 'committed');
            assert.equal((await chunkAt(ns, 100)).shard, recipient, 'committed in config.chunks before the crash');
            await crashConfig(ns);
            await waitRecovered();
            await withTimeout(moving, 30000, 'the interrupted moveRange to return');
            assert.equal((await chunkAt(ns, 100)).shard, recipient, 'finished: [100, 200) on the recipient');
            assert.equal(await storedCount(donor, dbName, 'c'), 100, 'finished: the donor deleted the moved range');
            assert.equal(await storedCount(recipient, dbName, 'c'), 100);
            const direct = await (await c().shardByName(recipient)).db(dbName).collection('c').countDocuments({});
            assert.equal(direct, 100, 'the recipient serves the moved range');
            // The donor left its critical section; writes of the range go to the recipient.
            await withTimeout(coll.insertOne({ _id: 'after', x: 150 }), 10000, 'insert into the moved range');
            await withTimeout(coll.insertOne({ _id: 'low', x: 5 }), 10000, 'insert into the donor range');
            await c().checkConsistency(ns, 202);
            const log = await (await c().router()).db('config').collection('changelog')
                .find({ what: 'moveChunk.from', ns }).toArray();
            assert.ok(log.some((e) => e.details && e.details.note === 'success'), `changelog: ${JSON.stringify(log)}`);
        } finally {
            await restoreCluster();
        }
    });

    // A split writes its new chunks before it shrinks the old one; a merge widens the first chunk
    // before it removes the others. Killed in between, the config server finds chunks enclosed in
    // another at its restart and removes them (the enclosing chunk alone is right in both cases).
    test('config server killed in the middle of a split and of a merge: the restart repairs config.chunks', async () => {
        try {
            const setup = await rangedCollection('crsplit');
            const { ns, coll } = setup;
            const hang = async (fp, cmd) => {
                const hitsBefore = failpointHits(fp);
                await cfgAdmin({ configureFailPoint: fp, mode: 'alwaysOn' });
                const running = settle(admin(cmd));
                await waitFor(`${Object.keys(cmd)[0]} to hang at ${fp}`, async () => failpointHits(fp) > hitsBefore, { timeoutMs: 30000 });
                return { running }; // not the promise itself: an async function would wait for it
            };
            const bounds = async () => (await c().placement(ns)).chunks.map((ch) => [ch.min.x, ch.max.x]);

            const { running: splitting } = await hang('splitChunkHangAfterNewChunks', { split: ns, middle: { x: 150 } });
            const half = await bounds();
            assert.equal(half.length, 3, `the split's new chunk is written, the old one not shrunk: ${JSON.stringify(half)}`);
            await crashConfig(ns);
            await waitRecovered();
            assert.ok((await withTimeout(splitting, 30000, 'the interrupted split to return')).error, 'the split failed');
            assert.equal((await bounds()).length, 2, 'the half-done split is undone');
            await c().checkConsistency(ns, 200);
            assert.equal((await admin({ split: ns, middle: { x: 150 } })).ok, 1, 'the same split works after');
            await c().checkConsistency(ns, 200);

            const { running: merging } = await hang('mergeChunksHangAfterWidening', {
                mergeChunks: ns, bounds: [{ x: 100 }, { x: new MaxKey() }],
            });
            await crashConfig(ns);
            await waitRecovered();
            assert.ok((await withTimeout(merging, 30000, 'the interrupted merge to return')).error, 'the merge failed');
            assert.equal((await bounds()).length, 2, 'the half-done merge is completed');
            await withTimeout(coll.insertOne({ _id: 'after', x: 170 }), 10000, 'an insert into the merged chunk');
            await c().checkConsistency(ns, 201);
            assert.ok(c().configProc.countLog(/Repaired chunks left by an interrupted split or merge/) >= 2, 'both repairs logged');
        } finally {
            await cfgAdmin({ configureFailPoint: 'splitChunkHangAfterNewChunks', mode: 'off' }).catch(() => {});
            await cfgAdmin({ configureFailPoint: 'mergeChunksHangAfterWidening', mode: 'off' }).catch(() => {});
            await restoreCluster();
        }
    });

    /**
     * A shard involved in the migration is killed while the coordinator hangs before the commit,
     * then restarted; a write into the migrating range is attempted while the migration is still
     * pending; then the migration is released. Either outcome (aborted or committed) is fine if
     * no acknowledged document is lost or duplicated.
     */
    async function shardCrashBeforeCommit(t, setup, victimName) {
        const { ns, coll } = setup;
        const { moving } = await moveAndHang(setup, 'moveRangeHangBeforeCommit', 'criticalSection');
        const victim = c().shardProc(victimName);
        await c().kill9(victim);
        await c().restart(victim);

        // A write into the migrating range while the coordinator still hangs before the commit.
        // Correct behaviours: it waits (the donor's critical section) and lands wherever the
        // range ends up, or it is refused. Wrong: acknowledged now and lost by the commit.
        const insertOnce = async () => {
            for (let i = 0; ; i++) {
                try {
                    return await coll.insertOne({ _id: 'during', x: 150 });
                } catch (err) {
                    if (i >= 20 || !/closed by the remote/.test(err.message)) throw err;
                }
            }
        };
        const write = settle(insertOnce());
        const early = await Promise.race([write, new Promise((r) => setTimeout(() => r(null), 3000))]);

        await cfgAdmin({ configureFailPoint: 'moveRangeHangBeforeCommit', mode: 'off' });
        const outcome = await withTimeout(moving, 60000, 'moveRange to return after the failpoint was released');
        await waitRecovered();
        const w = await withTimeout(write, 60000, 'the write during the migration to return');
        const acked = !w.error;
        const owner = (await chunkAt(ns, 100)).shard;
        const doc = await coll.findOne({ _id: 'during' });
        const info =
            `moveRange ${outcome.error ? `failed: ${outcome.error.message}` : 'ok'}; [100, 200) now on ${owner}; ` +
            `write during the migration ${early ? 'returned before the release' : 'waited for the release'} and was ` +
            `${acked ? 'acknowledged' : `refused: ${w.error && w.error.message}`}; read back: ${JSON.stringify(doc)}`;
        if (acked) assert.ok(doc, `acknowledged write lost: ${info}`);
        await c().checkConsistency(ns, 200 + (acked ? 1 : 0));
        // Writes and reads work on the range afterwards, whoever owns it.
        await withTimeout(coll.insertOne({ _id: 'after', x: 160 }), 15000, 'insert after recovery');
        assert.equal(await coll.countDocuments({ x: { $gte: 100, $lt: 200 } }), 101 + (acked ? 1 : 0), info);
        await c().checkConsistency(ns, 201 + (acked ? 1 : 0));
        t.diagnostic(info);
        return { outcome, owner, acked, info };
    }

    test('donor killed (and restarted) while the migration hangs before the commit', async (t) => {
        try {
            const setup = await rangedCollection('crdonor');
            await shardCrashBeforeCommit(t, setup, setup.donor);
        } finally {
            await restoreCluster();
        }
    });

    test('recipient killed (and restarted) while the migration hangs before the commit', async (t) => {
        try {
            const setup = await rangedCollection('crrecip');
            await shardCrashBeforeCommit(t, setup, setup.recipient);
        } finally {
            await restoreCluster();
        }
    });

    // ARCHITECTURE.md invariant 4: a shard that cannot reach the config server filters by its own
    // persisted copy of its placement — never unfiltered (the recipient's copy of a range it does
    // not own yet would be returned as data), and not failing every read either.
    test('recipient restarted while the config server is down hides its uncommitted copy (persisted placement)', async () => {
        try {
            const setup = await rangedCollection('crpersist');
            const { dbName, recipient } = setup;
            const onRecipient = async () =>
                (await c().shardByName(recipient)).db(dbName).collection('c').countDocuments({}, { maxTimeMS: 20000 });
            // A direct read makes the recipient load (and persist) its placement: it owns nothing.
            assert.equal(await onRecipient(), 0);
            const { moving } = await moveAndHang(setup, 'moveRangeHangBeforeCommit', 'criticalSection');
            assert.equal(await storedCount(recipient, dbName, 'c'), 100, 'the recipient holds the cloned range');
            await c().kill9(c().configProc);
            const victim = c().shardProc(recipient);
            await c().kill9(victim);
            await c().restart(victim);
            assert.equal(await onRecipient(), 0, 'the uncommitted copy is not visible with the config server down');
            assert.equal(
                await (await c().shardByName(recipient)).db(dbName).collection('c').findOne({ x: 150 }),
                null,
                'a point read does not see it either',
            );
            await c().restart(c().configProc);
            await waitRecovered();
            await checkAborted(setup, moving);
        } finally {
            await restoreCluster();
        }
    });

    /** A database with two unsharded collections on its primary; returns names and documents. */
    async function unshardedDb(prefix) {
        const dbName = uniqueDbName(prefix);
        const db = (await c().router()).db(dbName);
        const docs = Array.from({ length: 300 }, (_, i) => ({ _id: i, n: i }));
        await db.collection('u').insertMany(docs);
        await db.collection('u2').insertMany([{ _id: 'a' }, { _id: 'b' }]);
        await db.collection('u').createIndex({ n: 1 });
        const from = (await configDoc('databases', dbName)).primary;
        const names = (await (await c().router()).db('config').collection('shards').find().sort({ _id: 1 }).toArray()).map((s) => s._id);
        const to = names[(names.indexOf(from) + 1) % names.length];
        return { dbName, docs, from, to };
    }

    /** Holds movePrimary in phase cloning: the new primary is SIGSTOPped before it starts. */
    async function movePrimaryAndHold({ dbName, to }) {
        const target = c().shardProc(to);
        target.sigstop();
        const moving = settle(admin({ movePrimary: dbName, to }));
        await waitFor(`movePrimary of ${dbName} to reach phase cloning`, async () => {
            const docs = await coordinators({ type: 'movePrimary', db: dbName });
            return docs.length === 1 && docs[0].phase === 'cloning';
        }, { timeoutMs: 30000 });
        return { moving, target };
    }

    /** Reads, writes and placement of the unsharded collections of db, primary `primary`. */
    async function checkUnsharded({ dbName, docs }, primary, other) {
        const db = (await c().router()).db(dbName);
        assert.equal((await configDoc('databases', dbName)).primary, primary);
        assert.deepEqual(await db.collection('u').find().sort({ _id: 1 }).toArray(), docs);
        await withTimeout(db.collection('u').insertOne({ _id: 'new', n: -1 }), 15000, 'insert after movePrimary');
        assert.equal((await db.collection('u').updateOne({ _id: 7 }, { $set: { t: 1 } })).modifiedCount, 1);
        const onPrimary = await (await c().shardByName(primary)).db(dbName).collection('u').countDocuments({});
        assert.equal(onPrimary, docs.length + 1, `documents of u on the primary ${primary}`);
        assert.equal(await (await c().shardByName(other)).db(dbName).collection('u').countDocuments({}), 0, `u left on ${other}`);
        assert.deepEqual(
            (await (await c().shardByName(primary)).db(dbName).collection('u').indexes()).map((i) => i.name).sort(),
            ['_id_', 'n_1'],
        );
        await c().checkConsistency(`${dbName}.u`, docs.length + 1);
        await c().checkConsistency(`${dbName}.u2`, 2);
        await db.collection('u').deleteOne({ _id: 'new' });
        await db.collection('u').updateOne({ _id: 7 }, { $unset: { t: 1 } });
    }

    test('router killed during movePrimary: the move completes; reads and writes are right', async () => {
        try {
            const setup = await unshardedDb('crmprouter');
            const { moving, target } = await movePrimaryAndHold(setup);
            const router = c().routerProcs[0];
            await c().kill9(router);
            target.sigcont();
            await waitRecovered(); // the config server finishes the coordinator without the router
            await moving; // the router's connection died: an error, not an answer
            await c().restart(router);
            // If the move had not finished, retrying it must be safe; either way it ends on `to`.
            const retry = await admin({ movePrimary: setup.dbName, to: setup.to });
            assert.equal(retry.ok, 1, JSON.stringify(retry));
            await checkUnsharded(setup, setup.to, setup.from);
        } finally {
            await restoreCluster();
        }
    });

    test('config server (and the held new primary) killed during movePrimary: recovery aborts it', async () => {
        try {
            const setup = await unshardedDb('crmpcfg');
            const { target } = await movePrimaryAndHold(setup);
            // The held new primary is killed too (it is stopped; it never ran the clone).
            await crashConfig(`${setup.dbName}.u`, { before: () => c().kill9(target) });
            await c().restart(target);
            await waitRecovered();
            await checkUnsharded(setup, setup.from, setup.to);
            // Retrying movePrimary now succeeds.
            const retry = await admin({ movePrimary: setup.dbName, to: setup.to });
            assert.equal(retry.ok, 1, JSON.stringify(retry));
            await checkUnsharded(setup, setup.to, setup.from);
        } finally {
            await restoreCluster();
        }
    });

    // The router forwards a single write from its io thread (src/router/README.md "Forwarding").
    // When the shard dies under it, the outcome is unknown: a retryable write's command then fails
    // as a whole with RetryableWriteError (a write error would never be retried by a driver), and
    // the retry after the restart applies it once.
    test('a shard killed under a forwarded retryable write: RetryableWriteError, then applied once', async () => {
        try {
            const dbName = uniqueDbName('crfwd');
            const client = await c().router();
            const db = client.db(dbName);
            assert.equal((await admin({ enableSharding: dbName })).ok, 1);
            assert.equal((await admin({ shardCollection: `${dbName}.c`, key: { _id: 1 } })).ok, 1);
            await db.collection('c').insertOne({ _id: 1, n: 0 });
            const shard = c().shardProc((await configDoc('databases', dbName)).primary);
            // A pooled server session may carry txnNumbers of earlier writes: one far above them.
            const session = client.startSession();
            const cmd = { update: 'c', updates: [{ q: { _id: 1 }, u: { $inc: { n: 1 } } }], txnNumber: Long.fromNumber(1000) };
            try {
                shard.sigstop();
                const sent = settle(db.command(cmd, { session }));
                await c().kill9(shard);
                const { reply, error } = await sent;
                assert.ok(error, `the write's outcome is unknown: an error, not ${JSON.stringify(reply)}`);
                assert.ok(error.errorLabels?.includes('RetryableWriteError'), `${error} ${JSON.stringify(error.errorLabels)}`);
                await c().restart(shard);
                for (let i = 0; i < 2; i++) {
                    const retry = await db.command(cmd, { session });
                    assert.deepEqual([retry.n, retry.nModified, retry.writeErrors], [1, 1, undefined], JSON.stringify(retry));
                }
                assert.equal((await db.collection('c').findOne({ _id: 1 })).n, 1, 'applied once');
            } finally {
                await session.endSession();
            }
        } finally {
            await restoreCluster();
        }
    });

    test(
        'a shard talks to a restarted config server at once (no stale pooled connection)',
        async () => {
            try {
                const setup = await rangedCollection('crpool');
                const shardAdmin = (await c().shardByName(setup.donor)).db('admin');
                const flush = () => shardAdmin.command({ _flushRoutingTableCacheUpdates: setup.ns });
                assert.equal((await flush()).ok, 1, 'the shard reaches the config server');
                await c().kill9(c().configProc);
                await c().restart(c().configProc);
                // The restarted config server is up and answers: the shard must reach it.
                const r = await flush();
                assert.equal(r.ok, 1, JSON.stringify(r));
                const mv = await admin({ moveRange: setup.ns, min: { x: 100 }, max: { x: 200 }, toShard: setup.recipient });
                assert.equal(mv.ok, 1, JSON.stringify(mv));
                await c().checkConsistency(setup.ns, 200);
            } finally {
                await restoreCluster();
            }
        },
    );
});
