#!/usr/bin/env bash
# The core, CLI and MPI tests under AddressSanitizer + UndefinedBehaviorSanitizer
# in their own build folder build-asan/ (clang; CUDA and the GUI off), failing
# on any report, and every fuzz harness for MANIFOLD_FUZZ_SECONDS (default 20)
# in the same build (-DMANIFOLD_FUZZ=ON). Not part of .ci/run: a second,
# instrumented build of nearly everything does not fit CI's 30 minutes
# (scripts/test.sh fuzzes the readers only).
#   scripts/sanitize.sh [ctest arguments, e.g. -R test_readers or -LE fuzz]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang++ >/dev/null || { echo "sanitize.sh: clang++ not found (scripts/setup-debian.sh installs clang and libclang-rt-14-dev)" >&2; exit 2; }
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DMANIFOLD_FUZZ=ON \
  -DMANIFOLD_WITH_CUDA=OFF -DMANIFOLD_WITH_GUI=OFF -DMANIFOLD_FUZZ_SECONDS="${MANIFOLD_FUZZ_SECONDS:-20}"
cmake --build build-asan -j "$(nproc)"
# Leaks count (less libhdf5's own, tests/fuzz/lsan.supp);
# a sanitizer report ends the test with a failure.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp
cd build-asan
ctest --output-on-failure -j "$(nproc)" "$@"
