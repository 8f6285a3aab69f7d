#!/usr/bin/env node
// MongoDB unified-format spec test runner for Tessera.
//
//   node tests/spec/run.mjs --uri mongodb://127.0.0.1:PORT/?directConnection=true \
//        --profile single-8.0 [--timeout MS] [--allow-failures] [--list-failures FILE] \
//        [--known-failures FILE] [--filter REGEX] [--verbose] PATH...
//
// --known-failures FILE lists tests that are known to fail, one
// `<dir/file> :: <test> => <text of its failure>` per line (`#` comments allowed). A listed test
// that fails with a reason containing that text is reported as KNOWN and not counted as a failure,
// so CI stays red only for regressions. An entry that no longer holds fails the run: a listed test
// that passes (FIXED: remove it), one that fails for another reason (CHANGED: the list must say
// why it fails), and an entry that matches no test that ran (STALE).
//
// PATHs are test files or directories (default: <repo>/../shared/spec-tests/crud). Test files are
// read where they are; they are never copied into the repository. runOnRequirements are evaluated
// against the pinned --profile, not against what the server reports.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROFILES } from './requirements.mjs';
import { Runner, collectFiles } from './runner.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DEFAULT_PATH = path.join(REPO, '..', 'shared', 'spec-tests', 'crud');

function usage(msg) {
    if (msg) console.error(`run.mjs: ${msg}`);
    console.error(
        'usage: node tests/spec/run.mjs --uri URI [--profile single-8.0|replicaset-8.0|sharded-8.0] [--timeout MS]\n' +
            '       [--allow-failures] [--list-failures FILE] [--filter REGEX] [--verbose] PATH...'
    );
    process.exit(2);
}

function parseArgs(argv) {
    const opts = {
        uri: process.env.TESSERA_URI,
        profile: 'single-8.0',
        timeoutMs: 10000,
        allowFailures: false,
        listFailures: null,
        knownFailures: null,
        filter: null,
        verbose: false,
        paths: [],
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const value = () => {
            if (i + 1 >= argv.length) usage(`${a} needs a value`);
            return argv[++i];
        };
        switch (a) {
            case '--uri':
                opts.uri = value();
                break;
            case '--profile':
                opts.profile = value();
                break;
            case '--timeout':
                opts.timeoutMs = Number(value());
                break;
            case '--allow-failures':
                opts.allowFailures = true;
                break;
            case '--list-failures':
                opts.listFailures = value();
                break;
            case '--known-failures':
                opts.knownFailures = value();
                break;
            case '--filter':
                opts.filter = new RegExp(value());
                break;
            case '-v':
            case '--verbose':
                opts.verbose = true;
                break;
            case '-h':
            case '--help':
                usage();
                break;
            default:
                if (a.startsWith('--')) usage(`unknown option ${a}`);
                opts.paths.push(a);
        }
    }
    return opts;
}

function resolvePath(p) {
    if (fs.existsSync(p)) return p;
    const fromRepo = path.resolve(REPO, p);
    if (fs.existsSync(fromRepo)) return fromRepo;
    usage(`no such file or directory: ${p}`);
}

// The entries of FILE (empty without a file): `<dir/file> :: <test>` → the text its failure must
// contain.
function loadKnownFailures(file) {
    const known = new Map();
    if (!file) return known;
    const text = fs.readFileSync(resolvePath(file), 'utf8');
    for (const raw of text.split('\n')) {
        const line = raw.trim();
        if (!line || line.startsWith('#')) continue;
        const arrow = line.lastIndexOf(' => ');
        if (arrow < 0) usage(`${file}: "${line}" does not say what its failure is (\`... => <text>\`)`);
        known.set(line.slice(0, arrow).trim(), line.slice(arrow + 4).trim());
    }
    return known;
}

