// Multi-document transactions on `tessera serve --replSet` (a one-member replica set) through
// the Node driver: withTransaction, snapshot isolation, conflicts and their labels, abort, a
// bank of concurrent transfers whose total no reader ever sees change, and Mongoose.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Long, MongoClient, Timestamp, UUID } from 'mongodb';
import mongoose from 'mongoose';
import { describeWithServer, startServer, uniqueDbName, withServerLog } from './harness.mjs';

describeWithServer(
    'transactions on a one-member replica set',
    (ctx) => {
        const test = (name, fn) => it(name, withServerLog(ctx, fn));
        const dbName = uniqueDbName('txn');
        let n = 0;
        const coll = () => ctx.client.db(dbName).collection(`c${++n}`);
        let rsClient;
        // Through replica-set discovery, as an application connects (hosts/setName/primary).
        const rs = async () => {
            if (!rsClient) {
                rsClient = new MongoClient(
                    `mongodb://127.0.0.1:${ctx.server.port}/?replicaSet=rs0&serverSelectionTimeoutMS=10000`,
                );
                await rsClient.connect();
            }
            return rsClient;
        };

        test('hello answers as the primary of the set', async () => {
            const hello = await ctx.client.db('admin').command({ hello: 1 });
            assert.equal(hello.setName, 'rs0');
            assert.equal(hello.isWritablePrimary, true);
            assert.deepEqual(hello.hosts, [hello.me]);
            assert.equal(hello.primary, hello.me);
            assert.equal(hello.logicalSessionTimeoutMinutes, 30);
        });

        test('withTransaction commits all writes at once and nobody sees them before', async () => {
            const c = (await rs()).db(dbName).collection(`c${++n}`);
            await c.insertMany([{ _id: 1, bal: 100 }, { _id: 2, bal: 100 }]);
            const session = (await rs()).startSession();
            try {
                await session.withTransaction(async () => {
                    await c.updateOne({ _id: 1 }, { $inc: { bal: -30 } }, { session });
                    assert.deepEqual(await c.findOne({ _id: 1 }, { session }), { _id: 1, bal: 70 });
                    assert.deepEqual(await c.findOne({ _id: 1 }), { _id: 1, bal: 100 });
                    await c.updateOne({ _id: 2 }, { $inc: { bal: 30 } }, { session });
                    await c.insertOne({ _id: 3, bal: 0 }, { session });
                    assert.equal(await c.countDocuments({}, { session }), 3);
                    assert.equal(await c.countDocuments({}), 2);
                });
            } finally {
                await session.endSession();
            }
            assert.deepEqual(await c.find().sort({ _id: 1 }).toArray(), [
                { _id: 1, bal: 70 },
                { _id: 2, bal: 130 },
                { _id: 3, bal: 0 },
            ]);
        });

        test('abort leaves nothing; a conflicting transaction gets WriteConflict with its label', async () => {
            const client = await rs();
            const c = client.db(dbName).collection(`c${++n}`);
            await c.insertOne({ _id: 1, v: 0 });
            const a = client.startSession();
            const b = client.startSession();
            try {
                a.startTransaction();
                b.startTransaction();
                await c.updateOne({ _id: 1 }, { $set: { v: 1 } }, { session: a });
                await c.insertOne({ _id: 2 }, { session: a });
                const err = await c
                    .updateOne({ _id: 1 }, { $set: { v: 2 } }, { session: b })
                    .then(() => null, (e) => e);
                assert.ok(err, 'the second writer of the document must fail');
                assert.equal(err.code, 112);
                assert.ok(err.hasErrorLabel('TransientTransactionError'), JSON.stringify(err));
                // b is aborted by its failed statement.
                const next = await c.findOne({ _id: 1 }, { session: b }).then(() => null, (e) => e);
                assert.equal(next?.code, 251);
                await b.abortTransaction().catch(() => {});
                await a.abortTransaction();
                assert.deepEqual(await c.find().toArray(), [{ _id: 1, v: 0 }]);
                // The keys are free again: a plain write goes through at once.
                await c.updateOne({ _id: 1 }, { $set: { v: 3 } });
                assert.deepEqual(await c.findOne({ _id: 1 }), { _id: 1, v: 3 });
            } finally {
                await a.endSession();
                await b.endSession();
            }
        });

        test('a plain write of a document a transaction holds waits for its commit', async () => {
            const client = await rs();
            const c = client.db(dbName).collection(`c${++n}`);
            await c.insertOne({ _id: 1, v: 0 });
            const s = client.startSession();
            try {
                s.startTransaction();
                await c.updateOne({ _id: 1 }, { $inc: { v: 10 } }, { session: s });
                const plain = c.updateOne({ _id: 1 }, { $inc: { v: 1 } });
                let settled = false;
                plain.then(() => (settled = true), () => (settled = true));
                await new Promise((r) => setTimeout(r, 200));
                assert.equal(settled, false, 'the plain update must wait for the transaction');
                await s.commitTransaction();
                await plain;
                assert.deepEqual(await c.findOne({ _id: 1 }), { _id: 1, v: 11 });
            } finally {
                await s.endSession();
            }
        });

        test('a transaction that wrote two collections reads each one alone', async () => {
            // Created one after the other: adjacent ids, so one's writes follow the other's range.
            const client = await rs();
            const a = client.db(dbName).collection(`pair${++n}a`);
            const b = client.db(dbName).collection(`pair${n}b`);
            await a.insertOne({ _id: 'a0' });
            await b.insertOne({ _id: 'b0' });
            const s = client.startSession();
            try {
                s.startTransaction();
                await a.insertOne({ _id: 'a1' }, { session: s });
                await b.insertOne({ _id: 'b1' }, { session: s });
                for (const sort of [1, -1]) {
                    const ids = (c) => c.find({}, { session: s }).sort({ _id: sort }).toArray();
                    assert.deepEqual((await ids(a)).map((d) => d._id).sort(), ['a0', 'a1']);
                    assert.deepEqual((await ids(b)).map((d) => d._id).sort(), ['b0', 'b1']);
                }
                assert.equal(await a.countDocuments({}, { session: s }), 2);
                await s.abortTransaction();
            } finally {
                await s.endSession();
            }
        });

        test('commands a transaction cannot run are refused and change nothing', async () => {
            const client = await rs();
            const c = client.db(dbName).collection(`c${++n}`);
            await c.insertOne({ _id: 1 });
            const s = client.startSession();
            try {
                s.startTransaction();
                const err = await c.db
                    .command({ count: c.collectionName }, { session: s })
                    .then(() => null, (e) => e);
                assert.equal(err?.code, 263);
                await s.abortTransaction().catch(() => {});
            } finally {
                await s.endSession();
            }
        });

        test('bank: concurrent transfers never change the total any reader sees', async () => {
            const client = await rs();
            const c = client.db(dbName).collection(`bank${++n}`);
            const accounts = 8;
            await c.insertMany(Array.from({ length: accounts }, (_, i) => ({ _id: i, bal: 1000 })));
            const total = accounts * 1000;
            let stop = false;
            let transfers = 0;
            let badReads = [];
            const worker = async (seed) => {
                let x = seed;
                const session = client.startSession();
                try {
                    while (!stop) {
                        x = (x * 1103515245 + 12345) % 2147483648;
                        const from = x % accounts;
                        const to = (from + 1 + (x >> 8) % (accounts - 1)) % accounts;
                        await session.withTransaction(async () => {
                            await c.updateOne({ _id: from }, { $inc: { bal: -7 } }, { session });
                            await c.updateOne({ _id: to }, { $inc: { bal: 7 } }, { session });
                        });
                        transfers++;
                    }
                } finally {
                    await session.endSession();
                }
            };
            const reader = async (inTxn) => {
                const session = client.startSession();
                try {
                    while (!stop) {
                        let docs;
                        if (inTxn) {
                            session.startTransaction({ readConcern: { level: 'snapshot' } });
                            docs = await c.find({}, { session }).toArray();
                            await session.commitTransaction();
                        } else {
                            docs = await c.find({}).toArray();
                        }
                        const sum = docs.reduce((a, d) => a + d.bal, 0);
                        if (sum !== total) badReads.push(sum);
                    }
                } finally {
                    await session.endSession();
                }
            };
            const runs = [worker(1), worker(2), worker(3), worker(4), reader(true), reader(false)];
            const deadline = Date.now() + 4000;
            while (Date.now() < deadline && transfers < 300) await new Promise((r) => setTimeout(r, 50));
            stop = true;
            await Promise.all(runs);
            assert.ok(transfers > 20, `only ${transfers} transfers completed`);
            assert.deepEqual(badReads, [], 'a reader saw a partial transfer');
            const docs = await c.find().toArray();
            assert.equal(docs.reduce((a, d) => a + d.bal, 0), total);
        });

        test('Mongoose: connection.transaction, the same application as on a cluster', async () => {
            const conn = await mongoose
                .createConnection(`mongodb://127.0.0.1:${ctx.server.port}/?replicaSet=rs0`, { dbName })
                .asPromise();
            try {
                const Account = conn.model('Account', new mongoose.Schema({ _id: Number, bal: Number }, { versionKey: false }), `mongoose${++n}`);
                await Account.create([{ _id: 1, bal: 100 }, { _id: 2, bal: 100 }]);
                await conn.transaction(async (session) => {
                    const from = await Account.findById(1).session(session);
                    from.bal -= 30;
                    await from.save();
                    await Account.updateOne({ _id: 2 }, { $inc: { bal: 30 } }).session(session);
                });
                assert.deepEqual((await Account.find().sort({ _id: 1 }).lean()).map((d) => d.bal), [70, 130]);
                const e = await conn
                    .transaction(async (session) => {
                        await Account.updateOne({ _id: 1 }, { $inc: { bal: -70 } }).session(session);
                        throw new Error('declined');
                    })
                    .then(() => null, (err) => err);
                assert.match(String(e), /declined/);
                assert.deepEqual((await Account.find().sort({ _id: 1 }).lean()).map((d) => d.bal), [70, 130]);
            } finally {
                await conn.close();
            }
        });

        test('transactions and retryable writes share one order of txnNumbers per session', async () => {
            // As MongoDB's one transaction participant per session (issue 14, point 5).
            const client = await rs();
            const db = client.db(dbName);
            const name = `c${++n}`;
            const session = client.startSession({ causalConsistency: false });
            // A session of its own (the driver's pool hands out lsids earlier tests used).
            Object.assign(session.serverSession, { id: { id: new UUID() }, txnNumber: 0 });
            const run = (doc, extra) =>
                db
                    .command({ insert: name, documents: [doc], ...extra }, { session })
                    .then((r) => r, (e) => e);
            const txn = (number, more = {}) => ({ txnNumber: Long.fromNumber(number), autocommit: false, ...more });
            try {
                const first = await run({ _id: 1 }, { txnNumber: Long.fromNumber(5) });
                assert.equal(first.ok, 1, JSON.stringify(first));
                // A transaction may not reuse a retryable write's number, nor take an older one.
                assert.equal((await run({ _id: 2 }, txn(5, { startTransaction: true }))).code, 50911);
                assert.equal((await run({ _id: 2 }, txn(4, { startTransaction: true }))).code, 225);
                // A newer retryable write aborts the unfinished transaction 6: its commit is too old.
                assert.equal((await run({ _id: 3 }, txn(6, { startTransaction: true }))).ok, 1);
                assert.equal((await run({ _id: 4 }, { txnNumber: Long.fromNumber(7) })).ok, 1);
                // The driver sends its session's txnNumber with commitTransaction.
                const commitOf = (number) => {
                    session.serverSession.txnNumber = number;
                    return client.db('admin').command({ commitTransaction: 1, autocommit: false }, { session });
                };
                const commit = await commitOf(6)
                    .then((r) => r, (e) => e);
                assert.equal(commit.code, 225, JSON.stringify(commit));
                // A retryable write may not be older than the session's newest, nor reuse a
                // transaction's number.
                assert.equal((await run({ _id: 5 }, { txnNumber: Long.fromNumber(6) })).code, 225);
                assert.equal((await run({ _id: 5 }, txn(8, { startTransaction: true }))).ok, 1);
                assert.equal((await commitOf(8)).ok, 1);
                assert.equal((await run({ _id: 6 }, { txnNumber: Long.fromNumber(8) })).code, 217);
                assert.deepEqual(
                    (await db.collection(name).find().sort({ _id: 1 }).toArray()).map((d) => d._id),
                    [1, 4, 5],
                );
            } finally {
                await session.endSession();
            }
        });

        test('currentOp and $currentOp list an open transaction until it ends', async () => {
            const client = await rs();
            const admin = client.db('admin');
            const c = client.db(dbName).collection(`c${++n}`);
            await c.insertOne({ _id: 0 });
            const session = client.startSession();
            const mine = { 'lsid.id': session.id.id };
            try {
                session.startTransaction();
                await c.insertOne({ _id: 1 }, { session });
                const [op, ...rest] = (await admin.command({ currentOp: 1, ...mine })).inprog;
                assert.equal(rest.length, 0);
                assert.equal(op.type, 'idleSession');
                assert.equal(op.desc, 'inactive transaction');
                assert.equal(op.active, false);
                assert.equal(Number(op.transaction.parameters.txnNumber), Number(session.serverSession.txnNumber));
                assert.ok(op.transaction.timeOpenMicros >= 0);
                assert.ok(op.transaction.expiryTime > op.transaction.startWallClockTime);
                assert.deepEqual((await admin.command({ currentOp: 1, idleSessions: false, ...mine })).inprog, []);
                // mongosh's db.currentOp() is this aggregate.
                const viaStage = await admin.aggregate([{ $currentOp: { allUsers: true } }, { $match: mine }]).toArray();
                assert.equal(viaStage.length, 1);
                const refused = await client.db(dbName).aggregate([{ $currentOp: {} }]).toArray().then(() => null, (e) => e);
                assert.equal(refused?.code, 73, `${refused}`);
                const unknown = await admin.aggregate([{ $currentOp: { frob: true } }]).toArray().then(() => null, (e) => e);
                assert.equal(unknown?.code, 40415, `${unknown}`);
                await session.commitTransaction();
                assert.deepEqual((await admin.command({ currentOp: 1, ...mine })).inprog, []);
            } finally {
                await session.endSession();
            }
        });

        it('closes the replica-set client', async () => {
            if (rsClient) await rsClient.close();
        });
    },
    { serverOptions: { args: ['--replSet', 'rs0'] } },
);

