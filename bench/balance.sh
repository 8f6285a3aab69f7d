#!/usr/bin/env bash
# Balancer benchmark (issue 13's point 8), one run on one machine: 2,000,000 orders of ≈ 340
# bytes (the seed's 682 MB) loaded unsharded into `tessera up --shards 2`, sharded by hashed _id
# with the default chunk size and left to the balancer (time to balanced, max/min owned bytes);
# then a third `tessera shard` started by hand and added (time until balanced over three), then
# drained and removed (time, MB/s); estimatedDocumentCount through the router sampled every second
# throughout (bench/balance.mjs).
# Targets: max/min <= 1.10 (MongoDB 9.0 stopped at 1.67); every count sample exact; drain MB/s
# >= 3 x MongoDB's 168 MB in 239 s. Writes bench/results/balance-latest.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build"
DOCS=2000000
OUT="$ROOT/bench/results/balance-latest.md"
NO_BUILD=0
KEEP_DATA=0
TIMEOUT_S=1800

while [[ $# -gt 0 ]]; do
    case "$1" in
        --build-dir) BUILD_DIR="$(realpath -m "$2")"; shift 2 ;;
        --no-build) NO_BUILD=1; shift ;;
        --docs) DOCS="$2"; shift 2 ;;
        --timeout-s) TIMEOUT_S="$2"; shift 2 ;;
        --keep-data) KEEP_DATA=1; shift ;;
        --out) OUT="$(realpath -m "$2")"; shift 2 ;;
        -h|--help)
            echo "usage: bench/balance.sh [--build-dir DIR] [--no-build] [--docs 2000000] [--timeout-s 1800] [--keep-data] [--out FILE]"
            exit 0 ;;
        *) echo "balance.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

log() { echo "[bench] $*" >&2; }

if [[ $NO_BUILD -eq 0 ]]; then
    log "building tessera in $BUILD_DIR"
    (cd "$ROOT" && cmake --preset release >/dev/null)
    ninja -C "$BUILD_DIR" -j2 tessera >/dev/null
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tessera_balance_bench.XXXXXX")"
UP_PID=""
SHARD_PID=""
stop_pid() {
    local pid="$1"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
}
cleanup() {
    stop_pid "$SHARD_PID"
    stop_pid "$UP_PID"
    if [[ $KEEP_DATA -eq 1 ]]; then log "kept $WORK (data, logs)"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# Five ports: router, config, shard0, shard1 (tessera up's layout), then the third shard.
BASE=""
for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 12000))
    busy=0
    for i in 0 1 2 3 4; do
        if ss -Htan "sport = :$((p + i))" 2>/dev/null | grep -q .; then busy=1; fi
    done
    if [[ $busy -eq 0 ]]; then BASE=$p; break; fi
done
[[ -n "$BASE" ]] || { log "no free ports"; exit 2; }
CONFIG_HOST="127.0.0.1:$((BASE + 1))"
THIRD_PORT=$((BASE + 4))

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

# The third shard, started by hand next to the cluster as a user would (README "Adding a shard").
log "starting a third tessera shard on port $THIRD_PORT"
mkdir -p "$WORK/shard3"
"$BUILD_DIR/tessera" shard --port "$THIRD_PORT" --dbpath "$WORK/shard3" --configdb "$CONFIG_HOST" \
    >"$WORK/shard3.log" 2>&1 &
SHARD_PID=$!

log "loading $DOCS orders, sharding by hashed _id, then add and drain a third shard"
node "$ROOT/bench/balance.mjs" --uri "mongodb://127.0.0.1:$BASE/" --docs "$DOCS" \
    --third-shard "127.0.0.1:$THIRD_PORT" --timeout-s "$TIMEOUT_S" >"$WORK/balance.out" 2>"$WORK/balance.err" ||
    { cat "$WORK/balance.err" "$WORK/balance.out" >&2; exit 1; }
RESULT="$(grep -F '"tool":"balance"' "$WORK/balance.out" | tail -n1)"

mkdir -p "$(dirname "$OUT")"
node - "$RESULT" "$OUT" "$(date -u '+%Y-%m-%d %H:%M:%S')" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" \
    "$(nproc)" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)" <<'NODE'
