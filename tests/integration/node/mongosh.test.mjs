// mongosh 2.x against tessera: connect, CRUD helpers, indexes, listDatabases, duplicate keys;
// rs.status() and rs.conf() on `serve --replSet` (a one-member replica set), refused elsewhere;
// db.currentOp() there lists open transactions.
// Each mongosh start costs 1-2 s, so the checks are batched into few invocations.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { it } from 'node:test';
import { describeWithServer, mongosh, mongoshBin, resultLine, uniqueDbName, withServerLog } from './harness.mjs';

describeWithServer('mongosh', (ctx) => {
    const test = (name, fn) => it(name, withServerLog(ctx, fn));
    const dbName = uniqueDbName('shell');

    test('mongosh is installed', () => {
        assert.ok(fs.existsSync(mongoshBin), `${mongoshBin} missing: run scripts/setup.sh`);
    });

    test('connect, insert, find, createIndex, listDatabases, countDocuments', async () => {
        const script = `
            const out = {};
            out.ping = db.adminCommand({ping: 1}).ok;
            out.dbName = db.getName();
            out.insertOne = db.c.insertOne({_id: 1, a: 'x'});
            out.insertMany = db.c.insertMany([{_id: 2, a: 'y'}, {_id: 3, a: 'z', n: 5}]).insertedIds;
            out.docs = db.c.find().sort({_id: 1}).toArray();
            out.filtered = db.c.find({n: {$gte: 5}}, {_id: 1}).toArray();
            out.index = db.c.createIndex({a: 1}, {unique: true});
            out.indexes = db.c.getIndexes().map(i => i.name).sort();
            out.dbs = db.adminCommand({listDatabases: 1}).databases.map(d => d.name);
            out.count = db.c.countDocuments();
            out.countFiltered = db.c.countDocuments({a: {$gte: 'y'}});
            out.updated = db.c.updateOne({_id: 1}, {$set: {b: true}}).modifiedCount;
            out.deleted = db.c.deleteOne({_id: 2}).deletedCount;
            out.after = db.c.find({}, {_id: 1}).sort({_id: -1}).toArray();
            out.collections = db.getCollectionNames();
            print('RESULT ' + EJSON.stringify(out, {relaxed: true}));
        `;
        const out = await mongosh(ctx.server.uri(dbName), script);
        const r = resultLine(out);
        assert.equal(out.code, 0, `mongosh exit ${out.code}\n${out.stderr}`);
        assert.equal(r.ping, 1);
        assert.equal(r.dbName, dbName);
        assert.equal(r.insertOne.acknowledged, true);
        assert.equal(r.insertOne.insertedId, 1);
        assert.deepEqual(r.insertMany, { 0: 2, 1: 3 });
        assert.deepEqual(r.docs, [
            { _id: 1, a: 'x' },
            { _id: 2, a: 'y' },
            { _id: 3, a: 'z', n: 5 },
        ]);
        assert.deepEqual(r.filtered, [{ _id: 3 }]);
        assert.equal(r.index, 'a_1');
        assert.deepEqual(r.indexes, ['_id_', 'a_1']);
        assert.ok(r.dbs.includes(dbName), `${dbName} in ${r.dbs}`);
        assert.equal(r.count, 3);
        assert.equal(r.countFiltered, 2);
        assert.equal(r.updated, 1);
        assert.equal(r.deleted, 1);
        assert.deepEqual(r.after, [{ _id: 3 }, { _id: 1 }]);
        assert.deepEqual(r.collections, ['c']);

        // What mongosh wrote is visible to the driver.
        const docs = await ctx.client.db(dbName).collection('c').find().sort({ _id: 1 }).toArray();
        assert.deepEqual(docs, [
            { _id: 1, a: 'x', b: true },
            { _id: 3, a: 'z', n: 5 },
        ]);
    });

    test('duplicate key prints E11000 and exits non-zero', async () => {
        await ctx.client.db(dbName).collection('dup').insertOne({ _id: 7 });
        const out = await mongosh(
            ctx.server.uri(dbName),
            `print('BEFORE'); db.dup.insertOne({_id: 7}); print('NOT REACHED');`,
        );
        const all = out.stdout + out.stderr;
        assert.notEqual(out.code, 0, `exit code ${out.code}\n${all}`);
        assert.match(all, /BEFORE/, 'connected and ran the script');
        assert.match(all, /E11000 duplicate key error/);
        assert.match(all, /MongoServerError/);
        assert.doesNotMatch(all, /NOT REACHED/);
    });

    test('rs.status() on a server without --replSet: NoReplicationEnabled', async () => {
        const out = await mongosh(
            ctx.server.uri(dbName),
            `try { rs.status(); print('RESULT {}'); } catch (e) { print('RESULT ' + EJSON.stringify({code: e.code, msg: e.message})); }`,
        );
        const r = resultLine(out);
        assert.equal(r.code, 76, JSON.stringify(r));
        assert.match(r.msg, /not running with --replSet/);
    });
});

