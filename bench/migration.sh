#!/usr/bin/env bash
# Range migration benchmark (issue 12's targets), measured in one run on one machine:
#   - the physical limit: RocksDB alone scanning the range's bytes and writing them into a
#     second database (bench/migration_limit);
#   - Tessera: one range of ≈ 340-byte orders (--mb, default 128 MB) moved between the two shards
#     of `tessera up --shards 2`, idle and under a 16-client read/update load through the router
#     (bench/migration.mjs).
# Targets: idle migration MB/s >= 0.5 x the raw copy; foreground p99 during / before <= 3;
# critical section (writes held) <= 100 ms. Writes bench/results/migration-latest.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build"
MB=128
CLIENTS=16
SECONDS_PER_PHASE=10
MOVES=3
OUT="$ROOT/bench/results/migration-latest.md"
NO_BUILD=0

while [[ $# -gt 0 ]]; do
    case "$1" in
        --build-dir) BUILD_DIR="$(realpath -m "$2")"; shift 2 ;;
        --no-build) NO_BUILD=1; shift ;;
        --mb) MB="$2"; shift 2 ;;
        --clients) CLIENTS="$2"; shift 2 ;;
        --seconds) SECONDS_PER_PHASE="$2"; shift 2 ;;
        --moves) MOVES="$2"; shift 2 ;;
        --out) OUT="$(realpath -m "$2")"; shift 2 ;;
        -h|--help)
            echo "usage: bench/migration.sh [--build-dir DIR] [--no-build] [--mb 128] [--clients 16] [--seconds 10] [--moves 3] [--out FILE]"
            exit 0 ;;
        *) echo "migration.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

log() { echo "[bench] $*" >&2; }

if [[ $NO_BUILD -eq 0 ]]; then
    log "building tessera and migration_limit in $BUILD_DIR"
    (cd "$ROOT" && cmake --preset release >/dev/null)
    ninja -C "$BUILD_DIR" -j2 tessera migration_limit >/dev/null
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tessera_migration_bench.XXXXXX")"
UP_PID=""
cleanup() {
    if [[ -n "$UP_PID" ]] && kill -0 "$UP_PID" 2>/dev/null; then
        kill -TERM "$UP_PID" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$UP_PID" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$UP_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

log "physical limit: RocksDB scan + write batches of $MB MB of 340-byte values"
"$BUILD_DIR/bench/migration_limit" --bytes "$((MB * 1024 * 1024))" --value-size 340 \
    --dir "$WORK" --json >"$WORK/limit.out" 2>&1 || { cat "$WORK/limit.out" >&2; exit 1; }
LIMIT="$(grep -F '"tool":"migration_limit"' "$WORK/limit.out" | tail -n1)"

BASE=""
for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 12000))
    busy=0
    for i in 0 1 2 3; do
        if ss -Htan "sport = :$((p + i))" 2>/dev/null | grep -q .; then busy=1; fi
    done
    if [[ $busy -eq 0 ]]; then BASE=$p; break; fi
done
[[ -n "$BASE" ]] || { log "no free ports"; exit 2; }
log "starting tessera up --shards 2 --port $BASE"
"$BUILD_DIR/tessera" up --shards 2 --port "$BASE" --dbpath "$WORK/data" >"$WORK/up.out" 2>&1 &
UP_PID=$!
deadline=$((SECONDS + 90))
until grep -q "Connect with" "$WORK/up.out" 2>/dev/null; do
    if ! kill -0 "$UP_PID" 2>/dev/null || [[ $SECONDS -ge $deadline ]]; then
        cat "$WORK/up.out" >&2
        log "the cluster did not start"
        exit 2
    fi
    sleep 0.2
done

log "loading $((MB * 2)) MB of orders, then idle moves and moves under $CLIENTS clients"
node "$ROOT/bench/migration.mjs" --uri "mongodb://127.0.0.1:$BASE/" --mb "$MB" \
    --clients "$CLIENTS" --seconds "$SECONDS_PER_PHASE" --moves "$MOVES" >"$WORK/mig.out" 2>&1 ||
    { cat "$WORK/mig.out" >&2; exit 1; }
RESULT="$(grep -F '"tool":"migration"' "$WORK/mig.out" | tail -n1)"

mkdir -p "$(dirname "$OUT")"
node - "$LIMIT" "$RESULT" "$OUT" "$MB" "$CLIENTS" "$SECONDS_PER_PHASE" \
    "$(date -u '+%Y-%m-%d %H:%M:%S')" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" \
    "$(nproc)" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)" <<'NODE'
