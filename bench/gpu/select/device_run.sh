#!/usr/bin/env bash
# One call on the GPU machine, from the repository root, for issue 7: the
# select tests, compute-sanitizer (memcheck, racecheck) on their small case, the
# benchmark grid of every strategy, the merged JSON and the plot. Every step
# has a time limit so the whole fits a device budget; what did not run is
# printed as skipped.
#   bash bench/gpu/select/device_run.sh BUNDLE_DIR OUT_DIR [SECONDS]
# BUNDLE_DIR: made by shared/tools/device-bundle (manifold, test_gpu_select),
# with the Fashion-MNIST test images in BUNDLE_DIR/../data.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "${1:?usage: device_run.sh BUNDLE_DIR OUT_DIR [SECONDS]}" && pwd)
out=${2:?usage: device_run.sh BUNDLE_DIR OUT_DIR [SECONDS]}
budget=${3:-300}
mkdir -p "$out/raw"
start=$SECONDS
left() { echo $((budget - (SECONDS - start))); }
export MANIFOLD_FASHION_MNIST_DIR=$(cd "$bundle/../data" 2>/dev/null && pwd)
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
status=0

# 1. Tests (every strategy against float64 and the CPU backend). TESTS=quick
# runs the fast subset (the data sets of seconds, not the k = 4096 and
# Fashion-MNIST ones).
filter='*'
[ "${TESTS:-full}" = quick ] && filter='-GpuSelect.ThousandsOfNeighbours:GpuSelect.FashionMnist'
timeout 150 "$bundle/bin/test_gpu_select" --gtest_filter="$filter" --gtest_color=no \
  > "$out/raw/test_gpu_select.log" 2>&1 || status=1
echo "test_gpu_select ($((SECONDS - start)) s):"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure|Expected|Which is|rows equal|differs" "$out/raw/test_gpu_select.log" | head -40

# 2. compute-sanitizer on the small many-tile case of every strategy.
for tool in memcheck racecheck; do
  t=$SECONDS
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 "$bundle/bin/test_gpu_select" \
    --gtest_filter='GpuSelectSanitizer.*' --gtest_color=no > "$out/raw/$tool.log" 2>&1 || status=1
  echo "$tool ($((SECONDS - t)) s): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$out/raw/$tool.log" | tr '\n' ' ')"
done

# 3. The benchmark, d = 256, every strategy: N = 10k (5 repeats), 100k
# (3 repeats for k <= 128; 1 for k = 1024, 4096, whose runs take seconds),
# then 1M at k = 16 as far as the budget goes. One GPU (--devices 0) for
# every strategy: the papers' strategies run on one, the engine's would
# split the work over all.
run_bench() {  # name limit args...
  local name=$1 limit=$2; shift 2
  if [ "$(left)" -lt 20 ]; then echo "skipped (device budget): $name"; return; fi
  [ "$limit" -gt "$(left)" ] && limit=$(left)
  t=$SECONDS
  timeout "$limit" "$bundle/bin/manifold" bench --backend gpu --devices 0 -d 256 --json "$out/raw/$name.json" "$@" \
    > "$out/raw/$name.log" 2>&1 || echo "$name: exit $? after $((SECONDS - t)) s"
  echo "$name: $((SECONDS - t)) s"
}
run_bench select_10k 60 --select all -n 10000 -k 1,16,128,1024,4096 --repeats 3 --warmup 1
run_bench select_100k_small 60 --select all -n 100000 -k 1,16,128 --repeats 3 --warmup 1
run_bench select_100k_large 100 --select all -n 100000 -k 1024,4096 --repeats 1 --warmup 1
for s in ${STRATEGIES_1M:-warp heap quick bitonic sort merge}; do
  [ "$(left)" -lt 40 ] && { echo "skipped (device budget): 1M $s"; continue; }
  run_bench "select_1m_$s" $(($(left) - 15)) --select $s -n 1000000 -k 16 --repeats 1 --warmup 0 --sgemm 4096
done

python3 "$here/make_table.py" "$out/results.json" "$out"/raw/select_*.json
python3 "$here/plot.py" "$out/results.json" "$out/select.png" || echo "plot failed"
tar -C "$out" -czf "$out/raw.tar.gz" raw && rm -rf "$out/raw"
echo "total $((SECONDS - start)) s"
exit $status
