#!/usr/bin/env bash
# Usage: scripts/run.sh [extra `tessera up` args...]
#
# Installs what is missing, builds the release preset and runs a local sharded cluster:
# `tessera up --shards 3 --port 27017` — a router on 27017, the config server on 27018, shards on
# 27019-27021 — with its data in ${TESSERA_DBPATH:-$HOME/.tessera/cluster}. Connect with
#   tests/integration/node_modules/.bin/mongosh mongodb://127.0.0.1:27017
# Ctrl-C stops the whole cluster. (A single node instead: build/tessera serve --dbpath DIR.)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/setup.sh
scripts/build.sh release tessera  # the server only; scripts/test.sh builds the rest

dbpath="${TESSERA_DBPATH:-$HOME/.tessera/cluster}"
mkdir -p "$dbpath"
exec build/tessera up --shards 3 --port 27017 --dbpath "$dbpath" "$@"
