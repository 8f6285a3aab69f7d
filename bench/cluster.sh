#!/usr/bin/env bash
# Router overhead, measured in one run on one machine (issue 4's targets, issue 42's):
#   1. targeted point reads and inserts through a router, as a ratio of the same operations sent
#      straight to the shard that owns the data (target >= 0.85), with the router's CPU per
#      operation;
#   2. the first operation through another router after a move, as a ratio of the control
#      (target <= 1.1: the move is pushed to the router);
#   3. a plain read of both shards at one cluster time against each shard at its own latest
#      time (target <= 1.1), and the worst wait a prepared transaction causes it
#      (bench/scatter_reads.mjs; the cluster runs with --enableTestCommands for its failpoint).
#   4. a write without the shard key against a targeted one, p50 with one client (target <= 1.5),
#      and the CPU each process spends per write of each kind (bench/no_key_writes.mjs).
# Starts `tessera up --shards 2 --routers 2` on loopback ports, writes a markdown report and
# stops the cluster. See bench/README.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build"
SECONDS_PER_PHASE=10
REPEAT=5
THREADS=16
DOCS=50000
DOC_SIZE=1024
OUT="$ROOT/bench/results/cluster-latest.md"
NO_BUILD=0

while [[ $# -gt 0 ]]; do
    case "$1" in
        --build-dir) BUILD_DIR="$(realpath -m "$2")"; shift 2 ;;
        --no-build) NO_BUILD=1; shift ;;
        --seconds) SECONDS_PER_PHASE="$2"; shift 2 ;;
        --threads) THREADS="$2"; shift 2 ;;
        --repeat) REPEAT="$2"; shift 2 ;;
        --docs) DOCS="$2"; shift 2 ;;
        --out) OUT="$(realpath -m "$2")"; shift 2 ;;
        -h|--help)
            echo "usage: bench/cluster.sh [--build-dir DIR] [--no-build] [--seconds S] [--repeat R] [--threads T] [--docs N] [--out FILE]"
            exit 0 ;;
        *) echo "cluster.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

log() { echo "[bench] $*" >&2; }
jget() { sed -n "s/.*\"$2\":\([-0-9.e]*\).*/\1/p" <<<"$1"; }

if [[ $NO_BUILD -eq 0 ]]; then
    log "building tessera and tessera_loadgen in $BUILD_DIR"
    (cd "$ROOT" && cmake --preset release >/dev/null)
    ninja -C "$BUILD_DIR" -j2 tessera tessera_loadgen >/dev/null
fi
LOADGEN="$BUILD_DIR/bench/tessera_loadgen"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tessera_cluster_bench.XXXXXX")"
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

# Six consecutive free ports: routers P, P+1; config P+2; shards P+3, P+4.
BASE=""
for _ in $(seq 1 50); do
    # Below the ephemeral range (32768+), where an outgoing connection's local port would make
    # the bind fail although nothing listens there.
    p=$((20000 + RANDOM % 12000))
    busy=0
    for i in 0 1 2 3 4; do
        if ss -Htan "sport = :$((p + i))" 2>/dev/null | grep -q .; then busy=1; fi
    done
    if [[ $busy -eq 0 ]]; then BASE=$p; break; fi
done
[[ -n "$BASE" ]] || { log "no free ports"; exit 2; }

log "starting tessera up --shards 2 --routers 2 --port $BASE"
"$BUILD_DIR/tessera" up --shards 2 --routers 2 --port "$BASE" --dbpath "$WORK/data" \
    --enableTestCommands >"$WORK/up.out" 2>&1 &
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
ROUTER_A="mongodb://127.0.0.1:$BASE/"
ROUTER_B="mongodb://127.0.0.1:$((BASE + 1))/"
SHARD0="mongodb://127.0.0.1:$((BASE + 3))/?directConnection=true"
MONGOSH="$ROOT/tests/integration/node_modules/.bin/mongosh"

# Through the router: the collection lives on shard0 (the database's primary), sharded by _id in
# one chunk, so every operation is targeted at exactly one shard with a shardVersion.
log "through the router: preload, shard the collection, then point/insert phases"
"$LOADGEN" --uri "$ROUTER_A" --threads "$THREADS" --op point --seconds 1 --docs "$DOCS" \
    --doc-size "$DOC_SIZE" --preload-seconds 120 --json >"$WORK/preload.out" 2>&1
