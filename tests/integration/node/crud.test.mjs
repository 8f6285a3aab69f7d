// CRUD through the official Node.js driver (7.x), checked against MongoDB's documented behaviour.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Binary, Decimal128, Double, Int32, Long, ObjectId } from 'mongodb';
import { describeWithServer, uniqueDbName, withServerLog } from './harness.mjs';

describeWithServer('node driver CRUD', (ctx) => {
    const test = (name, fn) => it(name, withServerLog(ctx, fn));
    const dbName = uniqueDbName('crud');
    let n = 0;
    const coll = () => ctx.client.db(dbName).collection(`c${++n}`);

    test('insertOne generates an ObjectId _id and findOne returns the document', async () => {
        const c = coll();
        const res = await c.insertOne({ name: 'ada', age: 36 });
        assert.equal(res.acknowledged, true);
        assert.ok(res.insertedId instanceof ObjectId);
        const doc = await c.findOne({ name: 'ada' });
        assert.deepEqual(doc, { _id: res.insertedId, name: 'ada', age: 36 });
    });

    test('BSON types and field order survive a round trip', async () => {
        const c = coll();
        const oid = new ObjectId();
        const when = new Date('2024-02-29T12:34:56.789Z');
        const doc = {
            _id: 1,
            i32: new Int32(5),
            i64: Long.fromString('1099511627776'),
            dbl: new Double(3),
            dec: Decimal128.fromString('1.10'),
            str: 'héllo',
            t: true,
            f: false,
            nul: null,
            date: when,
            oid,
            bin: new Binary(Buffer.from([0, 1, 2, 255])),
            arr: [1, 'a', { x: 1 }, [2]],
            sub: { z: 1, a: { b: 'c' } },
        };
        await c.insertOne(doc);
        const raw = await c.findOne({ _id: 1 }, { promoteValues: false, promoteLongs: false });
        assert.deepEqual(Object.keys(raw), Object.keys(doc));
        assert.equal(raw.i32._bsontype, 'Int32');
        assert.equal(raw.i32.value, 5);
        assert.equal(raw.i64._bsontype, 'Long');
        assert.equal(raw.i64.toString(), '1099511627776');
        assert.equal(raw.dbl._bsontype, 'Double');
        assert.equal(raw.dbl.value, 3);
        assert.equal(raw.dec._bsontype, 'Decimal128');
        assert.equal(raw.dec.toString(), '1.10');
        const got = await c.findOne({ _id: 1 });
        assert.equal(got.str, 'héllo');
        assert.equal(got.t, true);
        assert.equal(got.f, false);
        assert.equal(got.nul, null);
        assert.equal(got.date.getTime(), when.getTime());
        assert.ok(got.oid.equals(oid));
        assert.deepEqual([...got.bin.buffer], [0, 1, 2, 255]);
        assert.deepEqual(got.arr, [1, 'a', { x: 1 }, [2]]);
        assert.deepEqual(Object.keys(got.sub), ['z', 'a']);
        assert.deepEqual(got.sub, { z: 1, a: { b: 'c' } });
    });

    test('insertMany returns insertedCount and insertedIds', async () => {
        const c = coll();
        const res = await c.insertMany([{ _id: 'a' }, { _id: 'b' }, { x: 1 }]);
        assert.equal(res.insertedCount, 3);
        assert.equal(res.insertedIds[0], 'a');
        assert.equal(res.insertedIds[1], 'b');
        assert.ok(res.insertedIds[2] instanceof ObjectId);
        assert.equal(await c.countDocuments(), 3);
    });

    test('find with filter operators, projection, sort, skip and limit', async () => {
        const c = coll();
        await c.insertMany([
            { _id: 1, a: 5, b: 'x', tags: ['p'] },
            { _id: 2, a: 3, b: 'y' },
            { _id: 3, a: 9, b: 'x' },
            { _id: 4, a: 3, b: 'z' },
            { _id: 5, b: 'w' },
        ]);
        const ids = async (filter, opts = {}) =>
            (await c.find(filter, opts).toArray()).map((d) => d._id);

        assert.deepEqual(await ids({ a: { $gt: 3 } }, { sort: { _id: 1 } }), [1, 3]);
        assert.deepEqual(await ids({ a: { $gte: 3, $lt: 9 } }, { sort: { _id: 1 } }), [1, 2, 4]);
        assert.deepEqual(await ids({ a: { $in: [3, 9] } }, { sort: { _id: 1 } }), [2, 3, 4]);
        assert.deepEqual(await ids({ a: { $ne: 3 } }, { sort: { _id: 1 } }), [1, 3, 5]);
        assert.deepEqual(await ids({ a: { $exists: false } }), [5]);
        assert.deepEqual(await ids({ a: { $nin: [3, 5] } }, { sort: { _id: 1 } }), [3, 5]);
        assert.deepEqual(
            await ids({ $or: [{ a: 9 }, { b: 'y' }] }, { sort: { _id: 1 } }),
            [2, 3],
        );
        assert.deepEqual(await ids({ $and: [{ b: 'x' }, { a: { $lt: 9 } }] }), [1]);
        assert.deepEqual(await ids({ b: { $regex: '^[wx]$' } }, { sort: { _id: -1 } }), [5, 3, 1]);
        assert.deepEqual(await ids({ a: { $not: { $gt: 3 } } }, { sort: { _id: 1 } }), [2, 4, 5]);

        // sort on two keys, missing field sorts first ascending (null < numbers)
        assert.deepEqual(await ids({}, { sort: { a: 1, _id: -1 } }), [5, 4, 2, 1, 3]);
        assert.deepEqual(await ids({}, { sort: { a: -1, _id: 1 } }), [3, 1, 2, 4, 5]);
        assert.deepEqual(await ids({}, { sort: { _id: 1 }, skip: 1, limit: 2 }), [2, 3]);
        assert.deepEqual(await ids({}, { sort: { _id: 1 }, skip: 10 }), []);

        // inclusion projection keeps _id; exclusion drops only the named fields
        const inc = await c.find({ _id: 1 }, { projection: { a: 1 } }).toArray();
        assert.deepEqual(inc, [{ _id: 1, a: 5 }]);
        const noId = await c.find({ _id: 1 }, { projection: { _id: 0, b: 1 } }).toArray();
        assert.deepEqual(noId, [{ b: 'x' }]);
        const exc = await c.find({ _id: 1 }, { projection: { tags: 0, a: 0 } }).toArray();
        assert.deepEqual(exc, [{ _id: 1, b: 'x' }]);
        const onlyId = await c.find({ _id: 1 }, { projection: { _id: 1 } }).toArray();
        assert.deepEqual(onlyId, [{ _id: 1 }], 'projection {_id: 1} keeps only _id');
    });

    test('numbers compare by value across int32, int64 and double', async () => {
        const c = coll();
        await c.insertMany([
            { _id: 1, v: new Int32(2) },
            { _id: 2, v: Long.fromNumber(2) },
            { _id: 3, v: new Double(2.0) },
            { _id: 4, v: new Double(2.5) },
            { _id: 5, v: '2' },
        ]);
        const got = (await c.find({ v: 2 }).sort({ _id: 1 }).toArray()).map((d) => d._id);
        assert.deepEqual(got, [1, 2, 3]);
        const gt = (await c.find({ v: { $gt: 2 } }).toArray()).map((d) => d._id);
        assert.deepEqual(gt, [4]);
    });

    test('updateOne and updateMany with operators', async () => {
        const c = coll();
        await c.insertMany([
            { _id: 1, n: 1, tags: ['a'], gone: true },
            { _id: 2, n: 2, tags: [] },
            { _id: 3, n: 3 },
        ]);
        let res = await c.updateOne(
            { _id: 1 },
            { $set: { s: 'x', 'deep.er': 1 }, $inc: { n: 10 }, $unset: { gone: '' } },
        );
        assert.equal(res.matchedCount, 1);
        assert.equal(res.modifiedCount, 1);
        assert.equal(res.upsertedId, null);
        assert.deepEqual(await c.findOne({ _id: 1 }), {
            _id: 1,
            n: 11,
            tags: ['a'],
            s: 'x',
            deep: { er: 1 },
        });

        res = await c.updateOne({ _id: 1 }, { $push: { tags: 'b' } });
        assert.equal(res.modifiedCount, 1);
        res = await c.updateOne({ _id: 1 }, { $addToSet: { tags: 'a' } });
        assert.equal(res.matchedCount, 1);
        assert.equal(res.modifiedCount, 0, '$addToSet of an existing element modifies nothing');
        assert.deepEqual((await c.findOne({ _id: 1 })).tags, ['a', 'b']);

        res = await c.updateOne({ _id: 1 }, { $set: { s: 'x' } });
        assert.equal(res.matchedCount, 1);
        assert.equal(res.modifiedCount, 0, 'setting the same value is a no-op');

        res = await c.updateMany({ n: { $lte: 3 } }, { $inc: { n: 100 } });
        assert.equal(res.matchedCount, 2);
        assert.equal(res.modifiedCount, 2);
        const ns = (await c.find({}).sort({ _id: 1 }).toArray()).map((d) => d.n);
        assert.deepEqual(ns, [11, 102, 103]);

        res = await c.updateMany({ nothing: 1 }, { $set: { x: 1 } });
        assert.equal(res.matchedCount, 0);
        assert.equal(res.modifiedCount, 0);
    });

    test('update keeps existing field order and appends new fields in name order', async () => {
        // MongoDB 5.0+: update operators apply fields in lexicographic order of their names.
        const c = coll();
        await c.insertOne({ _id: 1, z: 1, m: 1 });
        await c.updateOne({ _id: 1 }, { $set: { y: 1, b: 1, m: 2 } });
        assert.deepEqual(Object.keys(await c.findOne({ _id: 1 })), ['_id', 'z', 'm', 'b', 'y']);
    });

    test('upsert inserts with the equality fields of the filter', async () => {
        const c = coll();
        let res = await c.updateOne(
            { k: 'new', n: { $gt: 5 } },
            { $set: { v: 1 }, $setOnInsert: { created: true } },
            { upsert: true },
        );
        assert.equal(res.matchedCount, 0);
        assert.equal(res.upsertedCount, 1);
        assert.ok(res.upsertedId instanceof ObjectId);
        const doc = await c.findOne({ _id: res.upsertedId });
        assert.deepEqual(doc, { _id: res.upsertedId, k: 'new', v: 1, created: true });

        // Second time it matches: $setOnInsert does not apply.
        res = await c.updateOne(
            { k: 'new' },
            { $set: { v: 2 }, $setOnInsert: { created: false } },
            { upsert: true },
        );
        assert.equal(res.matchedCount, 1);
        assert.equal(res.upsertedCount, 0);
        assert.equal(res.upsertedId, null);
        assert.equal((await c.findOne({ k: 'new' })).created, true);

        res = await c.updateMany({ _id: 'given' }, { $inc: { c: 1 } }, { upsert: true });
        assert.equal(res.upsertedId, 'given');
        assert.deepEqual(await c.findOne({ _id: 'given' }), { _id: 'given', c: 1 });
    });

    test('replaceOne replaces the whole document and keeps _id', async () => {
        const c = coll();
        await c.insertOne({ _id: 7, a: 1, b: 2 });
        let res = await c.replaceOne({ a: 1 }, { c: 3 });
        assert.equal(res.matchedCount, 1);
        assert.equal(res.modifiedCount, 1);
        assert.deepEqual(await c.findOne({ _id: 7 }), { _id: 7, c: 3 });

        res = await c.replaceOne({ _id: 8 }, { d: 4 }, { upsert: true });
        assert.equal(res.upsertedCount, 1);
        assert.equal(res.upsertedId, 8);
        assert.deepEqual(await c.findOne({ _id: 8 }), { _id: 8, d: 4 });

        res = await c.replaceOne({ _id: 99 }, { d: 4 });
        assert.equal(res.matchedCount, 0);
        assert.equal(res.upsertedCount, 0);
    });

    test('deleteOne deletes one match, deleteMany all matches', async () => {
        const c = coll();
        await c.insertMany([1, 2, 3, 4, 5].map((i) => ({ _id: i, even: i % 2 === 0 })));
        let res = await c.deleteOne({ even: false });
        assert.equal(res.deletedCount, 1);
        assert.equal(await c.countDocuments({ even: false }), 2);
        res = await c.deleteMany({ even: true });
        assert.equal(res.deletedCount, 2);
        res = await c.deleteMany({ even: true });
        assert.equal(res.deletedCount, 0);
        res = await c.deleteMany({});
        assert.equal(res.deletedCount, 2);
        assert.equal(await c.countDocuments(), 0);
    });

    test('findOneAndUpdate / findOneAndReplace / findOneAndDelete with returnDocument', async () => {
        const c = coll();
        await c.insertMany([
            { _id: 1, q: 'x', n: 1 },
            { _id: 2, q: 'x', n: 2 },
        ]);
        let doc = await c.findOneAndUpdate(
            { q: 'x' },
            { $inc: { n: 10 } },
            { sort: { n: -1 }, returnDocument: 'before' },
        );
        assert.deepEqual(doc, { _id: 2, q: 'x', n: 2 });
        doc = await c.findOneAndUpdate(
            { q: 'x' },
            { $inc: { n: 10 } },
            { sort: { n: 1 }, returnDocument: 'after', projection: { n: 1, _id: 0 } },
        );
        assert.deepEqual(doc, { n: 11 });
        doc = await c.findOneAndUpdate({ q: 'none' }, { $set: { n: 0 } });
        assert.equal(doc, null);
        doc = await c.findOneAndUpdate(
            { _id: 3 },
            { $set: { q: 'y' } },
            { upsert: true, returnDocument: 'after' },
        );
        assert.deepEqual(doc, { _id: 3, q: 'y' });

        doc = await c.findOneAndReplace({ _id: 1 }, { r: true }, { returnDocument: 'after' });
        assert.deepEqual(doc, { _id: 1, r: true });
        doc = await c.findOneAndReplace({ _id: 2 }, { r: false }, { returnDocument: 'before' });
        assert.deepEqual(doc, { _id: 2, q: 'x', n: 12 });

        doc = await c.findOneAndDelete({}, { sort: { _id: -1 } });
        assert.deepEqual(doc, { _id: 3, q: 'y' });
        assert.equal(await c.findOne({ _id: 3 }), null);
        assert.equal(await c.findOneAndDelete({ _id: 3 }), null);
        assert.equal(await c.countDocuments(), 2);
    });

    test('countDocuments and estimatedDocumentCount', async () => {
        const c = coll();
        assert.equal(await c.countDocuments(), 0);
        assert.equal(await c.estimatedDocumentCount(), 0);
        await c.insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: i, odd: i % 2 === 1 })));
        assert.equal(await c.countDocuments(), 30);
        assert.equal(await c.countDocuments({ odd: true }), 15);
        assert.equal(await c.countDocuments({ odd: true }, { skip: 10 }), 5);
        assert.equal(await c.countDocuments({}, { limit: 7 }), 7);
        assert.equal(await c.estimatedDocumentCount(), 30);
    });

    test('distinct unwinds arrays and honours the filter', async () => {
        const c = coll();
        await c.insertMany([
            { _id: 1, tags: ['a', 'b'], k: 1, sub: { v: 'p' } },
            { _id: 2, tags: ['b', 'c'], k: 1, sub: { v: 'q' } },
            { _id: 3, tags: 'd', k: 2, sub: { v: 'p' } },
            { _id: 4, k: 2 },
        ]);
        const sorted = (xs) => [...xs].sort();
        assert.deepEqual(sorted(await c.distinct('tags')), ['a', 'b', 'c', 'd']);
        assert.deepEqual(sorted(await c.distinct('tags', { k: 1 })), ['a', 'b', 'c']);
        assert.deepEqual(sorted(await c.distinct('sub.v')), ['p', 'q']);
        assert.deepEqual(sorted(await c.distinct('k')), [1, 2]);
        assert.deepEqual(await c.distinct('nothing'), []);
    });

    test('dotted paths and array queries: $elemMatch, $all, $size', async () => {
        const c = coll();
        await c.insertMany([
            { _id: 1, a: { b: 1, c: { d: 'x' } }, scores: [82, 90], tags: ['r', 's', 't'] },
            { _id: 2, a: { b: 2 }, scores: [70, 95], tags: ['r', 's'] },
            {
                _id: 3,
                items: [
                    { sku: 'x', qty: 2 },
                    { sku: 'y', qty: 10 },
                ],
                tags: ['s'],
            },
            { _id: 4, items: [{ sku: 'x', qty: 8 }], tags: [] },
        ]);
        const ids = async (filter) =>
            (await c.find(filter).sort({ _id: 1 }).toArray()).map((d) => d._id);

        assert.deepEqual(await ids({ 'a.b': 1 }), [1]);
        assert.deepEqual(await ids({ 'a.c.d': 'x' }), [1]);
        assert.deepEqual(await ids({ 'a.b': { $exists: true } }), [1, 2]);
        assert.deepEqual(await ids({ 'items.sku': 'y' }), [3]);
        assert.deepEqual(await ids({ 'items.qty': { $gt: 5 } }), [3, 4]);
        assert.deepEqual(await ids({ tags: 's' }), [1, 2, 3]);
        assert.deepEqual(await ids({ tags: ['r', 's'] }), [2], 'whole-array equality');
        assert.deepEqual(await ids({ 'scores.0': { $gte: 80 } }), [1]);

        // Without $elemMatch one element may satisfy $gte and another $lt (doc 2: 95 and 70).
        assert.deepEqual(await ids({ scores: { $gte: 80, $lt: 85 } }), [1, 2]);
        assert.deepEqual(await ids({ scores: { $elemMatch: { $gte: 80, $lt: 85 } } }), [1]);
        // Same for documents in arrays: doc 3 has sku x (qty 2) and qty 10 on another element.
        assert.deepEqual(await ids({ 'items.sku': 'x', 'items.qty': { $gt: 5 } }), [3, 4]);
        assert.deepEqual(await ids({ items: { $elemMatch: { sku: 'x', qty: { $gt: 5 } } } }), [4]);

        assert.deepEqual(await ids({ tags: { $all: ['r', 's'] } }), [1, 2]);
        assert.deepEqual(await ids({ tags: { $all: ['t', 'r'] } }), [1]);
        assert.deepEqual(await ids({ tags: { $size: 2 } }), [2]);
        assert.deepEqual(await ids({ tags: { $size: 0 } }), [4]);

        // Dotted projection and dotted update.
        const p = await c.findOne({ _id: 1 }, { projection: { 'a.c.d': 1, _id: 0 } });
        assert.deepEqual(p, { a: { c: { d: 'x' } } });
        await c.updateOne({ _id: 2 }, { $set: { 'a.e.f': 5 } });
        assert.deepEqual((await c.findOne({ _id: 2 })).a, { b: 2, e: { f: 5 } });
    });

    test('w:0 writes are applied and later reads on the same connection see them', async () => {
        // One pooled connection: the server handles a connection's messages in order.
        const client = await ctx.server.client({ maxPoolSize: 1 });
        try {
            const c = client.db(dbName).collection(`w0_${++n}`);
            const res = await c.insertOne({ _id: 1, v: 'a' }, { writeConcern: { w: 0 } });
            assert.equal(res.acknowledged, false);
            await c.insertMany(
                [{ _id: 2 }, { _id: 3 }],
                { writeConcern: { w: 0 } },
            );
            await c.updateOne({ _id: 1 }, { $set: { v: 'b' } }, { writeConcern: { w: 0 } });
            await c.deleteOne({ _id: 3 }, { writeConcern: { w: 0 } });
            // A duplicate with w:0 is not reported and does not break the connection.
            await c.insertOne({ _id: 2 }, { writeConcern: { w: 0 } });
            const docs = await c.find({}).sort({ _id: 1 }).toArray();
            assert.deepEqual(docs, [{ _id: 1, v: 'b' }, { _id: 2 }]);
        } finally {
            await client.close();
        }
    });
});
