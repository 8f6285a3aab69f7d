#!/usr/bin/env bash
# Tessera benchmark run: physical limits (loopback echo, raw RocksDB), the server under load and
# PostgreSQL 15 under the same load (bench/postgres.sh), in one run on one machine, written as a
# markdown report. Loopback only; bounded to ~6 minutes with the defaults (plus build time). See
# bench/README.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build"
URI=""
NO_BUILD=0
LIMITS_ONLY=0
NO_POSTGRES=0
SECONDS_PER_PHASE=15
LIMIT_SECONDS=10
THREADS=16
DOCS=100000
DOC_SIZE=1024
RANGE_LEN=100
CACHE_MB=256
SERVER_ARGS=""
OUT="$ROOT/bench/results/latest.md"
START_TIMEOUT=20

usage() {
    cat <<USAGE
usage: bench/run.sh [options]
  --uri URI            benchmark this MongoDB-compatible endpoint instead of starting build/tessera
  --build-dir DIR      build tree (default: build/, configured with 'cmake --preset release')
  --no-build           use the binaries already in the build tree
  --limits-only        run only echo_limit and rocksdb_limit
  --no-postgres        skip the PostgreSQL 15 phases (bench/postgres.sh)
  --seconds S          seconds per loadgen phase (default $SECONDS_PER_PHASE)
  --limit-seconds S    seconds per limit phase (default $LIMIT_SECONDS)
  --threads T          concurrent connections / threads (default $THREADS)
  --docs N             documents preloaded for point/update/range (default $DOCS)
  --doc-size B         BSON bytes per document = RocksDB value size (default $DOC_SIZE)
  --range-len L        documents per range scan (default $RANGE_LEN)
  --cache-mb M         server cache (tessera serve --cacheSizeMB) and RocksDB block cache of
                       rocksdb_limit; the memory target is M + 256 MiB (default $CACHE_MB)
  --server-args "..."  extra arguments for 'tessera serve'
  --out FILE           report path (default bench/results/latest.md)
Exit status: 0 all measurements ran; 1 a tool failed; 2 the server could not be benchmarked.
USAGE
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --uri) URI="$2"; shift 2 ;;
        --build-dir) BUILD_DIR="$(realpath -m "$2")"; shift 2 ;;
        --no-build) NO_BUILD=1; shift ;;
        --limits-only) LIMITS_ONLY=1; shift ;;
        --no-postgres) NO_POSTGRES=1; shift ;;
        --seconds) SECONDS_PER_PHASE="$2"; shift 2 ;;
        --limit-seconds) LIMIT_SECONDS="$2"; shift 2 ;;
        --threads) THREADS="$2"; shift 2 ;;
        --docs) DOCS="$2"; shift 2 ;;
        --doc-size) DOC_SIZE="$2"; shift 2 ;;
        --range-len) RANGE_LEN="$2"; shift 2 ;;
        --cache-mb) CACHE_MB="$2"; shift 2 ;;
        --server-args) SERVER_ARGS="$2"; shift 2 ;;
        --out) OUT="$(realpath -m "$2")"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tessera_bench.XXXXXX")"
SERVER_PID=""
# shellcheck disable=SC2317  # invoked by the trap
cleanup() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        sleep 1
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

log() { echo "[bench] $*" >&2; }

# jget LINE KEY: a numeric field of a flat JSON line.
jget() { sed -n "s/.*\"$2\":\([-0-9.]*\).*/\1/p" <<<"$1"; }
# phase_line FILE TOOL PHASE: the JSON line of one phase, or nothing.
phase_line() { grep -F "\"tool\":\"$2\",\"phase\":\"$3\"" "$1" 2>/dev/null | tail -n1 || true; }

