#!/usr/bin/env bash
# Fuzzes every reader of untrusted input (tests/fuzz/: .npy, IDX, PNG, TIFF,
# MRC, HDF5, graph folders, sessions, cluster profiles) with libFuzzer, ASan
# and UBSan, in its own build folder build-fuzz/ (clang, -DMANIFOLD_FUZZ=ON:
# the core and the harnesses only).
#   scripts/fuzz.sh [SECONDS] [HARNESS...]   fuzz each harness SECONDS (default 60)
# Each harness is the CTest fuzz_NAME (tests/fuzz/run_fuzz.sh): it starts
# from its seed corpus tests/fuzz/corpus/NAME, whose regression files run
# first, and adds what it finds in build-fuzz/tests/fuzz/corpus/NAME (not
# the source tree). A crash leaves its input in build-fuzz/tests/fuzz/findings/
# and fails the script; once fixed, copy it to tests/fuzz/corpus/NAME as a
# regression file.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(npy idx png tiff mrc hdf5 graph session profile)
for h in "${harnesses[@]}"; do
  [ -f "tests/fuzz/fuzz_$h.cpp" ] || { echo "fuzz.sh: no harness '$h' (tests/fuzz/fuzz_$h.cpp)" >&2; exit 2; }
done
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/setup-debian.sh installs clang and libclang-rt-14-dev)" >&2; exit 2; }

build=build-fuzz
# A build-fuzz/ configured from another source folder (the harnesses were once
# a project of their own) is made again.
if [ -f $build/CMakeCache.txt ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$PWD" $build/CMakeCache.txt; then rm -rf $build; fi
CC=clang CXX=clang++ cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMANIFOLD_FUZZ=ON \
  -DMANIFOLD_WITH_GUI=OFF -DMANIFOLD_WITH_CUDA=OFF -DMANIFOLD_WITH_MPI=OFF -DMANIFOLD_BUILD_TESTS=OFF \
  -DMANIFOLD_FUZZ_SECONDS="$seconds" >/dev/null
cmake --build $build -j "$(nproc)" --target "${harnesses[@]/#/fuzz_}"
regex="^fuzz_($(IFS='|'; echo "${harnesses[*]}"))\$"
status=0
(cd $build && ctest -L fuzz -R "$regex" -j "$(nproc)" --output-on-failure) >$build/fuzz-ctest.log 2>&1 || status=$?
[ $status = 0 ] || cat $build/fuzz-ctest.log
for h in "${harnesses[@]}"; do cat "$build/tests/fuzz/findings/$h.summary" 2>/dev/null || echo "fuzz_$h: did not run"; done
exit $status
