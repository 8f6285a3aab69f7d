#!/usr/bin/env bash
# Usage: scripts/test.sh
#
# Runs every test Tessera has and ends with one line `N passed, N failed` (skips are listed in the
# summary above it); exits non-zero if anything failed. Phases, in order:
#   1. setup       scripts/setup.sh (Debian packages, npm ci for tests/integration)
#   2. release     scripts/build.sh release -> build/tessera
#   3. unit        debug preset (ASan+UBSan), `ctest --output-on-failure -j2` in build-debug/
#   4. tsan        tsan preset (clang: -Wthread-safety -Werror, the lock contracts of base/mutex.h,
#                  and ThreadSanitizer), `ctest` of its unit tests under TSan (tests/tsan.supp)
#   5. fuzz        fuzz preset, every build-fuzz/tests/fuzz/*_fuzz for a bounded time
#   6. node        node --test tests/integration/node and tests/spec/selftest (Node driver +
#                  mongosh) against build/tessera
#   7. python      pytest tests/integration/python (pymongo, crash, bad input) against build/tessera
#   8. spec        MongoDB's unified CRUD spec tests (../shared/spec-tests/crud) through
#                  tests/spec/run.mjs against a build/tessera started with --enableTestCommands;
#                  tests listed in tests/spec/known-failures-single.txt fail as they say they do
#      spec-rs     the transactions, sessions and retryable-writes spec tests at --profile
#                  replicaset-8.0 against `build/tessera serve --replSet rs0`, with
#                  tests/spec/known-failures-replicaset.txt
#   9. spec-sharded the same CRUD spec tests at --profile sharded-8.0 through the routers of a
#                  `tessera up --shards 3 --routers 2` cluster (--enableTestCommands; clients with
#                  useMultipleMongoses get both routers, others the first), with
#                  tests/spec/known-failures-sharded.txt
#      spec-sh-tx  the transactions, sessions and retryable-writes spec tests through the same
#                  cluster, with tests/spec/known-failures-sharded-txn.txt
# A known-failure entry that no longer holds — its test passes, fails for another reason, or no
# longer exists — fails the run (tests/spec/README.md). Phase times: tests/README.md.
#
# Environment knobs for local iteration:
#   TESSERA_SKIP_DEBUG=1        no debug build; unit tests then run from the release build
#   TESSERA_SKIP_UNIT=1         no unit tests at all
#   TESSERA_SKIP_TSAN=1         no thread-safety build, no TSan unit tests
#   TESSERA_SKIP_FUZZ=1         no fuzz build/run
#   TESSERA_SKIP_NODE=1         no Node/mongosh suite
#   TESSERA_SKIP_PYTHON=1       no pytest suite
#   TESSERA_SKIP_SPEC=1         no spec-test run (no profile)
#   TESSERA_SKIP_SPEC_SHARDED=1 no spec-test run against the sharded cluster
#   TESSERA_SPEC_TESTS=...      spec-tests folder (default: ../shared/spec-tests next to the repo)
#   TESSERA_SKIP_INTEGRATION=1  neither integration suite
#   TESSERA_FUZZ_SECONDS=20     libFuzzer -max_total_time per fuzzer
#   TESSERA_PYTHON=...          interpreter with pymongo + pytest (default: Debian's /usr/bin/python3)
#   TESSERA_TEST_OUT=...        where reports and logs go (default: build-test-output/)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1

OUT="${TESSERA_TEST_OUT:-$ROOT/build-test-output}"
rm -rf "$OUT"
mkdir -p "$OUT"

TOTAL_PASSED=0
TOTAL_FAILED=0
TOTAL_SKIPPED=0
SUMMARY=()
START_ALL=$SECONDS

banner() { printf '\n========== %s ==========\n' "$*"; }

