#!/usr/bin/env bash
# Issue 7 on the GPU machine, from the repository root. Two phases, each one
# device command of at most 10 minutes:
#   bash bench/gpu/select/device_run.sh BUNDLE_DIR OUT_DIR tests   # test_gpu_select + compute-sanitizer memcheck, racecheck
#   bash bench/gpu/select/device_run.sh BUNDLE_DIR OUT_DIR grid    # manifold bench --select all, table, plot
#   bash bench/gpu/select/device_run.sh BUNDLE_DIR OUT_DIR auto    # a table from run A, auto checked in run B
# BUNDLE_DIR: made by shared/tools/device-bundle with manifold and
# test_gpu_select (BUNDLE_DIR/run NAME args, or BUNDLE_DIR/bin/NAME);
# Fashion-MNIST in $MANIFOLD_FASHION_MNIST_DIR or BUNDLE_DIR/../data.
# Everything the phase wrote is packed into OUT_DIR/results_PHASE.tar (one file,
# plus a copy of its summary as OUT_DIR/summary.txt).
set -uo pipefail
usage="usage: device_run.sh BUNDLE_DIR OUT_DIR tests|grid|auto"
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "${1:?$usage}" && pwd)
out=${2:?$usage}
phase=${3:?$usage}
mkdir -p "$out/$phase"
dir=$out/$phase
start=$SECONDS
status=0
if [ -z "${MANIFOLD_FASHION_MNIST_DIR:-}" ] && [ -d "$bundle/../data" ]; then
  export MANIFOLD_FASHION_MNIST_DIR=$(cd "$bundle/../data" && pwd)
fi
# The bundle's shared libraries, for executables started directly (and
# under compute-sanitizer).
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
run() {  # NAME args...: through the bundle's launcher when it has one
  local name=$1; shift
  if [ -x "$bundle/run" ]; then "$bundle/run" "$name" "$@"; else "$bundle/bin/$name" "$@"; fi
}
exe() { echo "$bundle/bin/$1"; }
summary=$dir/summary.txt
note() { echo "$*" | tee -a "$summary"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$summary"

case $phase in
tests)
  # 1. Every strategy (and auto) against the CPU backend, element for element.
  t=$SECONDS
  timeout "${TEST_SECONDS:-420}" "$(exe test_gpu_select)" --gtest_color=no > "$dir/test_gpu_select.log" 2>&1 || status=1
  note "test_gpu_select: exit $status, $((SECONDS - t)) s, MANIFOLD_FASHION_MNIST_DIR=${MANIFOLD_FASHION_MNIST_DIR:-unset}"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[ seed|^\[ refused|tests ran|Failure|Expected|Which is|row [0-9]+ position" \
    "$dir/test_gpu_select.log" | head -60 | tee -a "$summary"
  # 2. compute-sanitizer memcheck and racecheck on the small many-tile
  #    cases (every strategy, both quick variants, the list sort, certify,
  #    rescan and fallback kernels).
  for tool in memcheck racecheck; do
    t=$SECONDS
    timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 3 "$(exe test_gpu_select)" \
      --gtest_filter='GpuSelectSanitizer.*' --gtest_color=no > "$dir/$tool.log" 2>&1 || status=1
    note "$tool ($((SECONDS - t)) s): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$dir/$tool.log" | tr '\n' ' ')"
  done
  ;;
grid)
  # d = 256, random normal data, one GPU (--devices 0) for every strategy.
  # One process, so 1M's cases are predicted from 100k's: long ones run once
  # without warm-up, ones predicted over 20 s that cannot win (> 1.15x the
  # cell's best prediction) are skipped and recorded so, and at long cells
  # auto runs first and its pick reuses that run. The JSON is rewritten
  # after every case, so a run cut short keeps what it measured.
  t=$SECONDS
  # GRID_NS, GRID_KS, GRID_SELECT, REPEATS, MIN_TIME_S narrow or lengthen it;
  # GRID_PARTS="NS:KS:SELECT NS:KS:SELECT ..." runs several such grids into
  # one JSON each (bench_select_1.json, ...), e.g. 1M without the strategies
  # the 100k cells would have predicted to lose.
  parts=${GRID_PARTS:-"${GRID_NS:-10000,100000,1000000}:${GRID_KS:-1,16,128,1024,4096}:${GRID_SELECT:-all}"}
  i=0
  for part in $parts; do
    i=$((i + 1))
    IFS=: read -r pns pks psel <<< "$part"
    json=$dir/bench_select.json
    [ "$(wc -w <<< "$parts")" -gt 1 ] && json=$dir/bench_select_$i.json
    timeout "${GRID_SECONDS:-560}" "$(exe manifold)" bench --backend gpu --devices 0 -d 256 --select "$psel" \
      -n "$pns" -k "$pks" --repeats "${REPEATS:-3}" --warmup 1 --min-time-s "${MIN_TIME_S:-0}" \
      --long-case-s "${LONG_CASE_S:-2}" --case-limit-s "${CASE_LIMIT_S:-20}" \
      --json "$json" >> "$dir/bench_select.log" 2>&1 || { status=$?; note "bench $part: exit $status"; }
  done
  note "bench: $((SECONDS - t)) s"
  tail -30 "$dir/bench_select.log" >> "$summary"
  python3 "$here/make_table.py" "$dir/results.json" "$dir"/bench_select*.json > "$dir/table.md" 2>&1 || status=1
  cat "$dir/table.md" >> "$summary"
  python3 "$here/plot.py" "$dir/results.json" "$dir/select.png" >> "$summary" 2>&1 || note "plot failed"
  ;;
