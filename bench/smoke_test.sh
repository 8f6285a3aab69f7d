#!/usr/bin/env bash
# Smoke test of the bench tools (registered with ctest as bench_smoke): each tool runs briefly,
# succeeds, prints its JSON lines and cleans up; the load generator fails cleanly without a
# server and, when Debian's python3-pymongo is present, runs every phase against fake_mongod.py
# and reports a missing document as an error. Bounded to ~30 s.
# usage: smoke_test.sh BENCH_BIN_DIR
set -uo pipefail
BIN="$1"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/bench_smoke.XXXXXX")"
STUB_PID=""
# shellcheck disable=SC2317  # invoked by the trap
cleanup() {
    if [[ -n "$STUB_PID" ]]; then kill "$STUB_PID" 2>/dev/null; wait "$STUB_PID" 2>/dev/null; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
PASSED=0
FAILED=0
check() { # check NAME CONDITION...
    local name="$1"; shift
    if "$@"; then PASSED=$((PASSED + 1)); echo "ok   $name"
    else FAILED=$((FAILED + 1)); echo "FAIL $name"; fi
}
json_ok() { # json_ok FILE TOOL PHASE: a JSON line with ops > 0 and no errors
    grep -F "\"tool\":\"$2\",\"phase\":\"$3\"" "$1" | grep -q '"errors":0,' &&
        ! grep -F "\"tool\":\"$2\",\"phase\":\"$3\"" "$1" | grep -q '"ops":0,'
}

timeout 30 "$BIN/echo_limit" --threads 4 --seconds 0.5 --doc-size 512 --json >"$WORK/echo" 2>&1
check "echo_limit exits 0" test $? -eq 0
check "echo_limit reports the echo phase" json_ok "$WORK/echo" echo_limit echo

mkdir "$WORK/rdb"
timeout 60 "$BIN/rocksdb_limit" --threads 4 --seconds 0.5 --value-size 256 --read-keys 2000 \
    --dir "$WORK/rdb" --json >"$WORK/rocks" 2>&1
check "rocksdb_limit exits 0" test $? -eq 0
check "rocksdb_limit reports fillrandom" json_ok "$WORK/rocks" rocksdb_limit fillrandom
check "rocksdb_limit reports readrandom" json_ok "$WORK/rocks" rocksdb_limit readrandom
check "rocksdb_limit removes its directory" test -z "$(ls -A "$WORK/rdb")"

mkdir "$WORK/raft"
# A base port away from the servers' (27017…) and the ephemeral range's start; the groups use
# +11..+43.
RAFT_PORT=$((20000 + RANDOM % 10000))
timeout 90 "$BIN/raft_limit" --threads 4 --seconds 0.5 --value-size 100 --dir "$WORK/raft" \
    --base-port "$RAFT_PORT" --failovers 1 --json >"$WORK/raftout" 2>&1
check "raft_limit exits 0" test $? -eq 0
check "raft_limit reports group1" json_ok "$WORK/raftout" raft_limit group1
check "raft_limit reports group3" json_ok "$WORK/raftout" raft_limit group3
check "raft_limit reports a failover" json_ok "$WORK/raftout" raft_limit failover
check "raft_limit removes its directory" test -z "$(ls -A "$WORK/raft")"

if [[ -x "$BIN/tessera_loadgen" ]]; then
    timeout 30 "$BIN/tessera_loadgen" --uri "mongodb://127.0.0.1:1" --timeout-ms 300 \
        >"$WORK/unreach" 2>&1
    check "loadgen without a server exits 3" test $? -eq 3
    check "loadgen says it cannot reach the endpoint" grep -q "cannot reach" "$WORK/unreach"
    timeout 30 "$BIN/tessera_loadgen" --uri "mongodb://127.0.0.1:1" --op bogus >/dev/null 2>&1
    check "loadgen rejects a bad --op with 2" test $? -eq 2

    if /usr/bin/python3 -c 'import bson' 2>/dev/null; then
        /usr/bin/python3 "$HERE/fake_mongod.py" --port 0 --port-file "$WORK/port" \
            >"$WORK/stub.log" 2>&1 &
        STUB_PID=$!
        for _ in $(seq 1 50); do [[ -s "$WORK/port" ]] && break; sleep 0.1; done
        URI="mongodb://127.0.0.1:$(cat "$WORK/port" 2>/dev/null)/?directConnection=true"
        timeout 60 "$BIN/tessera_loadgen" --uri "$URI" --threads 4 --seconds 0.5 --docs 2000 \
            --doc-size 300 --range-len 20 --json >"$WORK/lg" 2>&1
        check "loadgen --op all against the stub exits 0" test $? -eq 0
        for p in preload point update range insert; do
            check "loadgen reports $p without errors" json_ok "$WORK/lg" tessera_loadgen "$p"
        done
        timeout 30 "$BIN/tessera_loadgen" --uri "$URI" --threads 2 --seconds 0.3 --op point \
            --coll empty --skip-preload --docs 10 >"$WORK/miss" 2>&1
        check "loadgen counts a missing document as an error (exit 1)" test $? -eq 1
        check "loadgen names the missing document" grep -q "returned 0 documents" "$WORK/miss"
    else
        echo "skip loadgen-against-stub checks: /usr/bin/python3 has no bson (python3-pymongo)"
    fi
fi

echo "$PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
