// Multi-document transactions through routers (issue 14), with the Node driver against
// `tessera up --shards 2 --routers 2`: eight accounts on two shards, money moved with
// withTransaction. What must hold: nothing of a transaction is visible before its commit and all
// of it after (through the other router and on the shards directly); a transaction reads one
// snapshot of the whole cluster; conflicts are WriteConflict with TransientTransactionError; a
// failed statement aborts the transaction everywhere; a reader that arrives while a two-phase
// commit is between prepare and decision waits rather than see half; under concurrent
// transfers through both routers the total of all accounts never changes for a snapshot reader;
// a migration neither waits for a client's open transaction nor lets it commit under the old
// placement; and Mongoose's connection.transaction works through a router.
import assert from 'node:assert/strict';
import { Long, MongoServerError, Timestamp } from 'mongodb';
import mongoose from 'mongoose';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster, transferInTransaction, waitFor } from './cluster_harness.mjs';

const kAccounts = 8;
const kInitial = 1000;
const kTotal = kAccounts * kInitial;

async function rejects(promise) {
    return promise.then(
        (v) => assert.fail(`expected an error, got ${JSON.stringify(v)}`),
        (e) => e,
    );
}

describeWithCluster(
    'transactions through routers (2 shards, 2 routers)',
    (ctx) => {
        const test = ctx.test;
        const dbName = uniqueDbName('txn');
        const ns = `${dbName}.accounts`;
        const router = (i = 0) => ctx.cluster.router(i);
        const admin = async (cmd, i = 0) => (await router(i)).db('admin').command(cmd);
        const accounts = async (i = 0) => (await router(i)).db(dbName).collection('accounts');
        const owners = {}; // 'low' (_id < 4) | 'high' -> shard name
        const onShard = async (which) => (await ctx.cluster.shardByName(owners[which])).db(dbName).collection('accounts');
        const balances = async (c, options = {}) =>
            (await c.find({}, options).sort({ _id: 1 }).toArray()).map((d) => d.balance);
        // Sets failpoint `name` to `mode` on both shards.
        const onBothShards = async (name, mode) => {
            for (const which of ['low', 'high']) {
                await (await ctx.cluster.shardByName(owners[which])).db('admin').command({ configureFailPoint: name, mode });
            }
        };

        // Moves `amount` from account `from` to account `to` in a transaction on router `i`.
        async function transfer(i, from, to, amount, options = {}) {
            const client = await router(i);
            await transferInTransaction(client, client.db(dbName).collection('accounts'), from, to, amount, options);
        }

        test('setup: accounts 0-3 on one shard, 4-7 on the other', async () => {
            await admin({ enableSharding: dbName });
            await admin({ shardCollection: ns, key: { _id: 1 } });
            const docs = [];
            for (let i = 0; i < kAccounts; i++) docs.push({ _id: i, balance: kInitial });
            await (await accounts()).insertMany(docs);
            await admin({ split: ns, middle: { _id: 4 } });
            const primary = (await (await router()).db('config').collection('databases').findOne({ _id: dbName })).primary;
            const shards = (await (await router()).db('config').collection('shards').find().toArray()).map((s) => s._id);
            const other = shards.find((s) => s !== primary);
            await admin({ moveChunk: ns, find: { _id: 4 }, to: other });
            owners.low = primary;
            owners.high = other;
            const { chunks } = await ctx.cluster.checkConsistency(ns, kAccounts);
            assert.equal(new Set(chunks.map((ch) => ch.shard)).size, 2);
        });

        test('a transfer between shards is invisible until the commit, then visible everywhere at once', async () => {
            const client = await router(0);
            const c = client.db(dbName).collection('accounts');
            const other = await accounts(1);
            const session = client.startSession();
            try {
                session.startTransaction();
                await c.updateOne({ _id: 1 }, { $inc: { balance: -100 } }, { session });
                await c.updateOne({ _id: 5 }, { $inc: { balance: 100 } }, { session });
                // The transaction sees its own writes; nobody else does.
                assert.deepEqual((await c.find({ _id: { $in: [1, 5] } }, { session }).sort({ _id: 1 }).toArray()).map((d) => d.balance), [900, 1100]);
                assert.deepEqual(await balances(other), Array(kAccounts).fill(kInitial));
                assert.equal((await (await onShard('low')).findOne({ _id: 1 })).balance, kInitial);
                assert.equal((await (await onShard('high')).findOne({ _id: 5 })).balance, kInitial);
                await session.commitTransaction();
            } finally {
                await session.endSession();
            }
            const after = await balances(other);
            assert.equal(after[1], 900);
            assert.equal(after[5], 1100);
            assert.equal((await (await onShard('low')).findOne({ _id: 1 })).balance, 900);
            assert.equal((await (await onShard('high')).findOne({ _id: 5 })).balance, 1100);
            // Give it back, through the other router.
            await transfer(1, 5, 1, 100);
            assert.deepEqual(await balances(await accounts(0)), Array(kAccounts).fill(kInitial));
        });

        test('abortTransaction undoes every participant; a failed statement aborts the whole transaction', async () => {
            const client = await router(0);
            const c = client.db(dbName).collection('accounts');
            const session = client.startSession();
            try {
                session.startTransaction();
                await c.updateOne({ _id: 2 }, { $inc: { balance: -5 } }, { session });
                await c.insertOne({ _id: 100, balance: 5 }, { session }); // on the high shard
                await session.abortTransaction();
                assert.deepEqual(await balances(await accounts(1)), Array(kAccounts).fill(kInitial));

                session.startTransaction();
                await c.updateOne({ _id: 2 }, { $inc: { balance: -5 } }, { session });
                await c.updateOne({ _id: 6 }, { $inc: { balance: 5 } }, { session });
                const dup = await rejects(c.insertOne({ _id: 6, balance: 0 }, { session }));
                assert.equal(dup.code, 11000, `${dup}`);
                const commit = await rejects(session.commitTransaction());
                assert.equal(commit.code, 251, `${commit}`); // NoSuchTransaction
                assert.ok(commit.hasErrorLabel('TransientTransactionError'), `${JSON.stringify(commit.errorLabels)}`);
            } finally {
                await session.endSession();
            }
            assert.deepEqual(await balances(await accounts(1)), Array(kAccounts).fill(kInitial));
            await ctx.cluster.checkConsistency(ns, kAccounts);
        });

        test('a transaction reads one snapshot of the cluster, whatever commits meanwhile', async () => {
            const client = await router(0);
            const c = client.db(dbName).collection('accounts');
            const session = client.startSession();
            try {
                session.startTransaction({ readConcern: { level: 'snapshot' } });
                const first = await c.findOne({ _id: 3 }, { session }); // the low shard only
                assert.equal(first.balance, kInitial);
                await transfer(1, 3, 7, 250); // commits on both shards through the other router
                // The high shard joins the transaction now, at the transaction's read timestamp.
                const second = await c.findOne({ _id: 7 }, { session });
                assert.equal(second.balance, kInitial, 'the snapshot must not see the later transfer');
                assert.equal((await c.findOne({ _id: 3 }, { session })).balance, kInitial);
                await session.commitTransaction();
            } finally {
                await session.endSession();
            }
            const now = await balances(await accounts(0));
            assert.equal(now[3], kInitial - 250);
            assert.equal(now[7], kInitial + 250);
            await transfer(0, 7, 3, 250);
        });

        test('a second writer of a document gets WriteConflict with TransientTransactionError', async () => {
            const client = await router(0);
            const otherClient = await router(1);
            const a = client.startSession();
            const b = otherClient.startSession();
            try {
                a.startTransaction();
                b.startTransaction();
                await client.db(dbName).collection('accounts').updateOne({ _id: 0 }, { $inc: { balance: 1 } }, { session: a });
                const e = await rejects(
                    otherClient.db(dbName).collection('accounts').updateOne({ _id: 0 }, { $inc: { balance: 1 } }, { session: b }),
                );
                assert.ok(e instanceof MongoServerError, `${e}`);
                assert.equal(e.code, 112, `${e}`);
                assert.ok(e.hasErrorLabel('TransientTransactionError'), `${JSON.stringify(e.errorLabels)}`);
                await b.abortTransaction().catch(() => {});
                await a.abortTransaction();
            } finally {
                await a.endSession();
                await b.endSession();
            }
            assert.deepEqual(await balances(await accounts()), Array(kAccounts).fill(kInitial));
        });

        test('between prepare and decision, readers on every path wait instead of seeing half, also once the commit is acknowledged', async () => {
            // The coordinator is the first participant: hold it on both shards.
            const failpoint = (mode) => onBothShards('hangBeforeWritingDecision', mode);
            await failpoint('alwaysOn');
            let committed = false;
            const commit = transfer(0, 2, 6, 300).then(() => {
                committed = true;
            });
            try {
                // Once both shards prepared, a read on a shard directly waits for the decision (here
                // until its maxTimeMS), whichever shard it is.
                for (const which of ['low', 'high']) {
                    const shard = await onShard(which);
                    await waitFor(`a read on the ${which} shard waits for the prepared transaction`, async () => {
                        const e = await shard.find({}).maxTimeMS(300).toArray().then(() => null, (err) => err);
                        return e !== null && e.code === 50;
                    }, { timeoutMs: 20000, intervalMs: 50 });
                }
                // Through the other router: a plain read and a snapshot transaction wait too.
                const other = await accounts(1);
                const plain = await other.find({}).maxTimeMS(300).toArray().then(() => null, (err) => err);
                assert.ok(plain && plain.code === 50, `a plain read returned during the commit: ${plain}`);
                // The commit is staged: the client hears it once every part is prepared, before
                // the coordinator writes the decision — and no reader has seen either half.
                await waitFor('the staged commit is acknowledged', async () => committed, { timeoutMs: 20000, intervalMs: 50 });
                const still = await other.find({}).maxTimeMS(300).toArray().then(() => null, (err) => err);
                assert.ok(still && still.code === 50, `a read returned after the acknowledgement, before the decision: ${still}`);
            } finally {
                await failpoint('off');
            }
            await commit;
            const after = await balances(await accounts(1));
            assert.equal(after[2], kInitial - 300);
            assert.equal(after[6], kInitial + 300);
            await transfer(1, 6, 2, 300);
        });

        test('a commit is acknowledged once decided; until it is delivered, readers of the other participant and the session\'s next transaction wait', async () => {
            const failpoint = (mode) => onBothShards('hangBeforeDeliveringDecision', mode);
            const client = await router(0);
            const c = client.db(dbName).collection('accounts');
            const session = client.startSession();
            const lowBefore = (await (await onShard('low')).findOne({ _id: 1 })).balance;
            await failpoint('alwaysOn');
            let next;
            let nextDone = false;
            try {
                session.startTransaction();
                await c.updateOne({ _id: 1 }, { $inc: { balance: -40 } }, { session });
                await c.updateOne({ _id: 5 }, { $inc: { balance: 40 } }, { session });
                await session.commitTransaction(); // returns with the decision undelivered
                // The coordinator (the first statement's shard) committed its own part with the
                // decision; the other shard still holds the transaction prepared: a reader there
                // waits rather than see the acknowledged commit missing.
                const low = await (await onShard('low')).findOne({ _id: 1 }, { maxTimeMS: 2000 });
                assert.equal(low.balance, lowBefore - 40, 'the coordinator\'s own part is committed with the decision');
                const e = await (await onShard('high')).find({}).maxTimeMS(300).toArray().then(() => null, (err) => err);
                assert.ok(e && e.code === 50, `a read on the other participant returned before the delivery: ${e}`);
                // The session's next transaction begins beside the prepared one there, and its
                // read of the held document waits for the delivery (neither failing with
                // PreparedTransactionInProgress nor WriteConflict).
                session.startTransaction();
                next = c.updateOne({ _id: 5 }, { $inc: { balance: -40 } }, { session })
                    .then(() => c.updateOne({ _id: 1 }, { $inc: { balance: 40 } }, { session }))
                    .then(() => session.commitTransaction())
                    .finally(() => { nextDone = true; });
                await new Promise((r) => setTimeout(r, 300));
                assert.equal(nextDone, false, 'the next transaction did not wait for the delivery');
            } finally {
                await failpoint('off');
            }
            await next;
            await session.endSession();
            assert.deepEqual(await balances(await accounts(1)), Array(kAccounts).fill(kInitial));
        });

        test('the session\'s next transaction on other documents commits while the previous one is still prepared on a participant', async () => {
            const failpoint = (mode) => onBothShards('hangBeforeDeliveringDecision', mode);
            const client = await router(0);
            const c = client.db(dbName).collection('accounts');
            const session = client.startSession();
            const preparedOn = async (which) => (await (await ctx.cluster.shardByName(owners[which])).db('admin')
                .command({ currentOp: 1, 'lsid.id': session.id.id })).inprog
                .filter((op) => op.desc === 'prepared transaction')
                .map((op) => Number(op.transaction.parameters.txnNumber));
            await failpoint('alwaysOn');
            try {
                session.startTransaction();
                await c.updateOne({ _id: 1 }, { $inc: { balance: -40 } }, { session });
                await c.updateOne({ _id: 5 }, { $inc: { balance: 40 } }, { session });
                await session.commitTransaction(); // the high shard's part stays prepared
                const [first] = await preparedOn('high');
                assert.ok(first > 0, 'the first transaction is prepared on the other participant');
                // Its first statement reaches the high shard, which still holds the previous
                // transaction prepared: it begins beside it instead of waiting for its decision
                // (which the failpoint holds), and the whole transaction commits.
                session.startTransaction();
                await c.updateOne({ _id: 6 }, { $inc: { balance: -40 } }, { session });
                await c.updateOne({ _id: 2 }, { $inc: { balance: 40 } }, { session });
                await session.commitTransaction();
                // Both are known prepared by their own numbers: the first on the high shard (set
                // aside), the second on the low one (its coordinator, the high shard, holds its
                // delivery). The client heard the second commit once both parts were prepared;
                // the coordinator decides and commits its own part right after, in the background.
                const settled = async () =>
                    JSON.stringify([await preparedOn('high'), await preparedOn('low')]) ===
                    JSON.stringify([[first], [first + 1]]);
                await waitFor('the second transaction decided, its delivery held', settled, { timeoutMs: 20000, intervalMs: 50 });
                assert.deepEqual(await preparedOn('high'), [first]);
                assert.deepEqual(await preparedOn('low'), [first + 1]);
            } finally {
                await failpoint('off');
            }
            // Each decision reaches its part.
            const expected = Array(kAccounts).fill(kInitial);
            expected[1] -= 40; expected[5] += 40; expected[6] -= 40; expected[2] += 40;
            await waitFor('both transactions delivered', async () =>
                JSON.stringify(await balances(await accounts(1))) === JSON.stringify(expected), { timeoutMs: 20000, intervalMs: 50 });
            assert.deepEqual(await preparedOn('high'), []);
            assert.deepEqual(await preparedOn('low'), []);
            await session.endSession();
            await transfer(0, 5, 1, 40);
            await transfer(0, 2, 6, 40);
            assert.deepEqual(await balances(await accounts(1)), Array(kAccounts).fill(kInitial));
        });

        test('currentOp shows an open transaction on each participant, then the prepared part and its coordinator until the delivery', async () => {
            const client = await router(0);
            const c = client.db(dbName).collection('accounts');
            const session = client.startSession();
            const ofSession = (extra = {}) => admin({ currentOp: 1, 'lsid.id': session.id.id, ...extra });
            const failpoint = (mode) => onBothShards('hangBeforeDeliveringDecision', mode);
            try {
                session.startTransaction();
                await c.updateOne({ _id: 2 }, { $inc: { balance: -7 } }, { session });
                await c.updateOne({ _id: 6 }, { $inc: { balance: 7 } }, { session });
                // Between statements: one idle transaction on each shard, with the router's number.
                const open = (await ofSession()).inprog;
                assert.deepEqual(open.map((op) => op.shard).sort(), [owners.low, owners.high].sort());
                for (const op of open) {
                    assert.equal(op.type, 'idleSession', JSON.stringify(op));
                    assert.equal(op.desc, 'inactive transaction');
                    assert.equal(Number(op.transaction.parameters.txnNumber), Number(session.serverSession.txnNumber), JSON.stringify(op));
                    assert.equal(op.transaction.parameters.autocommit, false);
                    assert.ok(op.transaction.readTimestamp instanceof Timestamp);
                    assert.ok(op.transaction.expiryTime instanceof Date);
                }
                assert.deepEqual((await ofSession({ idleSessions: false })).inprog, []);
                // mongosh's db.currentOp() (an aggregate with $currentOp) shows the same.
                const viaStage = await client.db('admin').aggregate([
                    { $currentOp: { allUsers: true, idleSessions: true } },
                    { $match: { 'lsid.id': session.id.id } },
                ]).toArray();
                assert.equal(viaStage.length, 2);
                assert.equal((await client.db('admin').aggregate([
                    { $currentOp: { idleSessions: false } },
                    { $match: { 'lsid.id': session.id.id } },
                ]).toArray()).length, 0);

                // Acknowledged, its decision not yet delivered: the other participant's part is
                // prepared and names its coordinator, which reports the coordination. (The
                // coordinator decides, and commits its own part, once the other part told it
                // its prepare is durable: just after the acknowledgement.)
                await failpoint('alwaysOn');
                await session.commitTransaction();
                let prepared;
                await waitFor('the coordinator decided', async () => {
                    prepared = (await ofSession()).inprog;
                    return prepared.length === 1;
                }, { timeoutMs: 10000, intervalMs: 20 });
                assert.equal(prepared[0].shard, owners.high);
                assert.equal(prepared[0].desc, 'prepared transaction');
                assert.equal(prepared[0].transaction.coordinator, owners.low);
                assert.ok(prepared[0].transaction.prepareTimestamp instanceof Timestamp);
                // On the shard itself, the command and the stage agree.
                const direct = await (await ctx.cluster.shardByName(owners.high)).db('admin')
                    .aggregate([{ $currentOp: {} }, { $match: { 'lsid.id': session.id.id } }]).toArray();
                assert.equal(direct.length, 1, JSON.stringify(direct));
                assert.equal(direct[0].desc, 'prepared transaction');
                const coordination = (await admin({
                    currentOp: 1, desc: 'transaction coordinator', 'twoPhaseCommitCoordinator.lsid.id': session.id.id,
                })).inprog;
                assert.equal(coordination.length, 1, JSON.stringify(coordination));
                const tpc = coordination[0].twoPhaseCommitCoordinator;
                assert.equal(coordination[0].shard, owners.low);
                assert.equal(tpc.state, 'waitingForDecisionAcks');
                assert.equal(tpc.numParticipants, 2);
                assert.deepEqual([...tpc.participants].sort(), [owners.low, owners.high].sort());
                assert.equal(tpc.decision.decision, 'commit');
                assert.ok(tpc.decision.commitTimestamp.greaterThan(prepared[0].transaction.readTimestamp));
            } finally {
                await failpoint('off');
            }
            // Delivered: nothing of the transaction is in progress any more.
            await waitFor('the delivery', async () => (await ofSession()).inprog.length === 0 &&
                (await admin({ currentOp: 1, 'twoPhaseCommitCoordinator.lsid.id': session.id.id })).inprog.length === 0);
            await session.endSession();
            await transfer(0, 6, 2, 7);
            assert.deepEqual(await balances(await accounts(1)), Array(kAccounts).fill(kInitial));
        });

        test('the classic coordination (a retried commit\'s path) commits concurrent transfers all-or-nothing too', async () => {
            // The router's failpoint makes every first commit attempt the classic one: the
            // coordinator prepares the others, decides, then answers (src/txn/README.md).
            const admin0 = (await router(0)).db('admin');
            await admin0.command({ configureFailPoint: 'forceClassicTwoPhaseCommit', mode: 'alwaysOn' });
            try {
                const before = await balances(await accounts(1));
                await Promise.all([0, 1, 2, 3].map(async (w) => {
                    for (let n = 0; n < 5; n++) await transfer(0, w, 4 + ((w + n) % 4), 1 + w);
                }));
                const after = await balances(await accounts(1));
                assert.equal(after.reduce((x, y) => x + y, 0), before.reduce((x, y) => x + y, 0));
                for (let w = 0; w < 4; w++) assert.equal(after[w], before[w] - 5 * (1 + w));
                // Every one of the 20 commits took the classic path (the reply counts its uses).
                const { count } = await admin0.command({ configureFailPoint: 'forceClassicTwoPhaseCommit', mode: 'off' });
                assert.ok(count >= 20, `the classic coordination ran ${count} times`);
                // Put the money back (staged again).
                for (let w = 0; w < 4; w++) {
                    for (let n = 0; n < 5; n++) await transfer(1, 4 + ((w + n) % 4), w, 1 + w);
                }
                assert.deepEqual(await balances(await accounts(0)), before);
            } finally {
                await admin0.command({ configureFailPoint: 'forceClassicTwoPhaseCommit', mode: 'off' });
            }
        });

        test('a participant that cannot prepare aborts a staged commit everywhere; withTransaction runs it again', async () => {
            // The high shard refuses its next prepareTransaction: the router sends the coordinator
            // an abort decision and waits for it; the client hears NoSuchTransaction
            // (TransientTransactionError) and withTransaction runs the transfer again, once.
            const high = (await ctx.cluster.shardByName(owners.high)).db('admin');
            const before = await balances(await accounts(1));
            await high.command({
                configureFailPoint: 'failCommand',
                mode: { times: 1 },
                data: { failCommands: ['prepareTransaction'], errorCode: 251 },
            });
            let attempts = 0;
            const client = await router(0);
            const c = client.db(dbName).collection('accounts');
            const session = client.startSession();
            try {
                await session.withTransaction(async () => {
                    attempts++;
                    await c.updateOne({ _id: 3 }, { $inc: { balance: -7 } }, { session });
                    await c.updateOne({ _id: 7 }, { $inc: { balance: 7 } }, { session });
                });
            } finally {
                await session.endSession();
                await high.command({ configureFailPoint: 'failCommand', mode: 'off' });
            }
            assert.equal(attempts, 2, 'the refused commit was not run again');
            const expected = [...before];
            expected[3] -= 7;
            expected[7] += 7;
            // Applied once, and nothing is left prepared on either shard.
            for (const which of ['low', 'high']) {
                await (await onShard(which)).find({}).maxTimeMS(2000).toArray();
            }
            assert.deepEqual(await balances(await accounts(1)), expected);
            await transfer(1, 7, 3, 7);
        });

        test('a shard refuses a staged commit\'s command whose arguments it would not all carry out (72)', async () => {
            const shard = await ctx.cluster.shardByName(owners.low);
            const session = shard.startSession();
            const two = [{ shard: owners.low, host: 'h0:1' }, { shard: owners.high, host: 'h1:1' }];
            const decision = { commit: true, commitTimestamp: new Timestamp({ t: 1, i: 1 }), writers: [] };
            try {
                for (const extra of [
                    { participants: two, stage: true, decision },  // both at once: one would be ignored
                    { participants: [two[0]], stage: true },        // nothing to stage around
                    { participants: two, decision },                // a decision names no participants
                ]) {
                    const e = await shard.db('admin').command({ _shardsvrCoordinateCommitTransaction: 1, txnNum: 1, ...extra }, { session })
                        .then(() => null, (err) => err);
                    assert.ok(e instanceof MongoServerError, `accepted ${JSON.stringify(Object.keys(extra))}`);
                    assert.equal(e.code, 72, `${e}`);
                }
            } finally {
                await session.endSession();
            }
        });

        test('bank: concurrent transfers through two routers; every snapshot reader sees the same total', async () => {
            const deadline = Date.now() + 60000;
            let transfers = 0;
            let retried = 0;
            const workers = [];
            for (let w = 0; w < 4; w++) {
                workers.push((async () => {
                    for (let n = 0; n < 25 && Date.now() < deadline; n++) {
                        const from = (w * 7 + n * 3) % kAccounts;
                        const to = (from + 1 + ((n + w) % (kAccounts - 1))) % kAccounts;
                        await transfer(w % 2, from, to, 1 + ((n * 13 + w) % 50));
                        transfers++;
                    }
                })());
            }
            let done = false;
            const totals = [];
            const readers = [];
            for (let r = 0; r < 2; r++) {
                readers.push((async () => {
                    const client = await router(r);
                    const c = client.db(dbName).collection('accounts');
                    while (!done && Date.now() < deadline) {
                        const session = client.startSession();
                        try {
                            session.startTransaction({ readConcern: { level: 'snapshot' } });
                            const docs = await c.find({}, { session }).toArray();
                            await session.commitTransaction();
                            totals.push(docs.reduce((s, d) => s + d.balance, 0));
                            assert.equal(docs.length, kAccounts);
                        } catch (e) {
                            if (!e.hasErrorLabel?.('TransientTransactionError')) throw e;
                            retried++;
                            await session.abortTransaction().catch(() => {});
                        } finally {
                            await session.endSession();
                        }
                    }
                })());
            }
            // Snapshot reads outside any transaction (a driver's snapshot session): the router
            // reads every shard at one cluster time, so the total holds for them too.
            const snapshotTotals = [];
            for (let r = 0; r < 2; r++) {
                readers.push((async () => {
                    const client = await router(r);
                    const c = client.db(dbName).collection('accounts');
                    while (!done && Date.now() < deadline) {
                        const session = client.startSession({ snapshot: true });
                        try {
                            const docs = await c.find({}, { session, batchSize: 3 }).toArray();
                            assert.equal(docs.length, kAccounts);
                            snapshotTotals.push(docs.reduce((s, d) => s + d.balance, 0));
                        } finally {
                            await session.endSession();
                        }
                    }
                })());
            }
            await Promise.all(workers);
            done = true;
            await Promise.all(readers);
            assert.equal(transfers, 100);
            assert.ok(totals.length > 0, 'no snapshot read completed');
            assert.ok(snapshotTotals.length > 0, 'no snapshot-session read completed');
            for (const t of snapshotTotals) assert.equal(t, kTotal, `a snapshot-session read saw a total of ${t}`);
            for (const t of totals) assert.equal(t, kTotal, `a snapshot read saw a total of ${t}`);
            const final = await balances(await accounts(0));
            assert.equal(final.reduce((s, b) => s + b, 0), kTotal);
            await ctx.cluster.checkConsistency(ns, kAccounts);
            console.log(`bank: ${transfers} transfers, ${totals.length} snapshot transactions (${retried} retried) and ${snapshotTotals.length} snapshot-session reads, total ${kTotal} throughout`);
        });

        test('a shard reached directly runs its own transactions and causally consistent sessions', async () => {
            const shard = await ctx.cluster.shardByName(owners.low);
            const c = shard.db(dbName).collection('direct');
            const session = shard.startSession();
            try {
                session.startTransaction();
                await c.insertOne({ _id: 1 }, { session });
                await c.insertOne({ _id: 2 }, { session });
                assert.equal(await c.countDocuments(), 0);
                await session.commitTransaction();
                assert.equal(await c.countDocuments(), 2);
                // The session now sends the shard's operationTime back as afterClusterTime.
                await c.insertOne({ _id: 3 }, { session });
                assert.ok(session.operationTime, 'the shard replies carry operationTime');
                assert.deepEqual(await c.findOne({ _id: 3 }, { session }), { _id: 3 });
            } finally {
                await session.endSession();
            }
            // prepareTransaction is a shard's command: a router does not run it.
            const e = await rejects((await router()).db('admin').command({ prepareTransaction: 1 }));
            assert.ok(e.code === 59 || e.code === 72, `${e}`);
        });

        test('routers gossip cluster time: a causally consistent session reads its own writes through the other router', async () => {
            const r0 = await router(0);
            const r1 = await router(1);
            const session = r0.startSession({ causalConsistency: true });
            try {
                await r0.db(dbName).collection('causal').insertOne({ _id: 1, v: 'written' }, { session });
                assert.ok(session.operationTime, 'the router reply carries operationTime');
                assert.ok(session.clusterTime?.clusterTime, 'the router reply carries $clusterTime');
                // The other router takes the session's time as afterClusterTime and passes it on.
                const other = r1.startSession({ causalConsistency: true });
                try {
                    other.advanceClusterTime(session.clusterTime);
                    other.advanceOperationTime(session.operationTime);
                    const seen = await r1.db(dbName).collection('causal').findOne({ _id: 1 }, { session: other });
                    assert.deepEqual(seen, { _id: 1, v: 'written' });
                    const raw = await r1.db(dbName).command({
                        find: 'causal',
                        filter: { _id: 1 },
                        readConcern: { afterClusterTime: session.operationTime },
                    });
                    assert.equal(raw.cursor.firstBatch.length, 1);
                    assert.ok(raw.operationTime >= session.operationTime, 'a router time never goes back');
                } finally {
                    await other.endSession();
                }
            } finally {
                await session.endSession();
            }
        });

        test('a transaction through the other router reads what was acknowledged through the first on its first shard, without the writer\'s cluster time', async () => {
            // The other router's clock has not seen these inserts (no session ties the clients):
            // its transaction's first shard picks the snapshot, at or after everything it
            // committed. Twenty rounds: a clock behind by part of a second shows in a few.
            const writer = (await router(0)).db(dbName).collection('fresh');
            const reader = await router(1);
            for (let k = 0; k < 20; k++) {
                await writer.insertOne({ _id: k, round: k });
                const session = reader.startSession();
                try {
                    session.startTransaction();
                    const seen = await reader.db(dbName).collection('fresh').findOne({ _id: k }, { session });
                    assert.deepEqual(seen, { _id: k, round: k }, `round ${k}: the transaction did not see the acknowledged insert`);
                    const counted = await reader.db(dbName).collection('fresh').countDocuments({}, { session });
                    assert.equal(counted, k + 1);
                    await session.commitTransaction();
                } finally {
                    await session.endSession();
                }
            }
        });

        test('a snapshot read through the other router sees what the first acknowledged before it began', async () => {
            // readConcern snapshot outside a transaction: the other router picks the cluster time
            // from its own clock, which never heard of these inserts. Its clock and the shard's
            // tick with the wall clock's microsecond, so a read that starts after the insert was
            // acknowledged reads after it.
            const writer = (await router(0)).db(dbName).collection('snapfresh');
            const reader = (await router(1)).db(dbName);
            for (let k = 0; k < 100; k++) {
                await writer.insertOne({ _id: k });
                const found = await reader.command({ find: 'snapfresh', filter: { _id: k }, readConcern: { level: 'snapshot' } });
                assert.equal(found.cursor.firstBatch.length, 1, `round ${k}: the snapshot find missed the acknowledged insert`);
            }
        });

        test('a migration does not wait for a transaction that wrote its range, and that transaction cannot commit under the old placement', async () => {
            // A collection of its own, so that the accounts keep their shards.
            const movingNs = `${dbName}.moving`;
            await admin({ shardCollection: movingNs, key: { _id: 1 } });
            const client = await router(0);
            const c = client.db(dbName).collection('moving');
            await c.insertMany([{ _id: 1, v: 0 }, { _id: 2, v: 0 }]);
            const placement = async () => (await ctx.cluster.placement(movingNs)).chunks.map((ch) => ch.shard);
            const [from] = await placement();
            const to = from === owners.low ? owners.high : owners.low;
            for (const write of ['update', 'insert']) {
                const before = await c.find().sort({ _id: 1 }).toArray();
                const session = client.startSession();
                session.startTransaction();
                if (write === 'update') await c.updateOne({ _id: 1 }, { $inc: { v: 1 } }, { session });
                else await c.insertOne({ _id: 3, v: 1 }, { session });
                const source = (await placement())[0];
                const target = source === from ? to : from;
                // The migration's critical section dooms the open transaction instead of waiting
                // for it (or letting its commit write a range this shard no longer owns).
                await admin({ moveChunk: movingNs, find: { _id: 1 }, to: target });
                assert.deepEqual(await placement(), [target]);
                const e = await rejects(session.commitTransaction());
                assert.equal(e.code, 251, `${e}`);
                assert.ok(e.hasErrorLabel('TransientTransactionError'), `${e}`);
                await session.endSession();
                // Nothing of it anywhere: not on the new owner, not as an orphan on the old one.
                assert.deepEqual(await c.find().sort({ _id: 1 }).toArray(), before);
                const old = (await ctx.cluster.shardByName(source)).db(dbName).collection('moving');
                assert.equal(await old.countDocuments({ v: 1 }), 0, `${write}: nothing of it on the old owner`);
                // Run again, under the new placement, it commits where the documents are.
                const retry = client.startSession();
                try {
                    await retry.withTransaction(async () => {
                        if (write === 'update') await c.updateOne({ _id: 1 }, { $inc: { v: 1 } }, { session: retry });
                        else await c.insertOne({ _id: 3, v: 1 }, { session: retry });
                    });
                } finally {
                    await retry.endSession();
                }
                const expected = write === 'update' ? [{ _id: 1, v: 1 }, { _id: 2, v: 0 }] : [...before, { _id: 3, v: 1 }];
                assert.deepEqual(await c.find().sort({ _id: 1 }).toArray(), expected);
                await ctx.cluster.checkConsistency(movingNs, expected.length);
            }
        });

        test('a migration waits for a prepared transaction that wrote its range, then moves its commit', async () => {
            const movingNs = `${dbName}.moving`;
            const client = await router(0);
            const c = client.db(dbName).collection('moving');
            const movingShard = (await ctx.cluster.placement(movingNs)).chunks[0].shard;
            const target = movingShard === owners.low ? owners.high : owners.low;
            const account = movingShard === owners.low ? 5 : 1; // on the other shard: two participants
            const failpoint = (mode) => onBothShards('hangBeforeDeliveringDecision', mode);
            const before = await c.findOne({ _id: 2 });
            const session = client.startSession();
            let move;
            let moved = false;
            await failpoint('alwaysOn');
            try {
                session.startTransaction();
                // The account first: its shard coordinates and commits its own part with the
                // decision; the moving range's shard holds its part prepared until the delivery.
                await (await accounts(0)).updateOne({ _id: account }, { $inc: { balance: 0 } }, { session });
                await c.updateOne({ _id: 2 }, { $inc: { v: 7 } }, { session });
                await session.commitTransaction(); // decided, prepared on the donor until delivered
                move = admin({ moveChunk: movingNs, find: { _id: 2 }, to: target }).finally(() => { moved = true; });
                await new Promise((r) => setTimeout(r, 300));
                assert.equal(moved, false, 'the migration did not wait for the prepared transaction');
            } finally {
                await failpoint('off');
            }
            await move;
            await session.endSession();
            assert.equal((await ctx.cluster.placement(movingNs)).chunks[0].shard, target);
            assert.deepEqual(await c.findOne({ _id: 2 }), { ...before, v: before.v + 7 });
            const owner = (await ctx.cluster.shardByName(target)).db(dbName).collection('moving');
            assert.deepEqual(await owner.findOne({ _id: 2 }), { ...before, v: before.v + 7 });
        });

        test('after a migration through one router, a transaction through the other reads the moved document and commits', async () => {
            const movingNs = `${dbName}.moving`;
            const r1 = await router(1);
            const session = r1.startSession();
            try {
                // The session's previous transaction had two participants.
                session.startTransaction();
                await r1.db(dbName).collection('accounts').updateOne({ _id: 1 }, { $inc: { balance: 0 } }, { session });
                await r1.db(dbName).collection('accounts').updateOne({ _id: 5 }, { $inc: { balance: 0 } }, { session });
                await session.commitTransaction();
                for (let i = 0; i < 2; i++) {
                    const before = await (await router(0)).db(dbName).collection('moving').findOne({ _id: 2 });
                    const from = (await ctx.cluster.placement(movingNs)).chunks[0].shard;
                    await admin({ moveChunk: movingNs, find: { _id: 2 }, to: from === owners.low ? owners.high : owners.low });
                    // Router 1 is stale (its first request goes to the donor) and its clock has not
                    // seen the recipient's copy: the statement is sent again at a later time, to the
                    // new owner, and the stale shard is no participant of the commit.
                    session.startTransaction();
                    const doc = await r1.db(dbName).collection('moving').findOne({ _id: 2 }, { session });
                    assert.deepEqual(doc, before);
                    await session.commitTransaction();
                }
            } finally {
                await session.endSession();
            }
        });

        // Participant recovery (src/txn/README.md): a participant whose decision has not come for
        // 10 s asks its coordinator. Both answers, through the shards' own commands.
        test('a prepared participant whose decision does not come asks its coordinator: commit', async () => {
            const client = await router(0);
            const c = client.db(dbName).collection('accounts');
            const low1 = (await (await onShard('low')).findOne({ _id: 1 })).balance;
            const high = await onShard('high');
            const before = (await high.findOne({ _id: 5 })).balance;
            // The coordinator (the first statement's shard) decides and commits its own part, but
            // never delivers: the other participant learns the commit by asking.
            const coordinator = (await ctx.cluster.shardByName(owners.low)).db('admin');
            await coordinator.command({ configureFailPoint: 'hangBeforeDeliveringDecision', mode: 'alwaysOn' });
            const session = client.startSession();
            try {
                session.startTransaction();
                await c.updateOne({ _id: 1 }, { $inc: { balance: -7 } }, { session });
                await c.updateOne({ _id: 5 }, { $inc: { balance: 7 } }, { session });
                await session.commitTransaction();
                const e = await high.findOne({ _id: 5 }, { maxTimeMS: 300 }).then(() => null, (err) => err);
                assert.ok(e && e.code === 50, `the other participant's part was not prepared: ${e}`);
                await waitFor('the participant asked its coordinator and committed', async () => {
                    const doc = await high.findOne({ _id: 5 }, { maxTimeMS: 1000 }).catch(() => null);
                    return doc && doc.balance === before + 7;
                }, { timeoutMs: 45000, intervalMs: 200 });
                assert.equal((await (await onShard('low')).findOne({ _id: 1 })).balance, low1 - 7);
            } finally {
                await coordinator.command({ configureFailPoint: 'hangBeforeDeliveringDecision', mode: 'off' });
                await session.endSession();
            }
            await transfer(0, 5, 1, 7);
            assert.equal((await balances(await accounts(1))).reduce((x, y) => x + y), kTotal);
        });

        test('a prepared participant whose coordinator knows nothing of it (its record lost) aborts', async () => {
            // What a power loss of the coordinator leaves: a participant prepared durably, its
            // coordinator without any record (its own part and record were not synced yet). Built
            // on the participant directly: a transaction prepared naming the other shard as its
            // coordinator, which never coordinated it.
            const shard = await ctx.cluster.shardByName(owners.high);
            const high = shard.db(dbName).collection('accounts');
            const before = (await high.findOne({ _id: 5 })).balance;
            const lowHost = (await (await router()).db('config').collection('shards').findOne({ _id: owners.low })).host;
            const session = shard.startSession();
            try {
                const txn = { txnNumber: Long.fromNumber(1), autocommit: false };
                await shard.db(dbName).command({ update: 'accounts', updates: [{ q: { _id: 5 }, u: { $inc: { balance: 1000 } } }], ...txn, startTransaction: true }, { session });
                const prepared = await shard.db('admin').command({ prepareTransaction: 1, ...txn, coordinator: { shard: owners.low, host: lowHost.replace(/^[^/]*\//, '') } }, { session });
                assert.ok(prepared.prepareTimestamp, JSON.stringify(prepared));
                const e = await high.findOne({ _id: 5 }, { maxTimeMS: 300 }).then(() => null, (err) => err);
                assert.ok(e && e.code === 50, `the part was not prepared: ${e}`);
                await waitFor('the participant asked its coordinator and aborted', async () => {
                    const doc = await high.findOne({ _id: 5 }, { maxTimeMS: 1000 }).catch(() => null);
                    return doc !== null;
                }, { timeoutMs: 45000, intervalMs: 200 });
                assert.equal((await high.findOne({ _id: 5 })).balance, before);
            } finally {
                await session.endSession();
            }
            assert.equal((await balances(await accounts(1))).reduce((x, y) => x + y), kTotal);
        });

        test('Mongoose: connection.transaction moves money between shards, and a failure inside it leaves nothing', async () => {
            const conn = await mongoose.createConnection(ctx.cluster.routerUri(0), { dbName }).asPromise();
            try {
                const schema = new mongoose.Schema({ _id: Number, balance: Number }, { versionKey: false });
                const Account = conn.model('Account', schema, 'accounts');
                const before = await balances(await accounts(1));
                // A document loaded, changed and saved (Mongoose's save(): an update by _id), and
                // an updateOne, on two shards, in one transaction (session.withTransaction).
                await conn.transaction(async (session) => {
                    const from = await Account.findById(2).session(session);
                    from.balance -= 25;
                    await from.save();
                    await Account.updateOne({ _id: 6 }, { $inc: { balance: 25 } }).session(session);
                });
                const after = await balances(await accounts(1));
                assert.equal(after[2], before[2] - 25);
                assert.equal(after[6], before[6] + 25);
                assert.equal(after.reduce((a, b) => a + b, 0), kTotal);
                // An error thrown inside aborts it on both shards.
                const e = await rejects(
                    conn.transaction(async (session) => {
                        await Account.updateOne({ _id: 2 }, { $inc: { balance: 25 } }).session(session);
                        await Account.updateOne({ _id: 6 }, { $inc: { balance: -25 } }).session(session);
                        throw new Error('the application changed its mind');
                    }),
                );
                assert.match(String(e), /changed its mind/);
                assert.deepEqual(await balances(await accounts(1)), after);
                // Moved back, so the accounts are as the other tests expect.
                await conn.transaction(async (session) => {
                    await Account.updateOne({ _id: 2 }, { $inc: { balance: 25 } }).session(session);
                    await Account.updateOne({ _id: 6 }, { $inc: { balance: -25 } }).session(session);
                });
                assert.deepEqual(await balances(await accounts(1)), before);
            } finally {
                await conn.close();
            }
        });

        test('a collection created in a transaction appears at its commit through both routers; a cross-shard write transaction may not create one', async () => {
            const client = await router(0);
            const db = client.db(dbName);
            const names = async (i) =>
                (await (await router(i)).db(dbName).listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
            // Earlier tests moved money between accounts (the total stays): compare with now.
            const before = await balances(await accounts(0));
            // One shard (the database's primary, which holds accounts 0-3): a plain commit.
            const session = client.startSession();
            try {
                session.startTransaction();
                await db.createCollection('ledger', { session });
                await db.collection('ledger').insertOne({ _id: 1, from: 1, to: 2, amount: 5 }, { session });
                await db.collection('receipts').insertOne({ _id: 1 }, { session }); // implicitly
                await db.collection('accounts').updateOne({ _id: 1 }, { $inc: { balance: -5 } }, { session });
                await db.collection('accounts').updateOne({ _id: 2 }, { $inc: { balance: 5 } }, { session });
                assert.equal(await db.collection('ledger').countDocuments({}, { session }), 1, 'in the transaction');
                for (const i of [0, 1]) {
                    const seen = await names(i);
                    assert.ok(!seen.includes('ledger') && !seen.includes('receipts'), `router ${i} saw ${seen}`);
                }
                await session.commitTransaction();
            } finally {
                await session.endSession();
            }
            for (const i of [0, 1]) {
                const seen = await names(i);
                assert.ok(seen.includes('ledger') && seen.includes('receipts'), `router ${i} saw ${seen}`);
                assert.equal(await (await router(i)).db(dbName).collection('ledger').countDocuments(), 1, `through router ${i}`);
            }
            assert.equal(await (await ctx.cluster.shardByName(owners.low)).db(dbName).collection('ledger').countDocuments(), 1, 'on the shard');

            // Two shards written, one of them creating a collection: refused when the creating
            // shard is asked to prepare, and nothing of it is applied anywhere.
            const s2 = client.startSession();
            try {
                s2.startTransaction();
                await db.collection('audit').insertOne({ _id: 1 }, { session: s2 }); // on the primary
                await db.collection('accounts').updateOne({ _id: 5 }, { $inc: { balance: 1 } }, { session: s2 });
                const err = await rejects(s2.commitTransaction());
                assert.equal(err.code, 263, err.message);
                assert.match(err.message, /more than one shard/);
            } finally {
                await s2.endSession();
            }
            assert.ok(!(await names(1)).includes('audit'));
            assert.equal((await (await accounts(1)).findOne({ _id: 5 })).balance, before[5]);
            assert.equal((await (await onShard('high')).findOne({ _id: 5 })).balance, before[5]);

            // The client's read concern decides, as MongoDB's: not local, no create.
            const s3 = client.startSession();
            try {
                s3.startTransaction({ readConcern: { level: 'snapshot' } });
                const err = await rejects(db.createCollection('snapshotted', { session: s3 }));
                assert.equal(err.code, 72);
                await s3.abortTransaction().catch(() => {});
            } finally {
                await s3.endSession();
            }
            assert.ok(!(await names(0)).includes('snapshotted'));
            // Put the transfer back for the tests that count the total.
            await transfer(0, 2, 1, 5);
            assert.deepEqual(await balances(await accounts(0)), before);
        });

        test('killAllSessions on a router aborts its transactions on every participant', async () => {
            const client = await router(0);
            const c = client.db(dbName).collection('accounts');
            const session = client.startSession();
            session.startTransaction();
            await c.updateOne({ _id: 0 }, { $inc: { balance: -5 } }, { session });
            await c.updateOne({ _id: 7 }, { $inc: { balance: 5 } }, { session });
            const before = await balances(await accounts(1));
            await client.db('admin').command({ killAllSessions: [] });
            const e = await rejects(session.commitTransaction());
            assert.equal(e.code, 251, `${e}`);
            await session.endSession();
            // Nothing of it is visible, and its documents are free for other writers at once.
            assert.deepEqual(await balances(await accounts(1)), before);
            await (await accounts(1)).updateOne({ _id: 7 }, { $inc: { balance: 0 } }, { maxTimeMS: 2000 });
            await (await accounts(1)).updateOne({ _id: 0 }, { $inc: { balance: 0 } }, { maxTimeMS: 2000 });
        });
    },
    { shards: 2, routers: 2 },
);