"$MONGOSH" --quiet "$ROUTER_A" --eval '
    const primary = db.getSiblingDB("config").databases.findOne({_id: "tessera_bench"}).primary;
    sh.shardCollection("tessera_bench.docs", {_id: 1});
    print("primary " + primary);' >"$WORK/shard.out" 2>&1 || { cat "$WORK/shard.out" >&2; exit 1; }
PRIMARY_PORT=$((BASE + 3))
if grep -q "primary shard1" "$WORK/shard.out"; then PRIMARY_PORT=$((BASE + 4)); fi
SHARD0="mongodb://127.0.0.1:$PRIMARY_PORT/?directConnection=true"
# Straight to the owning shard: the same operations on a collection of the same shape.
"$LOADGEN" --uri "$SHARD0" --coll direct --threads "$THREADS" --op point --seconds 1 \
    --docs "$DOCS" --doc-size "$DOC_SIZE" --preload-seconds 120 --json >/dev/null 2>&1
# Both collections are read from the shard's data files: without this the one loaded last would
# still sit in the memtable, whose lookups cost differently than a data file's.
"$MONGOSH" --quiet "$SHARD0" --eval 'db.adminCommand({fsync: 1})' >"$WORK/fsync.out" 2>&1 ||
    { cat "$WORK/fsync.out" >&2; exit 1; }

# A shard answers the handshake as a standalone, so a driver sends it no retryable writes; the
# like-for-like routed run turns them off too. The default (retryable, each write also records
# its session's txnNumber on the shard) is measured separately. Routed and direct phases
# alternate, REPEAT times, and each row is the median repetition: on a small machine shared by
# every process, one phase alone swings by ±10 % with what the others happen to be doing.
pid_of() { sed -n "s/^ *$1 .* pid \([0-9]*\) .*/\1/p" "$WORK/up.out"; }
ROUTER_PID="$(pid_of router0)"
PRIMARY_PID="$(pid_of shard0)"
if grep -q "primary shard1" "$WORK/shard.out"; then PRIMARY_PID="$(pid_of shard1)"; fi
phase() {  # phase NAME URI COLL OP [FIRST_ID]: inserts take _ids from FIRST_ID (--docs) on;
    # the CPU per operation of the process the client talks to: the router, or the shard
    local pid="$ROUTER_PID"
    [[ "$1" == direct-* ]] && pid="$PRIMARY_PID"
    "$LOADGEN" --uri "$2" --coll "$3" --threads "$THREADS" --op "$4" --server-pid "$pid" \
        --seconds "$SECONDS_PER_PHASE" --docs "${5:-$DOCS}" --doc-size "$DOC_SIZE" --skip-preload \
        --json >>"$WORK/$1.out" 2>&1 || { cat "$WORK/$1.out" >&2; exit 1; }
}
# The order flips every repetition (routed first, then direct first: ABBA), so that neither side
# always inherits the flushes and compactions the phase before it left behind.
for rep in $(seq 1 "$REPEAT"); do
    log "repetition $rep of $REPEAT: point and insert phases, through the router and direct"
    first=$((DOCS + rep * 100000000))
    if ((rep % 2 == 1)); then
        phase router-point "${ROUTER_A}?retryWrites=false" docs point
        phase direct-point "$SHARD0" direct point
        phase router-insert "${ROUTER_A}?retryWrites=false" docs insert "$first"
        phase direct-insert "$SHARD0" direct insert "$first"
    else
        phase direct-point "$SHARD0" direct point
        phase router-point "${ROUTER_A}?retryWrites=false" docs point
        phase direct-insert "$SHARD0" direct insert "$first"
        phase router-insert "${ROUTER_A}?retryWrites=false" docs insert "$first"
    fi
done
phase router-retryable "$ROUTER_A" retryable insert

log "stale router: first operation after a move through the other router"
node "$ROOT/bench/stale_router.mjs" --a "$ROUTER_A" --b "$ROUTER_B" >"$WORK/stale.out" 2>&1 ||
    { cat "$WORK/stale.out" >&2; exit 1; }

log "scatter reads: one cluster time against each shard's latest time"
node "$ROOT/bench/scatter_reads.mjs" --a "$ROUTER_A" --b "$ROUTER_B" >"$WORK/scatter.out" 2>&1 ||
    { cat "$WORK/scatter.out" >&2; exit 1; }