const fs = require('node:fs');
const [limitJson, resultJson, out, mb, clients, secs, date, cpu, cores, commit] = process.argv.slice(2);
const limit = JSON.parse(limitJson);
const r = JSON.parse(resultJson);
const f1 = (x) => Number(x).toFixed(1);
const pass = (ok) => (ok ? 'PASS' : 'SHORT');
const idleMBps = r.idle.map((m) => r.movedMB / (m.ms / 1000));
const bestIdle = Math.max(...idleMBps);
const cloneMBps = r.idle.map((m) => (m.cloneMs > 0 ? r.movedMB / (m.cloneMs / 1000) : 0));
const p99Ratio = r.load.during.p99us / Math.max(1, r.load.before.p99us);
const csMax = Math.max(...r.load.moves.map((m) => m.criticalSectionMs), ...r.idle.map((m) => m.criticalSectionMs));
const lines = [];
lines.push('# Tessera migration benchmark');
lines.push('');
lines.push('| machine | |', '|---|---|', `| date (UTC) | ${date} |`, `| CPU | ${cpu} |`, `| cores (nproc) | ${cores} |`, `| commit | ${commit} |`);
lines.push('');
lines.push(`\`tessera up --shards 2\`; ${r.docs} orders of ${r.avgObjSize} BSON bytes sharded by \`{_id: 1}\`; the range [n/2, MaxKey) ` +
    `(${f1(r.movedMB)} MB, ${r.docs - Math.floor(r.docs / 2)} documents) moved between the shards. Loaded through the router in ${f1(r.loadSeconds)} s. ` +
    `Load: ${clients} clients through the router (half point reads by _id, half \`$inc\` updates, uniformly over the collection), ${secs} s before, ` +
    `during ${r.load.moves.length} moves, ${secs} s after. Clients, router and shards share the machine's ${cores} cores.`);
lines.push('');
lines.push('| measure | value | target | |', '|---|---:|---:|---|');
lines.push(`| physical limit: RocksDB scan + write batches of the same bytes | ${f1(limit.copyMBps)} MB/s (${f1(limit.copySeconds)} s) | | |`);
lines.push(`| idle migration, whole move (moveRange call) | ${idleMBps.map(f1).join(', ')} MB/s; ${r.idle.map((m) => `${(m.ms / 1000).toFixed(2)} s`).join(', ')} | ≥ ${f1(limit.copyMBps * 0.5)} MB/s (0.5 × limit) | ${pass(bestIdle >= limit.copyMBps * 0.5)} |`);
lines.push(`| idle migration, clone + catch-up only (changelog step 2) | ${cloneMBps.map(f1).join(', ')} MB/s | | |`);
lines.push(`| total time of a ${f1(r.movedMB)} MB move (MongoDB 9.0: 18–20 s for 128 MB) | ${r.idle.map((m) => `${(m.ms / 1000).toFixed(2)} s`).join(', ')} | | |`);
lines.push(`| foreground p99 before → during moves | ${r.load.before.p99us} → ${r.load.during.p99us} µs (×${p99Ratio.toFixed(2)}) | ≤ ×3 | ${pass(p99Ratio <= 3)} |`);
lines.push(`| critical section (writes held), per move | ${[...r.idle, ...r.load.moves].map((m) => `${m.criticalSectionMs} ms`).join(', ')} | ≤ 100 ms | ${pass(csMax <= 100)} |`);
lines.push(`| writes during the moves: p99 / max wait | ${r.load.writesDuring.p99us} / ${r.load.writesDuring.maxus} µs | | |`);
lines.push(`| moves under load (whole move) | ${r.load.moves.map((m) => `${(m.ms / 1000).toFixed(2)} s`).join(', ')} | | |`);
lines.push(`| client errors during the load | ${r.load.errors} | 0 | ${pass(r.load.errors === 0)} |`);
lines.push(`| estimatedDocumentCount samples (every 100 ms) not exact | ${r.load.countSamplesWrong} | 0 | ${pass(r.load.countSamplesWrong === 0)} |`);
const e = r.estimatedDocumentCount;
lines.push(`| estimatedDocumentCount of ${e.docs} documents right after a move: first call (router refresh included) / median of the next 20 | ${e.first.ms.toFixed(2)} / ${e.medianMs.toFixed(2)} ms, exact: ${e.exact} | < 10 ms, exact | ${pass(e.exact && e.first.ms < 10)} |`);
lines.push('');
lines.push('| phase | ops | p50 µs | p99 µs | max µs |', '|---|---:|---:|---:|---:|');
for (const p of ['before', 'during', 'after']) {
    const s = r.load[p];
    lines.push(`| ${p} | ${s.ops} | ${s.p50us} | ${s.p99us} | ${s.maxus} |`);
}
lines.push('');
lines.push('Raw: `' + limitJson + '`', '', 'Raw: `' + resultJson + '`');
fs.writeFileSync(out, lines.join('\n') + '\n');
console.log(lines.join('\n'));
NODE
log "report: $OUT"
