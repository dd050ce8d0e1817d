#!/usr/bin/env bash
# Every test under AddressSanitizer + UndefinedBehaviorSanitizer, in the build
# folder build-asan/ (clang, CUDA off), failing on any sanitizer report: what
# CI runs (scripts/test.sh). One build holds the core, the CLI, the MPI
# backend, the desktop application and the fuzz harnesses (-DMANIFOLD_FUZZ=ON;
# scripts/fuzz.sh builds and runs only those), so the instrumented core is
# compiled once for all of them.
#   scripts/sanitize.sh [--fuzz SECONDS] [ctest arguments, e.g. -L core]   build, then test
#   scripts/sanitize.sh --build       only configure and build
#   scripts/sanitize.sh --no-build [--fuzz SECONDS] [ctest arguments]   only test
#   scripts/sanitize.sh --configure   only configure build-asan/
# --fuzz SECONDS also runs each fuzz harness SECONDS (the CTests fuzz_NAME,
# tests/fuzz/run_fuzz.sh), among the other tests; without it they are left
# out. MANIFOLD_CMAKE_ARGS adds CMake arguments (test.sh: -DMANIFOLD_WERROR=ON).
# The tests see MANIFOLD_SANITIZED (smaller sizes for the slowest ones,
# testing_support::scaled), and most test sources compile at -O0
# (tests/CMakeLists.txt). The desktop application's own code is not
# instrumented (MANIFOLD_UNINSTRUMENTED in the top-level CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang++ >/dev/null || { echo "sanitize.sh: clang++ not found (scripts/setup-debian.sh installs clang and libclang-rt-14-dev)" >&2; exit 2; }
build=build-asan
# A build folder configured from another source folder is made again.
if [ -f $build/CMakeCache.txt ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$PWD" $build/CMakeCache.txt; then rm -rf $build; fi
mode=${1:-}
case "$mode" in --configure|--build|--no-build) shift ;; *) mode= ;; esac
fuzz_seconds=
if [ "${1:-}" = --fuzz ]; then
  [[ "${2:-}" =~ ^[0-9]+$ ]] || { echo "sanitize.sh: --fuzz needs a number of seconds" >&2; exit 2; }
  fuzz_seconds=$2
  shift 2
fi
if [ "$mode" != --no-build ]; then
  # shellcheck disable=SC2086  # MANIFOLD_CMAKE_ARGS holds several arguments
  CC=clang CXX=clang++ cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMANIFOLD_FUZZ=ON \
    -DMANIFOLD_WITH_CUDA=OFF -DMANIFOLD_WITH_GUI=ON ${MANIFOLD_CMAKE_ARGS:-} >/dev/null
  [ "$mode" != --configure ] || exit 0
  cmake --build $build -j "$(nproc)"
  [ "$mode" != --build ] || exit 0
fi

# Every report is also written to $build/sanitizer-reports/: a report from a
# child process (the manifold command a test runs, an MPI rank) fails the run
# even where the test only checks for a non-zero exit. Leaks count, less
# those inside libhdf5 (tests/fuzz/lsan.supp), except in the MPI and GUI tests
# (their CTest properties add detect_leaks=0: tests/mpi/CMakeLists.txt and
# tests/ui/CMakeLists.txt say why). The fuzz harnesses set their own options
# and report in their logs (run_fuzz.sh).
reports=$PWD/$build/sanitizer-reports
rm -rf "$reports" && mkdir -p "$reports"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:log_path=$reports/asan:suppressions=$PWD/tests/fuzz/asan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan
export LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0
status=0
if [ -n "$fuzz_seconds" ]; then
  rm -f $build/tests/fuzz/findings/*.summary
  (cd $build && MANIFOLD_FUZZ_SECONDS=$fuzz_seconds ctest --output-on-failure -j "$(nproc)" \
     --timeout $((fuzz_seconds + 300)) "$@") || status=$?
  cat $build/tests/fuzz/findings/*.summary 2>/dev/null || true
else
  (cd $build && ctest --output-on-failure -j "$(nproc)" -LE fuzz "$@") || status=$?
fi
# A report is a file that names an error or a summary; a file holding only
# the runtime's warnings (e.g. "Can't read from symbolizer") is not one.
found=$(grep -lE "ERROR: |runtime error|SUMMARY: " "$reports"/* 2>/dev/null || true)
if [ -n "$found" ]; then
  for f in $found; do echo "== $f"; cat "$f"; done
  echo "sanitize.sh: $(echo "$found" | wc -l) sanitizer report(s), in $build/sanitizer-reports/" >&2
  exit 1
fi
exit $status
