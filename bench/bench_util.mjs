// What the Node benchmark scripts share: the `mongodb` driver pinned by tests/integration's
// lockfile, command-line arguments, timing, percentiles and the CPU time of processes.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'tests', 'integration', 'package.json'));
export const mongodb = require('mongodb');

/** The value after `--name` on the command line, or `def`. */
export function arg(name, def) {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : def;
}

/** `--pids name=pid,...` as {name: pid}. */
export function pidsArg(name = 'pids') {
    return Object.fromEntries((arg(name, '') || '').split(',').filter(Boolean).map((kv) => kv.split('=')));
}

export const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** The p-th percentile (0-100) of `xs` (need not be sorted). */
export function percentile(xs, p) {
    const s = [...xs].sort((x, y) => x - y);
    return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))];
}
export const median = (xs) => percentile(xs, 50);

/** User + system CPU time of process `pid` so far, in µs (/proc/PID/stat; `clkTck` is CLK_TCK).
 *  The fields after the command name, which may hold spaces, start at the state, field 3. */
export function processCpuUs(pid, clkTck = 100) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / clkTck; // utime, stime
}