// Runs `before(client)` on a `--replSet` node, kills it with -9, restarts it on the same dbpath
// and port, and runs `after(client, whatBeforeReturned)` against the restarted node.
async function acrossKill9(before, after) {
    const first = await startServer({ args: ['--replSet', 'rs0'] });
    let second;
    try {
        const client = await first.client();
        const state = await before(client);
        await first.kill9();
        await client.close().catch(() => {});
        second = await startServer({ dbpath: first.dbpath, port: first.port, args: ['--replSet', 'rs0'] });
        const again = await second.client();
        try {
            await after(again, state);
        } finally {
            await again.close();
        }
    } finally {
        if (second) {
            await second.stop();
            second.cleanup();
        }
        await first.stop();
        first.cleanup();
    }
}

// The driver's retry of `cmd` (on `dbName`) in the session `lsid` of the node before its restart.
async function retryInSession(client, lsid, dbName, cmd) {
    const retry = client.startSession();
    Object.assign(retry.serverSession, { id: lsid });
    return client.db(dbName).command(cmd, { session: retry });
}

it('a commit retried after kill -9 of the node is answered committed and applies nothing again', async () => {
    await acrossKill9(
        async (client) => {
            const c = client.db(uniqueDbName('txn')).collection('c');
            const session = client.startSession();
            session.startTransaction({ writeConcern: { w: 1, j: true } });
            await c.insertOne({ _id: 1 }, { session });
            await session.commitTransaction();
            return { dbName: c.dbName, lsid: session.id, txnNumber: session.serverSession.txnNumber };
        },
        async (again, { dbName, lsid, txnNumber }) => {
            // The driver's retry of the commit, on the session's lsid and txnNumber: a
            // NoSuchTransaction (TransientTransactionError) would make withTransaction run the
            // transaction again.
            const retry = again.startSession();
            Object.assign(retry.serverSession, { id: lsid, txnNumber });
            const reply = await again
                .db('admin')
                .command({ commitTransaction: 1 }, { session: retry }) // with the borrowed txnNumber
                .then((r) => r, (e) => e);
            assert.equal(reply.ok, 1, `${reply}`);
            // The next transaction of the session starts as usual; the document is there once.
            const next = await again
                .db(dbName)
                .command(
                    { insert: 'c', documents: [{ _id: 2 }], txnNumber: Long.fromNumber(txnNumber + 1), startTransaction: true, autocommit: false },
                    { session: retry },
                )
                .then((r) => r, (e) => e);
            assert.equal(next.ok, 1, `${next}`);
            retry.serverSession.txnNumber = txnNumber + 1; // the driver sends it with abortTransaction
            await again.db('admin').command({ abortTransaction: 1 }, { session: retry });
            assert.deepEqual(await again.db(dbName).collection('c').find().toArray(), [{ _id: 1 }]);
        },
    );
});

