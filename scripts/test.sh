#!/usr/bin/env bash
# Installs the Debian packages (as root), builds, and runs every test through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then bash scripts/setup-debian.sh; fi
# Extra CMake arguments, e.g. MANIFOLD_CMAKE_ARGS=-DMANIFOLD_WITH_CUDA=OFF.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${MANIFOLD_CMAKE_ARGS:-}
cmake --build build -j "$(nproc)"
cd build
ctest --output-on-failure -j "$(nproc)"
