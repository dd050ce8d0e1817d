#!/usr/bin/env bash
# What CI runs (.ci/run): installs the Debian packages (as root), checks the
# sources' style, builds with warnings as errors, runs every test through
# CTest, then fuzzes every reader of untrusted input under ASan + UBSan.
# Each phase prints its wall and CPU time.
# The core, CLI and MPI tests under ASan + UBSan (scripts/sanitize.sh) are
# not part of it: their instrumented build and run do not fit CI's 30
# minutes beside the Release build the GUI tests need.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
times_file=$(mktemp)
trap 'rm -f "$times_file"' EXIT
cpu_seconds() {  # sets cpu to the user + system CPU seconds of this script's finished children
  times >"$times_file"  # here, not in a subshell: a subshell counts only its own children
  cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; ++i) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] } printf "%d", n + 0.5 }' "$times_file")
}
phase() {  # phase NAME COMMAND...: runs COMMAND, prints its wall and CPU time, returns its status
  local name=$1 t0 c0 status=0
  shift
  t0=$(date +%s)
  cpu_seconds
  c0=$cpu
  "$@" || status=$?
  cpu_seconds
  echo "test.sh: $name: $(($(date +%s) - t0)) s, $((cpu - c0)) CPU-s"
  return $status
}
if [ "$(id -u)" = 0 ]; then phase "packages" bash scripts/setup-debian.sh; fi
# The sources keep .clang-format's style (scripts/format.sh formats them).
phase "style check" bash scripts/format.sh --check
# Extra CMake arguments, e.g. MANIFOLD_CMAKE_ARGS=-DMANIFOLD_WITH_CUDA=OFF.
# Warnings are errors here (MANIFOLD_WERROR), so none creeps in.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMANIFOLD_WERROR=ON ${MANIFOLD_CMAKE_ARGS:-}
phase "Release build" cmake --build build -j "$(nproc)"
phase "tests" bash -c 'cd build && ctest --output-on-failure -j "$(nproc)"'

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
  :
elif [ "$left" -lt 300 ]; then
  echo "test.sh: fuzzing skipped: ${left} s left of the ${budget} s budget (run scripts/fuzz.sh)"
else
  status=0
  phase "fuzzing" timeout "$left" bash scripts/fuzz.sh "$fuzz_seconds" || status=$?
  if [ "$status" = 124 ]; then
    echo "test.sh: fuzzing stopped at the ${budget} s budget (run scripts/fuzz.sh)"
  elif [ "$status" != 0 ]; then
    exit "$status"
  fi
fi
cpu_seconds
echo "test.sh: all phases: $(($(date +%s) - started)) s, $cpu CPU-s"
