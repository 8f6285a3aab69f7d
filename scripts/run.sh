#!/usr/bin/env bash
# Usage: scripts/run.sh [extra tessera serve args...]
#
# Installs what is missing, builds the release preset and runs a single-node server on
# port 27017 with its data in ${TESSERA_DBPATH:-$HOME/.tessera/data}. Connect with
#   tests/integration/node_modules/.bin/mongosh mongodb://127.0.0.1:27017
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/setup.sh
scripts/build.sh release

dbpath="${TESSERA_DBPATH:-$HOME/.tessera/data}"
mkdir -p "$dbpath"
exec build/tessera serve --port 27017 --dbpath "$dbpath" "$@"
