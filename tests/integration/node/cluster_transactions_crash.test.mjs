// Crash tests of the two-phase commit (issue 14; txn/transaction_coordinator.h): roles started
// one by one (ManualCluster: config, 2 shards, 2 routers) so that a killed process restarts on
// its port and dbpath. Eight accounts, 0-3 on the "low" shard (which coordinates: a transfer's
// first statement goes there) and 4-7 on the "high" one. A commit is staged (src/txn/README.md
// "Staged commit"): acknowledged once every part is prepared; the coordinator's failpoints hold
// the router's decision before it is written (hangBeforeWritingDecision) or after
// (hangAfterWritingDecision), the router's holds it before it is sent
// (hangBeforeSendingCommitDecision), the other participant's holds the notice that its prepare,
// answered before it was synced, is durable (hangBeforeNotifyingCoordinator: a commit without
// journal is decided by that notice); then the coordinator, a participant or the router is
// killed with SIGKILL and restarted. Afterwards every transaction is all-or-nothing: both of its
// accounts changed or neither, the total is unchanged, and no shard is left holding reads.
import assert from 'node:assert/strict';
import { uniqueDbName } from './harness.mjs';
import { describeWithManualCluster, waitFor } from './cluster_harness.mjs';

const kAccounts = 8;
const kInitial = 1000;
const kTotal = kAccounts * kInitial;

/** Resolves a promise to {value} or {error} (never rejects). */
const settle = (promise) => promise.then((value) => ({ value }), (error) => ({ error }));

