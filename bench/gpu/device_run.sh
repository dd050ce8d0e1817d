#!/usr/bin/env bash
# Issues 8 and 9 on the 2-GPU machine in one call, most important first, each
# step skipped (saying so) when the time budget would not cover it:
#   1. GPU tests: precision (fast-exact == exact == CPU exact ranking), engine
#      (2 GPUs, small --gpu-memory, panels, memory-mapped input), host twin;
#   2. benchmarks: fast-exact vs exact (100k x 1024, 200k x 4096, k = 32, one
#      GPU); N = 1M, d = 256, k = 32 on 1 GPU, 2 GPUs, and 1 GPU with a budget
#      that holds a quarter of the rows;
#   3. compute-sanitizer memcheck (and racecheck) on the small runs of every
#      path, the certification and fallback kernels included;
#   4. the older exactness suite (test_gpu_knn), as a regression check.
#   bash bench/gpu/device_run.sh BUNDLE_DIR OUT_DIR [SECONDS]
# BUNDLE_DIR: made by shared/tools/device-bundle, Fashion-MNIST in BUNDLE_DIR/../../data.
# Everything lands in OUT_DIR/results.tar (re-packed after each step, so a
# run cut short still returns what it did) and OUT_DIR/summary.txt.
set -uo pipefail
bundle=$(cd "${1:?usage: device_run.sh BUNDLE_DIR OUT_DIR [SECONDS]}" && pwd)
out=${2:?usage: device_run.sh BUNDLE_DIR OUT_DIR [SECONDS]}
budget=${3:-300}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
work=$(mktemp -d)
summary=$work/summary.txt
export MANIFOLD_FASHION_MNIST_DIR=$(cd "$bundle/../../data" 2>/dev/null && pwd)
printf '#!/usr/bin/env bash\nexec %q manifold "$@"\n' "$bundle/run" > "$bundle/manifold"
chmod +x "$bundle/manifold"
export MANIFOLD_CLI=$bundle/manifold
export PYTHONUNBUFFERED=1
status=0

say() { echo "$*" | tee -a "$summary"; }
pack() { cp "$summary" "$out/summary.txt"; tar cf "$out/results.tar" -C "$work" . 2>/dev/null; }
# step NEED_SECONDS NAME COMMAND...: runs when the budget leaves NEED seconds.
# STEPS (optional): the names of the steps to run, space-separated; default all.
step() {
  local need=$1 name=$2; shift 2
  if [ -n "${STEPS:-}" ] && [[ " $STEPS " != *" $name "* ]]; then return; fi
  local left=$((budget - SECONDS))
  if [ "$left" -lt "$need" ]; then say "SKIPPED $name: ${left}s left, needs ~${need}s"; return; fi
  local t0=$SECONDS
  local cap=$((need * 3 > need + 30 ? need * 3 : need + 30))
  timeout "$((left > cap ? cap : left))" "$@" > "$work/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || status=1
  say "$name: exit $rc in $((SECONDS - t0))s"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|\[ info \]|ERROR SUMMARY|RACECHECK SUMMARY|speed-up|^gpu |cuBLAS SGEMM|Error|error:" \
    "$work/$name.log" | head -60 | tee -a "$summary"
  pack
}

say "machine: $(nvidia-smi -L | tr '\n' ';')"
nvidia-smi topo -m > "$work/topology.txt" 2>&1
say "cores: $(nproc)"

# 1. Tests.
step 15 test_gpu_precision "$bundle/run" test_gpu_precision --gtest_color=no
step 15 test_gpu_engine "$bundle/run" test_gpu_engine --gtest_color=no --gtest_filter='-GpuSanitizer.*'

# 2. Benchmarks (JSON per command).
b=(bench --backend gpu --repeats 2 --warmup 1)
step 6 bench_p9_100k "$bundle/run" manifold "${b[@]}" --repeats 3 --devices 0 -n 100000 -d 1024 -k 32 \
  --precision exact,fast-exact --json "$work/p9_100k.json"
step 25 bench_p9_200k "$bundle/run" manifold "${b[@]}" --devices 0 -n 200000 -d 4096 -k 32 \
  --precision exact,fast-exact --json "$work/p9_200k.json"
step 28 bench_p8_1gpu "$bundle/run" manifold "${b[@]}" --devices 0 -n 1000000 -d 256 -k 32 --json "$work/p8_1gpu.json"
if [ -f "$work/p8_1gpu.json" ]; then
  # A budget in which the lists, the streaming tile buffers and the cuBLAS
  # workspace fit, plus rows for a quarter of the data (tile_plan.cpp's
  # formulas for its preferred 4096 x 4096 streaming tiles).
  quarter=$(python3 - "$work/p8_1gpu.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))["cases"][0]
e, n, d = c["extra"], c["n"], c["d"]
T = 4096
loop = 2 * T * T * 4 + 2 * (2 * T * T * 8 + 2 * T * 8) + 64
print(e["list_bytes"] + n * 4 + loop + e["workspace_bytes"] + n * (d + 1) * 4 // 4)
EOF
)
  say "streamed budget (--gpu-memory): $quarter bytes"
  step 30 bench_p8_stream "$bundle/run" manifold "${b[@]}" --devices 0 --gpu-memory "$quarter" -n 1000000 -d 256 \
    -k 32 --json "$work/p8_stream.json"
fi
step 17 bench_p8_2gpu "$bundle/run" manifold "${b[@]}" --devices 0,1 -n 1000000 -d 256 -k 32 --json "$work/p8_2gpu.json"
python3 "$here/summarize_8_9.py" "$work" > "$work/tables.md" 2>&1 && cat "$work/tables.md" | tee -a "$summary"
pack

# 3. compute-sanitizer on the small runs of every path.
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
step 10 memcheck compute-sanitizer --tool memcheck --error-exitcode 3 "$bundle/bin/test_gpu_engine" \
  --gtest_filter='GpuSanitizer.*' --gtest_color=no
step 15 racecheck compute-sanitizer --tool racecheck --error-exitcode 3 "$bundle/bin/test_gpu_engine" \
  --gtest_filter='GpuSanitizer.Tiny*' --gtest_color=no

# 4. The earlier exactness suite (CPU references make its large-k and
# Fashion-MNIST cases slow: last).
step 12 test_gpu_knn "$bundle/run" test_gpu_knn --gtest_color=no --gtest_filter='-GpuLargeK*:*FashionMnist*'
step 45 test_gpu_knn_slow "$bundle/run" test_gpu_knn --gtest_color=no --gtest_filter='GpuLargeK*:*FashionMnist*'
say "total ${SECONDS}s, status $status"
pack
exit $status