# ---------------------------------------------------------------- build
WANT_SERVER=0
if [[ $LIMITS_ONLY -eq 0 && -z "$URI" ]]; then WANT_SERVER=1; fi
TARGETS=(rocksdb_limit echo_limit)
[[ $LIMITS_ONLY -eq 0 ]] && TARGETS+=(tessera_loadgen)
SERVER_NOTE=""
if [[ $NO_BUILD -eq 0 ]]; then
    log "configuring $BUILD_DIR"
    if [[ "$BUILD_DIR" == "$ROOT/build" ]]; then
        (cd "$ROOT" && cmake --preset release) >"$WORK/configure.log" 2>&1 ||
            { cat "$WORK/configure.log" >&2; exit 1; }
    else
        cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            >"$WORK/configure.log" 2>&1 || { cat "$WORK/configure.log" >&2; exit 1; }
    fi
    log "building ${TARGETS[*]}"
    ninja -C "$BUILD_DIR" -j2 "${TARGETS[@]}" >"$WORK/build.log" 2>&1 ||
        { tail -n 40 "$WORK/build.log" >&2; exit 1; }
    if [[ $WANT_SERVER -eq 1 ]]; then
        log "building tessera"
        if ! ninja -C "$BUILD_DIR" -j2 tessera >"$WORK/build-server.log" 2>&1; then
            tail -n 20 "$WORK/build-server.log" >&2
            SERVER_NOTE="the 'tessera' target did not build"
        fi
    fi
fi
BIN="$BUILD_DIR/bench"
for t in "${TARGETS[@]}"; do
    [[ -x "$BIN/$t" ]] || { log "missing $BIN/$t (build it, or drop --no-build)"; exit 1; }
done

# ---------------------------------------------------------------- limits
FAILED=0
LOADAVG_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
log "echo_limit (${LIMIT_SECONDS}s)"
"$BIN/echo_limit" --threads "$THREADS" --seconds "$LIMIT_SECONDS" --doc-size "$DOC_SIZE" --json \
    >"$WORK/echo.out" 2>&1 || { FAILED=1; cat "$WORK/echo.out" >&2; }
log "rocksdb_limit (3 x ${LIMIT_SECONDS}s)"
"$BIN/rocksdb_limit" --threads "$THREADS" --seconds "$LIMIT_SECONDS" --value-size "$DOC_SIZE" \
    --cache-mb "$CACHE_MB" --read-keys "$DOCS" --dir "$WORK" --json >"$WORK/rocksdb.out" 2>&1 ||
    { FAILED=1; cat "$WORK/rocksdb.out" >&2; }

# ---------------------------------------------------------------- server + loadgen
free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 30000))
        if ! ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then echo "$p"; return 0; fi
    done
    return 1
}