describeWithServer(
    'mongosh on a one-member replica set',
    (ctx) => {
        const test = (name, fn) => it(name, withServerLog(ctx, fn));

        test('rs.status() and rs.conf() describe the set and its primary', async () => {
            const dbName = uniqueDbName('rs');
            const script = `
                db.c.insertOne({_id: 1});
                const s = rs.status();
                const c = rs.conf();
                const m = s.members[0];
                print('RESULT ' + EJSON.stringify({
                    set: s.set, myState: s.myState, ok: s.ok, members: s.members.length,
                    name: m.name, stateStr: m.stateStr, self: m.self, health: m.health,
                    optime: m.optime.ts, applied: s.optimes.appliedOpTime.ts,
                    confId: c._id, confMembers: c.members.map((x) => x.host), votes: c.members[0].votes,
                    hello: db.hello().setName,
                }));
            `;
            const out = await mongosh(ctx.server.uri(dbName), script);
            const r = resultLine(out);
            assert.equal(out.code, 0, `mongosh exit ${out.code}\n${out.stderr}`);
            const host = `127.0.0.1:${ctx.server.port}`;
            assert.equal(r.set, 'rs0');
            assert.equal(r.hello, 'rs0');
            assert.equal(r.myState, 1);
            assert.equal(r.members, 1);
            assert.equal(r.name, host);
            assert.equal(r.stateStr, 'PRIMARY');
            assert.equal(r.self, true);
            assert.equal(r.health, 1);
            assert.equal(r.confId, 'rs0');
            assert.deepEqual(r.confMembers, [host]);
            assert.equal(r.votes, 1);
            // The member's optime is its latest commit: the insert the script made.
            assert.ok(r.optime.t > 0, JSON.stringify(r.optime));
            assert.deepEqual(r.applied, r.optime);
        });

        test('db.currentOp() shows an open transaction until it is aborted', async () => {
            const dbName = uniqueDbName('curop');
            const script = `
                const s = db.getMongo().startSession();
                s.startTransaction();
                s.getDatabase('${dbName}').c.insertOne({_id: 1});
                const id = s.id.id;
                const mine = db.currentOp({'lsid.id': id}).inprog;
                // mongosh turns every option but $all/$ownOps into a $match: between statements
                // the transaction is an idle session, not an active operation.
                const busy = db.currentOp({'lsid.id': id, active: true}).inprog;
                s.abortTransaction();
                print('RESULT ' + EJSON.stringify({
                    open: mine.length, desc: mine[0] && mine[0].desc,
                    txnNumber: mine[0] && Number(mine[0].transaction.parameters.txnNumber),
                    busy: busy.length, after: db.currentOp({'lsid.id': id}).inprog.length,
                }));
            `;
            const out = await mongosh(ctx.server.uri('admin'), script);
            const r = resultLine(out);
            assert.equal(out.code, 0, `mongosh exit ${out.code}\n${out.stderr}`);
            assert.deepEqual(r, { open: 1, desc: 'inactive transaction', txnNumber: 1, busy: 0, after: 0 });
        });
    },
    { serverOptions: { args: ['--replSet', 'rs0'] } },
);
