#!/usr/bin/env bash
# Fuzzes every reader of untrusted input (tests/fuzz/) with libFuzzer, ASan
# and UBSan, in its own build folder build-fuzz/ compiled with clang.
#   scripts/fuzz.sh [SECONDS] [HARNESS...]   fuzz each harness SECONDS (default 60)
#   scripts/fuzz.sh --replay [HARNESS...]    build without libFuzzer (any compiler)
#                                            and replay the seed corpus once
# Each harness starts from its seed corpus tests/fuzz/corpus/NAME and adds
# what it finds in build-fuzz/corpus/NAME (not the source tree). A crash
# leaves its input in build-fuzz/findings/ and fails the script; turn it into
# a regression file under tests/fuzz/corpus/NAME once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=libfuzzer
seconds=60
if [ "${1:-}" = --replay ]; then mode=replay; shift
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(npy idx png tiff mrc hdf5 graph session profile)

build=build-fuzz
[ $mode = replay ] && build=build-fuzz-replay
if [ $mode = libfuzzer ]; then
  export CC=${CC:-clang} CXX=${CXX:-clang++}
fi
cmake -S tests/fuzz -B $build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMANIFOLD_FUZZ_ENGINE=$mode >/dev/null
cmake --build $build -j "$(nproc)" --target "${harnesses[@]/#/fuzz_}"

# Leaks are reported by LeakSanitizer (less libhdf5's own, tests/fuzz/lsan.supp);
# UBSan stops at the first report.
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp
status=0
mkdir -p $build/findings
for h in "${harnesses[@]}"; do
  # 2 GiB of memory and 10 s per input: a header that makes a reader allocate
  # or loop without bound is a finding. libhdf5 itself asks malloc for sizes
  # read from corrupt metadata and handles the failure (the CLI prints one
  # line): for it malloc may fail, and only sanitizer reports count.
  limits="-rss_limit_mb=2048 -malloc_limit_mb=2048"
  asan=$ASAN_OPTIONS
  if [ "$h" = hdf5 ]; then limits="-rss_limit_mb=0"; asan=$ASAN_OPTIONS:allocator_may_return_null=1; fi
  if [ $mode = replay ]; then
    ASAN_OPTIONS=$asan $build/fuzz_$h tests/fuzz/corpus/$h || status=1
    continue
  fi
  mkdir -p $build/corpus/$h
  log=$build/findings/$h.log
  if ASAN_OPTIONS=$asan $build/fuzz_$h -max_total_time="$seconds" $limits -timeout=10 \
      -artifact_prefix=$build/findings/$h- -print_final_stats=1 $build/corpus/$h tests/fuzz/corpus/$h >"$log" 2>&1; then
    result=ok
  else
    result=FINDING
    status=1
  fi
  execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
  echo "fuzz_$h: $result, ${execs:-?} executions in ${seconds} s (log: $log)"
done
exit $status
