#!/usr/bin/env bash
# On the GPU machine: the fused kernel's shapes (MANIFOLD_GPU_FUSED) on the
# issue-3 cases it serves, the fastest at N = 1M chosen, then with it the GPU
# exactness suite, compute-sanitizer, and the whole issue-3 benchmark
# (bench/gpu/run.sh, beside PyTorch).
#   bash bench/gpu/shape_run.sh BUNDLE_DIR OUT_DIR
# env: SHAPES ("8x8 8x8x16 8x16x16"; 8x8x16 has been the default since this run).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "${1:?usage: shape_run.sh BUNDLE_DIR OUT_DIR}" && pwd)
out=${2:?usage: shape_run.sh BUNDLE_DIR OUT_DIR}
mkdir -p "$out"
export MANIFOLD_FASHION_MNIST_DIR=$(cd "$bundle/../data" 2>/dev/null && pwd)
variants=""
for s in ${SHAPES:-8x8 8x8x16 8x16x16}; do variants+=" $s:MANIFOLD_GPU_FUSED=$s"; done
VARIANTS="$variants" bash "$here/variants_run.sh" "$bundle/run manifold" "$out" > "$out/shapes.txt" 2>&1
grep -E "^==|exact" "$out/shapes.txt"
best=$(python3 - "$out" <<'PY'
import glob, json, sys
runs = {f.split("variant_")[1].split("_1000000")[0]: json.load(open(f))["cases"][0]["median_wall_s"]
        for f in glob.glob(sys.argv[1] + "/variant_*_1000000_128.json")}
print(min(runs, key=runs.get))
PY
)
echo "fastest at 1M x 128: $best"
export MANIFOLD_GPU_FUSED=$best
MANIFOLD_GPU_GEMM=fused "$bundle/run" test_gpu_knn --gtest_filter='-GpuKnn.FashionMnistLargeK' --gtest_color=no \
  > "$out/test_gpu_knn_fused.log" 2>&1
"$bundle/run" test_gpu_engine --gtest_filter='-GpuEngine.Cli*' --gtest_color=no > "$out/test_gpu_engine.log" 2>&1
grep -hE "^\[  (PASSED|FAILED) " "$out"/test_gpu_*.log
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for tool in memcheck racecheck; do
  filter='GpuSanitizer.*'
  [ "$tool" = racecheck ] && filter='GpuSanitizer.Tiny*'
  MANIFOLD_GPU_GEMM=fused compute-sanitizer --tool "$tool" --error-exitcode 3 "$bundle/bin/test_gpu_engine" \
    --gtest_filter="$filter" --gtest_color=no > "$out/sanitizer_$tool.log" 2>&1
  echo "compute-sanitizer $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$tool.log" | tr '\n' ' ')"
done
bash "$here/run.sh" "$bundle/run manifold" "$out/bench" 3 > "$out/run.txt" 2>&1
tail -8 "$out/run.txt"
