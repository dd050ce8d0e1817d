#!/usr/bin/env bash
# What CI runs (.ci/run): installs the Debian packages (as root), checks the
# sources' style, builds everything once with clang under ASan + UBSan with
# warnings as errors (build-asan/, scripts/sanitize.sh), then runs every
# test there, each fuzz harness among them, failing on any sanitizer report;
# the one test ASan cannot run runs in a small plain build beside them.
# Each phase prints its wall and CPU time.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
times_file=$(mktemp)
plain_build=
trap 'rm -f "$times_file"; [ -z "$plain_build" ] || kill "$plain_build" 2>/dev/null || true' EXIT
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
export MANIFOLD_CMAKE_ARGS="-DMANIFOLD_WERROR=ON ${MANIFOLD_CMAKE_ARGS:-}"
phase "configure" bash scripts/sanitize.sh --configure
phase "build" cmake --build build-asan -j "$(nproc)"
# Each fuzz harness fuzzes MANIFOLD_FUZZ_SECONDS (default 20; 0 leaves them
# out) from its seed corpus, beside the other tests; a finding fails the run
# (scripts/fuzz.sh fuzzes longer).
fuzz_seconds=${MANIFOLD_FUZZ_SECONDS:-20}
# From a fixed seed (MANIFOLD_FUZZ_SEED, default 1), so that a run repeats
# and a finding here is one the same seed reproduces; scripts/fuzz.sh
# explores from fresh seeds. (Crashes inside libhdf5 itself are listed, not
# findings: tests/fuzz/run_fuzz.sh.)
export MANIFOLD_FUZZ_SEED=${MANIFOLD_FUZZ_SEED:-1}
fuzz=()
[ "$fuzz_seconds" = 0 ] || fuzz=(--fuzz "$fuzz_seconds")
# One test cannot run under ASan: running out of memory, where ASan's
# allocator aborts and a plain build throws std::bad_alloc, which the readers
# turn into one line naming the file (HostileMemory.*, skipped with that
# reason in build-asan/). A plain -O0 build of that test (build-plain/)
# compiles at low priority beside the sanitized tests, on the CPU they leave.
mkdir -p build-plain
CC=clang CXX=clang++ cmake -S . -B build-plain -G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g0" \
  -DMANIFOLD_WITH_CUDA=OFF -DMANIFOLD_WITH_GUI=OFF >build-plain/build.log 2>&1
nice -n 19 cmake --build build-plain -j "$(nproc)" --target test_hostile_readers >>build-plain/build.log 2>&1 &
plain_build=$!
phase "tests" bash scripts/sanitize.sh --no-build "${fuzz[@]}"
plain_test() {  # waits for build-plain/, then runs the test ASan skips
  local status=0
  wait "$plain_build" || status=$?
  plain_build=
  [ $status = 0 ] || { tail -n 40 build-plain/build.log; echo "test.sh: the plain build failed (build-plain/build.log)"; return $status; }
  (cd build-plain && ctest --output-on-failure -R '^test_hostile_readers$')
}
phase "tests without ASan" plain_test
cpu_seconds
echo "test.sh: all phases: $(($(date +%s) - started)) s, $cpu CPU-s"
