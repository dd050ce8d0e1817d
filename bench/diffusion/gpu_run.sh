#!/usr/bin/env bash
# On the GPU machine, from the repository root: the GPU eigensolver's tests,
# compute-sanitizer on them, and the benchmark -- the device solve against
# Spectra on the same matrix, and re-embedding (rediffuse) on the GPU against
# the CPU's warm LOBPCG, all in one run. Logs and JSON go to OUT_DIR.
#   bash bench/diffusion/gpu_run.sh BUNDLE_DIR OUT_DIR
# BUNDLE_DIR: made by shared/tools/device-bundle with manifold and
# test_gpu_eigen; Fashion-MNIST test images in BUNDLE_DIR/../data.
# env: N (100000) K (20) REPEATS (5)
set -uo pipefail
bundle=$(cd "${1:?usage: gpu_run.sh BUNDLE_DIR OUT_DIR}" && pwd)
out=${2:?usage: gpu_run.sh BUNDLE_DIR OUT_DIR}
mkdir -p "$out"
N=${N:-100000}
K=${K:-20}
REPEATS=${REPEATS:-5}
export MANIFOLD_FASHION_MNIST_DIR=$(cd "$bundle/../data" 2>/dev/null && pwd)
status=0
"$bundle/run" test_gpu_eigen --gtest_color=no > "$out/test_gpu_eigen.log" 2>&1 || status=1
echo "test_gpu_eigen:"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$out/test_gpu_eigen.log"
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
small='GpuEigen.Circle*:GpuEigen.Sphere*:GpuEigen.Every*:GpuEigen.Bad*'
for tool in memcheck racecheck; do
  compute-sanitizer --tool "$tool" --error-exitcode 3 "$bundle/bin/test_gpu_eigen" --gtest_filter="$small" \
    --gtest_color=no > "$out/sanitizer_eigen_$tool.log" 2>&1 || status=1
  echo "compute-sanitizer $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_eigen_$tool.log" | tr '\n' ' ')"
done
work=$(mktemp -d)
# The device solve's trace, then the full comparison with the CPU eigensolver.
MANIFOLD_CHEB_TRACE=1 "$bundle/run" manifold bench embed -n "$N" -k "$K" --repeats 1 --only device \
  --graph "$work/graph" --json /dev/null 2>&1 | grep -E "^chebyshev" > "$out/trace.log"
"$bundle/run" manifold bench embed -n "$N" -k "$K" --repeats "$REPEATS" --eigensolver gpu --graph "$work/graph" \
  --json "$out/bench_gpu.json" 2>/dev/null | grep -vE "^graph" || status=1
"$bundle/run" manifold bench embed -n "$N" -k "$K" --repeats "$REPEATS" --eigensolver cpu --only reembed \
  --graph "$work/graph" --json "$out/bench_cpu_reembed.json" 2>/dev/null | grep -vE "^graph" || status=1
exit $status
