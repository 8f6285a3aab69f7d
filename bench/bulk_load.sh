#!/usr/bin/env bash
# Bulk loads through a router (issue 40), measured in one run on one machine:
#   - the Node driver's insertMany of --docs documents (≈ 160 BSON bytes, calls of 100,000)
#     through the router of `tessera up --shards 1`, straight to that cluster's shard, and to a
#     single node (`tessera serve`): target router ÷ shard ≥ 0.8 for the same work on the shard
#     (retryWrites=false: a driver connected to a shard directly cannot retry, through a router
#     it records every statement for its retry — reported too, with its cost);
#   - for information, ordered and unordered loads into a {_id: "hashed"} collection through the
#     router of `tessera up --shards 2` (an ordered batch goes out in runs of consecutive
#     documents on one shard, as mongos sends it).
# Writes bench/results/bulk-load-latest.md. See bench/README.md "Bulk loads".
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build"
DOCS=200000
REPEAT=3
OUT="$ROOT/bench/results/bulk-load-latest.md"
NO_BUILD=0

while [[ $# -gt 0 ]]; do
    case "$1" in
        --build-dir) BUILD_DIR="$(realpath -m "$2")"; shift 2 ;;
        --no-build) NO_BUILD=1; shift ;;
        --docs) DOCS="$2"; shift 2 ;;
        --repeat) REPEAT="$2"; shift 2 ;;
        --out) OUT="$(realpath -m "$2")"; shift 2 ;;
        -h|--help)
            echo "usage: bench/bulk_load.sh [--build-dir DIR] [--no-build] [--docs 200000] [--repeat 3] [--out FILE]"
            exit 0 ;;
        *) echo "bulk_load.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

log() { echo "[bench] $*" >&2; }

if [[ $NO_BUILD -eq 0 ]]; then
    log "building tessera in $BUILD_DIR"
    (cd "$ROOT" && cmake --preset release >/dev/null)
    ninja -C "$BUILD_DIR" -j2 tessera >/dev/null
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tessera_bulk_bench.XXXXXX")"
PIDS=()
stop_all() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null || true
    done
    PIDS=()
}
cleanup() {
    stop_all
    rm -rf "$WORK"
}
trap cleanup EXIT

# COUNT consecutive free ports below the ephemeral range.
free_base() {
    local count="$1" p busy i
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 12000))
        busy=0
        for ((i = 0; i < count; i++)); do
            if ss -Htan "sport = :$((p + i))" 2>/dev/null | grep -q .; then busy=1; fi
        done
        if [[ $busy -eq 0 ]]; then echo "$p"; return 0; fi
    done
    return 1
}

# up NAME SHARDS: starts `tessera up` on free ports; echoes the base port.
up() {
    local name="$1" shards="$2" base
    base="$(free_base $((shards + 2)))" || { log "no free ports"; exit 2; }
    "$BUILD_DIR/tessera" up --shards "$shards" --port "$base" --dbpath "$WORK/$name" \
        >"$WORK/$name.out" 2>&1 &
    PIDS+=($!)
    local deadline=$((SECONDS + 90))
    until grep -q "Connect with" "$WORK/$name.out" 2>/dev/null; do
        if [[ $SECONDS -ge $deadline ]]; then
            cat "$WORK/$name.out" >&2
            log "the cluster did not start"
            exit 2
        fi
        sleep 0.2
    done
    echo "$base"
}

BASE1="$(up one 1)"
SINGLE="$(free_base 1)"
"$BUILD_DIR/tessera" serve --port "$SINGLE" --dbpath "$WORK/single" >"$WORK/single.out" 2>&1 &
PIDS+=($!)
until (exec 3<>"/dev/tcp/127.0.0.1/$SINGLE") 2>/dev/null; do sleep 0.1; done

log "one shard: router, its shard directly, a single node ($DOCS documents, $REPEAT times each)"
node "$ROOT/bench/bulk_load.mjs" --docs "$DOCS" --repeat "$REPEAT" \
    --target "router=mongodb://127.0.0.1:$BASE1/?retryWrites=false" \
    --target "router-retryable=mongodb://127.0.0.1:$BASE1/" \
    --target "shard=mongodb://127.0.0.1:$((BASE1 + 2))/" \
    --target "single=mongodb://127.0.0.1:$SINGLE/" >"$WORK/one.json"
stop_all

BASE2="$(up two 2)"
log "two shards, {_id: hashed}: ordered and unordered through the router"
node "$ROOT/bench/bulk_load.mjs" --docs "$DOCS" --repeat "$REPEAT" \
    --target "router-hashed=mongodb://127.0.0.1:$BASE2/,sharded=hashed" >"$WORK/two.json"
node "$ROOT/bench/bulk_load.mjs" --docs "$DOCS" --repeat "$REPEAT" --ordered false \
    --target "router-hashed=mongodb://127.0.0.1:$BASE2/,sharded=hashed" >>"$WORK/two.json"
stop_all

mkdir -p "$(dirname "$OUT")"
node - "$WORK/one.json" "$WORK/two.json" "$OUT" "$DOCS" "$REPEAT" \
    "$(date -u '+%Y-%m-%d %H:%M:%S')" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" \
    "$(nproc)" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)" <<'NODE'
const fs = require('node:fs');
const [one, two, out, docs, repeat, date, cpu, cores, commit] = process.argv.slice(2);
const lines = (f) => fs.readFileSync(f, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
const r = Object.fromEntries(lines(one).map((x) => [x.target, x]));
const hashed = lines(two);
const ratio = r.router.median / r.shard.median;
const vsSingle = r.router.median / r.single.median;
const md = [];
md.push('# Tessera bulk-load benchmark', '');
md.push('| machine | |', '|---|---|', `| date (UTC) | ${date} |`, `| CPU | ${cpu} |`, `| cores (nproc) | ${cores} |`, `| commit | ${commit} |`, '');
md.push(`Node driver \`insertMany\` of ${docs} documents of ≈ 160 BSON bytes in calls of 100,000, ordered, ${repeat} times per target (median); clients and servers share the machine's ${cores} cores.`, '');
md.push('| load | documents/s (runs) | ratio | target | |', '|---|---:|---:|---:|---|');
md.push(`| router of a one-shard cluster (unsharded collection), \`retryWrites=false\` | ${r.router.median} (${r.router.docsPerSec.join(', ')}) | | | |`);
md.push(`| straight to that cluster's shard | ${r.shard.median} (${r.shard.docsPerSec.join(', ')}) | router ÷ shard ${ratio.toFixed(2)} | ≥ 0.8 | ${ratio >= 0.8 ? 'PASS' : 'SHORT'} |`);
md.push(`| a single node | ${r.single.median} (${r.single.docsPerSec.join(', ')}) | router ÷ single ${vsSingle.toFixed(2)} | | |`);
const retry = r['router-retryable'];
md.push(`| router, retryable writes (the driver's default through a router: each statement recorded) | ${retry.median} (${retry.docsPerSec.join(', ')}) | ÷ shard ${(retry.median / r.shard.median).toFixed(2)} | | |`);
for (const h of hashed) {
    md.push(`| two shards, \`{_id: "hashed"}\`, ${h.ordered ? 'ordered' : 'unordered'}, through the router | ${h.median} (${h.docsPerSec.join(', ')}) | | | |`);
}
md.push('', 'Raw:', '', ...[...lines(one), ...hashed].map((x) => '`' + JSON.stringify(x) + '`  '));
fs.writeFileSync(out, md.join('\n') + '\n');
console.log(md.join('\n'));
NODE
log "report: $OUT"