it('a standalone without --replSet refuses transactions and applies nothing', async () => {
    const server = await startServer();
    try {
        const client = await server.client();
        const c = client.db(uniqueDbName('txn')).collection('c');
        const s = client.startSession();
        s.startTransaction();
        const err = await c.insertOne({ _id: 1 }, { session: s }).then(() => null, (e) => e);
        assert.ok(err, 'the insert must be refused');
        await s.abortTransaction().catch(() => {});
        await s.endSession();
        assert.equal(await c.countDocuments(), 0);
        // Nothing it could list: currentOp is refused as before (no transactions, no migrations).
        const currentOp = await client.db('admin').command({ currentOp: 1 }).then(() => null, (e) => e);
        assert.equal(currentOp?.code, 59, `${currentOp}`);
        await client.close();
    } finally {
        await server.stop();
        server.cleanup();
    }
});

it('a fresh --replSet node gossips a real cluster time before its first write', async () => {
    // A driver's causally consistent session sends the reply's operationTime back as
    // afterClusterTime: before any commit it is a tick of the node's clock, never Timestamp(0).
    const server = await startServer({ args: ['--replSet', 'rs0'] });
    try {
        const client = await server.client();
        const db = client.db(uniqueDbName('fresh'));
        const session = client.startSession({ causalConsistency: true });
        const reply = await db.command({ find: 'c', filter: {} }, { session });
        assert.ok(reply.operationTime.greaterThan(Timestamp.fromBits(0, 0)), `${reply.operationTime}`);
        assert.ok(!reply.$clusterTime.clusterTime.lessThan(reply.operationTime));
        assert.ok(Math.abs(reply.operationTime.high - Date.now() / 1000) < 60, 'near the wall clock');
        await db.collection('c').insertOne({ _id: 1 }, { session });
        const after = await db.command({ find: 'c', filter: {} }, { session });
        assert.ok(after.operationTime.greaterThan(reply.operationTime), 'the commit is later');
        assert.deepEqual(after.cursor.firstBatch, [{ _id: 1 }]);
        await session.endSession();
        await client.close();
    } finally {
        await server.stop();
        server.cleanup();
    }
});

