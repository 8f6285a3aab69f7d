#!/usr/bin/env bash
# The PostgreSQL 15 peer of bench/run.sh: the same workload on a private PostgreSQL cluster on
# this machine, driven by pgbench with the same number of clients, printed as the same flat JSON
# lines as the other tools ({"tool":"postgres","phase":...,"ops_per_sec":...,"mean_us":...,
# "server_cpu_us_per_op":...}). Loopback TCP only; the cluster lives in a temporary directory
# under --dir and is stopped and removed at exit.
#
# The table: docs (doc jsonb) with a unique expression index on ((doc->>'_id')::bigint), preloaded
# with --docs documents {_id, k, n: 0, pad} whose JSON text is --doc-size bytes. Phases (pgbench
# -c clients -j 4, --seconds each):
#   point     SELECT doc ... WHERE _id = random            (prepared statements)
#   update    UPDATE ... SET n = n + 1 WHERE _id = random   (prepared, synchronous_commit off)
#   range     SELECT doc ... WHERE _id >= s AND _id < s + L ORDER BY _id   (prepared)
#   insert    INSERT of a new document, synchronous_commit off (acknowledged before its WAL is
#             flushed: the peer of a w:1 insert); the statement carries the whole document
#   insert_j  the same with synchronous_commit on (acknowledged once flushed: the peer of j:true)
# Server CPU: utime + stime of the postmaster and every child (the backends' CPU reaches the
# postmaster's cutime/cstime when they exit), before and after each phase; client CPU: pgbench's.
set -euo pipefail

DIR="${TMPDIR:-/tmp}"
CLIENTS=16
SECONDS_PER_PHASE=15
DOCS=100000
DOC_SIZE=1024
RANGE_LEN=100
CACHE_MB=256
while [[ $# -gt 0 ]]; do
    case "$1" in
        --dir) DIR="$2"; shift 2 ;;
        --clients) CLIENTS="$2"; shift 2 ;;
        --seconds) SECONDS_PER_PHASE="$2"; shift 2 ;;
        --docs) DOCS="$2"; shift 2 ;;
        --doc-size) DOC_SIZE="$2"; shift 2 ;;
        --range-len) RANGE_LEN="$2"; shift 2 ;;
        --cache-mb) CACHE_MB="$2"; shift 2 ;;
        *) echo "postgres.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

PGBIN="$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || true)"
if [[ -z "$PGBIN" || ! -x "$PGBIN/initdb" ]]; then
    echo "postgres.sh: PostgreSQL 15 is not installed (Debian package postgresql-15)" >&2
    exit 3
fi
PGBENCH="$PGBIN/pgbench"
PSQL="$PGBIN/psql"

# initdb refuses to run as root: the cluster is then run as 'nobody', in a directory it can
# reach (--dir may sit under a private 0700 directory).
AS=()
if [[ "$(id -u)" -eq 0 ]]; then
    AS=(runuser -u nobody --)
    DIR="${TMPDIR:-/tmp}"
