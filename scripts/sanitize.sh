#!/usr/bin/env bash
# The core, CLI and MPI tests under AddressSanitizer + UndefinedBehaviorSanitizer
# in their own build folder build-asan/ (CUDA and the GUI off), failing on any
# report; then the fuzz harnesses replay their corpus under the same
# sanitizers (scripts/fuzz.sh --replay). Not part of .ci/run: it roughly
# doubles the build time (see the issue-24 notes for the cost measured).
#   scripts/sanitize.sh [ctest arguments, e.g. -R test_readers]
set -euo pipefail
cd "$(dirname "$0")/.."
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMANIFOLD_WITH_CUDA=OFF -DMANIFOLD_WITH_GUI=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
cmake --build build-asan -j "$(nproc)"
# Leaks count; a sanitizer report ends the test with a failure.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j "$(nproc)" "$@")
bash scripts/fuzz.sh --replay
