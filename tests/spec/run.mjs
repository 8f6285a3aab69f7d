#!/usr/bin/env node
// MongoDB unified-format spec test runner for Tessera.
//
//   node tests/spec/run.mjs --uri mongodb://127.0.0.1:PORT/?directConnection=true \
//        --profile single-8.0 [--timeout MS] [--allow-failures] [--list-failures FILE] \
//        [--known-failures FILE] [--filter REGEX] [--verbose] PATH...
//
// --known-failures FILE lists tests that are known to fail, one `<dir/file> :: <test>` per line
// (`#` comments allowed). They are reported as KNOWN and not counted as failures, so CI stays red
// only for regressions; a listed test that passes is reported as FIXED so the list can shrink.
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

// The set of `<dir/file> :: <test>` lines in FILE (empty without a file).
function loadKnownFailures(file) {
    if (!file) return new Set();
    const text = fs.readFileSync(resolvePath(file), 'utf8');
    return new Set(
        text
            .split('\n')
            .map((l) => l.trim())
            .filter((l) => l && !l.startsWith('#'))
    );
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
    const keyOf = (r) => `${r.file} :: ${String(r.test ?? '').replace(/\s+/g, ' ').trim()}`;

    const runner = new Runner({
        uri: opts.uri,
        profile,
        timeoutMs: opts.timeoutMs,
        filter: opts.filter,
        onResult(r) {
            const oneLine = (x) => String(x ?? '').replace(/\s*\n\s*/g, ' ');
            if (r.status === 'fail' && known.has(keyOf(r))) {
                r.status = 'known';
                if (opts.verbose) console.log(`KNOWN ${keyOf(r)} — ${oneLine(r.reason)}`);
            } else if (r.status === 'fail') {
                console.log(`FAIL ${r.file} :: ${oneLine(r.test)} — ${oneLine(r.reason)}`);
            } else if (r.status === 'pass' && known.has(keyOf(r))) {
                console.log(`FIXED ${keyOf(r)} (passes now: remove it from ${opts.knownFailures})`);
            }
            else if (opts.verbose) console.log(`${r.status.toUpperCase()} ${r.file} :: ${r.test}${r.reason ? ` — ${r.reason}` : ''}`);
        },
    });
    const results = await runner.runFiles(files);
    const count = (s) => results.filter((r) => r.status === s).length;
    const passed = count('pass');
    const failed = count('fail');
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
