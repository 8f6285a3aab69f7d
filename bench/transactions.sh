#!/usr/bin/env bash
# The cost of cross-shard transactions (issue 14, point 8), measured in one run on one machine:
# plain updates, one-shard transactions and two-shard transactions (two updateOnes each) through
# one router of `tessera up --shards 2 --routers 1` on loopback ports; target p50(2-shard) ÷
# p50(1-shard) ≤ 1.5. Writes a markdown report and stops the cluster. See bench/README.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build"
SECONDS_PER_PHASE=5
REPEAT=3
CLIENTS="1 8"
OUT="$ROOT/bench/results/transactions-latest.md"
NO_BUILD=0
WRITE_CONCERN=""  # the server's default (w: 1); or majority (journaled, MongoDB's default)

while [[ $# -gt 0 ]]; do
    case "$1" in
        --build-dir) BUILD_DIR="$(realpath -m "$2")"; shift 2 ;;
        --no-build) NO_BUILD=1; shift ;;
        --seconds) SECONDS_PER_PHASE="$2"; shift 2 ;;
        --repeat) REPEAT="$2"; shift 2 ;;
        --clients) CLIENTS="$2"; shift 2 ;;  # one count or a quoted list: "1 8"
        --out) OUT="$(realpath -m "$2")"; shift 2 ;;
        --write-concern) WRITE_CONCERN="$2"; shift 2 ;;  # of every commit and plain update
        -h|--help)
            echo "usage: bench/transactions.sh [--build-dir DIR] [--no-build] [--seconds S] [--repeat R] [--clients \"1 8\"] [--out FILE] [--write-concern 1|majority]"
            exit 0 ;;
        *) echo "transactions.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

log() { echo "[bench] $*" >&2; }

if [[ $NO_BUILD -eq 0 ]]; then
    log "building tessera in $BUILD_DIR"
    (cd "$ROOT" && cmake --preset release >/dev/null)
    ninja -C "$BUILD_DIR" -j2 tessera >/dev/null
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tessera_txn_bench.XXXXXX")"
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

# Four consecutive free ports below the ephemeral range: router P, config P+1, shards P+2, P+3.
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

log "starting tessera up --shards 2 --routers 1 --port $BASE"
"$BUILD_DIR/tessera" up --shards 2 --routers 1 --port "$BASE" --dbpath "$WORK/data" \
    >"$WORK/up.out" 2>&1 &
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

# The cluster's processes as `tessera up` lists them ("  shard0   127.0.0.1:P  pid N  log F"):
# each phase reports the CPU time per operation of every one of them.
PIDS="$(sed -n 's/^  \([a-z0-9]*\) .* pid \([0-9]*\) .*/\1=\2/p' "$WORK/up.out" | paste -sd, -)"

# One run per client count: one client measures the latency a transaction adds; eight load the
# two cores every process here shares, so that run also measures the CPU each kind costs.
for n in $CLIENTS; do
    log "phases: plain, txn1, txn2 x $REPEAT (ABBA), then mixed x $REPEAT, $n clients, ${SECONDS_PER_PHASE}s each"
    node "$ROOT/bench/transactions.mjs" --uri "mongodb://127.0.0.1:$BASE/" --clients "$n" \
        --seconds "$SECONDS_PER_PHASE" --repeat "$REPEAT" --pids "$PIDS" \
        --clk-tck "$(getconf CLK_TCK)" ${WRITE_CONCERN:+--write-concern "$WRITE_CONCERN"} \
        >"$WORK/txn-$n.out" 2>&1 ||
        { cat "$WORK/txn-$n.out" >&2; exit 1; }
done

mkdir -p "$(dirname "$OUT")"
{
    echo "# Transactions through a router (bench/transactions.sh)"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, tessera up --shards 2 --routers 1 on loopback;"
    echo "$REPEAT rounds of ${SECONDS_PER_PHASE} s phases in ABBA order per client count (medians of the rounds);"
    WC_TEXT="the server default (w: 1, not journaled)"
    [[ -z "$WRITE_CONCERN" ]] || WC_TEXT="w: $WRITE_CONCERN"
    echo "write concern of every commit and plain update: $WC_TEXT."
    for n in $CLIENTS; do
        SUMMARY="$(grep -F '"phase":"summary"' "$WORK/txn-$n.out" | tail -n1)"
        num() { sed -n "s/.*\"$1\":\([-0-9.e]*\).*/\1/p" <<<"$SUMMARY"; }
        echo
        echo "## $n client(s)"
        echo
        echo "| operation | p50 (µs) | p99 (µs) |"
        echo "|---|---:|---:|"
        echo "| plain updateOne | $(num p50_plain_us) | |"
        echo "| transaction, 2 updateOnes, 1 shard | $(num p50_txn1_us) | $(num p99_txn1_us) |"
        echo "| transaction, 2 updateOnes, 2 shards (two-phase commit) | $(num p50_txn2_us) | $(num p99_txn2_us) |"
        echo
        echo "| target | measured | verdict |"
        echo "|---|---:|---|"
        echo "| p50(2-shard) ÷ p50(1-shard) ≤ 1.5 | $(num ratio_txn2_txn1_p50) (rounds: $(sed -n 's/.*"ratios":\[\([^]]*\)\].*/\1/p' <<<"$SUMMARY")) | $(sed -n 's/.*"verdict":"\([A-Z]*\)".*/\1/p' <<<"$SUMMARY") |"
        echo "| p50(2-shard) − p50(1-shard), what two-phase commit adds (median of the rounds) | $(num p50_extra_us) µs | |"
        echo "| the same ratio, both kinds interleaved in blocks of 25 within each phase (p50 $(num mixed_p50_txn2_us) / $(num mixed_p50_txn1_us) µs) | $(num mixed_ratio_txn2_txn1_p50) (rounds: $(sed -n 's/.*"mixed_ratios":\[\([^]]*\)\].*/\1/p' <<<"$SUMMARY")) | (not the target's measure: both kinds under one load) |"
        echo
        echo "CPU time per operation, µs (median of the rounds; user + system of each process,"
        echo "from /proc; the client is the Node driver running the phase):"
        echo
        node -e '
            const s = JSON.parse(process.argv[1]);
            const kinds = ["plain", "txn1", "txn2"];
            console.log("| process | plain updateOne | transaction, 1 shard | transaction, 2 shards |");
            console.log("|---|---:|---:|---:|");
            for (const name of Object.keys(s.cpu_us_per_op.txn2)) {
                console.log(`| ${name} | ${kinds.map((k) => s.cpu_us_per_op[k][name]).join(" | ")} |`);
            }
            console.log(`\nCPU ratio, 2-shard ÷ 1-shard transaction (median of the rounds): ${s.cpu_ratio_txn2_txn1}`);
        ' "$SUMMARY"
        echo
        echo "Every phase:"
        echo
        echo '```'
        grep -F '"tool":"transactions"' "$WORK/txn-$n.out"
        echo '```'
    done
} >"$OUT"
cat "$OUT"