async function main() {
    const opts = parseArgs(process.argv.slice(2));
    if (!opts.uri) usage('--uri is required (or set TESSERA_URI)');
    const profile = PROFILES[opts.profile];
    if (!profile) usage(`unknown profile ${opts.profile} (known: ${Object.keys(PROFILES).join(', ')})`);
    if (!(opts.timeoutMs > 0)) usage('--timeout must be a positive number of milliseconds');
    const paths = (opts.paths.length ? opts.paths : [DEFAULT_PATH]).map(resolvePath);
    const files = collectFiles(paths);
    const known = loadKnownFailures(opts.knownFailures);
    const seen = new Set();  // known entries met by a test that ran
    const problems = [];  // entries that no longer hold: each fails the run
    const keyOf = (r) => `${r.file} :: ${String(r.test ?? '').replace(/\s+/g, ' ').trim()}`;

    const runner = new Runner({
        uri: opts.uri,
        profile,
        timeoutMs: opts.timeoutMs,
        filter: opts.filter,
        onResult(r) {
            const oneLine = (x) => String(x ?? '').replace(/\s*\n\s*/g, ' ');
            const key = keyOf(r);
            if (known.has(key)) seen.add(key);
            if (r.status === 'fail' && known.has(key) && oneLine(r.reason).includes(known.get(key))) {
                r.status = 'known';
                if (opts.verbose) console.log(`KNOWN ${key} — ${oneLine(r.reason)}`);
            } else if (r.status === 'fail' && known.has(key)) {
                problems.push(`CHANGED ${key}: fails with "${oneLine(r.reason)}", the list says "${known.get(key)}"`);
            } else if (r.status === 'fail') {
                console.log(`FAIL ${r.file} :: ${oneLine(r.test)} — ${oneLine(r.reason)}`);
            } else if (r.status === 'pass' && known.has(key)) {
                problems.push(`FIXED ${key} (passes now: remove it from ${opts.knownFailures})`);
            }
            else if (opts.verbose) console.log(`${r.status.toUpperCase()} ${r.file} :: ${r.test}${r.reason ? ` — ${r.reason}` : ''}`);
        },
    });
    const results = await runner.runFiles(files);
    if (!opts.filter) {
        for (const key of known.keys()) {
            if (!seen.has(key)) problems.push(`STALE ${key}: no such test ran (remove it from ${opts.knownFailures})`);
        }
    }
    for (const p of problems) console.log(p);
    const count = (s) => results.filter((r) => r.status === s).length;
    const passed = count('pass');
    // A CHANGED entry's test is counted failed already; FIXED and STALE ones are added.
    const failed = count('fail') + problems.filter((p) => !p.startsWith('CHANGED')).length;
    const na = count('na');
    const skipped = count('skip');
    const knownFailed = count('known');

    if (opts.listFailures) {
        const report = {
            profile: profile.name,
            uri: opts.uri,
            passed,
            failed,
            notApplicable: na,
            skipped,
            knownFailures: knownFailed,
            failures: results
                .filter((r) => r.status === 'fail' || r.status === 'known')
                .map(({ file, test, reason, status }) => ({ file, test, reason, known: status === 'known' })),
        };
        fs.writeFileSync(opts.listFailures, `${JSON.stringify(report, null, 2)}\n`);
    }
    console.log(
        `${na} not applicable to profile ${profile.name}${skipped ? `, ${skipped} skipped by skipReason` : ''} ` +
            `(${files.length} files)`
    );
    if (known.size) {
        const applicable = passed + failed + knownFailed;
        const rate = applicable ? ((100 * passed) / applicable).toFixed(1) : '100.0';
        console.log(`${knownFailed} known failures (${opts.knownFailures}); pass rate ${rate} % of ${applicable} applicable`);
    }
    console.log(`${passed} passed, ${failed} failed`);
    return failed > 0 && !opts.allowFailures ? 1 : 0;
}

main().then(
    (code) => {
        process.exitCode = code;
        // Driver timers (e.g. monitors of clients a timed-out test left behind) must not keep us alive.
        setTimeout(() => process.exit(code), 200).unref();
    },
    (err) => {
        console.error(err?.stack ?? String(err));
        process.exit(2);
    }
);
