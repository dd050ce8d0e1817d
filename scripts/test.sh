#!/usr/bin/env bash
# Installs the Debian packages (as root), builds, runs every test through
# CTest, then fuzzes every reader of untrusted input under ASan + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then bash scripts/setup-debian.sh; fi
# Extra CMake arguments, e.g. MANIFOLD_CMAKE_ARGS=-DMANIFOLD_WITH_CUDA=OFF.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${MANIFOLD_CMAKE_ARGS:-}
cmake --build build -j "$(nproc)"
(cd build && ctest --output-on-failure -j "$(nproc)")
# Each fuzz harness MANIFOLD_FUZZ_SECONDS (default 20; 0 skips fuzzing) from
# its seed corpus, in build-fuzz/ (clang: the core and the harnesses only).
fuzz_seconds=${MANIFOLD_FUZZ_SECONDS:-20}
if [ "$fuzz_seconds" != 0 ]; then bash scripts/fuzz.sh "$fuzz_seconds"; fi
