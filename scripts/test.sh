#!/usr/bin/env bash
# Installs the Debian packages (as root), checks the sources' style, builds
# with warnings as errors, runs every test through CTest, then fuzzes every
# reader of untrusted input under ASan + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
if [ "$(id -u)" = 0 ]; then bash scripts/setup-debian.sh; fi
# The sources keep .clang-format's style (scripts/format.sh formats them).
bash scripts/format.sh --check
# Extra CMake arguments, e.g. MANIFOLD_CMAKE_ARGS=-DMANIFOLD_WITH_CUDA=OFF.
# Warnings are errors here (MANIFOLD_WERROR), so none creeps in.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMANIFOLD_WERROR=ON ${MANIFOLD_CMAKE_ARGS:-}
cmake --build build -j "$(nproc)"
(cd build && ctest --output-on-failure -j "$(nproc)")
# Each fuzz harness MANIFOLD_FUZZ_SECONDS (default 20; 0 skips fuzzing) from
# its seed corpus, in build-asan/ (clang, ASan + UBSan; fuzz.sh builds only
# the core and the harnesses there).
# CI must finish within 30 minutes: fuzzing gets what is left of
# MANIFOLD_TEST_BUDGET_S (default 1680 s from the start of this script) and
# says so in one line when that is too little or runs out; a crash it finds
# still fails the run.
fuzz_seconds=${MANIFOLD_FUZZ_SECONDS:-20}
budget=${MANIFOLD_TEST_BUDGET_S:-1680}
left=$((budget - ($(date +%s) - started)))
if [ "$fuzz_seconds" = 0 ]; then
  exit 0
elif [ "$left" -lt 300 ]; then
  echo "test.sh: fuzzing skipped: ${left} s left of the ${budget} s budget (run scripts/fuzz.sh)"
else
  status=0
  timeout "$left" bash scripts/fuzz.sh "$fuzz_seconds" || status=$?
  if [ "$status" = 124 ]; then
    echo "test.sh: fuzzing stopped at the ${budget} s budget (run scripts/fuzz.sh)"
  elif [ "$status" != 0 ]; then
    exit "$status"
  fi
fi