it('a retryable insert retried after kill -9 runs only the statements that did not run', async () => {
    // Each statement is recorded in its own write's batch: after the crash the retry skips the
    // statements that wrote (no duplicate, no double count) and runs the one that had failed.
    const dbName = uniqueDbName('retry');
    const cmd = {
        insert: 'c',
        documents: [{ _id: 1 }, { _id: 2 }, { _id: 3 }],
        ordered: true,
        txnNumber: Long.fromNumber(7),
        writeConcern: { w: 1, j: true },
    };
    await acrossKill9(
        async (client) => {
            await client.db(dbName).collection('c').insertOne({ _id: 3, blocker: true });
            const session = client.startSession();
            const reply = await client.db(dbName).command(cmd, { session });
            assert.equal(reply.n, 2);
            assert.equal(reply.writeErrors?.[0]?.code, 11000);
            return session.id;
        },
        async (again, lsid) => {
            const c = again.db(dbName).collection('c');
            await c.deleteOne({ _id: 3 });
            const retried = await retryInSession(again, lsid, dbName, cmd);
            assert.equal(retried.writeErrors, undefined, JSON.stringify(retried));
            assert.equal(retried.n, 3);
            assert.deepEqual((await c.find().sort({ _id: 1 }).toArray()).map((d) => d._id), [1, 2, 3]);
            assert.equal(await c.estimatedDocumentCount(), 3);
        },
    );
});