log "writes without the shard key against targeted writes"
node "$ROOT/bench/no_key_writes.mjs" --uri "$ROUTER_A" \
    --pids "router=$(pid_of router0),shard0=$(pid_of shard0),shard1=$(pid_of shard1)" \
    >"$WORK/nokey.out" 2>&1 || { cat "$WORK/nokey.out" >&2; exit 1; }

# The median repetition of a phase (by ops/s).
median_line() {
    local lines
    lines="$(grep -F '"tool":"tessera_loadgen"' "$1" | awk -F'"ops_per_sec":' '{ split($2, a, ","); print a[1] "\t" $0 }' |
        sort -n | cut -f2-)"
    sed -n "$(( ($(wc -l <<<"$lines") + 1) / 2 ))p" <<<"$lines"
}
# "a/b a/b ..." per repetition, for the report.
per_rep() {
    paste <(grep -o '"ops_per_sec":[0-9.]*' "$WORK/$1.out" | cut -d: -f2) \
          <(grep -o '"ops_per_sec":[0-9.]*' "$WORK/$2.out" | cut -d: -f2) |
        awk '{ printf "%s%.2f", (NR > 1 ? ", " : ""), $1 / $2 }'
}
R_POINT="$(median_line "$WORK/router-point.out")"
R_INSERT="$(median_line "$WORK/router-insert.out")"
R_RETRY="$(median_line "$WORK/router-retryable.out")"
D_POINT="$(median_line "$WORK/direct-point.out")"
D_INSERT="$(median_line "$WORK/direct-insert.out")"
STALE="$(grep -F '"tool":"stale_router"' "$WORK/stale.out" | tail -n1)"
SCATTER="$(grep -F '"tool":"scatter_reads"' "$WORK/scatter.out" | tail -n1)"
NOKEY="$(grep -F '"tool":"no_key_writes"' "$WORK/nokey.out" | tail -n1)"

ratio() {
    awk -v n="$1" -v d="$2" -v m="$3" -v dir="$4" 'BEGIN { if (d <= 0 || n == "") { print "n/a | n/a"; exit }
        r = n / d; ok = (dir == "ge") ? (r >= m) : (r <= m); printf "%.2f | %s\n", r, (ok ? "PASS" : "SHORT") }'
}
row() {
    echo "| $1 | $(printf '%.0f' "$(jget "$2" ops_per_sec)") | $(jget "$2" p50_us) | $(jget "$2" p99_us) | $(jget "$2" errors) |"
}