fi
WORK="$(mktemp -d "$DIR/tessera_pg.XXXXXX")"
[[ ${#AS[@]} -gt 0 ]] && chown nobody "$WORK"
PGDATA="$WORK/data"
PORT=""
# shellcheck disable=SC2317  # invoked by the trap
cleanup() {
    if [[ -f "$PGDATA/postmaster.pid" ]]; then
        "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 30000))
    if ! ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then PORT="$p"; break; fi
done
[[ -n "$PORT" ]] || { echo "postgres.sh: no free port" >&2; exit 1; }

"${AS[@]}" "$PGBIN/initdb" -D "$PGDATA" -U bench --auth=trust -E UTF8 >"$WORK/initdb.log" 2>&1 ||
    { cat "$WORK/initdb.log" >&2; exit 1; }
"${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -w -t 30 -l "$WORK/server.log" \
    -o "-p $PORT -k $WORK -c listen_addresses=127.0.0.1 -c shared_buffers=${CACHE_MB}MB \
        -c max_connections=$((CLIENTS + 10))" start >/dev/null ||
    { cat "$WORK/server.log" >&2; exit 1; }
POSTMASTER="$(head -n1 "$PGDATA/postmaster.pid")"

sql() { "$PSQL" -h 127.0.0.1 -p "$PORT" -U bench -d postgres -v ON_ERROR_STOP=1 -qAt "$@"; }

# JSON text of {"_id": i, "k": .., "n": 0, "pad": "xxx..."} is about 40 bytes plus the pad.
PAD_LEN=$((DOC_SIZE > 80 ? DOC_SIZE - 60 : 20))
sql -c "CREATE TABLE docs (doc jsonb NOT NULL)" \
    -c "CREATE SEQUENCE ids START $DOCS" \
    -c "INSERT INTO docs SELECT jsonb_build_object('_id', i, 'k', (i * 7919) % $DOCS, 'n', 0,
            'pad', repeat('x', $PAD_LEN)) FROM generate_series(0, $DOCS - 1) AS i" \
    -c "CREATE UNIQUE INDEX docs_id ON docs (((doc->>'_id')::bigint))" \
    -c "VACUUM ANALYZE docs" -c "CHECKPOINT"

# The server's CPU seconds so far: the postmaster (with its exited children) and live children.
server_cpu() {
    local tck total=0 pid f
    tck="$(getconf CLK_TCK)"
    for pid in "$POSTMASTER" $(pgrep -P "$POSTMASTER" || true); do
        f="$(cut -d')' -f2- "/proc/$pid/stat" 2>/dev/null)" || continue
        # After ")": state=1 ... utime=12 stime=13 cutime=14 cstime=15 (1-based, space split)
        # shellcheck disable=SC2086
        set -- $f
        if [[ "$pid" == "$POSTMASTER" ]]; then
            total=$((total + ${12} + ${13} + ${14} + ${15}))
        else
            total=$((total + ${12} + ${13}))
        fi
    done
    awk -v t="$total" -v k="$tck" 'BEGIN { printf "%.3f", t / k }'
}
children() { pgrep -P "$POSTMASTER" | wc -l; }

cat >"$WORK/point.sql" <<SQL
\set id random(0, $((DOCS - 1)))
SELECT doc FROM docs WHERE (doc->>'_id')::bigint = :id;
SQL
cat >"$WORK/update.sql" <<SQL
\set id random(0, $((DOCS - 1)))
UPDATE docs SET doc = jsonb_set(doc, '{n}', to_jsonb((doc->>'n')::bigint + 1))
    WHERE (doc->>'_id')::bigint = :id;
SQL
cat >"$WORK/range.sql" <<SQL
\set s random(0, $((DOCS - RANGE_LEN)))
SELECT doc FROM docs WHERE (doc->>'_id')::bigint >= :s AND (doc->>'_id')::bigint < :s + $RANGE_LEN
    ORDER BY (doc->>'_id')::bigint;
SQL
PAD="$(head -c "$PAD_LEN" /dev/zero | tr '\0' 'x')"
cat >"$WORK/insert.sql" <<SQL
INSERT INTO docs VALUES (jsonb_build_object('_id', nextval('ids'), 'k', 0, 'n', 0, 'pad', '$PAD'));
SQL

# phase NAME SCRIPT PROTOCOL SYNCHRONOUS_COMMIT
phase() {
    local name="$1" script="$2" protocol="$3" sync="$4" base before after out tps lat cpu client
    base="$(children)"
    before="$(server_cpu)"
    # pgbench's own CPU (user + system) comes from bash's `time` (TIMEFORMAT) into $WORK/time.
    out="$(TIMEFORMAT='%U %S'; { time PGOPTIONS="-c synchronous_commit=$sync" "$PGBENCH" \
        -h 127.0.0.1 -p "$PORT" -U bench -n -c "$CLIENTS" -j 4 -T "$SECONDS_PER_PHASE" \
        -M "$protocol" -f "$WORK/$script" postgres >"$WORK/pgbench.out" 2>&1; } 2>"$WORK/time")" ||
        { echo "postgres.sh: pgbench $name failed: $(cat "$WORK/pgbench.out")" >&2; return 1; }
    out="$(cat "$WORK/pgbench.out")"
    # Wait (bounded) until the phase's backends are gone, so their CPU is in the postmaster's.
    for _ in $(seq 1 50); do [[ "$(children)" -le "$base" ]] && break; sleep 0.1; done
    after="$(server_cpu)"
    tps="$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -n1)"
    lat="$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out" | head -n1)"
    [[ -n "$tps" ]] || { echo "postgres.sh: no tps in pgbench output: $out" >&2; return 1; }
    cpu="$(awk -v a="$after" -v b="$before" -v t="$tps" -v s="$SECONDS_PER_PHASE" \
        'BEGIN { n = t * s; if (n > 0) printf "%.1f", (a - b) * 1e6 / n; else print 0 }')"
    client="$(awk -v t="$tps" -v s="$SECONDS_PER_PHASE" '{ n = t * s;
        if (n > 0) printf "%.1f", ($1 + $2) * 1e6 / n; else print 0 }' "$WORK/time")"
    printf '{"tool":"postgres","phase":"%s","threads":%s,"ops_per_sec":%s,"mean_us":%s,' \
        "$name" "$CLIENTS" "$tps" "$(awk -v l="${lat:-0}" 'BEGIN { printf "%.1f", l * 1000 }')"
    printf '"server_cpu_us_per_op":%s,"client_cpu_us_per_op":%s,"synchronous_commit":"%s",' \
        "$cpu" "${client:-0}" "$sync"
    printf '"protocol":"%s"}\n' "$protocol"
    echo "postgres $name: $tps tps, latency average ${lat:-?} ms, server CPU $cpu us/op," \
        "pgbench CPU ${client:-?} us/op (synchronous_commit=$sync, -M $protocol)"
}

phase point point.sql prepared off
phase update update.sql prepared off
phase range range.sql prepared off
phase insert insert.sql simple off
phase insert_j insert.sql simple on
