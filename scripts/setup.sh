#!/usr/bin/env bash
# Installs what Tessera needs to build and test on Debian 12, and nothing that is already there.
#
# Idempotent: a second run checks the packages with one dpkg-query call, finds node_modules up to
# date and exits without touching the network. Runs as root (CI) or through sudo otherwise.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

PACKAGES=(
    build-essential cmake ninja-build ccache pkg-config clang libclang-rt-14-dev llvm
    librocksdb-dev libbson-dev libmongoc-dev libasio-dev libssl-dev libpcre2-dev libicu-dev
    libgtest-dev libgmock-dev libbenchmark-dev libgoogle-perftools-dev
    libraft-dev libuv1-dev liblz4-dev
    python3-pymongo python3-pytest
    nodejs npm
    clang-format
)

log() { printf 'setup: %s\n' "$*" >&2; }

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
    SUDO=(sudo)
fi

# --- Debian packages -----------------------------------------------------------------------
declare -A installed=()
# One dpkg-query for all packages; unknown names only print to stderr.
while read -r name status; do
    [[ "$status" == "install ok installed" ]] && installed["$name"]=1
done < <(dpkg-query -W -f='${Package} ${Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)

missing=()
for pkg in "${PACKAGES[@]}"; do
    [[ -n "${installed[$pkg]:-}" ]] && continue
    # NodeSource's nodejs bundles npm and conflicts with Debian's npm package.
    if [[ "$pkg" == npm ]] && command -v npm >/dev/null 2>&1; then
        continue
    fi
    missing+=("$pkg")
done

if ((${#missing[@]} > 0)); then
    log "installing missing packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update -q
    "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    log "all ${#PACKAGES[@]} Debian packages present"
fi

node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if ((node_major < 20)); then
    log "warning: Node.js $(node --version 2>/dev/null || echo missing) found; the mongodb 7.x" \
        "driver needs Node.js >= 20.19"
fi

# --- npm packages for the integration tests (mongodb driver, mongosh, mongoose) ---------------
INTEG="$ROOT/tests/integration"
if [[ -f "$INTEG/package.json" ]]; then
    if [[ ! -d "$INTEG/node_modules" ]] ||
        [[ -f "$INTEG/package-lock.json" && "$INTEG/package-lock.json" -nt "$INTEG/node_modules" ]] ||
        [[ "$INTEG/package.json" -nt "$INTEG/node_modules" ]]; then
        if [[ -f "$INTEG/package-lock.json" ]]; then
            log "npm ci in tests/integration"
            (cd "$INTEG" && npm ci --no-audit --no-fund --loglevel=error)
        else
            log "npm install in tests/integration (no package-lock.json)"
            (cd "$INTEG" && npm install --no-audit --no-fund --loglevel=error)
        fi
        touch "$INTEG/node_modules"
    else
        log "tests/integration/node_modules up to date"
    fi
fi
