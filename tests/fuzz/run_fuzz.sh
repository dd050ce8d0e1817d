#!/usr/bin/env bash
# Fuzzes one harness for a bounded time under ASan + UBSan:
#   run_fuzz.sh HARNESS NAME SECONDS SEED_CORPUS WORK_DIR
# MANIFOLD_FUZZ_SECONDS, where set, replaces SECONDS (scripts/fuzz.sh sets it).
# Starts from SEED_CORPUS (every seed runs first, the regression files among
# them) plus what earlier runs found in WORK_DIR/corpus/NAME (never the
# source tree). A crash, a sanitizer report, a leak, a timeout or an
# allocation beyond the limits is a finding: its input is left in
# WORK_DIR/findings/NAME-*, the log's tail is printed, and the script fails.
set -euo pipefail
if [ $# != 5 ]; then echo "usage: run_fuzz.sh HARNESS NAME SECONDS SEED_CORPUS WORK_DIR" >&2; exit 2; fi
harness=$1 name=$2 seconds=${MANIFOLD_FUZZ_SECONDS:-$3} seeds=$4 work=$5
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

log=$work/findings/$name.log
status=0
ASAN_OPTIONS=$asan "$harness" -max_total_time="$seconds" "${limits[@]}" -timeout=10 \
  -artifact_prefix="$work/findings/$name-" -print_final_stats=1 \
  "$work/corpus/$name" "$seeds" >"$log" 2>&1 || status=$?
execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}' || true)
if [ $status = 0 ]; then
  summary="fuzz_$name: ok, ${execs:-?} executions in $seconds s"
else
  tail -n 60 "$log"
  summary="fuzz_$name: FINDING (exit $status; input in $work/findings/$name-*, log $log)"
fi
echo "$summary" | tee "$work/findings/$name.summary"
exit $status