# record SUITE PASSED FAILED SKIPPED NOTE
record() {
    local suite="$1" passed="$2" failed="$3" skipped="$4" note="${5:-}"
    TOTAL_PASSED=$((TOTAL_PASSED + passed))
    TOTAL_FAILED=$((TOTAL_FAILED + failed))
    TOTAL_SKIPPED=$((TOTAL_SKIPPED + skipped))
    SUMMARY+=("$(printf '%-10s %5d passed %5d failed %5d skipped  %s' \
        "$suite" "$passed" "$failed" "$skipped" "$note")")
}

finish() {
    banner "summary ($((SECONDS - START_ALL)) s)"
    local line
    for line in "${SUMMARY[@]}"; do
        echo "$line"
    done
    ((TOTAL_SKIPPED > 0)) && echo "($TOTAL_SKIPPED skipped)"
    echo
    echo "$TOTAL_PASSED passed, $TOTAL_FAILED failed"
    if ((TOTAL_FAILED > 0)); then
        exit 1
    fi
    exit 0
}

# --- 1. setup ------------------------------------------------------------------------------
banner "setup"
if ! scripts/setup.sh; then
    record setup 0 1 0 "scripts/setup.sh failed"
    finish
fi

PYTHON=""
for cand in ${TESSERA_PYTHON:-} /usr/bin/python3 python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import pymongo, pytest' 2>/dev/null; then
        PYTHON="$cand"
        break
    fi
done

# --- 2. release build ------------------------------------------------------------------------
banner "build release"
t0=$SECONDS
RELEASE_OK=0
# Only the server: the integration phases run build/tessera, and every other target is built
# (and its tests run) by the debug phase.
if scripts/build.sh release tessera; then
    RELEASE_OK=1
    echo "release build ok ($((SECONDS - t0)) s)"
else
    record release 0 1 0 "release build failed"
fi

# run_ctest DIR SUITE [ctest args...]
run_ctest() {
    local dir="$1" suite="$2" log="$OUT/ctest-$2.log" rc
    shift 2
    (
        cd "$dir" &&
            ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}" \
                UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
                LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$ROOT/tests/lsan.supp}" \
                TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/tsan.supp}" \
                ctest --output-on-failure -j2 --timeout 600 "$@"
    ) 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    local passed=0 failed=0 skipped=0 total summary
    summary="$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)"
    if [[ -n "$summary" ]]; then
        failed="$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$summary")"
        total="$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$summary")"
        # ctest counts skipped tests (GTEST_SKIP) as passed; it lists them as "(Skipped)".
        skipped="$(grep -cE '^[[:space:]]*[0-9]+ - .*\((Skipped|Disabled)\)$' "$log")"
        passed=$((total - failed - skipped))
    fi
    if ((rc != 0 && failed == 0)); then
        failed=1
    fi
    record "$suite" "$passed" "$failed" "$skipped" "ctest in ${dir#"$ROOT"/}"
}

# --- 3. unit tests (debug, ASan+UBSan) -----------------------------------------------------------
if [[ -n "${TESSERA_SKIP_UNIT:-}" ]]; then
    echo "unit tests skipped (TESSERA_SKIP_UNIT)"
elif [[ -z "${TESSERA_SKIP_DEBUG:-}" ]]; then
    banner "build debug (ASan+UBSan)"
    t0=$SECONDS
    if scripts/build.sh debug; then
        echo "debug build ok ($((SECONDS - t0)) s)"
        banner "unit tests (ctest, debug)"
        run_ctest "$ROOT/build-debug" ctest
    else
        record ctest 0 1 0 "debug build failed"
    fi
elif ((RELEASE_OK)); then
    banner "unit tests (ctest, release; debug skipped)"
    run_ctest "$ROOT/build" ctest
fi

# --- 4. thread safety: clang's lock analysis and ThreadSanitizer -------------------------------
if [[ -n "${TESSERA_SKIP_TSAN:-}" ]]; then
    echo "thread-safety build and TSan skipped (TESSERA_SKIP_TSAN)"