const fs = require('node:fs');
const [resultJson, out, date, cpu, cores, commit] = process.argv.slice(2);
const r = JSON.parse(resultJson);
const f1 = (x) => Number(x).toFixed(1);
const f3 = (x) => Number(x).toFixed(3);
const pass = (ok) => (ok ? 'PASS' : 'SHORT');
const mongoDrainMBps = 168 / 239;
const mbs = (m) => Object.entries(m).map(([s, v]) => `${s} ${v}`).join(' / ');
const lines = [];
lines.push('# Tessera balancer benchmark');
lines.push('');
lines.push('| machine | |', '|---|---|', `| date (UTC) | ${date} |`, `| CPU | ${cpu} |`, `| cores (nproc) | ${cores} |`, `| commit | ${commit} |`);
lines.push('');
lines.push(`${r.docs} orders of ${f1(r.avgObjSize)} BSON bytes (${f1(r.totalMB)} MB) loaded unsharded through the router of ` +
    `\`tessera up --shards 2\` in ${f1(r.loadSeconds)} s, then \`shardCollection {_id: "hashed"}\` with the default chunk size ` +
    `(${r.chunkSizeMB} MB) and the balancer on (default settings); nothing moved by hand. A third \`tessera shard\` started by hand ` +
    `is then added, later drained and removed. Owned bytes from \`$shardedDataDistribution\`; balanced = max/min ≤ ${r.tolerance} ` +
    `and \`balancerCollectionStatus\` compliant, twice in a row one second apart. Router, config server and shards share the machine's ${cores} cores.`);
lines.push('');
lines.push('| measure | value | target | |', '|---|---:|---:|---|');
lines.push(`| shardCollection of the populated collection (writes held) | ${f1(r.shardCollectionSeconds)} s | | |`);
lines.push(`| 2 shards: time from shardCollection to balanced | ${f1(r.shard.seconds)} s (${r.shard.migrations} migrations; chunks ${mbs(r.shard.chunks)}) | | |`);
lines.push(`| 2 shards: max/min owned bytes (MB ${mbs(r.shard.mb)}) | ${f3(r.shard.ratio)} | ≤ ${r.tolerance} (MongoDB 9.0: 1.67) | ${pass(r.shard.ratio <= r.tolerance)} |`);
if (r.add) {
    lines.push(`| 3rd shard added: time to balanced over three | ${f1(r.add.seconds)} s (${r.add.migrations} migrations, ${f1(r.add.movedMB)} MB onto it) | | |`);
    lines.push(`| 3 shards: max/min owned bytes (MB ${mbs(r.add.mb)}) | ${f3(r.add.ratio)} | ≤ ${r.tolerance} | ${pass(r.add.ratio <= r.tolerance)} |`);
}
if (r.drain) {
    lines.push(`| 3rd shard drained (removeShard → nothing left) | ${f1(r.drain.mb)} MB in ${f1(r.drain.seconds)} s = ${f1(r.drain.mbPerSec)} MB/s (${r.drain.migrations} migrations); removeShard then: ${r.drain.state} | ≥ ${f1(3 * mongoDrainMBps)} MB/s (3 × MongoDB's 168 MB in 239 s) | ${pass(r.drain.mbPerSec >= 3 * mongoDrainMBps && r.drain.state === 'completed')} |`);
    lines.push(`| after the drain: max/min over two (MB ${mbs(r.drain.mbAfter)}) | ${f3(r.drain.ratioAfter)} | | |`);
}
lines.push(`| estimatedDocumentCount samples (1/s, whole run) not exactly ${r.docs} | ${r.countSamplesWrong} of ${r.countSamples} | 0 | ${pass(r.countSamplesWrong === 0)} |`);
const fin = r.final;
const exact = fin.estimatedDocumentCount === r.docs && fin.countDocuments === r.docs && fin.ownedDocs === r.docs;
lines.push(`| at the end: estimatedDocumentCount / countDocuments / owned documents summed over shards | ${fin.estimatedDocumentCount} / ${fin.countDocuments} / ${fin.ownedDocs} | ${r.docs} each | ${pass(exact)} |`);
lines.push(`| orphans left by the donors' background range deletions: gone after the drain's end in | ${f1(r.orphansGoneSeconds)} s (${fin.orphans} left) | | |`);
lines.push('');
lines.push('Owned MB per shard over time (every 5th one-second sample):');
lines.push('');
lines.push('| phase | s | max/min | MB per shard | compliant |', '|---|---:|---:|---|---|');
for (const [phase, t] of [['2 shards', r.shard.trace], ['3 shards', r.add?.trace ?? []]]) {
    for (const p of t) lines.push(`| ${phase} | ${p.s} | ${p.ratio ?? '∞'} | ${mbs(p.mb)} | ${p.compliant}${p.violation ? ` (${p.violation})` : ''} |`);
}
lines.push('');
const raw = { ...r, shard: { ...r.shard, trace: undefined }, add: r.add && { ...r.add, trace: undefined } };
lines.push('Raw: `' + JSON.stringify(raw) + '`');
fs.writeFileSync(out, lines.join('\n') + '\n');
console.log(lines.join('\n'));
NODE
log "report: $OUT"
