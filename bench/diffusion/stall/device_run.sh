#!/usr/bin/env bash
# On the GPU machine, from the repository root: the GPU eigensolver tests
# (plain, memcheck, racecheck), then the Fashion-MNIST matrix through the GPU
# eigensolver (k-NN graphs on the GPU). Results and logs go to OUT_DIR.
#   bash bench/diffusion/stall/device_run.sh CARRY_DIR OUT_DIR
# CARRY_DIR holds bundle.tar.xz (shared/tools/device-bundle of manifold and
# test_gpu_eigen, tarred and xz-compressed) and the Fashion-MNIST image files.
set -uo pipefail
carry=$(cd "${1:?usage: device_run.sh CARRY_DIR OUT_DIR}" && pwd)
out=${2:?usage: device_run.sh CARRY_DIR OUT_DIR}
mkdir -p "$out"
work=$(mktemp -d)
tar xJf "$carry/bundle.tar.xz" -C "$work"
bundle=$work/bundle
printf '#!/usr/bin/env bash\nexec %q manifold "$@"\n' "$bundle/run" > "$bundle/manifold"
chmod +x "$bundle/manifold"
export MANIFOLD_FASHION_MNIST_DIR=$carry
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
"$bundle/run" test_gpu_eigen --gtest_color=no > "$out/test_gpu_eigen.log" 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$out/test_gpu_eigen.log"
# SANITIZERS=0 leaves compute-sanitizer out (a re-run of the matrix alone).
[ "${SANITIZERS:-1}" = 0 ] || (
  export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  for tool in memcheck racecheck; do
    compute-sanitizer --tool "$tool" --error-exitcode 9 "$bundle/bin/test_gpu_eigen" \
      --gtest_filter='GpuEigen.*-GpuEigen.FashionMnist*' --gtest_color=no > "$out/sanitizer_$tool.log" 2>&1
    echo "$tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$tool.log" | tail -1)"
  done
)
python3 bench/diffusion/stall/matrix.py --manifold "$bundle/manifold" --data-dir "$carry" --eigensolver gpu \
  --backend gpu --json "$out/gpu.json" --work "$work/matrix" > "$out/matrix_gpu.log" 2>&1
echo "matrix: exit $?"; tail -2 "$out/matrix_gpu.log" | cut -c1-300