else
    banner "build tsan (clang -Wthread-safety, ThreadSanitizer)"
    t0=$SECONDS
    # The unit test binaries only: the analysis covers every library they link.
    mapfile -t tsan_targets < <(find src -name '*_test.cpp' -printf '%h\n' | sort -u |
        sed -E 's|^src/([a-z]+).*|tessera_\1_test|' | sort -u)
    tsan_targets+=(tessera_bench_test)
    if scripts/build.sh tsan "${tsan_targets[@]}"; then
        echo "tsan build ok ($((SECONDS - t0)) s)"
        banner "unit tests (ctest, tsan)"
        run_ctest "$ROOT/build-tsan" tsan --label-exclude no-tsan
    else
        record tsan 0 1 0 "tsan build failed (a lock contract or a compile error)"
    fi
fi

# --- 5. fuzzers -------------------------------------------------------------------------------
if [[ -n "${TESSERA_SKIP_FUZZ:-}" ]]; then
    echo "fuzzing skipped (TESSERA_SKIP_FUZZ)"
elif [[ ! -f tests/fuzz/CMakeLists.txt ]]; then
    echo "fuzzing skipped: no tests/fuzz/CMakeLists.txt yet"
else
    banner "build fuzz"
    FUZZ_DIR="$ROOT/build-fuzz"
    fuzz_ok=1
    if [[ ! -f "$FUZZ_DIR/build.ninja" ]]; then
        cmake --preset fuzz -B "$FUZZ_DIR" || fuzz_ok=0
    fi
    targets=()
    if ((fuzz_ok)); then
        # Build only the fuzzers, not the whole tree a third time.
        mapfile -t targets < <(ninja -C "$FUZZ_DIR" -t targets all 2>/dev/null |
            sed -nE 's/^([A-Za-z0-9_]+_fuzz): phony$/\1/p' | sort -u)
        if ((${#targets[@]} > 0)); then
            scripts/build.sh fuzz "${targets[@]}" || fuzz_ok=0
        fi
    fi
    if ((!fuzz_ok)); then
        record fuzz 0 1 0 "fuzz build failed"
    else
        mapfile -t fuzzers < <(find "$FUZZ_DIR/tests/fuzz" -type f -executable -name '*_fuzz' \
            2>/dev/null | sort)
        if ((${#fuzzers[@]} == 0)); then
            echo "no fuzz binaries found in build-fuzz/tests/fuzz; skipping"
        else
            banner "fuzz (${TESSERA_FUZZ_SECONDS:-20} s each)"
            fpass=0
            ffail=0
            secs="${TESSERA_FUZZ_SECONDS:-20}"
            for bin in "${fuzzers[@]}"; do
                name="$(basename "$bin")"
                corpus="$FUZZ_DIR/fuzz-corpus/$name"
                artifacts="$FUZZ_DIR/fuzz-artifacts"
                mkdir -p "$corpus" "$artifacts"
                seeds=()
                [[ -d "tests/fuzz/corpus/$name" ]] && seeds=("$ROOT/tests/fuzz/corpus/$name")
                log="$OUT/fuzz-$name.log"
                if timeout --kill-after=10 $((secs + 120)) "$bin" -max_total_time="$secs" \
                    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                    -artifact_prefix="$artifacts/$name-" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
                    fpass=$((fpass + 1))
                    printf 'fuzz %-32s ok   (%s)\n' "$name" \
                        "$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2 " runs"}')"
                else
                    ffail=$((ffail + 1))
                    printf 'fuzz %-32s FAILED; last lines of %s:\n' "$name" "$log"
                    tail -n 60 "$log"
                fi
            done
            record fuzz "$fpass" "$ffail" 0 "libFuzzer, ${secs}s each"
        fi
    fi
fi

# --- 6./7. integration suites -------------------------------------------------------------------
BIN_GIVEN="${TESSERA_BIN:-}"
export TESSERA_BIN="${TESSERA_BIN:-$ROOT/build/tessera}"
RUN_INTEG=1
if [[ -n "${TESSERA_SKIP_INTEGRATION:-}" ]]; then
    echo "integration suites skipped (TESSERA_SKIP_INTEGRATION)"
    RUN_INTEG=0
elif ((!RELEASE_OK)) && [[ -z "$BIN_GIVEN" ]]; then
    # Never test a stale binary left over from an earlier build.
    echo "integration suites not run: the release build failed"
    RUN_INTEG=0
elif [[ ! -x "$TESSERA_BIN" ]]; then
    echo "integration suites cannot run: $TESSERA_BIN does not exist"
    record integ 0 1 0 "no server binary at $TESSERA_BIN"
    RUN_INTEG=0
fi

if ((RUN_INTEG)) && [[ -z "${TESSERA_SKIP_NODE:-}" ]]; then
    # The spec runner's self-tests (no server) run here too.
    mapfile -t node_files < <(find tests/integration/node tests/spec -name '*.test.mjs' 2>/dev/null | sort)
    if ((${#node_files[@]} == 0)); then
        echo "no Node test files; skipping"
    else
        banner "integration: node --test (Node driver, mongosh)"
        tap="$OUT/node.tap"
        timeout --kill-after=30 "${TESSERA_NODE_TIMEOUT:-1500}" \
            node --test --test-timeout=120000 \
            --test-reporter=spec --test-reporter-destination=stdout \
            --test-reporter=tap --test-reporter-destination="$tap" \
            "${node_files[@]}"
        rc=$?
        np="$(sed -nE 's/^# pass ([0-9]+)$/\1/p' "$tap" 2>/dev/null | tail -1)"
        nf="$(sed -nE 's/^# fail ([0-9]+)$/\1/p' "$tap" 2>/dev/null | tail -1)"
        nc="$(sed -nE 's/^# cancelled ([0-9]+)$/\1/p' "$tap" 2>/dev/null | tail -1)"
        ns="$(sed -nE 's/^# skipped ([0-9]+)$/\1/p' "$tap" 2>/dev/null | tail -1)"
        np=${np:-0} nf=$((${nf:-0} + ${nc:-0})) ns=${ns:-0}
        if ((rc != 0 && nf == 0)); then
            nf=1
        fi
        note="node --test"
        ((rc == 124)) && note="node --test TIMED OUT"
        record node "$np" "$nf" "$ns" "$note"
    fi
fi

if ((RUN_INTEG)) && [[ -z "${TESSERA_SKIP_PYTHON:-}" ]]; then
    banner "integration: pytest (pymongo, crash, bad input)"
    has_tests=0
    if compgen -G "tests/integration/python/test_*.py" >/dev/null ||
        compgen -G "tests/integration/python/*_test.py" >/dev/null; then
        has_tests=1
    fi
    if [[ -z "$PYTHON" ]]; then
        echo "no python3 with pymongo and pytest found"
        record pytest 0 1 0 "no python3 with pymongo+pytest"
    else
        xml="$OUT/pytest.xml"
        timeout --kill-after=30 "${TESSERA_PYTHON_TIMEOUT:-1500}" \
            "$PYTHON" -m pytest -q --junitxml="$xml" tests/integration/python
        rc=$?
        read -r pp pf ps < <("$PYTHON" - "$xml" <<'PY'
import sys
import xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print(0, 0, 0)
    sys.exit(0)
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = f = s = 0
for su in suites:
    t += int(su.get("tests", 0))
    f += int(su.get("failures", 0)) + int(su.get("errors", 0))
    s += int(su.get("skipped", 0))
print(t - f - s, f, s)
PY
        )
        pp=${pp:-0} pf=${pf:-0} ps=${ps:-0}
        note="pytest ($PYTHON)"
        if ((rc == 5)); then
            if ((has_tests)); then
                pf=$((pf + 1))
                note="pytest collected no tests"
            fi
        elif ((rc != 0 && pf == 0)); then
            pf=1
            ((rc == 124)) && note="pytest TIMED OUT"
        fi
        record pytest "$pp" "$pf" "$ps" "$note"
    fi
fi

# --- 8. MongoDB's unified spec tests ------------------------------------------------------------
SPEC_DIR="${TESSERA_SPEC_TESTS:-$ROOT/../shared/spec-tests}"

# run_spec_tests SUITE URI PROFILE KNOWN_FAILURES NOTE PATH...: runs tests/spec/run.mjs at PROFILE
# against URI (logs: $OUT/SUITE.log, SUITE-failures.json) and records the result.
run_spec_tests() {
    local suite="$1" uri="$2" profile="$3" known="$4" note="$5"
    shift 5
    local rc sp sf sk
    timeout --kill-after=30 "${TESSERA_SPEC_TIMEOUT:-1200}" \
        node tests/spec/run.mjs --uri "$uri" --profile "$profile" --known-failures "$known" \
        --list-failures "$OUT/$suite-failures.json" "$@" | tee "$OUT/$suite.log"
    rc=${PIPESTATUS[0]}
    sp="$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p' "$OUT/$suite.log" | tail -1)"
    sf="$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p' "$OUT/$suite.log" | tail -1)"
    sk="$(sed -nE 's/^([0-9]+) known failures.*/\1/p' "$OUT/$suite.log" | tail -1)"
    sp=${sp:-0} sf=${sf:-0} sk=${sk:-0}
    if ((rc != 0 && sf == 0)); then
        sf=1
    fi
    record "$suite" "$sp" "$sf" "$sk" "$note"
}

# run_spec_suite SUITE PROFILE URI_PARAMS KNOWN_FAILURES NOTE "SERVE_ARGS" PATH...: starts
# `tessera serve --enableTestCommands SERVE_ARGS` on a free port, runs tests/spec/run.mjs at
# PROFILE against it (logs: $OUT/SUITE.log, SUITE-server.log, SUITE-failures.json), records it.
run_spec_suite() {
    local suite="$1" profile="$2" uri_params="$3" known="$4" note="$5" serve_args="$6"
    shift 6
    local db port pid ready rc sp sf sk
    db="$(mktemp -d)"
    port="$("${PYTHON:-python3}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    # shellcheck disable=SC2086 # serve_args is a list of words
    "$TESSERA_BIN" serve --port "$port" --dbpath "$db" --enableTestCommands $serve_args \
        >"$OUT/$suite-server.log" 2>&1 &
    pid=$!
    ready=0
    for _ in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            ready=1
            break
        fi
        sleep 0.1
    done
    if ((!ready)); then
        echo "spec server did not start; log:"
        tail -n 40 "$OUT/$suite-server.log"
        record "$suite" 0 1 0 "server did not start"
    else
        run_spec_tests "$suite" "mongodb://127.0.0.1:$port/?$uri_params" "$profile" "$known" \
            "$note" "$@"
    fi
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rm -rf "$db"
}

if ((RUN_INTEG)) && [[ -z "${TESSERA_SKIP_SPEC:-}" ]]; then
    banner "spec: unified CRUD tests (single-8.0)"
    if [[ ! -d "$SPEC_DIR/crud" ]]; then
        echo "no spec tests at $SPEC_DIR/crud"
        record spec 0 1 0 "spec tests not found at $SPEC_DIR"
    else
        run_spec_suite spec single-8.0 directConnection=true tests/spec/known-failures-single.txt \
            "crud at single-8.0; known failures counted as skipped" "" "$SPEC_DIR/crud"
        # Transactions, sessions and retryable writes on a one-member replica set.
        banner "spec: transactions, sessions, retryable-writes (replicaset-8.0)"
        run_spec_suite spec-rs replicaset-8.0 replicaSet=rs0 \
            tests/spec/known-failures-replicaset.txt \
            "transactions+sessions+retryable-writes at replicaset-8.0; known failures counted as skipped" \
            "--replSet rs0" "$SPEC_DIR/transactions" "$SPEC_DIR/sessions" "$SPEC_DIR/retryable-writes"
    fi
fi

# --- 9. MongoDB's unified spec tests through a sharded cluster ----------------------------------
if ((RUN_INTEG)) && [[ -z "${TESSERA_SKIP_SPEC:-}" && -z "${TESSERA_SKIP_SPEC_SHARDED:-}" ]]; then
    banner "spec: unified CRUD tests (sharded-8.0, tessera up --shards 3)"
    if [[ ! -d "$SPEC_DIR/crud" ]]; then
        echo "no spec tests at $SPEC_DIR/crud"
        record spec-sh 0 1 0 "spec tests not found at $SPEC_DIR"
    else
        cl_shards=3
        cl_routers=2
        cl_db="$(mktemp -d)"
        # routers on BASE..BASE+R-1, config on BASE+R, shard i on BASE+R+1+i: R+1+S free ports.
        cl_base="$(node -e '
            const net = require("node:net");
            const need = Number(process.argv[1]);
            const free = (p) => new Promise((ok) => { const s = net.createServer(); s.once("error", () => ok(false));
                s.listen(p, "127.0.0.1", () => s.close(() => ok(true))); });
            const any = () => new Promise((ok) => { const s = net.createServer();
                s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => ok(p)); }); });
            (async () => {
                for (let i = 0; i < 50; i++) {
                    const base = await any();
                    if (base + need >= 65535) continue;
                    let ok = true;
                    for (let p = base; p < base + need && ok; p++) ok = await free(p);
                    if (ok) { console.log(base); return; }
                }
                process.exit(1);
            })();' $((cl_routers + 1 + cl_shards)))"
        cl_log="$OUT/spec-sharded-up.log"
        "$TESSERA_BIN" up --shards "$cl_shards" --routers "$cl_routers" --port "${cl_base:-0}" \
            --dbpath "$cl_db" --enableTestCommands >"$cl_log" 2>&1 &
        cl_pid=$!
        ready=0
        if [[ -n "$cl_base" ]]; then
            for _ in $(seq 1 1200); do # 120 s
                if grep -q '^Connect with: ' "$cl_log" 2>/dev/null; then
                    ready=1
                    break
                fi
                kill -0 "$cl_pid" 2>/dev/null || break
                sleep 0.1
            done
        fi
        if ((!ready)); then
            echo "the cluster did not start; logs:"
            tail -n 40 "$cl_log" "$cl_db"/*.log 2>/dev/null
            record spec-sh 0 1 0 "tessera up did not start"
        else
            # Every router, in port order: the runner's own client and single-router clients use
            # the first.
            cl_uri="mongodb://$(seq -s, -f "127.0.0.1:%g" "$cl_base" $((cl_base + cl_routers - 1)))/"
            run_spec_tests spec-sh "$cl_uri" sharded-8.0 \
                tests/spec/known-failures-sharded.txt \
                "crud at sharded-8.0 (3 shards, 2 routers); known failures as skipped" "$SPEC_DIR/crud"
            banner "spec: transactions, sessions, retryable-writes (sharded-8.0)"
            run_spec_tests spec-sh-tx "$cl_uri" sharded-8.0 \
                tests/spec/known-failures-sharded-txn.txt \
                "transactions+sessions+retryable-writes at sharded-8.0 (3 shards, 2 routers); known failures as skipped" \
                "$SPEC_DIR/transactions" "$SPEC_DIR/sessions" "$SPEC_DIR/retryable-writes"
        fi
        # `tessera up` stops its children on SIGTERM; after 40 s kill it and every child it listed.
        kill -TERM "$cl_pid" 2>/dev/null
        for _ in $(seq 1 400); do
            kill -0 "$cl_pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$cl_pid" 2>/dev/null; then
            kill -KILL "$cl_pid" 2>/dev/null
            wait "$cl_pid" 2>/dev/null
            # Its children run in their own process groups: stop the ones it printed.
            for child in $(sed -nE 's/.* pid ([0-9]+) .*/\1/p' "$cl_log"); do
                kill -KILL "$child" 2>/dev/null
            done
        fi
        wait "$cl_pid" 2>/dev/null
        for f in "$cl_db"/*.log; do
            [[ -f "$f" ]] && cp "$f" "$OUT/spec-sharded-$(basename "$f")"
        done
        rm -rf "$cl_db"
    fi
fi

finish