PEAK_RSS_KB=""
END_RSS_KB=""
RAN_LOADGEN=0
if [[ $LIMITS_ONLY -eq 0 ]]; then
    TARGET_URI="$URI"
    if [[ -z "$URI" && -z "$SERVER_NOTE" ]]; then
        if [[ ! -x "$BUILD_DIR/tessera" ]]; then
            SERVER_NOTE="no server binary at $BUILD_DIR/tessera"
        else
            PORT="$(free_port)"
            mkdir -p "$WORK/db"
            log "starting tessera serve --port $PORT --dbpath $WORK/db --cacheSizeMB $CACHE_MB $SERVER_ARGS"
            # shellcheck disable=SC2086
            "$BUILD_DIR/tessera" serve --port "$PORT" --dbpath "$WORK/db" \
                --cacheSizeMB "$CACHE_MB" $SERVER_ARGS \
                >"$WORK/server.log" 2>&1 &
            SERVER_PID=$!
            deadline=$((SECONDS + START_TIMEOUT))
            until (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do
                if ! kill -0 "$SERVER_PID" 2>/dev/null; then
                    SERVER_NOTE="tessera exited during start-up"; break
                fi
                if [[ $SECONDS -ge $deadline ]]; then
                    SERVER_NOTE="tessera did not accept connections within ${START_TIMEOUT}s"; break
                fi
                sleep 0.2
            done
            if [[ -n "$SERVER_NOTE" ]]; then
                tail -n 20 "$WORK/server.log" >&2 || true
            else
                TARGET_URI="mongodb://127.0.0.1:$PORT/?directConnection=true"
            fi
        fi
    fi
    if [[ -z "$SERVER_NOTE" ]]; then
        log "tessera_loadgen against $TARGET_URI (preload $DOCS docs, 5 x ${SECONDS_PER_PHASE}s)"
        RAN_LOADGEN=1
        PID_ARGS=()
        [[ -n "$SERVER_PID" ]] && PID_ARGS=(--server-pid "$SERVER_PID")
        "$BIN/tessera_loadgen" --uri "$TARGET_URI" --threads "$THREADS" --op all \
            --seconds "$SECONDS_PER_PHASE" --docs "$DOCS" --doc-size "$DOC_SIZE" \
            --range-len "$RANGE_LEN" --preload-seconds 60 "${PID_ARGS[@]}" --json \
            >"$WORK/loadgen.out" 2>&1 || { FAILED=1; cat "$WORK/loadgen.out" >&2; }
    fi
    if [[ -n "$SERVER_PID" ]]; then
        if kill -0 "$SERVER_PID" 2>/dev/null; then
            PEAK_RSS_KB="$(awk '/^VmHWM:/{print $2}' "/proc/$SERVER_PID/status" 2>/dev/null || true)"
            END_RSS_KB="$(awk '/^VmRSS:/{print $2}' "/proc/$SERVER_PID/status" 2>/dev/null || true)"
            kill -TERM "$SERVER_PID" 2>/dev/null || true
            for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.2; done
            if kill -0 "$SERVER_PID" 2>/dev/null; then
                log "tessera did not stop within 10 s of SIGTERM; killing"
                kill -KILL "$SERVER_PID" 2>/dev/null || true
            fi
            wait "$SERVER_PID" 2>/dev/null || true
        else
            SERVER_NOTE="${SERVER_NOTE:-tessera exited during the run}"
            if [[ $RAN_LOADGEN -eq 1 ]]; then FAILED=1; fi
        fi
        SERVER_PID=""
    fi
fi

# ---------------------------------------------------------------- PostgreSQL
PG_NOTE=""
if [[ $LIMITS_ONLY -eq 0 && $NO_POSTGRES -eq 0 ]]; then
    if [[ ! -x /usr/lib/postgresql/15/bin/initdb ]]; then
        log "installing postgresql-15 (Debian) for the PostgreSQL phases"
        SUDO=()
        [[ "$(id -u)" -ne 0 ]] && SUDO=(sudo)
        DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q --no-install-recommends \
            postgresql-15 >"$WORK/apt.log" 2>&1 || PG_NOTE="postgresql-15 could not be installed"
    fi
    if [[ -z "$PG_NOTE" ]]; then
        log "PostgreSQL 15 (pgbench, $THREADS clients, 5 x ${SECONDS_PER_PHASE}s)"
        "$ROOT/bench/postgres.sh" --dir "$WORK" --clients "$THREADS" --seconds "$SECONDS_PER_PHASE" \
            --docs "$DOCS" --doc-size "$DOC_SIZE" --range-len "$RANGE_LEN" --cache-mb "$CACHE_MB" \
            >"$WORK/pg.out" 2>&1 || { PG_NOTE="bench/postgres.sh failed"; cat "$WORK/pg.out" >&2; }
    fi
else
    PG_NOTE="not run"
fi

# ---------------------------------------------------------------- report
ECHO="$(phase_line "$WORK/echo.out" echo_limit echo)"
FILL="$(phase_line "$WORK/rocksdb.out" rocksdb_limit fillrandom)"
FSYNC="$(phase_line "$WORK/rocksdb.out" rocksdb_limit fillsync)"
READ="$(phase_line "$WORK/rocksdb.out" rocksdb_limit readrandom)"
declare -A LG
declare -A PG
for p in preload point update range insert insert_j; do
    LG[$p]="$(phase_line "$WORK/loadgen.out" tessera_loadgen "$p")"
    PG[$p]="$(phase_line "$WORK/pg.out" postgres "$p")"
done

num() { [[ -n "$1" ]] && printf "%.0f" "$1" || echo "n/a"; }
dec() { [[ -n "$1" ]] && printf "%.1f" "$1" || echo "n/a"; }
row() { # row NAME JSONLINE
    local l="$2"
    if [[ -z "$l" ]]; then echo "| $1 | n/a | n/a | n/a | n/a |"; return; fi
    echo "| $1 | $(num "$(jget "$l" ops_per_sec)") | $(dec "$(jget "$l" p50_us)") | $(dec "$(jget "$l" p99_us)") | $(jget "$l" errors) |"
}
srow() { # srow NAME TESSERA_JSONLINE PG_JSONLINE: a server phase next to its PostgreSQL peer
    local t="$2" p="$3"
    echo "| $1 | $(num "$(jget "$t" ops_per_sec)") | $(dec "$(jget "$t" p50_us)") | $(dec "$(jget "$t" p99_us)") | $(dec "$(jget "$t" server_cpu_us_per_op)") | $(dec "$(jget "$t" client_cpu_us_per_op)") | $(num "$(jget "$p" ops_per_sec)") | $(dec "$(jget "$p" mean_us)") | $(dec "$(jget "$p" server_cpu_us_per_op)") | $(dec "$(jget "$p" client_cpu_us_per_op)") |"
}
# verdict NUM DEN MIN: "0.63 PASS" (ratio >= MIN) / "0.41 SHORT" / "n/a"
verdict() {
    if [[ -z "$1" || -z "$2" ]]; then echo "n/a | n/a"; return; fi
    awk -v n="$1" -v d="$2" -v m="$3" 'BEGIN { if (d <= 0) { print "n/a | n/a"; exit }
        r = n / d; printf "%.2f | %s\n", r, (r >= m ? "PASS" : "SHORT") }'
}
# atmost NUM DEN MAX: the ratio must be at most MAX (a cost, not a rate)
atmost() {
    if [[ -z "$1" || -z "$2" ]]; then echo "n/a | n/a"; return; fi
    awk -v n="$1" -v d="$2" -v m="$3" 'BEGIN { if (d <= 0) { print "n/a | n/a"; exit }
        r = n / d; printf "%.2f | %s\n", r, (r <= m ? "PASS" : "SHORT") }'
}
# info NUM DEN: a ratio reported without a target
info() {
    if [[ -z "$1" || -z "$2" ]]; then echo "n/a | (no target)"; return; fi
    awk -v n="$1" -v d="$2" 'BEGIN { if (d <= 0) { print "n/a | (no target)"; exit }
        printf "%.2f | (no target)\n", n / d }'
}

