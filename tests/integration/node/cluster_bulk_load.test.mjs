// Bulk loads through a router (issue 40): the Node driver's insertMany of 100,000 documents (one
// OP_MSG with a document sequence per 100,000 statements, as every driver and mongoimport send)
// into unsharded, ranged and hashed collections, ordered and unordered, each with a duplicate
// `_id` in the middle. The router once retargeted every pending statement in every round
// (quadratic: 10,000 hashed documents took 25 s) and sent an unsharded batch as one command over
// 16 MB (BSONObjectTooLarge). Now each batch is cut into sub-commands within MongoDB's limits,
// with the client's statement indexes in errors and as the shards' stmtIds — checked here by a
// retryable insertMany whose sub-command a shard drops on the floor once: the driver's retry
// must apply every document exactly once.
import assert from 'node:assert/strict';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster } from './cluster_harness.mjs';

const N = 100000;
const DUP_AT = 50000;
const pad = 'x'.repeat(120); // ≈ 160-byte documents: 100,000 of them are over 16 MB

/**
 * The documents 0..N-1, with document DUP_AT repeating document 10 (its `_id` and its shard key:
 * `_id` is unique per shard only, so the duplicate must reach the original's shard).
 */
function docsWithDuplicate() {
    const docs = Array.from({ length: N }, (_, i) => ({ _id: i, k: i, pad }));
    docs[DUP_AT] = { _id: 10, k: 10, pad };
    return docs;
}

describeWithCluster('bulk loads through a router', (ctx) => {
    const test = ctx.test;
    const c = () => ctx.cluster;
    const admin = async (cmd) => (await c().router()).db('admin').command(cmd);

    async function makeCollection(kind) {
        const dbName = uniqueDbName(`bulk${kind}`);
        const ns = `${dbName}.c`;
        if (kind === 'ranged') {
            assert.equal((await admin({ enableSharding: dbName })).ok, 1);
            assert.equal((await admin({ shardCollection: ns, key: { k: 1 } })).ok, 1);
            assert.equal((await admin({ split: ns, middle: { k: N / 2 } })).ok, 1);
            const { chunks } = await c().placement(ns);
            const shards = (await admin({ listShards: 1 })).shards.map((s) => s._id);
            const upper = chunks.find((ch) => ch.min.k === N / 2);
            const to = shards.find((s) => s !== upper.shard);
            assert.equal((await admin({ moveRange: ns, min: { k: N / 2 }, toShard: to })).ok, 1);
        } else if (kind === 'hashed') {
            assert.equal((await admin({ enableSharding: dbName })).ok, 1);
            assert.equal((await admin({ shardCollection: ns, key: { _id: 'hashed' } })).ok, 1);
        } else {
            await (await c().router()).db(dbName).createCollection('c');
        }
        return { ns, coll: (await c().router()).db(dbName).collection('c') };
    }

    for (const kind of ['unsharded', 'ranged', 'hashed']) {
        for (const ordered of [true, false]) {
            test(`insertMany of ${N} documents into a ${kind} collection, ${ordered ? 'ordered' : 'unordered'}, a duplicate in the middle`, async () => {
                const { ns, coll } = await makeCollection(kind);
                const err = await coll.insertMany(docsWithDuplicate(), { ordered }).then(
                    () => assert.fail('the duplicate _id must fail'), (e) => e);
                assert.equal(err.code, 11000, String(err));
                assert.equal(err.writeErrors.length, 1, 'one write error');
                assert.equal(err.writeErrors[0].index, DUP_AT, 'the client\'s index of the duplicate');
                assert.equal(err.writeErrors[0].code, 11000);
                const expected = ordered ? DUP_AT : N - 1;
                assert.equal(err.result.insertedCount, expected);
                assert.equal(await coll.countDocuments({}), expected);
                // Ordered: nothing after the duplicate; unordered: everything else.
                assert.equal(await coll.countDocuments({ _id: { $gt: DUP_AT } }), ordered ? 0 : N - DUP_AT - 1);
                if (kind !== 'unsharded') await c().checkConsistency(ns, expected);
            });
        }
    }

    // A shard closes the connection of one insert sub-command (failCommand, once): the router
    // answers the client's command with a retryable error, the driver retries it with the same
    // txnNumber, and the shards skip the statements they applied before (their stmtIds are the
    // client's indexes, across every piece of the batch).
    for (const kind of ['unsharded', 'hashed']) {
        test(`a retried bulk insert into a ${kind} collection applies each document once`, async () => {
            const { ns, coll } = await makeCollection(kind);
            const primary = (await (await c().router()).db('config').collection('databases')
                .findOne({ _id: ns.split('.')[0] })).primary;
            const shard = await c().shardByName(primary);
            await shard.db('admin').command({
                configureFailPoint: 'failCommand',
                mode: { times: 1 },
                data: { failCommands: ['insert'], closeConnection: true },
            });
            let fired;
            try {
                const docs = Array.from({ length: N }, (_, i) => ({ _id: i, k: i, pad }));
                const result = await coll.insertMany(docs, { ordered: kind === 'hashed' });
                assert.equal(result.insertedCount, N);
            } finally {
                fired = await shard.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
            }
            assert.equal(fired.count, 1, 'one sub-command was dropped: the driver retried');
            assert.equal(await coll.countDocuments({}), N);
            if (kind !== 'unsharded') await c().checkConsistency(ns, N);
        });
    }
}, { shards: 2, routers: 1 });
