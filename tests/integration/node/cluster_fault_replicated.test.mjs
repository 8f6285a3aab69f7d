// The fault suite of replicated shards (issue 43): `tessera up --shards 2 --replicas 3 --routers 2`
// under an application working through both routers — bank transfers in cross-shard transactions
// and unique inserts at w: "majority" (with TESSERA_FAULT_MIGRATIONS=1, a chunk of which
// migrates back and forth between the shards) — while a seeded nemesis, one fault at a time,
// kills with -9 and restarts shard and config primaries and secondaries, pauses members
// (SIGSTOP/SIGCONT), steps primaries down and cuts a member off from the rest of its set (a
// network partition: failpoint replDropMessagesFrom on both sides). Then, healed: the bank's
// total is unchanged and no balance went negative, every acknowledged insert is present exactly
// once, and the members of each shard hold the same documents. The run is bounded
// (TESSERA_FAULT_SECONDS, 20 s by default), its seed printed (TESSERA_FAULT_SEED replays one),
// and its history kept in the cluster's folder on failure (TESSERA_KEEP_DATA=1 keeps the folder).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { describeWithCluster, waitFor } from './cluster_harness.mjs';
import { rawCommand, rng as generator, tesseraBin } from './harness.mjs';

const REPLICAS = 3;
const SHARDS = 2;
const ACCOUNTS = 10;
const INITIAL_BALANCE = 100;
const seconds = Number(process.env.TESSERA_FAULT_SECONDS || 20);
const seed = Number(process.env.TESSERA_FAULT_SEED || Date.now() % 1000000);
// Migrations under the faults: off by default — with them the suite found an acknowledged insert
// lost (issue 43's note, tests/README.md "the fault suite"), open; set to reproduce.
const withMigrations = process.env.TESSERA_FAULT_MIGRATIONS === '1';
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