mkdir -p "$(dirname "$OUT")"
{
    echo "# Tessera cluster benchmark: router overhead"
    echo
    echo "| machine | |"
    echo "|---|---|"
    echo "| date (UTC) | $(date -u '+%Y-%m-%d %H:%M:%S') |"
    echo "| CPU | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') |"
    echo "| cores (nproc) | $(nproc) |"
    echo "| load average at the end | $(cut -d' ' -f1-3 /proc/loadavg) |"
    echo "| commit | $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none) |"
    echo
    echo "\`tessera up --shards 2 --routers 2\` on this machine; $THREADS connections," \
         "$DOC_SIZE-byte documents, $DOCS preloaded (then \`fsync\` on the shard, so both" \
         "collections are read from data files), ${SECONDS_PER_PHASE} s per phase, routed and" \
         "direct phases alternated $REPEAT times, in ABBA order (rows: the median repetition)." \
         "Clients, router" \
         "and shards share the same cores, so the router's own CPU is part of the cost."
    echo
    echo "| phase | ops/s | p50 µs | p99 µs | errors |"
    echo "|---|---:|---:|---:|---:|"
    row "point read by _id, through the router (sharded by _id, targeted)" "$R_POINT"
    row "point read by _id, straight to the shard" "$D_POINT"
    row "insert, through the router (retryWrites=false)" "$R_INSERT"
    row "insert, through the router (retryable writes, the drivers' default)" "$R_RETRY"
    row "insert, straight to the shard" "$D_INSERT"
    echo
    echo "Stale router (median of $(jget "$STALE" rounds) rounds): first operation after a move" \
         "of its range $(jget "$STALE" first_op_p50_us) µs; first operation after a move of" \
         "another collection's range (the control: same pause, same migration work, router not" \
         "stale) $(jget "$STALE" control_first_op_p50_us) µs; back-to-back operations" \
         "$(jget "$STALE" normal_op_p50_us) µs."
    echo
    echo "Plain reads of 100 accounts on both shards, one client, one read at a time (median of" \
         "$(jget "$SCATTER" repeat) ABBA repetitions' p50): at one cluster time" \
         "$(jget "$SCATTER" one_p50_us) µs, each shard at its own latest time" \
         "$(jget "$SCATTER" latest_p50_us) µs. Beside back-to-back cross-shard transfers through" \
         "the other router: one time p50/p99/worst $(jget "$SCATTER" one_with_transfers_p50_us)/" \
         "$(jget "$SCATTER" one_with_transfers_p99_us)/$(jget "$SCATTER" one_with_transfers_max_us) µs" \
         "($(jget "$SCATTER" one_transfers) transfers), latest times" \
         "$(jget "$SCATTER" latest_with_transfers_p50_us)/$(jget "$SCATTER" latest_with_transfers_p99_us)/" \
         "$(jget "$SCATTER" latest_with_transfers_max_us) µs ($(jget "$SCATTER" latest_transfers) transfers)."
    echo
    echo "Writes without the shard key (\`updateOne({orderNo})\` on \`orders\` sharded by" \
         "customerId over both shards, one client, retryable writes as the drivers' default," \
         "median of $(jget "$NOKEY" repeat) ABBA repetitions' p50): $(jget "$NOKEY" nokey_p50_us) µs" \
         "against $(jget "$NOKEY" targeted_p50_us) µs for the targeted" \
         "\`updateOne({customerId, _id})\`. CPU per write, targeted / no key: router" \
         "$(jget "$NOKEY" targeted_cpu_us_per_op_router) / $(jget "$NOKEY" nokey_cpu_us_per_op_router) µs," \
         "shard0 $(jget "$NOKEY" targeted_cpu_us_per_op_shard0) / $(jget "$NOKEY" nokey_cpu_us_per_op_shard0) µs," \
         "shard1 $(jget "$NOKEY" targeted_cpu_us_per_op_shard1) / $(jget "$NOKEY" nokey_cpu_us_per_op_shard1) µs."
    echo
    echo "CPU per operation (median repetition) of the process the client talks to: point" \
         "reads, router $(jget "$R_POINT" server_cpu_us_per_op) µs, shard (direct)" \
         "$(jget "$D_POINT" server_cpu_us_per_op) µs; inserts, router" \
         "$(jget "$R_INSERT" server_cpu_us_per_op) µs, shard (direct) $(jget "$D_INSERT" server_cpu_us_per_op) µs."
    echo
    echo "Routed/direct per repetition: point reads $(per_rep router-point direct-point);" \
         "inserts $(per_rep router-insert direct-insert)."
    echo
    echo "| target | ratio | verdict |"
    echo "|---|---:|---|"
    echo "| routed point reads >= 0.85 x direct | $(ratio "$(jget "$R_POINT" ops_per_sec)" "$(jget "$D_POINT" ops_per_sec)" 0.85 ge) |"
    echo "| routed inserts >= 0.85 x direct | $(ratio "$(jget "$R_INSERT" ops_per_sec)" "$(jget "$D_INSERT" ops_per_sec)" 0.85 ge) |"
    echo "| first op through another router after a move <= 1.1 x the control (pushed placement) | $(ratio "$(jget "$STALE" first_op_p50_us)" "$(jget "$STALE" control_first_op_p50_us)" 1.1 le) |"
    echo "| plain read of two shards at one cluster time <= 1.1 x each at its latest time | $(ratio "$(jget "$SCATTER" one_p50_us)" "$(jget "$SCATTER" latest_p50_us)" 1.1 le) |"
    echo "| (for reference) worst read beside transfers, one time / latest times | $(ratio "$(jget "$SCATTER" one_with_transfers_max_us)" "$(jget "$SCATTER" latest_with_transfers_max_us)" 1.1 le) |"
    echo "| write without the shard key <= 1.5 x a targeted write (p50) | $(ratio "$(jget "$NOKEY" nokey_p50_us)" "$(jget "$NOKEY" targeted_p50_us)" 1.5 le) |"
    echo "| (for reference) stale first op / back-to-back op | $(ratio "$(jget "$STALE" first_op_p50_us)" "$(jget "$STALE" normal_op_p50_us)" 2 le) |"
} >"$OUT"
log "report written to $OUT"
grep '^| ' "$OUT" | tail -n 4 >&2
