// Shards and the config service as replica sets (`tessera up --shards 2 --replicas 3`), used
// through a router as an application uses a sharded cluster: the router and the config service
// reach each shard at its primary and follow its elections; `kill -9` of a shard's primary under
// writers costs them no error and loses nothing acknowledged; rs.stepDown() of a shard's primary
// restarts that member so that its shard role reloads from storage, and a transaction across both
// shards commits once; `kill -9` of the config service's primary stops no write, and placement
// changes go on with its successor.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { describeWithCluster, waitFor } from './cluster_harness.mjs';
import { freePort, rawCommand, tesseraBin } from './harness.mjs';

const REPLICAS = 3;

describeWithCluster(
    'shards and the config service as three-member replica sets (tessera up --replicas 3)',
    (ctx) => {
        const c = () => ctx.cluster;
        const hello = (port) => rawCommand(port, { hello: 1, $db: 'admin' }, 3000);
        const memberHost = (i, j) => `127.0.0.1:${c().memberPort(i, j)}`;
        const setString = (i) =>
            `shard${i}/${[...Array(REPLICAS).keys()].map((j) => memberHost(i, j)).join(',')}`;
        // The member of shard i that is its writable primary.
        const primaryOf = (i, exclude = -1) =>
            waitFor(`a primary of shard${i}`, async () => {
                for (let j = 0; j < REPLICAS; j++) {
                    if (j === exclude) continue;
                    const h = await hello(c().memberPort(i, j)).catch(() => null);
                    if (h?.isWritablePrimary) return { j, port: c().memberPort(i, j) };
                }
                return null;
            });
        const countOn = (port, db, coll) =>
            rawCommand(port, { count: coll, $db: db, $readPreference: { mode: 'secondaryPreferred' } }, 5000);

        // Writers through the router, each inserting its own _ids with retryable writes at
        // w: majority until told to stop; the longest time no write was acknowledged.
        function startWriters(coll, n, tag) {
            const state = { acked: [], errors: [], stop: false, longestPauseMs: 0 };
            let lastAck = Date.now();
            state.done = Promise.all(
                [...Array(n).keys()].map(async (w) => {
                    for (let k = 0; !state.stop; k++) {
                        const doc = { _id: `${tag}-${w}-${k}`, k: (w * 7919 + k * 104729) % 10000 };
                        try {
                            await coll.insertOne(doc, { writeConcern: { w: 'majority' } });
                            const now = Date.now();
                            state.longestPauseMs = Math.max(state.longestPauseMs, now - lastAck);
                            lastAck = now;
                            state.acked.push(doc._id);
                        } catch (err) {
                            state.errors.push(`${doc._id}: ${err.code} ${err.message}`);
                        }
                    }
                }),
            );
            return state;
        }
        const ackedAtLeast = (state, n) =>
            waitFor(`${n} acknowledged writes`, () => state.acked.length >= n || state.errors.length > 0, {
                timeoutMs: 60000,
            });

        let coll;

        ctx.test('listShards and every member name each shard as its replica set', async () => {
            const admin = (await c().router()).db('admin');
            const { shards } = await admin.command({ listShards: 1 });
            assert.deepEqual(
                shards.map((s) => [s._id, s.host]),
                [0, 1].map((i) => [`shard${i}`, setString(i)]),
            );
            for (let i = 0; i < 2; i++) {
                const p = await primaryOf(i);
                for (let j = 0; j < REPLICAS; j++) {
                    const h = await hello(c().memberPort(i, j));
                    assert.equal(h.setName, `shard${i}`);
                    assert.equal(h.hosts.length, REPLICAS);
                    assert.equal(h.isWritablePrimary, j === p.j, JSON.stringify(h));
                }
            }
            // A member of a set cannot be added as a shard of its own, nor under another set's
            // name — refused at once, not after waiting for a primary that cannot exist.
            await assert.rejects(admin.command({ addShard: memberHost(0, 0) }), /is a member of replica set shard0/);
            const started = Date.now();
            await assert.rejects(
                admin.command({ addShard: `shard7/${memberHost(1, 0)}` }),
                /127\.0\.0\.1:\d+ is a member of replica set shard1, not of replica set shard7/,
            );
            assert.ok(Date.now() - started < 10000, `refused after ${Date.now() - started} ms`);

            // A collection with ranges on both sets.
            const router = await c().router();
            await admin.command({ enableSharding: 'rsapp' });
            await admin.command({ shardCollection: 'rsapp.orders', key: { k: 1 } });
            await admin.command({ split: 'rsapp.orders', middle: { k: 5000 } });
            await admin.command({ moveChunk: 'rsapp.orders', find: { k: 5000 }, to: 'shard1' });
            coll = router.db('rsapp').collection('orders');
        });

        ctx.test(
            'kill -9 of a shard primary under writers: no error, nothing acknowledged lost, the member comes back as a secondary',
            async (t) => {
                assert.ok(coll, 'the previous test created the collection');
                const victim = await primaryOf(0);
                const pid = c().childPid(`shard0.${victim.j}`);
                const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
                const writers = startWriters(coll, 4, 'kill');
                await ackedAtLeast(writers, 200);
                process.kill(pid, 'SIGKILL');
                const before = writers.acked.length;
                const next = await primaryOf(0, victim.j);
                await ackedAtLeast(writers, before + 300);
                writers.stop = true;
                await writers.done;
                assert.deepEqual(writers.errors, []);
                t.diagnostic(
                    `kill -9 of shard0's primary: ${writers.acked.length} writes acknowledged, ` +
                        `new primary shard0.${next.j}, longest pause ${writers.longestPauseMs} ms`,
                );
                // Every acknowledged write is there exactly once.
                assert.equal(await coll.countDocuments({ _id: /^kill-/ }), writers.acked.length);
                for (let at = 0; at < writers.acked.length; at += 500) {
                    const ids = writers.acked.slice(at, at + 500);
                    assert.equal(await coll.countDocuments({ _id: { $in: ids } }), ids.length);
                }

                // The killed member comes back from its files as a secondary and catches up.
                const logPath = path.join(c().dbpath, `shard0.${victim.j}.log`);
                const fd = fs.openSync(logPath, 'a');
                const restarted = spawn(tesseraBin, argv.slice(1), { stdio: ['ignore', fd, fd] });
                fs.closeSync(fd);
                const exited = new Promise((resolve) => restarted.on('exit', resolve));
                t.after(async () => {
                    restarted.kill('SIGTERM');
                    await exited;
                });
                const onPrimary = await countOn(next.port, 'rsapp', 'orders');
                await waitFor('the restarted member caught up as a secondary', async () => {
                    const h = await hello(victim.port).catch(() => null);
                    if (!h?.secondary) return false;
                    const n = await countOn(victim.port, 'rsapp', 'orders');
                    return n.ok === 1 && n.n === onPrimary.n;
                }, { timeoutMs: 60000 });
            },
        );

        ctx.test(
            'rs.stepDown of a shard primary: the member restarts to reload its role; writes and a transaction across both shards go on',
            async (t) => {
                assert.ok(coll, 'the first test created the collection');
                const router = await c().router();
                await coll.insertMany([
                    { _id: 'low', k: 10, n: 0 },
                    { _id: 'high', k: 9000, n: 0 },
                ]);
                const old = await primaryOf(1);
                const pid = c().childPid(`shard1.${old.j}`);
                const logPath = path.join(c().dbpath, `shard1.${old.j}.log`);
                const restartsBefore = (fs.readFileSync(logPath, 'utf8').match(/Restarting after stepping down/g) || []).length;
                const writers = startWriters(coll, 2, 'stepdown');
                await ackedAtLeast(writers, 50);
                const reply = await rawCommand(old.port, { replSetStepDown: 10, $db: 'admin' }, 30000).catch((err) => ({
                    closed: String(err),
                }));
                assert.ok(reply.ok === 1 || reply.closed, JSON.stringify(reply));
                const next = await primaryOf(1, old.j);

                // One transaction over both shards, retried by withTransaction if the step-down
                // interrupted it; it applies once.
                const session = router.startSession();
                try {
                    await session.withTransaction(async () => {
                        await coll.updateOne({ _id: 'low' }, { $inc: { n: 1 } }, { session });
                        await coll.updateOne({ _id: 'high' }, { $inc: { n: 1 } }, { session });
                    });
                } finally {
                    await session.endSession();
                }
                const before = writers.acked.length;
                await ackedAtLeast(writers, before + 100);
                writers.stop = true;
                await writers.done;
                assert.deepEqual(writers.errors, []);
                const both = await coll.find({ _id: { $in: ['low', 'high'] } }).sort({ _id: 1 }).toArray();
                assert.deepEqual(both.map((d) => d.n), [1, 1]);
                assert.equal(await coll.countDocuments({ _id: /^stepdown-/ }), writers.acked.length);

                // The stepped-down member restarted in place (same pid) and follows the new primary.
                await waitFor('the stepped-down member back as a secondary', async () => {
                    const h = await hello(old.port).catch(() => null);
                    return h?.secondary === true && h.primary === memberHost(1, next.j);
                }, { timeoutMs: 60000 });
                process.kill(pid, 0); // throws if the process is gone
                const restarts = (fs.readFileSync(logPath, 'utf8').match(/Restarting after stepping down/g) || []).length;
                assert.equal(restarts, restartsBefore + 1);
                t.diagnostic(`shard1.${old.j} stepped down and restarted; shard1.${next.j} leads`);
            },
        );

        ctx.test(
            "kill -9 of the config service's primary: writes go on, and placement changes resume on the new config primary",
            async (t) => {
                assert.ok(coll, 'the first test created the collection');
                const admin = (await c().router()).db('admin');
                const configPrimary = () =>
                    waitFor('a primary of the config service', async () => {
                        for (let j = 0; j < REPLICAS; j++) {
                            const h = await hello(c().configMemberPort(j)).catch(() => null);
                            if (h?.isWritablePrimary) return { j, port: c().configMemberPort(j) };
                        }
                        return null;
                    });
                const old = await configPrimary();
                assert.equal((await hello(old.port)).setName, 'configRS');
                const writers = startWriters(coll, 2, 'config');
                await ackedAtLeast(writers, 50);
                process.kill(c().childPid(`config.${old.j}`), 'SIGKILL');
                const before = writers.acked.length;
                const next = await waitFor('another config primary', async () => {
                    const p = await configPrimary();
                    return p.j !== old.j ? p : null;
                });
                // A placement change goes to the new primary (the router follows the config
                // service's election as it follows a shard's).
                await admin.command({ split: 'rsapp.orders', middle: { k: 2500 } });
                await admin.command({ moveChunk: 'rsapp.orders', find: { k: 2500 }, to: 'shard1' });
                await ackedAtLeast(writers, before + 100);
                writers.stop = true;
                await writers.done;
                assert.deepEqual(writers.errors, []);
                t.diagnostic(
                    `config.${old.j} killed, config.${next.j} leads; writes: longest pause ${writers.longestPauseMs} ms`,
                );
                const chunks = await (await c().router())
                    .db('config')
                    .collection('chunks')
                    .find({}, { projection: { min: 1, shard: 1 } })
                    .toArray();
                assert.ok(
                    chunks.some((ch) => ch.min.k === 2500 && ch.shard === 'shard1'),
                    JSON.stringify(chunks),
                );
                assert.equal(await coll.countDocuments({ _id: /^config-/ }), writers.acked.length);
            },
        );

        ctx.test(
            "with the config service's majority gone, a new router starts and serves the data; placement changes fail and say so",
            async (t) => {
                assert.ok(coll, 'the first test created the collection');
                const argvOf = (pid) =>
                    fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
                const alive = (j) => {
                    try {
                        process.kill(c().childPid(`config.${j}`), 0);
                        return true;
                    } catch {
                        return false;
                    }
                };
                // Every config member's command line (a member killed earlier: a live one's with
                // its own port and folder), then all but one of them killed.
                const live = [...Array(REPLICAS).keys()].filter(alive);
                assert.ok(live.length >= 2, 'two config members or more are running');
                const template = argvOf(c().childPid(`config.${live[0]}`));
                const argvOfMember = (j) =>
                    template.map((a, k) =>
                        template[k - 1] === '--port'
                            ? String(c().configMemberPort(j))
                            : template[k - 1] === '--dbpath'
                              ? a.replace(/config\.\d+$/, `config.${j}`)
                              : a,
                    );
                const survivor = live[live.length - 1];
                for (const j of live.slice(0, -1)) process.kill(c().childPid(`config.${j}`), 'SIGKILL');
                // Alone, the survivor does not lead (once it noticed, if it led).
                await waitFor(`config.${survivor} not writable`, async () => {
                    const h = await hello(c().configMemberPort(survivor)).catch(() => null);
                    return h && !h.isWritablePrimary;
                });
                const restarted = [];
                t.after(() => {
                    for (const p of restarted) p.kill('SIGTERM');
                });
                const expected = await coll.countDocuments({});

                // A router that never saw the config service's primary.
                const port = await freePort();
                const routerArgv = argvOf(c().childPid('router0')).map((a, k, all) =>
                    all[k - 1] === '--port' ? String(port) : a,
                );
                const logFd = fs.openSync(path.join(c().dbpath, 'router-new.log'), 'a');
                const router = spawn(tesseraBin, routerArgv.slice(1), { stdio: ['ignore', logFd, logFd] });
                fs.closeSync(logFd);
                restarted.push(router);
                const client = await c().clientFor(`mongodb://127.0.0.1:${port}/?retryWrites=true`);
                const orders = client.db('rsapp').collection('orders');
                assert.equal(await orders.countDocuments({}), expected);
                await orders.insertMany(
                    [...Array(20).keys()].map((i) => ({ _id: `no-config-${i}`, k: i * 250 })),
                    { writeConcern: { w: 'majority' } },
                );
                assert.equal(await orders.countDocuments({ _id: /^no-config-/ }), 20);
                const placed = await client.db('admin').command({ listShards: 1 });
                assert.equal(placed.shards.length, 2);
                // A placement change needs the config service's primary: it waits for one, then
                // fails naming the set.
                const refused = await client
                    .db('admin')
                    .command({ split: 'rsapp.orders', middle: { k: 1250 } })
                    .then(() => null, (err) => err);
                assert.ok(refused, 'a split without a config primary fails');
                assert.equal(refused.code, 133, refused.message);
                assert.match(refused.message, /configRS/);
                t.diagnostic(`config members ${live.slice(0, -1)} killed, config.${survivor} alone`);

                // The config service back: placement changes resume, through the new router too.
                for (let j = 0; j < REPLICAS; j++) {
                    if (j === survivor) continue;
                    const fd = fs.openSync(path.join(c().dbpath, `config.${j}.log`), 'a');
                    restarted.push(spawn(tesseraBin, argvOfMember(j).slice(1), { stdio: ['ignore', fd, fd] }));
                    fs.closeSync(fd);
                }
                await waitFor('a split once the config service has a primary again', async () =>
                    client.db('admin').command({ split: 'rsapp.orders', middle: { k: 1250 } }).then(
                        () => true,
                        () => false,
                    ), { timeoutMs: 60000 });
                await client.close();
            },
        );
    },
    { shards: 2, routers: 1, replicas: REPLICAS },
);
