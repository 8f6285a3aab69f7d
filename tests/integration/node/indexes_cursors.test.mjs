// Indexes (incl. unique violations) and cursors (getMore, killCursors) through the Node driver.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Long, MongoBulkWriteError, MongoServerError } from 'mongodb';
import { describeWithServer, uniqueDbName, withServerLog } from './harness.mjs';

describeWithServer(
    'node driver indexes and cursors',
    (ctx) => {
        const test = (name, fn) => it(name, withServerLog(ctx, fn));
        const dbName = uniqueDbName('idx');
        let n = 0;
        const coll = () => ctx.client.db(dbName).collection(`c${++n}`);

        // Command monitoring: every command the client sends and every reply it gets.
        const events = [];
        const watch = () => {
            events.length = 0;
            if (!ctx.watching) {
                ctx.watching = true;
                for (const kind of ['commandStarted', 'commandSucceeded', 'commandFailed']) {
                    ctx.client.on(kind, (e) => events.push({ kind, ...e }));
                }
            }
        };
        const sent = (name) =>
            events.filter((e) => e.kind === 'commandStarted' && e.commandName === name);
        const replies = (name) =>
            events.filter((e) => e.kind === 'commandSucceeded' && e.commandName === name);

        test('createIndex, listIndexes and dropIndex', async () => {
            const c = coll();
            await c.insertOne({ a: 1, b: 2 });
            assert.equal(await c.createIndex({ a: 1 }), 'a_1');
            assert.equal(await c.createIndex({ a: 1, b: -1 }), 'a_1_b_-1');
            assert.equal(await c.createIndex({ b: 1 }, { name: 'by_b' }), 'by_b');
            // Creating an identical index again is a no-op that still succeeds.
            assert.equal(await c.createIndex({ a: 1 }), 'a_1');

            const idx = await c.listIndexes().toArray();
            const byName = Object.fromEntries(idx.map((i) => [i.name, i]));
            assert.deepEqual(Object.keys(byName).sort(), ['_id_', 'a_1', 'a_1_b_-1', 'by_b']);
            assert.deepEqual(byName._id_.key, { _id: 1 });
            assert.deepEqual(byName['a_1_b_-1'].key, { a: 1, b: -1 });
            assert.deepEqual(Object.keys(byName['a_1_b_-1'].key), ['a', 'b']);
            assert.equal(byName.a_1.v, 2);

            await c.dropIndex('a_1');
            const names = (await c.listIndexes().toArray()).map((i) => i.name).sort();
            assert.deepEqual(names, ['_id_', 'a_1_b_-1', 'by_b']);

            await assert.rejects(c.dropIndex('no_such_index'), (err) => {
                assert.ok(err instanceof MongoServerError);
                assert.equal(err.code, 27); // IndexNotFound
                return true;
            });
            await assert.rejects(c.dropIndex('_id_'), MongoServerError);
            // The documents are untouched by index DDL.
            assert.equal(await c.countDocuments({ a: 1 }), 1);
        });

        test('createIndex on a missing collection creates it', async () => {
            const c = coll();
            await c.createIndex({ x: 1 });
            const names = (await ctx.client.db(dbName).listCollections({}, { nameOnly: true })
                .toArray()).map((x) => x.name);
            assert.ok(names.includes(c.collectionName), `${c.collectionName} in ${names}`);
        });

        test('listIndexes on a missing collection is NamespaceNotFound', async () => {
            const c = ctx.client.db(dbName).collection('never_created');
            await assert.rejects(
                ctx.client.db(dbName).command({ listIndexes: c.collectionName }),
                (err) => err instanceof MongoServerError && err.code === 26,
            );
        });

        test('unique index: duplicate insertOne is MongoServerError 11000', async () => {
            const c = coll();
            await c.createIndex({ email: 1 }, { unique: true });
            const info = (await c.listIndexes().toArray()).find((i) => i.name === 'email_1');
            assert.equal(info.unique, true);
            await c.insertOne({ _id: 1, email: 'a@x' });
            await assert.rejects(c.insertOne({ _id: 2, email: 'a@x' }), (err) => {
                assert.ok(err instanceof MongoServerError, `got ${err}`);
                assert.equal(err.code, 11000);
                assert.match(err.message, /E11000 duplicate key error/);
                assert.match(err.message, /email_1/);
                assert.deepEqual(err.keyPattern, { email: 1 });
                assert.deepEqual(err.keyValue, { email: 'a@x' });
                return true;
            });
            assert.equal(await c.countDocuments(), 1);
            // Updating another document into the same key violates the index too.
            await c.insertOne({ _id: 3, email: 'b@x' });
            await assert.rejects(
                c.updateOne({ _id: 3 }, { $set: { email: 'a@x' } }),
                (err) => err instanceof MongoServerError && err.code === 11000,
            );
            assert.equal((await c.findOne({ _id: 3 })).email, 'b@x');
            // After deleting the holder, the key is free again.
            await c.deleteOne({ _id: 1 });
            await c.insertOne({ _id: 4, email: 'a@x' });
        });

        test('duplicate _id is 11000 on the _id_ index', async () => {
            const c = coll();
            await c.insertOne({ _id: 'k' });
            await assert.rejects(c.insertOne({ _id: 'k', other: 1 }), (err) => {
                assert.equal(err.code, 11000);
                assert.match(err.message, /_id_/);
                assert.deepEqual(err.keyValue, { _id: 'k' });
                return true;
            });
            assert.deepEqual(await c.findOne({ _id: 'k' }), { _id: 'k' });
        });

        test('insertMany with a duplicate: MongoBulkWriteError with writeErrors', async () => {
            const c = coll();
            await c.createIndex({ u: 1 }, { unique: true });
            const docs = [
                { _id: 1, u: 1 },
                { _id: 2, u: 2 },
                { _id: 3, u: 1 },
                { _id: 4, u: 4 },
            ];
            await assert.rejects(c.insertMany(docs), (err) => {
                assert.ok(err instanceof MongoBulkWriteError, `got ${err && err.name}`);
                assert.equal(err.code, 11000);
                assert.equal(err.writeErrors.length, 1);
                assert.equal(err.writeErrors[0].index, 2);
                assert.equal(err.writeErrors[0].code, 11000);
                assert.equal(err.insertedCount, 2);
                return true;
            });
            // Ordered: stopped at the first error.
            assert.deepEqual((await c.find().sort({ _id: 1 }).toArray()).map((d) => d._id), [1, 2]);

            // Unordered: keeps going past errors and reports each one.
            const more = [
                { _id: 5, u: 1 },
                { _id: 6, u: 6 },
                { _id: 2, u: 7 },
                { _id: 8, u: 8 },
            ];
            await assert.rejects(c.insertMany(more, { ordered: false }), (err) => {
                assert.ok(err instanceof MongoBulkWriteError);
                assert.deepEqual(err.writeErrors.map((e) => e.index).sort(), [0, 2]);
                assert.ok(err.writeErrors.every((e) => e.code === 11000));
                assert.equal(err.insertedCount, 2);
                return true;
            });
            assert.deepEqual(
                (await c.find().sort({ _id: 1 }).toArray()).map((d) => d._id),
                [1, 2, 6, 8],
            );
        });

        test('creating a unique index over existing duplicates fails with 11000', async () => {
            const c = coll();
            await c.insertMany([{ v: 1 }, { v: 1 }]);
            await assert.rejects(
                c.createIndex({ v: 1 }, { unique: true }),
                (err) => err instanceof MongoServerError && err.code === 11000,
            );
            const names = (await c.listIndexes().toArray()).map((i) => i.name);
            assert.deepEqual(names, ['_id_']);
        });

        test('queries return the same results with and without an index', async () => {
            const c = coll();
            const docs = Array.from({ length: 60 }, (_, i) => ({ _id: i, k: i % 7, s: `s${i % 5}` }));
            await c.insertMany(docs);
            const q = { k: { $gte: 2, $lt: 5 }, s: { $in: ['s1', 's3'] } };
            const before = await c.find(q).sort({ _id: 1 }).toArray();
            await c.createIndex({ k: 1, s: 1 });
            const after = await c.find(q).sort({ _id: 1 }).toArray();
            assert.deepEqual(after, before);
            assert.equal(after.length, docs.filter((d) => d.k >= 2 && d.k < 5 &&
                ['s1', 's3'].includes(d.s)).length);
            const sortedByK = await c.find({}).sort({ k: -1, _id: 1 }).limit(3).toArray();
            assert.deepEqual(sortedByK.map((d) => d._id), [6, 13, 20]);
        });

        test('a cursor with batchSize spans several getMores and returns every document once', async () => {
            const c = coll();
            const total = 250;
            await c.insertMany(Array.from({ length: total }, (_, i) => ({ _id: i, pad: 'x'.repeat(50) })));
            watch();
            const seen = [];
            for await (const doc of c.find({}, { batchSize: 20, sort: { _id: 1 } })) {
                seen.push(doc._id);
            }
            assert.deepEqual(seen, Array.from({ length: total }, (_, i) => i));
            const finds = replies('find');
            assert.equal(finds.length, 1);
            assert.equal(finds[0].reply.cursor.firstBatch.length, 20);
            assert.notEqual(Number(finds[0].reply.cursor.id), 0);
            assert.equal(finds[0].reply.cursor.ns, `${dbName}.${c.collectionName}`);
            const getMores = replies('getMore');
            assert.ok(getMores.length >= 12 && getMores.length <= 13, `${getMores.length} getMores`);
            for (const g of getMores.slice(0, -1)) {
                assert.equal(g.reply.cursor.nextBatch.length, 20);
            }
            // The last reply closes the cursor (id 0): nothing is left to kill.
            assert.equal(Number(getMores.at(-1).reply.cursor.id), 0);
            assert.equal(sent('killCursors').length, 0);
        });

        test('a small result needs no getMore; limit caps a batched cursor', async () => {
            const c = coll();
            await c.insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: i })));
            watch();
            assert.equal((await c.find({}).toArray()).length, 30);
            assert.equal(sent('getMore').length, 0);
            assert.equal(Number(replies('find')[0].reply.cursor.id), 0);

            watch();
            const limited = await c.find({}, { batchSize: 10, limit: 25, sort: { _id: 1 } }).toArray();
            assert.deepEqual(limited.map((d) => d._id), Array.from({ length: 25 }, (_, i) => i));
            // The server must not keep a cursor open after delivering the limit.
            assert.equal(sent('killCursors').length, 0);
        });

        test('cursor.close() sends killCursors and the cursor is gone', async () => {
            const c = coll();
            await c.insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: i })));
            watch();
            const cursor = c.find({}, { batchSize: 10, sort: { _id: 1 } });
            for (let i = 0; i < 15; i++) {
                assert.equal((await cursor.next())._id, i);
            }
            const id = cursor.id;
            assert.ok(id && !id.isZero(), 'cursor is open');
            await cursor.close();
            const kills = replies('killCursors');
            assert.equal(kills.length, 1);
            const killed = kills[0].reply.cursorsKilled.map((x) => x.toString());
            assert.deepEqual(killed, [id.toString()]);
            await assert.rejects(
                ctx.client.db(dbName).command({ getMore: id, collection: c.collectionName }),
                (err) => err instanceof MongoServerError && err.code === 43, // CursorNotFound
            );
        });

        test('getMore on an unknown cursor id is CursorNotFound; killCursors reports it', async () => {
            const c = coll();
            await c.insertOne({ _id: 1 });
            const db = ctx.client.db(dbName);
            const bogus = Long.fromString('1234567890123');
            await assert.rejects(
                db.command({ getMore: bogus, collection: c.collectionName }),
                (err) => err.code === 43 && err.codeName === 'CursorNotFound',
            );
            const res = await db.command({ killCursors: c.collectionName, cursors: [bogus] });
            assert.equal(res.ok, 1);
            assert.deepEqual(res.cursorsNotFound.map(String), [bogus.toString()]);
            assert.deepEqual(res.cursorsKilled, []);
        });

        test('several open cursors are independent', async () => {
            const c = coll();
            await c.insertMany(Array.from({ length: 40 }, (_, i) => ({ _id: i })));
            const a = c.find({}, { batchSize: 5, sort: { _id: 1 } });
            const b = c.find({}, { batchSize: 5, sort: { _id: -1 } });
            const fromA = [];
            const fromB = [];
            for (let i = 0; i < 12; i++) {
                fromA.push((await a.next())._id);
                fromB.push((await b.next())._id);
            }
            assert.deepEqual(fromA, Array.from({ length: 12 }, (_, i) => i));
            assert.deepEqual(fromB, Array.from({ length: 12 }, (_, i) => 39 - i));
            assert.equal((await a.toArray()).length, 28);
            await b.close();
        });

        // DDL × open cursors: a getMore after the collection it reads was dropped, renamed or
        // replaced fails with QueryPlanKilled (175), as in MongoDB; other cursors go on.
        test('a getMore after its collection was dropped, renamed or replaced is QueryPlanKilled', async () => {
            const docs = Array.from({ length: 30 }, (_, i) => ({ _id: i }));
            const opened = async (c, kind) => {
                await c.insertMany(docs);
                const cursor = kind === 'find'
                    ? c.find({}, { batchSize: 5, sort: { _id: 1 } })
                    : c.aggregate([{ $sort: { _id: 1 } }], { cursor: { batchSize: 5 } });
                assert.equal((await cursor.next())._id, 0);
                return cursor;
            };
            const killed = (err) => err instanceof MongoServerError && err.code === 175 && err.codeName === 'QueryPlanKilled';
            const drain = async (cursor) => { while (await cursor.next()) { /* read to the end */ } };
            const db = ctx.client.db(dbName);
            for (const kind of ['find', 'aggregate']) {
                const dropped = coll();
                const survivor = coll();
                const a = await opened(dropped, kind);
                const b = await opened(survivor, kind);
                await dropped.drop();
                await assert.rejects(drain(a), killed, `${kind}: dropped`);
                assert.equal((await b.toArray()).length, 29, `${kind}: another collection's cursor goes on`);

                const renamed = coll();
                const c = await opened(renamed, kind);
                await renamed.rename(`${renamed.collectionName}_moved`);
                await assert.rejects(drain(c), killed, `${kind}: renamed`);

                const replaced = coll();
                const d = await opened(replaced, kind);
                await replaced.drop();
                await replaced.insertOne({ _id: 'new' });
                await assert.rejects(drain(d), killed, `${kind}: dropped and created again`);
                // The killed cursor is gone: a later getMore of it is CursorNotFound.
                await assert.rejects(db.command({ getMore: d.id, collection: replaced.collectionName }), (err) => err.code === 43);
            }
            // A view's cursor reads its backing collection: dropping that kills it too.
            const base = coll();
            await base.insertMany(docs);
            await db.createCollection(`${base.collectionName}_v`, { viewOn: base.collectionName, pipeline: [{ $match: {} }] });
            const v = db.collection(`${base.collectionName}_v`).aggregate([{ $sort: { _id: 1 } }], { cursor: { batchSize: 5 } });
            assert.equal((await v.next())._id, 0);
            await base.drop();
            await assert.rejects(drain(v), killed, 'view over a dropped collection');
        });
    },
    { clientOptions: { monitorCommands: true } },
);