it('a retryable bulkWrite retried after kill -9 runs only the ops that did not run', async () => {
    // bulkWrite's ops are statements, each recorded in its write's batch, as insert's are: the
    // retry after the crash answers the ops that wrote from their records and runs the rest.
    const dbName = uniqueDbName('retry');
    const cmd = {
        bulkWrite: 1,
        nsInfo: [{ ns: `${dbName}.c` }],
        ops: [
            { update: 0, filter: { _id: 1 }, updateMods: { $inc: { x: 1 } } },
            { insert: 0, document: { _id: 2 } },
            { insert: 0, document: { _id: 3 } },
        ],
        ordered: true,
        txnNumber: Long.fromNumber(9),
        writeConcern: { w: 1, j: true },
    };
    await acrossKill9(
        async (client) => {
            await client.db(dbName).collection('c').insertMany([{ _id: 1, x: 0 }, { _id: 3, blocker: true }]);
            const session = client.startSession();
            const reply = await client.db('admin').command(cmd, { session });
            assert.equal(reply.nErrors, 1, JSON.stringify(reply));
            return session.id;
        },
        async (again, lsid) => {
            const c = again.db(dbName).collection('c');
            await c.deleteOne({ _id: 3 });
            const retried = await retryInSession(again, lsid, 'admin', cmd);
            assert.equal(retried.nErrors, 0, JSON.stringify(retried));
            assert.deepEqual(retried.retriedStmtIds, [0, 1]);
            assert.deepEqual(await c.find().sort({ _id: 1 }).toArray(), [{ _id: 1, x: 1 }, { _id: 2 }, { _id: 3 }]);
        },
    );
});
