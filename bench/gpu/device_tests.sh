#!/usr/bin/env bash
# On the GPU machine, from the repository root: the GPU tests, then
# compute-sanitizer (memcheck and racecheck) on the small run of every kernel
# path. Logs go to OUT_DIR.
#   bash bench/gpu/device_tests.sh BUNDLE_DIR OUT_DIR
# BUNDLE_DIR: made by shared/tools/device-bundle (bin/, lib/, run), with the
# Fashion-MNIST test images (and freesasa's 1ubq.pdb) in BUNDLE_DIR/../data.
set -uo pipefail
bundle=$(cd "${1:?usage: device_tests.sh BUNDLE_DIR OUT_DIR}" && pwd)
out=${2:?usage: device_tests.sh BUNDLE_DIR OUT_DIR}
mkdir -p "$out"
export MANIFOLD_FASHION_MNIST_DIR=$(cd "$bundle/../data" 2>/dev/null && pwd)
# freesasa's 1ubq.pdb for the diffraction tests, where the data folder has it.
[ -f "$bundle/../data/1ubq.pdb" ] && export MANIFOLD_PDB_PATH=$MANIFOLD_FASHION_MNIST_DIR
# run_cli executes $MANIFOLD_CLI directly: give it a one-file launcher.
printf '#!/usr/bin/env bash\nexec %q manifold "$@"\n' "$bundle/run" > "$bundle/manifold"
chmod +x "$bundle/manifold"
export MANIFOLD_CLI=$bundle/manifold
status=0
# Default dot-product kernel (the fused kernels at d <= 256, cuBLAS + filter
# beyond), then the exactness suite again with every tile on the fused kernel.
for t in test_gpu_engine test_gpu_knn; do
  "$bundle/run" "$t" --gtest_color=no > "$out/$t.log" 2>&1 || status=1
  echo "$t:"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|\[ info \]" "$out/$t.log"
done
# --gemm=fused|ffma|cublas (tests/gpu/gpu_test_main.cpp): every tile on that
# kernel (ffma: exact's strips by FFMA, as before compute capability 8.0).
for path in fused ffma; do
  "$bundle/run" test_gpu_knn --gemm=$path --gtest_filter='-GpuKnn.FashionMnistLargeK' --gtest_color=no \
    > "$out/test_gpu_knn_$path.log" 2>&1 || status=1
  echo "test_gpu_knn --gemm=$path:"; grep -E "^\[  (PASSED|FAILED) |tests ran" "$out/test_gpu_knn_$path.log"
done
# fast-exact equals exact: on the fused kernels (TF32 strips at d <= 256) and on cuBLAS.
if [ -x "$bundle/bin/test_gpu_precision" ]; then
  for path in fused cublas; do
    "$bundle/run" test_gpu_precision --gemm=$path --gtest_color=no > "$out/test_gpu_precision_$path.log" 2>&1 || status=1
    echo "test_gpu_precision --gemm=$path:"; grep -E "^\[  (PASSED|FAILED) |tests ran" "$out/test_gpu_precision_$path.log"
  done
fi
# Large k (up to 16384, every strategy) and the papers' selection strategies.
for t in test_gpu_large_k test_gpu_select; do
  [ -x "$bundle/bin/$t" ] || continue
  "$bundle/run" "$t" --gtest_color=no > "$out/$t.log" 2>&1 || status=1
  echo "$t:"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$out/$t.log"
done
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for tool in memcheck racecheck; do
  filter='GpuSanitizer.*'
  [ "$tool" = racecheck ] && filter='GpuSanitizer.Tiny*'
  for path in fused ffma cublas; do
    compute-sanitizer --tool "$tool" --error-exitcode 3 "$bundle/bin/test_gpu_engine" --gemm=$path \
      --gtest_filter="$filter" --gtest_color=no >> "$out/sanitizer_$tool.log" 2>&1 || status=1
  done
  # Large k's block merge, prior bound and pending room (both kernels inside each test).
  if [ -x "$bundle/bin/test_gpu_large_k" ]; then
    compute-sanitizer --tool "$tool" --error-exitcode 3 "$bundle/bin/test_gpu_large_k" \
      --gtest_filter='GpuLargeK.BlockMerge*:GpuLargeKPrior.Tiny*:GpuLargeKPrior.RankSelection*:GpuPendingRoom.Tiny*' --gtest_color=no \
      >> "$out/sanitizer_$tool.log" 2>&1 || status=1
  fi
  echo "compute-sanitizer $tool (fused, ffma, cublas; large k): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$tool.log" | tr '\n' ' ')"
done
exit $status
