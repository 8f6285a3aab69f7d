// The docs check (tests/README.md): every page of docs/ (and README.md) that shows an example runs
// it, so the pages cannot rot. An example is a fenced block whose info string is `js example`: a
// mongosh script, run against the router of a real 2-shard cluster with a database of its own
// (`db`), that throws — through `check(cond, what)` or any error — when what the page says is not
// true. Every page of docs/ but its index must have at least one.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mongosh } from './harness.mjs';
import { describeWithCluster } from './cluster_harness.mjs';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** Every markdown page the check covers, relative to the repository. */
function pages() {
    const out = ['README.md'];
    const walk = (dir) => {
        for (const e of fs.readdirSync(path.join(repoRoot, dir), { withFileTypes: true })) {
            const rel = path.join(dir, e.name);
            if (e.isDirectory()) walk(rel);
            else if (e.name.endsWith('.md')) out.push(rel);
        }
    };
    walk('docs');
    return out.sort();
}

/** The `js example` blocks of a page, with the line each starts on. */
export function examplesOf(text) {
    const blocks = [];
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
        if (!/^```js example\s*$/.test(lines[i])) continue;
        const start = i + 1;
        let j = start;
        while (j < lines.length && !/^```\s*$/.test(lines[j])) j++;
        assert.ok(j < lines.length, `an example block opened at line ${i + 1} is never closed`);
        blocks.push({ line: start, code: lines.slice(start, j).join('\n') });
        i = j;
    }
    return blocks;
}

// What every example may use: check(), and the shard ids of the cluster.
const prelude = `
function check(cond, what) { if (!cond) throw new Error('docs example check failed: ' + what); }
const shardIds = db.getSiblingDB('config').shards.find().sort({_id: 1}).toArray().map((s) => s._id);
`;

describeWithCluster('docs examples', (ctx) => {
    const test = ctx.test;

    test('the examples are found, and every docs page has one', () => {
        const missing = pages().filter((p) => p.startsWith('docs/') && !p.endsWith('docs/README.md') &&
            examplesOf(fs.readFileSync(path.join(repoRoot, p), 'utf8')).length === 0);
        assert.deepEqual(missing, [], 'pages of docs/ without a `js example` block');
        assert.deepEqual(examplesOf('```js example\nx\n```\ntext\n```js\ny\n```'), [{ line: 1, code: 'x' }]);
    });

    for (const page of pages()) {
        const examples = examplesOf(fs.readFileSync(path.join(repoRoot, page), 'utf8'));
        examples.forEach((ex, i) => {
            test(`${page}:${ex.line} runs`, async () => {
                const dbName = `docs_${page.replace(/[^A-Za-z0-9]+/g, '_')}_${i}`.slice(0, 60);
                const script = `${prelude}\n${ex.code}\nprint('EXAMPLE OK');`;
                const out = await mongosh(ctx.cluster.routerUri(0, dbName), script, 120000);
                assert.ok(out.code === 0 && out.stdout.includes('EXAMPLE OK'),
                    `${page}:${ex.line} failed (exit ${out.code})\nstdout:\n${out.stdout}\nstderr:\n${out.stderr}`);
            });
        });
    }
}, { shards: 2, routers: 1 });
