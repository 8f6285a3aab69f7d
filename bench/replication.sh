#!/usr/bin/env bash
# What replication costs a write (issue 43): tessera_loadgen's insert phase against
#   standalone     tessera serve                       (w: 1, unjournaled: the old default)
#   standalone_j   tessera serve, insert_j             (j: true: a synced journal per write)
#   set1           tessera serve --replSet rs0         (one member: every write a group commit)
#   set3           three --replSet members on loopback (every write on a majority's disks)
# in one run on one machine, with RocksDB's synced group commit (rocksdb_limit fillsync) as the
# physical limit of a durable write. Prints a markdown table; bench/README.md "Replica sets"
# records a run and its verdict. Loopback only; about 1 + 5 × SECONDS seconds plus build time.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build"
NO_BUILD=0
SECONDS_PER_PHASE=10
THREADS=16
DOC_SIZE=1024

while [[ $# -gt 0 ]]; do
    case "$1" in
        --build-dir) BUILD_DIR="$(realpath -m "$2")"; shift 2 ;;
        --no-build) NO_BUILD=1; shift ;;
        --seconds) SECONDS_PER_PHASE="$2"; shift 2 ;;
        --threads) THREADS="$2"; shift 2 ;;
        -h|--help)
            echo "usage: bench/replication.sh [--build-dir DIR] [--no-build] [--seconds S] [--threads T]"
            exit 0 ;;
        *) echo "replication.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

log() { echo "[bench] $*" >&2; }

if [[ $NO_BUILD -eq 0 ]]; then
    log "building in $BUILD_DIR"
    (cd "$ROOT" && cmake --preset release >/dev/null)
    ninja -C "$BUILD_DIR" -j2 tessera tessera_loadgen rocksdb_limit >/dev/null
fi
BIN="$BUILD_DIR/bench"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tessera_repl_bench.XXXXXX")"
PIDS=()
stop_servers() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    PIDS=()
}
cleanup() {
    stop_servers
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 12000))
        if ! ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then echo "$p"; return 0; fi
    done
    return 1
}

# start NAME PORT ARGS...: a tessera serve in $WORK/NAME, waited for until it accepts.
start() {
    local name="$1" port="$2"
    shift 2
    mkdir -p "$WORK/$name"
    "$BUILD_DIR/tessera" serve --port "$port" --bind_ip 127.0.0.1 --dbpath "$WORK/$name" "$@" \
        >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 150); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.2
    done
    log "$name did not start"; tail -n 20 "$WORK/$name.log" >&2
    return 1
}

# phase LABEL URI OP: one loadgen phase; prints its result line (ops/s, p50, p99 in µs).
phase() {
    local label="$1" uri="$2" op="$3"
    "$BIN/tessera_loadgen" --uri "$uri" --threads "$THREADS" --op "$op" \
        --seconds "$SECONDS_PER_PHASE" --doc-size "$DOC_SIZE" --coll "$label" --json \
        >"$WORK/$label.out" 2>&1 || { cat "$WORK/$label.out" >&2; return 1; }
    node -e '
        const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n");
        const r = lines.filter((l) => l.startsWith("{")).map(JSON.parse).pop();
        const f = (x) => Math.round(x).toLocaleString("en-US").replace(/,/g, " ");
        console.log(`| ${process.argv[2]} | ${f(r.ops_per_sec)} | ${f(r.p50_us)} | ${f(r.p99_us)} |`);
    ' "$WORK/$label.out" "$label"
}

echo "| setup ($THREADS threads, ${DOC_SIZE}-byte documents, ${SECONDS_PER_PHASE} s) | inserts/s | p50 µs | p99 µs |"
echo "|---|---|---|---|"
"$BIN/rocksdb_limit" --threads "$THREADS" --seconds "$SECONDS_PER_PHASE" --value-size "$DOC_SIZE" \
    --dir "$WORK" --json >"$WORK/rocksdb.out" 2>&1 || { cat "$WORK/rocksdb.out" >&2; exit 1; }
node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n");
    const r = lines.filter((l) => l.startsWith("{")).map(JSON.parse).find((x) => x.phase === "fillsync");
    const f = (x) => Math.round(x).toLocaleString("en-US").replace(/,/g, " ");
    console.log(`| rocksdb_limit fillsync (the limit) | ${f(r.ops_per_sec)} | ${f(r.p50_us)} | ${f(r.p99_us)} |`);
' "$WORK/rocksdb.out"

p="$(free_port)"
start standalone "$p"
phase standalone "mongodb://127.0.0.1:$p/?directConnection=true" insert
phase standalone_j "mongodb://127.0.0.1:$p/?directConnection=true" insert_j
stop_servers

p="$(free_port)"
start set1 "$p" --replSet rs0
phase set1 "mongodb://127.0.0.1:$p/?replicaSet=rs0" insert
stop_servers

ports=("$(free_port)" "$(free_port)" "$(free_port)")
members="127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
for i in 0 1 2; do start "m$i" "${ports[$i]}" --replSet "rs0/$members"; done
phase set3 "mongodb://$members/?replicaSet=rs0&serverSelectionTimeoutMS=30000" insert
stop_servers
