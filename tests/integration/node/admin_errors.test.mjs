// Databases/collections administration and error replies through the Node driver.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { MongoServerError } from 'mongodb';
import { describeWithServer, uniqueDbName, withServerLog } from './harness.mjs';

describeWithServer('node driver admin commands and errors', (ctx) => {
    const test = (name, fn) => it(name, withServerLog(ctx, fn));
    const dbName = uniqueDbName('admin');
    const db = () => ctx.client.db(dbName);
    const dbNames = async () =>
        (await ctx.client.db('admin').admin().listDatabases()).databases.map((d) => d.name);
    const collNames = async (name = dbName) =>
        (await ctx.client.db(name).listCollections({}, { nameOnly: true }).toArray())
            .map((c) => c.name)
            .sort();

    test('handshake: hello, ping and buildInfo', async () => {
        const admin = ctx.client.db('admin');
        assert.equal((await admin.command({ ping: 1 })).ok, 1);
        const hello = await admin.command({ hello: 1 });
        assert.equal(hello.ok, 1);
        assert.equal(hello.isWritablePrimary, true);
        assert.ok(hello.maxWireVersion >= 9, `maxWireVersion ${hello.maxWireVersion}`);
        assert.equal(hello.maxBsonObjectSize, 16777216);
        assert.equal(hello.maxMessageSizeBytes, 48000000);
        assert.equal(hello.maxWriteBatchSize, 100000);
        const legacy = await admin.command({ isMaster: 1 });
        assert.equal(legacy.ismaster, true);
        const info = await admin.command({ buildInfo: 1 });
        assert.match(info.version, /^\d+\.\d+\.\d+/);
        assert.ok(Array.isArray(info.versionArray));
    });

    test('listDatabases shows a database once it has data', async () => {
        const name = uniqueDbName('listdb');
        assert.ok(!(await dbNames()).includes(name));
        await ctx.client.db(name).collection('x').insertOne({ a: 1 });
        const res = await ctx.client.db('admin').admin().listDatabases();
        const entry = res.databases.find((d) => d.name === name);
        assert.ok(entry, `${name} listed`);
        assert.equal(typeof entry.sizeOnDisk, 'number');
        assert.equal(entry.empty, false);
        assert.equal(typeof res.totalSize, 'number');
        const only = await ctx.client.db('admin').command({ listDatabases: 1, nameOnly: true });
        assert.ok(only.databases.some((d) => d.name === name));
    });

    test('listCollections and createCollection', async () => {
        await db().collection('alpha').insertOne({ a: 1 });
        await db().createCollection('beta');
        const names = await collNames();
        assert.ok(names.includes('alpha') && names.includes('beta'), `${names}`);
        const full = await db().listCollections({ name: 'alpha' }).toArray();
        assert.equal(full.length, 1);
        assert.equal(full[0].name, 'alpha');
        assert.equal(full[0].type, 'collection');
    });

    test('drop removes a collection; dropping a missing one does not throw', async () => {
        const c = db().collection('to_drop');
        await c.insertMany([{ a: 1 }, { a: 2 }]);
        await c.createIndex({ a: 1 });
        assert.equal(await c.drop(), true);
        assert.ok(!(await collNames()).includes('to_drop'));
        assert.equal(await c.countDocuments(), 0);
        assert.equal(await c.drop(), true); // dropping a missing collection: ok, as MongoDB 7.0+
        // Raw command: ok: 1 (MongoDB 7.0+; older versions answered NamespaceNotFound 26).
        const res = await db().command({ drop: 'never_existed' });
        assert.equal(res.ok, 1);
        // A re-created collection starts empty, with only the _id index.
        await c.insertOne({ b: 1 });
        assert.deepEqual((await c.listIndexes().toArray()).map((i) => i.name), ['_id_']);
    });

    test('dropDatabase removes every collection of the database', async () => {
        const name = uniqueDbName('dropdb');
        const other = ctx.client.db(name);
        await other.collection('a').insertOne({ x: 1 });
        await other.collection('b').insertOne({ x: 2 });
        assert.ok((await dbNames()).includes(name));
        assert.equal(await other.dropDatabase(), true);
        assert.ok(!(await dbNames()).includes(name));
        assert.deepEqual(await collNames(name), []);
        assert.deepEqual(await other.collection('a').find().toArray(), []);
        // Other databases are untouched.
        await db().collection('survivor').insertOne({ s: 1 });
        assert.equal(await db().collection('survivor').countDocuments(), 1);
    });

    test('renameCollection moves documents and indexes', async () => {
        const src = db().collection('rn_src');
        await src.insertMany([{ _id: 1 }, { _id: 2 }]);
        await src.createIndex({ q: 1 });
        const dst = await src.rename('rn_dst');
        assert.equal(dst.collectionName, 'rn_dst');
        const names = await collNames();
        assert.ok(names.includes('rn_dst') && !names.includes('rn_src'), `${names}`);
        assert.deepEqual((await dst.find().sort({ _id: 1 }).toArray()).map((d) => d._id), [1, 2]);
        assert.ok((await dst.listIndexes().toArray()).some((i) => i.name === 'q_1'));

        await db().collection('rn_other').insertOne({ _id: 'o' });
        await assert.rejects(
            db().collection('rn_other').rename('rn_dst'),
            (err) => err instanceof MongoServerError && err.code === 48, // NamespaceExists
        );
        await db().collection('rn_other').rename('rn_dst', { dropTarget: true });
        assert.deepEqual(await db().collection('rn_dst').find().toArray(), [{ _id: 'o' }]);
        await assert.rejects(
            db().collection('rn_missing').rename('rn_whatever'),
            (err) => err instanceof MongoServerError && err.code === 26, // NamespaceNotFound
        );
    });

    test('unknown command is CommandNotFound (59)', async () => {
        await assert.rejects(db().command({ noSuchCommandXyz: 1 }), (err) => {
            assert.ok(err instanceof MongoServerError, `got ${err}`);
            assert.equal(err.code, 59);
            assert.equal(err.codeName, 'CommandNotFound');
            assert.match(err.message, /noSuchCommandXyz/);
            return true;
        });
        // atlasVersion must be unknown too, or mongosh believes it talks to Atlas.
        await assert.rejects(
            ctx.client.db('admin').command({ atlasVersion: 1 }),
            (err) => err.codeName === 'CommandNotFound',
        );
        // The connection is still fine.
        assert.equal((await db().command({ ping: 1 })).ok, 1);
    });

    test('invalid update operator is rejected (FailedToParse)', async () => {
        const c = db().collection('bad_update');
        await c.insertOne({ _id: 1, a: 1 });
        await assert.rejects(c.updateOne({ _id: 1 }, { $bogus: { a: 2 } }), (err) => {
            assert.ok(err instanceof MongoServerError, `got ${err}`);
            assert.equal(err.code, 9);
            return true;
        });
        // Conflicting paths in one update are rejected too.
        await assert.rejects(
            c.updateOne({ _id: 1 }, { $set: { a: 2 }, $inc: { a: 1 } }),
            MongoServerError,
        );
        assert.deepEqual(await c.findOne({ _id: 1 }), { _id: 1, a: 1 });
    });

    test('invalid query operator is rejected', async () => {
        const c = db().collection('bad_query');
        await c.insertOne({ a: 1 });
        await assert.rejects(c.find({ a: { $nosuchop: 1 } }).toArray(), (err) => {
            assert.ok(err instanceof MongoServerError);
            assert.equal(err.code, 2); // BadValue: unknown operator
            return true;
        });
    });

    test('find on a missing collection is empty, not an error', async () => {
        const c = db().collection('does_not_exist');
        assert.deepEqual(await c.find({ a: 1 }).toArray(), []);
        assert.equal(await c.findOne({}), null);
        assert.equal(await c.countDocuments(), 0);
        assert.deepEqual(await c.distinct('a'), []);
        const res = await c.deleteMany({});
        assert.equal(res.deletedCount, 0);
        const upd = await c.updateOne({ a: 1 }, { $set: { b: 1 } });
        assert.equal(upd.matchedCount, 0);
        assert.ok(!(await collNames()).includes('does_not_exist'));
    });

    test('insert creates database and collection implicitly', async () => {
        const name = uniqueDbName('implicit');
        await ctx.client.db(name).collection('made').insertOne({ _id: 1 });
        assert.deepEqual(await collNames(name), ['made']);
    });

    test('documents over 16 MiB are rejected', async () => {
        const c = db().collection('big');
        const big = { _id: 1, s: 'x'.repeat(16 * 1024 * 1024) };
        await assert.rejects(c.insertOne(big));
        assert.equal(await c.countDocuments({ _id: 1 }), 0);
        assert.equal((await db().command({ ping: 1 })).ok, 1);
    });
});