describeWithCluster(
    'fault suite: replicated shards and config service under kill -9, pauses and step-downs',
    (ctx) => {
        const c = () => ctx.cluster;
        const hello = (port) => rawCommand(port, { hello: 1, $db: 'admin' }, 2000);

        // Every member of the cluster: {name, port, argv} (argv read once from /proc, to start a
        // killed member again the way `tessera up` started it), and the processes this test
        // started (restarted members), stopped at the end.
        const members = [];
        const restarted = new Map(); // name → ChildProcess
        const pidOf = (m) => (restarted.has(m.name) ? restarted.get(m.name).pid : c().childPid(m.name));
        const isAlive = (pid) => {
            try {
                process.kill(pid, 0);
                return true;
            } catch {
                return false;
            }
        };

        async function primaryMember(group) {
            return waitFor(`a primary of ${group}`, async () => {
                for (const m of members.filter((x) => x.group === group)) {
                    const h = await hello(m.port).catch(() => null);
                    if (h?.isWritablePrimary) return m;
                }
                return null;
            }, { timeoutMs: 30000 });
        }
        async function restart(m) {
            const fd = fs.openSync(path.join(c().dbpath, `${m.name}.log`), 'a');
            const proc = spawn(tesseraBin, m.argv.slice(1), { stdio: ['ignore', fd, fd] });
            fs.closeSync(fd);
            restarted.set(m.name, proc);
            await waitFor(`${m.name} serving again`, async () => (await hello(m.port).catch(() => null))?.ok === 1, {
                timeoutMs: 30000,
            });
            await caughtUp(m);
        }
        // A member back from a fault has caught up with its primary as of now (writes go on
        // meanwhile), so that the next fault leaves a majority holding the log, as a nemesis
        // that respects the replication factor must.
        async function caughtUp(m) {
            const appliedIndexOf = async (port) => {
                const status = await rawCommand(port, { replSetGetStatus: 1, $db: 'admin' }, 5000);
                return status.members?.find((x) => x.self)?.logIndex ?? 0;
            };
            const target = await appliedIndexOf((await primaryMember(m.group)).port);
            await waitFor(`${m.name} caught up with its primary`, async () => (await appliedIndexOf(m.port)) >= target, {
                timeoutMs: 60000,
            });
        }
        // A network partition between `victim` and the rest of its set, both ways
        // (replDropMessagesFrom: each side drops the replication messages of the other; clients
        // still reach every member). `mode` 'alwaysOn' cuts, 'off' heals — on every member,
        // asked until each answers (a member may be restarting in place meanwhile).
        async function partition(victim, mode) {
            const hostOf = (m) => `127.0.0.1:${m.port}`;
            const others = members.filter((m) => m.group === victim.group && m !== victim);
            const sides = [[victim, others.map(hostOf)], ...others.map((o) => [o, [hostOf(victim)]])];
            for (const [m, from] of sides) {
                await waitFor(`${m.name} ${mode === 'off' ? 'healed' : 'cut off'}`, async () => {
                    const r = await rawCommand(m.port, {
                        configureFailPoint: 'replDropMessagesFrom',
                        mode,
                        data: { from },
                        $db: 'admin',
                    }, 5000).catch(() => null);
                    return r?.ok === 1;
                }, { timeoutMs: 30000 });
            }
        }

        ctx.test('an application through two routers keeps its invariants while members fail', async (t) => {
            const history = [];
            const note = (what) => history.push(`${new Date().toISOString()} ${what}`);
            t.after(async () => {
                for (const proc of restarted.values()) {
                    if (proc.exitCode === null && proc.signalCode === null) {
                        proc.kill('SIGCONT');
                        proc.kill('SIGTERM');
                        await new Promise((resolve) => proc.once('exit', resolve));
                    }
                }
            });
            for (let j = 0; j < REPLICAS; j++) {
                members.push({ name: `config.${j}`, group: 'configRS', port: c().configMemberPort(j) });
            }
            for (let i = 0; i < SHARDS; i++) {
                for (let j = 0; j < REPLICAS; j++) {
                    members.push({ name: `shard${i}.${j}`, group: `shard${i}`, port: c().memberPort(i, j) });
                }
            }
            for (const m of members) {
                m.argv = fs.readFileSync(`/proc/${c().childPid(m.name)}/cmdline`, 'utf8').split('\0').filter(Boolean);
            }

            // The data: accounts on both shards, and a collection of unique inserts.
            const client = await c().clientFor(`${c().clusterUri()}&retryWrites=true`);
            const admin = client.db('admin');
            await admin.command({ enableSharding: 'fault' });
            await admin.command({ shardCollection: 'fault.accounts', key: { _id: 1 } });
            await admin.command({ split: 'fault.accounts', middle: { _id: ACCOUNTS / 2 } });
            await admin.command({ moveChunk: 'fault.accounts', find: { _id: ACCOUNTS / 2 }, to: 'shard1' });
            await admin.command({ shardCollection: 'fault.inserts', key: { k: 1 } });
            await admin.command({ split: 'fault.inserts', middle: { k: 500 } });
            await admin.command({ moveChunk: 'fault.inserts', find: { k: 500 }, to: 'shard1' });
            const accounts = client.db('fault').collection('accounts');
            const inserts = client.db('fault').collection('inserts');
            await accounts.insertMany(
                [...Array(ACCOUNTS).keys()].map((id) => ({ _id: id, balance: INITIAL_BALANCE })),
                { writeConcern: { w: 'majority' } },
            );

            const rand = generator(seed);
            const pick = (list) => list[Math.floor(rand() * list.length)];
            let stop = false;
            const acked = [];
            const failures = [];
            let transfers = 0;
            // Writers: unique inserts (retryable), and transfers that never overdraw.
            const inserters = [0, 1].map(async (w) => {
                for (let k = 0; !stop; k++) {
                    const doc = { _id: `w${w}-${k}`, k: (w * 499 + k * 7) % 1000 };
                    try {
                        await inserts.insertOne(doc, { writeConcern: { w: 'majority' } });
                        acked.push(doc._id);
                    } catch (err) {
                        failures.push(`insert ${doc._id}: ${err.code} ${err.message}`);
                    }
                }
            });
            const movers = [0, 1].map(async (w) => {
                const own = generator(seed + 17 * (w + 1));
                while (!stop) {
                    const from = Math.floor(own() * ACCOUNTS);
                    const to = (from + 1 + Math.floor(own() * (ACCOUNTS - 1))) % ACCOUNTS;
                    const amount = 1 + Math.floor(own() * 20);
                    const session = client.startSession();
                    try {
                        await session.withTransaction(
                            async () => {
                                const source = await accounts.findOne({ _id: from }, { session });
                                if (source.balance < amount) return;
                                await accounts.updateOne({ _id: from }, { $inc: { balance: -amount } }, { session });
                                await accounts.updateOne({ _id: to }, { $inc: { balance: amount } }, { session });
                            },
                            { writeConcern: { w: 'majority' } },
                        );
                        transfers++;
                    } catch (err) {
                        failures.push(`transfer ${from}→${to}: ${err.code} ${err.message}`);
                    } finally {
                        await session.endSession().catch(() => {});
                    }
                }
            });

            // A migrator: the chunk [0, 250) of the inserts moves back and forth between the
            // shards under the inserters and the faults (a donor's or recipient's primary may die
            // mid-migration). A migration a fault interrupts may fail; acknowledged inserts
            // must not.
            const migrations = { done: 0, failed: 0 };
            const migrator = (async () => {
                if (!withMigrations) return;
                await admin.command({ split: 'fault.inserts', middle: { k: 250 } });
                for (let to = 1; !stop; to = 1 - to) {
                    try {
                        await admin.command({ moveChunk: 'fault.inserts', find: { k: 0 }, to: `shard${to}` });
                        migrations.done++;
                    } catch {
                        migrations.failed++;
                        // Next, the move away from wherever the chunk is now.
                        const chunk = await client
                            .db('config')
                            .collection('chunks')
                            .findOne({ 'min.k': 0 })
                            .catch(() => null);
                        to = chunk?.shard === 'shard1' ? 0 : 1;
                        to = 1 - to; // the loop flips it back
                        await delay(200);
                    }
                }
            })();

            // The nemesis: one fault at a time, healed before the next.
            const deadline = Date.now() + seconds * 1000;
            const faults = [];
            const kinds = () => {
                const n = {};
                for (const f of faults) n[f.split(' ')[0]] = (n[f.split(' ')[0]] || 0) + 1;
                return Object.entries(n).map(([k, v]) => `${k} ${v}`).join(', ');
            };
            const report = () =>
                `seed ${seed}, ${faults.length} faults (${kinds()}), ${acked.length} inserts, ` +
                `${transfers} transfers, ${migrations.done} migrations (${migrations.failed} failed)\n` +
                `faults: ${faults.join('; ')}\n` +
                `failures: ${failures.slice(0, 10).join('\n')}`;
            const historyPath = path.join(c().dbpath, 'fault-history.log');
            try {
                while (Date.now() < deadline && failures.length === 0) {
                    await delay(300 + Math.floor(rand() * 700));
                    const group = pick(['shard0', 'shard1', 'configRS']);
                    const primary = await primaryMember(group);
                    const victim = rand() < 0.6 ? primary : pick(members.filter((m) => m.group === group));
                    const kind = pick(['kill', 'kill', 'pause', 'stepDown', 'partition']);
                    const role = victim === primary ? 'primary' : 'secondary';
                    faults.push(`${kind} ${victim.name} (${role})`);
                    note(`${kind} ${victim.name} (${role})`);
                    if (kind === 'kill') {
                        process.kill(pidOf(victim), 'SIGKILL');
                        await waitFor(`${victim.name} gone`, () => !isAlive(pidOf(victim)));
                        await delay(200 + Math.floor(rand() * 800));
                        await restart(victim);
                    } else if (kind === 'pause') {
                        const pid = pidOf(victim);
                        process.kill(pid, 'SIGSTOP');
                        await delay(500 + Math.floor(rand() * 1500));
                        process.kill(pid, 'SIGCONT');
                    } else if (kind === 'partition') {
                        await partition(victim, 'alwaysOn');
                        await delay(800 + Math.floor(rand() * 1700));
                        await partition(victim, 'off');
                        await caughtUp(victim);
                    } else {
                        await rawCommand(victim.port, { replSetStepDown: 10, $db: 'admin' }, 15000).catch(() => null);
                    }
                    note(`healed ${victim.name}`);
                    // Every group has a primary again before the next fault.
                    for (const g of ['configRS', 'shard0', 'shard1']) await primaryMember(g);
                }
            } finally {
                // Writers see the healed cluster for a moment, then stop.
                await delay(1000);
                stop = true;
                await Promise.all([...inserters, ...movers, migrator]);
                fs.writeFileSync(historyPath, `${report()}\n${history.join('\n')}\n`);
            }
            t.diagnostic(report().split('\n')[0]);
            assert.deepEqual(failures, [], `${report()}\nhistory: ${historyPath}`);
            assert.ok(faults.length > 0, 'the nemesis acted');

            // The bank: the total is constant, no balance negative.
            const balances = await accounts.find({}, { readConcern: { level: 'majority' } }).toArray();
            assert.equal(balances.length, ACCOUNTS);
            assert.equal(balances.reduce((sum, a) => sum + a.balance, 0), ACCOUNTS * INITIAL_BALANCE, report());
            assert.ok(balances.every((a) => a.balance >= 0), JSON.stringify(balances));
            // Every acknowledged insert, once.
            assert.equal(await inserts.countDocuments({}), acked.length, report());
            for (let at = 0; at < acked.length; at += 500) {
                const ids = acked.slice(at, at + 500);
                assert.equal(await inserts.countDocuments({ _id: { $in: ids } }), ids.length);
            }
            // The members of each shard converge on the same documents.
            for (let i = 0; i < SHARDS; i++) {
                const onPrimary = await rawCommand((await primaryMember(`shard${i}`)).port, {
                    count: 'inserts',
                    $db: 'fault',
                });
                for (const m of members.filter((x) => x.group === `shard${i}`)) {
                    await waitFor(`${m.name} holding what its primary holds`, async () => {
                        const n = await rawCommand(m.port, {
                            count: 'inserts',
                            $db: 'fault',
                            $readPreference: { mode: 'secondaryPreferred' },
                        }).catch(() => null);
                        return n?.n === onPrimary.n;
                    }, { timeoutMs: 30000 });
                }
            }
        });
    },
    { shards: SHARDS, routers: 2, replicas: REPLICAS },
);