POINT_OPS="$(jget "${LG[point]}" ops_per_sec)"
INSERT_OPS="$(jget "${LG[insert]}" ops_per_sec)"
INSERTJ_OPS="$(jget "${LG[insert_j]}" ops_per_sec)"
UPDATE_OPS="$(jget "${LG[update]}" ops_per_sec)"
RANGE_OPS="$(jget "${LG[range]}" ops_per_sec)"
POINT_CPU="$(jget "${LG[point]}" server_cpu_us_per_op)"
ECHO_OPS="$(jget "$ECHO" ops_per_sec)"
FILL_OPS="$(jget "$FILL" ops_per_sec)"
FSYNC_OPS="$(jget "$FSYNC" ops_per_sec)"
PG_POINT_OPS="$(jget "${PG[point]}" ops_per_sec)"
PG_POINT_CPU="$(jget "${PG[point]}" server_cpu_us_per_op)"
PG_INSERT_OPS="$(jget "${PG[insert]}" ops_per_sec)"
PG_INSERTJ_OPS="$(jget "${PG[insert_j]}" ops_per_sec)"
PG_UPDATE_OPS="$(jget "${PG[update]}" ops_per_sec)"
PG_RANGE_OPS="$(jget "${PG[range]}" ops_per_sec)"
MEM_LIMIT_KB=$(( (CACHE_MB + 256) * 1024 ))
if [[ -n "$PEAK_RSS_KB" ]]; then
    MEM_VERDICT="$(awk -v p="$PEAK_RSS_KB" -v l="$MEM_LIMIT_KB" \
        'BEGIN { printf "%.2f | %s\n", p / l, (p <= l ? "PASS" : "SHORT") }')"
    PEAK_TXT="$((PEAK_RSS_KB / 1024)) MiB (end of run: $((${END_RSS_KB:-0} / 1024)) MiB)"
