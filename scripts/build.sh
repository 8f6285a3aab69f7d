#!/usr/bin/env bash
# Usage: scripts/build.sh [release|debug|fuzz|tsan] [ninja targets...]
#
# Configures the CMake preset of that name on first use (release -> build/, debug -> build-debug/
# with ASan+UBSan, fuzz -> build-fuzz/ with clang+libFuzzer, tsan -> build-tsan/ with clang,
# ThreadSanitizer and -Wthread-safety), then builds with ninja.
# After `release`, the server binary is build/tessera.
#
# Environment:
#   TESSERA_JOBS       parallel jobs (default: nproc)
#   TESSERA_BUILD_DIR  build in this directory instead of the preset's (local experiments)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

preset="${1:-release}"
shift || true

case "$preset" in
    release) dir="build" ;;
    debug) dir="build-debug" ;;
    fuzz) dir="build-fuzz" ;;
    tsan) dir="build-tsan" ;;
    *)
        echo "usage: scripts/build.sh [release|debug|fuzz|tsan] [targets...]" >&2
        exit 2
        ;;
esac
if [[ -n "${TESSERA_BUILD_DIR:-}" ]]; then
    dir="$TESSERA_BUILD_DIR"
fi
[[ "$dir" = /* ]] || dir="$ROOT/$dir"

# ccache: make hits portable across checkouts (CI builds in a fresh clone in another folder).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

if [[ ! -f "$dir/build.ninja" ]]; then
    echo "build: configuring preset '$preset' in $dir" >&2
    cmake --preset "$preset" -B "$dir"
fi

jobs="${TESSERA_JOBS:-$(nproc)}"
echo "build: ninja -C $dir -j$jobs $*" >&2
ninja -C "$dir" -j"$jobs" "$@"
