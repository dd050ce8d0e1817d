#!/usr/bin/env bash
# Fuzzes one harness for a bounded time under ASan + UBSan:
#   run_fuzz.sh HARNESS NAME SECONDS SEED_CORPUS WORK_DIR
# MANIFOLD_FUZZ_SECONDS, where set, replaces SECONDS (scripts/fuzz.sh sets it);
# MANIFOLD_FUZZ_SEED, where set, is libFuzzer's -seed (a repeatable run;
# scripts/test.sh sets it), else each run explores from a fresh seed.
# Starts from SEED_CORPUS (every seed runs first, the regression files among
# them) plus what earlier runs found in WORK_DIR/corpus/NAME (never the
# source tree). A crash, a sanitizer report, a leak, a timeout or an
# allocation beyond the limits is a finding: its input is left in
# WORK_DIR/findings/NAME-*, the log's tail is printed, and the script fails.
set -euo pipefail
if [ $# != 5 ]; then echo "usage: run_fuzz.sh HARNESS NAME SECONDS SEED_CORPUS WORK_DIR" >&2; exit 2; fi
harness=$1 name=$2 seconds=${MANIFOLD_FUZZ_SECONDS:-$3} seeds=$4 work=$5
seed=()
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work/corpus/$name" "$work/findings"

# Leaks count (less libhdf5's own, lsan.supp); UBSan stops at the first report;
# asan.supp names the system libraries' own defects that corrupt input reaches.
asan=detect_leaks=1:allocator_may_return_null=0:suppressions=$here/asan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$here/lsan.supp
# 2 GiB of memory and 10 s per input: a header that makes a reader allocate
# or loop without bound is a finding. libhdf5 itself asks malloc for sizes
# read from corrupt metadata and handles the failure (the CLI prints one
# line): for it malloc may fail, and only sanitizer reports count.
limits=(-rss_limit_mb=2048 -malloc_limit_mb=2048)
if [ "$name" = hdf5 ]; then limits=(-rss_limit_mb=0); asan=$asan:allocator_may_return_null=1; fi

# A crash inside libhdf5 itself -- the first frame of the report outside the
# C library and the sanitizer's interceptors is libhdf5's (Debian's 1.10.8
# copies through a null pointer on some corrupt old-style groups' local
# heaps, in H5F__accum_read, which no caller can catch) -- is listed, not a
# finding: the fuzzer starts again, from the next seed, for the time left.
# Any other report is a finding.
inside_libhdf5() {
  local frame
  frame=$(awk '/ERROR: /{on=1} on && /^ +#[0-9]+ 0x[0-9a-f]+ /' "$1" |
    grep -v -E ' in (__interceptor_|__asan|__sanitizer|__(mem|str)[a-z_0-9]*)|/libc\.so|sysdeps/' | head -n 1)
  [[ "$frame" == *libhdf5* ]]
}

log=$work/findings/$name.log
deadline=$((SECONDS + seconds))
execs=0 restarts=0 in_libhdf5=()
while :; do
  status=0
  [ -z "${MANIFOLD_FUZZ_SEED:-}" ] || seed=(-seed=$((MANIFOLD_FUZZ_SEED + restarts)))
  ASAN_OPTIONS=$asan "$harness" -max_total_time=$((deadline - SECONDS > 1 ? deadline - SECONDS : 1)) "${seed[@]}" \
    "${limits[@]}" -timeout=10 -artifact_prefix="$work/findings/$name-" -print_final_stats=1 \
    "$work/corpus/$name" "$seeds" >"$log" 2>&1 || status=$?
  run_execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}' || true)
  execs=$((execs + ${run_execs:-0}))
  [ $status != 0 ] && [ "$name" = hdf5 ] && inside_libhdf5 "$log" && [ $restarts -lt 50 ] || break
  input=$(grep -o -m1 "Test unit written to .*" "$log" | sed 's/Test unit written to //' || true)
  mv "$log" "$work/findings/$name-libhdf5-$restarts.log"
  in_libhdf5+=("${input:-?}")
  restarts=$((restarts + 1))
  status=0  # listed, not a finding: a crash that ends the time left ends the run clean
  [ $((deadline - SECONDS)) -ge 1 ] || break
done
if [ $status = 0 ]; then
  summary="fuzz_$name: ok, $execs executions in $seconds s${MANIFOLD_FUZZ_SEED:+ from seed $MANIFOLD_FUZZ_SEED}"
  [ ${#in_libhdf5[@]} = 0 ] ||
    summary="$summary; ${#in_libhdf5[@]} crash(es) inside libhdf5 itself, inputs: ${in_libhdf5[*]}"
else
  tail -n 60 "$log"
  summary="fuzz_$name: FINDING (exit $status; input in $work/findings/$name-*, log $log)"
fi
echo "$summary" | tee "$work/findings/$name.summary"
exit $status
