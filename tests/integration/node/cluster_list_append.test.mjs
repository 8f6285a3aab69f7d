// A list-append workload over two shards through two routers, checked for the anomalies snapshot
// isolation forbids (list_append_checker.mjs: G0, G1a, G1c, read skew, lost or partial commits).
// Writers run transactions of two to four operations — read a key's list, or append a unique
// value to it — on keys of both shards; readers run read-only transactions over one key of each
// shard (where read skew would show); meanwhile one shard's keys migrate back and forth. Every
// outcome is recorded; at the end the final lists give each key's order of appends, and the
// whole history must be free of anomalies.
import assert from 'node:assert/strict';
import { uniqueDbName } from './harness.mjs';
import { describeWithCluster } from './cluster_harness.mjs';
import { checkListAppend } from './list_append_checker.mjs';

const kKeys = 6; // 0-2 on one shard, 3-5 on the other
const kWriters = 6;
const kReaders = 2;
const kTxnsPerWriter = 50;

describeWithCluster(
    'list-append transactions over 2 shards (cycle checker)',
    (ctx) => {
        const test = ctx.test;
        const dbName = uniqueDbName('listappend');
        const ns = `${dbName}.lists`;
        const admin = async (cmd) => (await ctx.cluster.router(0)).db('admin').command(cmd);

        test('no G0, G1a, G1c, read skew, lost or partial commit', { timeout: 240000 }, async () => {
            await admin({ enableSharding: dbName });
            await admin({ shardCollection: ns, key: { _id: 1 } });
            const lists = (await ctx.cluster.router(0)).db(dbName).collection('lists');
            await lists.insertMany([...Array(kKeys).keys()].map((k) => ({ _id: k, list: [] })));
            await admin({ split: ns, middle: { _id: 3 } });
            const shards = (await (await ctx.cluster.router(0)).db('config').collection('shards').find().toArray()).map((s) => s._id);
            const { chunks } = await ctx.cluster.placement(ns);
            const other = shards.find((s) => s !== chunks[0].shard);
            await admin({ moveChunk: ns, find: { _id: 3 }, to: other });
            assert.equal(new Set((await ctx.cluster.placement(ns)).chunks.map((c) => c.shard)).size, 2);
            // Each router's clock has seen the shards' (a router draws a transaction's read
            // timestamp from its own clock; without causal consistency between clients, one that
            // never talked to a shard may read it as of before the inserts, which snapshot
            // isolation allows but this history's keys must exist in).
            for (const r of [0, 1]) await (await ctx.cluster.router(r)).db(dbName).collection('lists').find().toArray();

            const history = [];
            let nextValue = 1;
            const rand = (n) => Math.floor(Math.random() * n);
            // Runs `ops` in one transaction on router `r`; records what it read and its outcome.
            async function run(r, ops, id) {
                const client = await ctx.cluster.router(r);
                const c = client.db(dbName).collection('lists');
                const session = client.startSession();
                const done = [];
                let status = 'ok';
                try {
                    session.startTransaction({ readConcern: { level: 'snapshot' }, writeConcern: { w: 'majority' } });
                    for (const op of ops) {
                        if (op.f === 'append') {
                            await c.updateOne({ _id: op.key }, { $push: { list: op.value } }, { session });
                            done.push(op);
                        } else {
                            const doc = await c.findOne({ _id: op.key }, { session });
                            assert.ok(doc, `transaction ${id} found no document ${op.key}`);
                            done.push({ f: 'read', key: op.key, value: doc.list });
                        }
                    }
                    await session.commitTransaction();
                } catch (e) {
                    // Appends it made may or may not have committed only when the commit's
                    // outcome is unknown; any other error ended it without a commit.
                    status = e.hasErrorLabel?.('UnknownTransactionCommitResult') ? 'unknown' : 'aborted';
                    if (status === 'aborted' && !e.hasErrorLabel?.('TransientTransactionError')) {
                        throw new Error(`transaction ${id} failed: ${e}`);
                    }
                    await session.abortTransaction().catch(() => {});
                    // Appends it never sent are not part of it.
                    for (const op of ops) if (op.f === 'append' && !done.includes(op)) done.push(op);
                } finally {
                    await session.endSession();
                }
                history.push({ id, status, ops: done });
            }

            const writers = [...Array(kWriters).keys()].map(async (w) => {
                for (let i = 0; i < kTxnsPerWriter; i++) {
                    const ops = [...Array(2 + rand(3))].map(() =>
                        Math.random() < 0.5 ? { f: 'append', key: rand(kKeys), value: nextValue++ } : { f: 'read', key: rand(kKeys) },
                    );
                    await run(w % 2, ops, `w${w}.${i}`);
                }
            });
            let writing = true;
            const readers = [...Array(kReaders).keys()].map(async (r) => {
                for (let i = 0; writing; i++) {
                    await run(r % 2, [{ f: 'read', key: rand(3) }, { f: 'read', key: 3 + rand(3) }], `r${r}.${i}`);
                }
            });
            // Meanwhile keys 3-5 migrate back and forth: a transaction that wrote them on the
            // donor must not commit there afterwards (its appends would be lost), and one that
            // reads them on the recipient must not read before the documents arrived.
            let moves = 0;
            const mover = (async () => {
                const owners = [chunks[0].shard, other];
                while (writing) {
                    await new Promise((r) => setTimeout(r, 500));
                    if (!writing) break;
                    // The previous move's donor may still be deleting the range (a transaction
                    // it aborted held a document a moment longer): an operator retries.
                    for (let attempt = 0; ; attempt++) {
                        try {
                            await admin({ moveChunk: ns, find: { _id: 3 }, to: owners[moves % 2] });
                            break;
                        } catch (e) {
                            if (e.code !== 117 || attempt >= 50) throw e;
                            await new Promise((r) => setTimeout(r, 100));
                        }
                    }
                    moves++;
                }
            })();
            await Promise.all(writers);
            writing = false;
            await Promise.all([...readers, mover]);

            const final = new Map();
            for (const doc of await lists.find().toArray()) final.set(doc._id, doc.list);
            const result = checkListAppend(history, final);
            const counts = history.reduce((m, t) => ({ ...m, [t.status]: (m[t.status] ?? 0) + 1 }), {});
            console.log(`list-append: ${history.length} transactions ${JSON.stringify(counts)}, ${result.committed} committed, edges ${JSON.stringify(result.edges)}, ${moves} migrations`);
            assert.deepEqual(result.anomalies.slice(0, 5), [], `${result.anomalies.length} anomalies`);
            // A history worth checking: enough commits and every kind of dependency.
            assert.ok(result.committed >= kWriters * kTxnsPerWriter / 4, `only ${result.committed} committed`);
            assert.ok(result.edges.ww > 0 && result.edges.wr > 0 && result.edges.rw > 0, JSON.stringify(result.edges));
            await ctx.cluster.checkConsistency(ns, kKeys);
        });
    },
    { shards: 2, routers: 2 },
);