else
    MEM_VERDICT="n/a | n/a"
    PEAK_TXT="n/a"
fi
if [[ $LIMITS_ONLY -eq 1 ]]; then
    TARGET_TXT="not run (--limits-only)"
elif [[ -n "$URI" ]]; then
    TARGET_TXT="external endpoint $URI"
elif [[ -n "$SERVER_NOTE" ]]; then
    TARGET_TXT="NOT RUN: $SERVER_NOTE"
else
    TARGET_TXT="${BUILD_DIR#"$ROOT"/}/tessera serve, fresh dbpath${SERVER_ARGS:+, args: $SERVER_ARGS}"
fi

mkdir -p "$(dirname "$OUT")"
{
    echo "# Tessera benchmark report"
    echo
    echo "| machine | |"
    echo "|---|---|"
    echo "| date (UTC) | $(date -u '+%Y-%m-%d %H:%M:%S') |"
    echo "| CPU | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') |"
    echo "| cores (nproc) | $(nproc) |"
    echo "| memory | $(awk '/^MemTotal:/{printf "%.1f GiB", $2/1048576}' /proc/meminfo) |"
    echo "| kernel | $(uname -sr) |"
    echo "| load average before the run | $LOADAVG_BEFORE (other work on the machine skews every number) |"
    echo "| commit | $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none) |"
    echo
    echo "Parameters: $THREADS threads/connections, documents of $DOC_SIZE BSON bytes" \
         "(RocksDB values of the same size, 12-byte keys), $DOCS preloaded documents," \
         "range scans of $RANGE_LEN documents, ${SECONDS_PER_PHASE} s per loadgen phase," \
         "${LIMIT_SECONDS} s per limit phase. Everything runs on this machine over loopback:" \
         "clients and server share its cores."
    echo
    echo "## Physical limits"
    echo
    echo "| probe | ops/s | p50 µs | p99 µs | errors |"
    echo "|---|---:|---:|---:|---:|"
    row "echo_limit: loopback round trip (100 B request, doc+100 B response)" "$ECHO"
    row "rocksdb_limit fillrandom (WAL on, sync=false)" "$FILL"
    row "rocksdb_limit fillsync (WAL on, sync=true: every Put waits for its fsync)" "$FSYNC"
    row "rocksdb_limit readrandom ($DOCS keys bulk-loaded, flushed)" "$READ"
    echo
    echo "## Server: $TARGET_TXT, next to PostgreSQL 15${PG_NOTE:+ ($PG_NOTE)}"
    echo
    echo "Tessera through tessera_loadgen (libmongoc, $THREADS blocking threads); PostgreSQL through" \
         "pgbench ($THREADS clients, -j 4; bench/postgres.sh). CPU is per operation over the phase:" \
         "the server's (all its threads or processes, from /proc) and the client's own (the load" \
         "generator's getrusage, pgbench's user + system time) — they share the same cores."
    echo
    echo "| phase | Tessera ops/s | p50 µs | p99 µs | server CPU µs/op | client CPU µs/op | PostgreSQL ops/s | mean µs | server CPU µs/op | client CPU µs/op |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    srow "insert (w:1 / synchronous_commit off)" "${LG[insert]}" "${PG[insert]}"
    srow "insert (j:true / synchronous_commit on)" "${LG[insert_j]}" "${PG[insert_j]}"
    srow "point read by _id" "${LG[point]}" "${PG[point]}"
    srow "update by _id (\$inc / jsonb_set)" "${LG[update]}" "${PG[update]}"
    srow "range scan ($RANGE_LEN docs)" "${LG[range]}" "${PG[range]}"
    echo
    echo "Errors: $(for p in insert insert_j point update range; do printf '%s %s; ' "$p" "$(jget "${LG[$p]}" errors)"; done)"
    if [[ -n "${LG[preload]}" ]]; then
        echo
        echo "Preload: $DOCS documents in $(jget "${LG[preload]}" seconds) s (bulk inserts of 1000)."
    fi
    echo
    echo "Server peak resident memory (VmHWM): $PEAK_TXT; configured cache ${CACHE_MB} MiB" \
         "(--cacheSizeMB when run.sh starts the server; assumed with --uri)."
    echo
    echo "## Targets (at $THREADS connections)"
    echo
    echo "| target | ratio | verdict |"
    echo "|---|---:|---|"
    echo "| point reads >= 0.5 x echo ops/s ($(num "$POINT_OPS") / $(num "$ECHO_OPS")) | $(verdict "$POINT_OPS" "$ECHO_OPS" 0.5) |"
    echo "| server CPU per point read <= PostgreSQL's per lookup ($(dec "$POINT_CPU") / $(dec "$PG_POINT_CPU") µs) | $(atmost "$POINT_CPU" "$PG_POINT_CPU" 1.0) |"
    echo "| (point reads vs PostgreSQL lookups, its own client: $(num "$POINT_OPS") / $(num "$PG_POINT_OPS")) | $(info "$POINT_OPS" "$PG_POINT_OPS") |"
    echo "| inserts (w:1) >= 0.5 x RocksDB fillrandom ops/s ($(num "$INSERT_OPS") / $(num "$FILL_OPS")) | $(verdict "$INSERT_OPS" "$FILL_OPS" 0.5) |"
    echo "| inserts (w:1) >= 1.5 x PostgreSQL, synchronous_commit off ($(num "$INSERT_OPS") / $(num "$PG_INSERT_OPS")) | $(verdict "$INSERT_OPS" "$PG_INSERT_OPS" 1.5) |"
    echo "| inserts (j:true) >= 1.0 x PostgreSQL durable ($(num "$INSERTJ_OPS") / $(num "$PG_INSERTJ_OPS")) | $(verdict "$INSERTJ_OPS" "$PG_INSERTJ_OPS" 1.0) |"
    echo "| inserts (j:true) >= 0.8 x RocksDB fillsync ($(num "$INSERTJ_OPS") / $(num "$FSYNC_OPS")) | $(verdict "$INSERTJ_OPS" "$FSYNC_OPS" 0.8) |"
    echo "| (updates by _id vs PostgreSQL: $(num "$UPDATE_OPS") / $(num "$PG_UPDATE_OPS")) | $(info "$UPDATE_OPS" "$PG_UPDATE_OPS") |"
    echo "| (range scans vs PostgreSQL: $(num "$RANGE_OPS") / $(num "$PG_RANGE_OPS")) | $(info "$RANGE_OPS" "$PG_RANGE_OPS") |"
    echo "| peak RSS <= cache + 256 MiB ($PEAK_TXT vs $((MEM_LIMIT_KB / 1024)) MiB) | $MEM_VERDICT |"
    echo
    echo "## Raw output"
    echo
    echo '```'
    cat "$WORK/echo.out" "$WORK/rocksdb.out" 2>/dev/null | grep -v '^{' || true
    if [[ -f "$WORK/loadgen.out" ]]; then grep -v '^{' "$WORK/loadgen.out" || true; fi
    if [[ -f "$WORK/pg.out" ]]; then grep -v '^{' "$WORK/pg.out" || true; fi
    echo '```'
} >"$OUT"

log "report written to $OUT"
sed -n '/^## Targets/,/^## Raw/p' "$OUT" | grep '^|' >&2 || true
if [[ $FAILED -ne 0 ]]; then exit 1; fi
if [[ $LIMITS_ONLY -eq 0 && $RAN_LOADGEN -eq 0 ]]; then
    log "server not benchmarked: $SERVER_NOTE"
    exit 2
fi
exit 0
