#!/usr/bin/env bash
# Fuzzes every reader of untrusted input (tests/fuzz/: .npy, .npz, IDX, PNG, TIFF,
# MRC, HDF5, graph folders, sessions, cluster profiles) with libFuzzer, ASan
# and UBSan, in the sanitizer build folder build-asan/ (configured by
# scripts/sanitize.sh: clang, -DMANIFOLD_FUZZ=ON; only the harnesses are
# built here).
#   scripts/fuzz.sh [SECONDS] [HARNESS...]   fuzz each harness SECONDS (default 60)
# Each harness is the CTest fuzz_NAME (tests/fuzz/run_fuzz.sh): it starts
# from its seed corpus tests/fuzz/corpus/NAME, whose regression files run
# first, and adds what it finds in build-asan/tests/fuzz/corpus/NAME (not
# the source tree). A crash leaves its input in build-asan/tests/fuzz/findings/
# and fails the script; once fixed, copy it to tests/fuzz/corpus/NAME as a
# regression file.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(npy npz idx png tiff mrc hdf5 graph session profile)
for h in "${harnesses[@]}"; do
  [ -f "tests/fuzz/fuzz_$h.cpp" ] || { echo "fuzz.sh: no harness '$h' (tests/fuzz/fuzz_$h.cpp)" >&2; exit 2; }
done
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/setup-debian.sh installs clang and libclang-rt-14-dev)" >&2; exit 2; }

build=build-asan
bash scripts/sanitize.sh --configure
cmake --build $build -j "$(nproc)" --target "${harnesses[@]/#/fuzz_}"
regex="^fuzz_($(IFS='|'; echo "${harnesses[*]}"))\$"
rm -f $build/tests/fuzz/findings/*.summary
status=0
(cd $build && MANIFOLD_FUZZ_SECONDS=$seconds ctest -L fuzz -R "$regex" -j "$(nproc)" --timeout $((seconds + 300)) \
  --output-on-failure) >$build/fuzz-ctest.log 2>&1 || status=$?
[ $status = 0 ] || cat $build/fuzz-ctest.log
for h in "${harnesses[@]}"; do cat "$build/tests/fuzz/findings/$h.summary" 2>/dev/null || echo "fuzz_$h: did not run"; done
exit $status
