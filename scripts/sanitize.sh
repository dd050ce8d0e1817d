#!/usr/bin/env bash
# The core, CLI and MPI tests under AddressSanitizer + UndefinedBehaviorSanitizer
# in their own build folder build-asan/ (clang; CUDA and the GUI off), failing
# on any sanitizer report. The same build holds the fuzz harnesses
# (-DMANIFOLD_FUZZ=ON; scripts/fuzz.sh builds and runs only those), so the
# instrumented core is compiled once for both.
#   scripts/sanitize.sh [ctest arguments, e.g. -R test_readers]   build, then test
#   scripts/sanitize.sh --build       only configure and build (tests and harnesses)
#   scripts/sanitize.sh --no-build [ctest arguments]   only test
#   scripts/sanitize.sh --configure   only configure build-asan/ (fuzz.sh)
# The tests see MANIFOLD_SANITIZED (smaller sizes for the slowest ones,
# testing_support::scaled), and test sources compile at -O0
# (tests/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang++ >/dev/null || { echo "sanitize.sh: clang++ not found (scripts/setup-debian.sh installs clang and libclang-rt-14-dev)" >&2; exit 2; }
build=build-asan
# A build folder configured from another source folder is made again.
if [ -f $build/CMakeCache.txt ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$PWD" $build/CMakeCache.txt; then rm -rf $build; fi
mode=${1:-}
case "$mode" in --configure|--build|--no-build) shift ;; *) mode= ;; esac
if [ "$mode" != --no-build ]; then
  CC=clang CXX=clang++ cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMANIFOLD_FUZZ=ON \
    -DMANIFOLD_WITH_CUDA=OFF -DMANIFOLD_WITH_GUI=OFF >/dev/null
  [ "$mode" != --configure ] || exit 0
  cmake --build $build -j "$(nproc)"
  [ "$mode" != --build ] || exit 0
fi

# Every report is also written to $build/sanitizer-reports/: a report from a
# child process (the manifold command a test runs, an MPI rank) fails the run
# even where the test only checks for a non-zero exit. Leaks count, less
# those inside libhdf5 (tests/fuzz/lsan.supp), except in the MPI tests.
reports=$PWD/$build/sanitizer-reports
rm -rf "$reports" && mkdir -p "$reports"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:log_path=$reports/asan:suppressions=$PWD/tests/fuzz/asan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan
export LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0
# The MPI tests (tests/mpi/) apart, without leak checking: Open MPI keeps
# thousands of allocations past MPI_Finalize, made by plugins it has unloaded
# by then, and LeakSanitizer takes tens of seconds per rank to match their
# stacks to the suppressions (which also need the slow unwinder, Open MPI
# having no frame pointers): longer than CI has for all the MPI tests.
# Memory errors and undefined behaviour still fail them; the other tests
# check the same core code for leaks. The arguments select in both runs
# (ctest's -R, -L, -LE; an -E of its own would replace the one that keeps
# the MPI tests out of the first run).
mpi_tests() {  # the names of the MPI tests the arguments select, as "a|b|c"
  [ -d $build/tests/mpi ] || return 0
  (cd $build/tests/mpi && ctest -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p' | paste -sd '|')
}
all_mpi=$(mpi_tests) selected_mpi=$(mpi_tests "$@")
status=0
(cd $build && ctest --output-on-failure -j "$(nproc)" -LE fuzz "$@" ${all_mpi:+-E "^($all_mpi)\$"}) || status=$?
if [ -n "$selected_mpi" ]; then
  (cd $build && ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 \
     ctest --output-on-failure -j "$(nproc)" -R "^($selected_mpi)\$") || status=$?
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