auto)
  # `auto` checked against a table it was not derived from, in one command:
  # run A measures every strategy at AUTO_NS (default 10k and 100k) and
  # gives the table (the 1M row from the committed 1M runs unless
  # AUTO_NS has 1M); run B measures every strategy again with `auto` on
  # A's table (MANIFOLD_SELECT_TABLE) and make_table.py compares auto with
  # B's best, cell by cell. Millisecond cells repeat for at least
  # MIN_TIME_S seconds; cells under LONG_CASE_S keep their repeats.
  ns=${AUTO_NS:-10000,100000}
  common=(bench --backend gpu --devices 0 -d 256 -n "$ns" -k "${AUTO_KS:-1,16,128,1024,4096}"
          --repeats "${REPEATS:-3}" --warmup 1 --min-time-s "${MIN_TIME_S:-1}"
          --long-case-s "${LONG_CASE_S:-6}" --case-limit-s "${CASE_LIMIT_S:-20}")
  old_1m="$here/auto_table_inputs/n1m/bench_select.json:1000000 $here/auto_table_inputs/n1m/bench_auto.json:1000000"
  case ",$ns," in *,1000000,*) old_1m="" ;; esac
  for r in a b; do
    t=$SECONDS
    if [ $r = b ]; then export MANIFOLD_SELECT_TABLE=$dir/table_a.txt; fi
    timeout "${GRID_SECONDS:-270}" "$(exe manifold)" "${common[@]}" --select "${AUTO_SELECT:-all}" \
      --json "$dir/bench_$r.json" > "$dir/bench_$r.log" 2>&1 || { status=$?; note "bench $r: exit $status"; }
    note "bench $r: $((SECONDS - t)) s"
    if [ $r = a ]; then
      # shellcheck disable=SC2086
      python3 "$here/make_table.py" --write-table-file "$dir/table_a.txt" "$dir/results_a.json" $old_1m \
        "$dir/bench_a.json" > "$dir/table_a.md" 2>&1 || status=1
      cat "$dir/table_a.md" "$dir/table_a.txt" >> "$summary"
    else
      python3 "$here/make_table.py" "$dir/results_b.json" "$dir/bench_b.json" > "$dir/table_b.md" 2>&1 || status=1
      cat "$dir/table_b.md" >> "$summary"
    fi
  done
  unset MANIFOLD_SELECT_TABLE
  ;;
*)
  echo "$usage" >&2; exit 2 ;;
esac

note "phase $phase: $((SECONDS - start)) s, status $status"
cp "$summary" "$out/summary_$phase.txt"
tar -C "$out" -cf "$out/results_$phase.tar" "$phase" && rm -rf "$dir"
exit $status