describeWithManualCluster(
    'two-phase commit after kill -9 of the coordinator, a participant or the router',
    (ctx) => {
        const test = ctx.test;
        const c = () => ctx.cluster;
        const dbName = uniqueDbName('txcrash');
        const ns = `${dbName}.accounts`;
        const owners = {};
        const expected = Array(kAccounts).fill(kInitial);
        const shardProc = (which) => c().shardProc(owners[which]);
        const onShard = async (which, cmd) => (await c().shardByName(owners[which])).db('admin').command(cmd);
        const failpoint = (which, name, mode) => onShard(which, { configureFailPoint: name, mode });
        const hits = (which, name) => shardProc(which).countLog(new RegExp(`"failpoint":"${name}"`));

        /** Starts a transfer in a transaction through router `i`; its commit's outcome settles. */
        async function startTransfer(i, from, to, amount) {
            const client = await c().router(i);
            const coll = client.db(dbName).collection('accounts');
            const session = client.startSession();
            session.startTransaction();
            await coll.updateOne({ _id: from }, { $inc: { balance: -amount } }, { session });
            await coll.updateOne({ _id: to }, { $inc: { balance: amount } }, { session });
            return { session, commit: settle(session.commitTransaction()) };
        }

        /** Balances read through router `i` (retried while a shard restarts). */
        async function balances(i = 1) {
            let out = null;
            await waitFor('the accounts are readable', async () => {
                const r = await settle((async () => {
                    const coll = (await c().router(i)).db(dbName).collection('accounts');
                    return (await coll.find({}).sort({ _id: 1 }).maxTimeMS(5000).toArray()).map((d) => d.balance);
                })());
                if (r.error) return false;
                out = r.value;
                return true;
            }, { timeoutMs: 60000, intervalMs: 200 });
            return out;
        }

        /** Both shards answer reads at once (nothing prepared is left holding them). */
        async function shardsReadable() {
            for (const which of ['low', 'high']) {
                const coll = (await c().shardByName(owners[which])).db(dbName).collection('accounts');
                await waitFor(`reads on the ${which} shard are not held`, async () => {
                    const r = await settle(coll.find({}).maxTimeMS(1000).toArray());
                    return !r.error;
                }, { timeoutMs: 60000, intervalMs: 200 });
            }
        }

        /**
         * commitTransaction of (lsid, txnNumber) through router `i`, which did not run it, with
         * the client's recoveryToken: what a driver sends when it retries a commit on another
         * router. A session of router i's client borrows the lsid for the one command.
         */
        async function commitThrough(i, lsid, txnNumber, recoveryToken) {
            const client = await c().router(i);
            const session = client.startSession();
            const server = session.serverSession;
            const own = { id: server.id, txnNumber: server.txnNumber };
            Object.assign(server, { id: lsid, txnNumber });
            try {
                const cmd = { commitTransaction: 1 };
                if (recoveryToken) cmd.recoveryToken = recoveryToken;
                return await settle(client.db('admin').command(cmd, { session }));
            } finally {
                Object.assign(server, own);
                await session.endSession();
            }
        }

        /** A transfer's session state a commit through another router needs. */
        const recoveryOf = (session) => ({
            lsid: session.id,
            txnNumber: session.serverSession.txnNumber,
            token: session.transaction.recoveryToken,
        });

        async function expectBalances() {
            await shardsReadable();
            const now = await balances();
            assert.deepEqual(now, expected);
            assert.equal(now.reduce((s, b) => s + b, 0), kTotal);
            await c().checkConsistency(ns, kAccounts);
        }

        test('setup: accounts 0-3 on one shard, 4-7 on the other', async () => {
            const admin = (await c().router()).db('admin');
            await admin.command({ enableSharding: dbName });
            await admin.command({ shardCollection: ns, key: { _id: 1 } });
            const docs = [];
            for (let i = 0; i < kAccounts; i++) docs.push({ _id: i, balance: kInitial });
            await (await c().router()).db(dbName).collection('accounts').insertMany(docs);
            await admin.command({ split: ns, middle: { _id: 4 } });
            const primary = (await (await c().router()).db('config').collection('databases').findOne({ _id: dbName })).primary;
            owners.low = primary;
            owners.high = primary === 'shard0' ? 'shard1' : 'shard0';
            await admin.command({ moveChunk: ns, find: { _id: 4 }, to: owners.high });
            await c().checkConsistency(ns, kAccounts);
        });

        test('the coordinator killed after its decision: at restart it delivers the commit', async () => {
            await failpoint('low', 'hangAfterWritingDecision', 'alwaysOn');
            const before = hits('low', 'hangAfterWritingDecision');
            const { session, commit } = await startTransfer(0, 1, 5, 100);
            await waitFor('the coordinator wrote its decision', async () => hits('low', 'hangAfterWritingDecision') > before);
            await c().kill9(shardProc('low'));
            await commit; // the router lost its coordinator: an error, or success if it raced
            await c().restart(shardProc('low'));
            expected[1] -= 100;
            expected[5] += 100;
            await expectBalances();
            // The client's retried commit is answered from the coordinator's record.
            const retried = await settle(session.commitTransaction());
            assert.equal(retried.error, undefined, `${retried.error}`);
            await session.endSession();
        });

        test('the coordinator killed after the acknowledgement, before its decision: at restart it resolves the staged commit, committed everywhere', async () => {
            // The commit is staged: the client hears it once both parts are prepared; the
            // coordinator holds the router's decision unwritten.
            await failpoint('low', 'hangBeforeWritingDecision', 'alwaysOn');
            const before = hits('low', 'hangBeforeWritingDecision');
            const { session, commit } = await startTransfer(0, 2, 6, 200);
            const outcome = await commit;
            assert.equal(outcome.error, undefined, `${outcome.error}`);
            await waitFor('the decision reached the coordinator', async () => hits('low', 'hangBeforeWritingDecision') > before);
            // Meanwhile the high shard holds reads (it is prepared): nobody sees half.
            const held = await settle((await c().shardByName(owners.high)).db(dbName).collection('accounts').find({}).maxTimeMS(300).toArray());
            assert.equal(held.error?.code, 50, `a read on a prepared participant returned: ${JSON.stringify(held)}`);
            await c().kill9(shardProc('low'));
            await c().restart(shardProc('low'));
            // Its record has no decision: every participant is found prepared again, so it commits.
            await waitFor('the coordinator resolved the staged commit', async () => shardProc('low').countLog(/Resolving a staged commit/) >= 1, { timeoutMs: 30000, intervalMs: 100 });
            expected[2] -= 200;
            expected[6] += 200;
            await expectBalances();
            const retried = await settle(session.commitTransaction());
            assert.equal(retried.error, undefined, `${retried.error}`);
            await session.endSession();
        });

        test('a participant killed while prepared: it prepares again at restart and commits', async () => {
            await failpoint('low', 'hangBeforeWritingDecision', 'alwaysOn');
            const before = hits('low', 'hangBeforeWritingDecision');
            const { session, commit } = await startTransfer(0, 3, 7, 300);
            await waitFor('every participant prepared', async () => hits('low', 'hangBeforeWritingDecision') > before);
            await c().kill9(shardProc('high'));
            await c().restart(shardProc('high'));
            assert.ok(shardProc('high').countLog(/Restored a prepared transaction/) >= 1, 'the participant restored nothing');
            await failpoint('low', 'hangBeforeWritingDecision', 'off');
            const outcome = await commit;
            assert.equal(outcome.error, undefined, `${outcome.error}`);
            expected[3] -= 300;
            expected[7] += 300;
            await expectBalances();
            await session.endSession();
        });

        test('the router killed during the commit: the coordinator finishes it alone', async () => {
            await failpoint('low', 'hangBeforeWritingDecision', 'alwaysOn');
            const before = hits('low', 'hangBeforeWritingDecision');
            const { commit } = await startTransfer(0, 0, 4, 400);
            await waitFor('the decision reached the coordinator', async () => hits('low', 'hangBeforeWritingDecision') > before);
            await c().kill9(c().routerProcs[0]);
            await commit;
            await failpoint('low', 'hangBeforeWritingDecision', 'off');
            expected[0] -= 400;
            expected[4] += 400;
            await shardsReadable();
            assert.deepEqual(await balances(1), expected); // through the surviving router
            await c().restart(c().routerProcs[0]);
            await expectBalances();
        });

        test('the router killed after acknowledging, before sending the decision: the coordinator resolves the staged commit', async () => {
            const router0 = (await c().router(0)).db('admin');
            await router0.command({ configureFailPoint: 'hangBeforeSendingCommitDecision', mode: 'alwaysOn' });
            const { commit } = await startTransfer(0, 3, 5, 50);
            const outcome = await commit;
            assert.equal(outcome.error, undefined, `${outcome.error}`);
            // Acknowledged, and no decision anywhere yet: both parts hold their readers.
            const held = await settle((await c().shardByName(owners.high)).db(dbName).collection('accounts').find({}).maxTimeMS(300).toArray());
            assert.equal(held.error?.code, 50, `a read on a prepared participant returned: ${JSON.stringify(held)}`);
            await c().kill9(c().routerProcs[0]);
            // The coordinator's recovery thread resolves the record: every part is prepared.
            expected[3] -= 50;
            expected[5] += 50;
            await shardsReadable();
            assert.ok(shardProc('low').countLog(/Resolving a staged commit/) >= 1, 'the coordinator did not resolve the staged record');
            assert.deepEqual(await balances(1), expected);
            await c().restart(c().routerProcs[0]);
            await expectBalances();
        });

        test('the other participant killed after the acknowledgement, before it announced its prepare durable: resolved committed after its restart', async () => {
            // Without journal, the other participant answers its prepare once written and tells
            // the coordinator when it is synced; the coordinator decides on that notice. Held
            // here, then the participant is killed: its prepared part comes back from its log,
            // and the coordinator's resolution prepares it again (synced) and commits.
            await failpoint('high', 'hangBeforeNotifyingCoordinator', 'alwaysOn');
            const before = hits('high', 'hangBeforeNotifyingCoordinator');
            const { commit } = await startTransfer(0, 2, 7, 60);
            const outcome = await commit;
            assert.equal(outcome.error, undefined, `${outcome.error}`);
            await waitFor('the notice is held', async () => hits('high', 'hangBeforeNotifyingCoordinator') > before);
            // Acknowledged, nothing decided: the coordinator's own part holds its readers too.
            const held = await settle((await c().shardByName(owners.low)).db(dbName).collection('accounts').find({}).maxTimeMS(300).toArray());
            assert.equal(held.error?.code, 50, `a read on the undecided coordinator returned: ${JSON.stringify(held)}`);
            await c().kill9(shardProc('high'));
            await c().restart(shardProc('high'));
            expected[2] -= 60;
            expected[7] += 60;
            await shardsReadable();
            assert.ok(shardProc('low').countLog(/Resolving a staged commit/) >= 1, 'the coordinator did not resolve the staged record');
            await expectBalances();
        });

        test('a participant killed holding two prepared transactions of one session (the first set aside by the second): both come back and commit', async () => {
            // The coordinator (low) holds its deliveries: the session's first transaction stays
            // prepared on the high shard after the client heard its commit, the second begins
            // there beside it and is prepared too.
            await failpoint('low', 'hangBeforeDeliveringDecision', 'alwaysOn');
            const client = await c().router(0);
            const coll = client.db(dbName).collection('accounts');
            const session = client.startSession();
            for (const [from, to, amount] of [[1, 5, 10], [2, 6, 20]]) {
                session.startTransaction();
                await coll.updateOne({ _id: from }, { $inc: { balance: -amount } }, { session });
                await coll.updateOne({ _id: to }, { $inc: { balance: amount } }, { session });
                await session.commitTransaction();
                expected[from] -= amount;
                expected[to] += amount;
            }
            const prepared = async () => (await onShard('high', { currentOp: 1, 'lsid.id': session.id.id })).inprog
                .filter((op) => op.desc === 'prepared transaction')
                .map((op) => Number(op.transaction.parameters.txnNumber)).sort();
            const numbers = await prepared();
            assert.equal(numbers.length, 2, `prepared on the high shard: ${JSON.stringify(numbers)}`);
            assert.equal(numbers[1], numbers[0] + 1);
            const restoredBefore = shardProc('high').countLog(/Restored a prepared transaction/);
            await c().kill9(shardProc('high'));
            await c().restart(shardProc('high'));
            assert.equal(shardProc('high').countLog(/Restored a prepared transaction/) - restoredBefore, 2,
                'the participant did not restore both prepared transactions of the session');
            assert.deepEqual(await prepared(), numbers);
            await failpoint('low', 'hangBeforeDeliveringDecision', 'off');
            await expectBalances();
            assert.deepEqual(await prepared(), []);
            await session.endSession();
        });

        test('a commit retried through the other router with the recoveryToken gets the decision, also after a restart', async () => {
            // Two participants, the router killed before the coordinator heard its decision: the
            // other router asks the coordinator the token names, which resolves the staged
            // record (every part prepared: committed).
            await (await c().router(0)).db('admin').command({ configureFailPoint: 'hangBeforeSendingCommitDecision', mode: 'alwaysOn' });
            const first = await startTransfer(0, 1, 6, 10);
            const r1 = recoveryOf(first.session);
            assert.deepEqual(r1.token, { recoveryShardId: owners.low });
            await first.commit;
            await c().kill9(c().routerProcs[0]);
            const committed = await commitThrough(1, r1.lsid, r1.txnNumber, r1.token);
            assert.equal(committed.error, undefined, `${committed.error}`);
            expected[1] -= 10;
            expected[6] += 10;
            await shardsReadable();
            assert.deepEqual(await balances(1), expected);
            await c().restart(c().routerProcs[0]);

            // One participant whose commit never left the killed router: the recovery aborts it
            // there (its router could no longer commit it) and answers NoSuchTransaction.
            const client = await c().router(0);
            const session = client.startSession();
            session.startTransaction();
            const coll = client.db(dbName).collection('accounts');
            await coll.updateOne({ _id: 2 }, { $inc: { balance: -20 } }, { session });
            await coll.updateOne({ _id: 3 }, { $inc: { balance: 20 } }, { session });
            const r2 = recoveryOf(session);
            await c().kill9(c().routerProcs[0]);
            const aborted = await commitThrough(1, r2.lsid, r2.txnNumber, r2.token);
            assert.equal(aborted.error?.code, 251, `${aborted.error}`);
            assert.ok(aborted.error.hasErrorLabel('TransientTransactionError'));
            const withoutToken = await commitThrough(1, r2.lsid, r2.txnNumber + 1, undefined);
            assert.equal(withoutToken.error?.code, 251, `${withoutToken.error}`);
            await c().restart(c().routerProcs[0]);
            // Its documents are free at once (no intent left behind).
            await (await c().router(1)).db(dbName).collection('accounts')
                .updateOne({ _id: 2 }, { $inc: { balance: 0 } }, { maxTimeMS: 5000 });

            // One participant that committed: a retry through the other router answers ok.
            const one = await startTransfer(0, 0, 3, 30);
            assert.equal((await one.commit).error, undefined);
            expected[0] -= 30;
            expected[3] += 30;
            const r3 = recoveryOf(one.session);
            const again = await commitThrough(1, r3.lsid, r3.txnNumber, r3.token);
            assert.equal(again.error, undefined, `${again.error}`);
            // ... and still after kill -9 of that shard: its commit record came back with it
            // (NoSuchTransaction here would have the driver run the transfer a second time).
            // Router 1 is restarted too, so that it asks the shard instead of remembering.
            await c().kill9(shardProc('low'));
            await c().kill9(c().routerProcs[1]);
            await c().restart(shardProc('low'));
            await c().restart(c().routerProcs[1]);
            let afterRestart;
            await waitFor('the restarted shard answers the recovery', async () => {
                afterRestart = await commitThrough(1, r3.lsid, r3.txnNumber, r3.token);
                return !afterRestart.error || afterRestart.error.code === 251;
            }, { timeoutMs: 60000, intervalMs: 200 });
            assert.equal(afterRestart.error, undefined, `${afterRestart.error}`);
            await one.session.endSession();
            await expectBalances();
        });

        test('a retried move whose transaction is prepared across a restart waits for its decision, then gets its reply', async () => {
            // A retryable update that changes a document's shard key: router 0 moves it in a
            // transaction of its own, acknowledged once prepared; its decision is held
            // (hangBeforeSendingCommitDecision). Both shards are killed; the source (which
            // coordinates: the move's record goes there first) restarts alone, so the
            // transaction stays prepared there. The retry through router 1 waits on the source
            // for the decision (the restored record holds the statement as moving), and gets
            // the first reply when the other shard is back and the commit is resolved.
            const movesNs = `${dbName}.moves`;
            const admin = (await c().router(1)).db('admin');
            await admin.command({ shardCollection: movesNs, key: { k: 1 } });
            await (await c().router(1)).db(dbName).collection('moves').insertOne({ _id: 'm1', k: 1 });
            await admin.command({ split: movesNs, middle: { k: 100 } });
            const source = (await (await c().router(1)).db('config').collection('databases').findOne({ _id: dbName })).primary;
            assert.equal(source, owners.low);
            await admin.command({ moveChunk: movesNs, find: { k: 100 }, to: owners.high });

            const clients = [];
            for (const i of [0, 1]) clients.push(await c().clientFor(`${c().routerUri(i)}&appName=move-crash-${i}`));
            const session = clients[0].startSession();
            const other = clients[1].startSession();
            other.serverSession.id = session.serverSession.id;
            const cmd = { update: 'moves', updates: [{ q: { k: 1 }, u: { $set: { k: 101 } } }], txnNumber: 7 };
            await (await c().router(0)).db('admin').command({ configureFailPoint: 'hangBeforeSendingCommitDecision', mode: 'alwaysOn' });
            const first = await clients[0].db(dbName).command(cmd, { session });
            assert.deepEqual([first.n, first.nModified], [1, 1], JSON.stringify(first));

            await c().kill9(c().routerProcs[0]);
            await c().kill9(shardProc('high'));
            await c().kill9(shardProc('low'));
            await c().restart(shardProc('low'));
            const low = (await c().shardByName(owners.low)).db('admin');
            const status = async () => (await low.command({ serverStatus: 1 })).shardRetryableWrites;
            assert.equal((await status()).movingStatements, 1, JSON.stringify(await status()));
            const retry = settle(clients[1].db(dbName).command(cmd, { session: other }));
            await waitFor('the retry waits for the move', async () => (await status()).retriesWaitingForMove >= 1, { timeoutMs: 30000, intervalMs: 20 });
            await c().restart(shardProc('high'));
            const second = await retry;
            assert.equal(second.error, undefined, `${second.error}`);
            assert.deepEqual([second.value.n, second.value.nModified], [1, 1], JSON.stringify(second.value));
            assert.deepEqual(await status(), { sessions: (await status()).sessions, movingStatements: 0, retriesWaitingForMove: 0 });
            await c().restart(c().routerProcs[0]);
            const moved = await (await c().router(1)).db(dbName).collection('moves').find({}).toArray();
            assert.deepEqual(moved, [{ _id: 'm1', k: 101 }]);
            await c().checkConsistency(movesNs, 1);
            await session.endSession();
            await other.endSession();
            await expectBalances();
        });
    },
    { shards: 2, routers: 2 },
);
