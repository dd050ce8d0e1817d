#!/usr/bin/env bash
# On the GPU machine, from the repository root: where the tile loop's time
# goes at short inner dimensions. Nsight Compute on a few tiles (after the
# seeds) of the kernels the default picks for D (the fused kernel where
# d <= 256, else cuBLAS + filter), the stage timings of `manifold bench`,
# and optional GPU tests first.
#   bash bench/gpu/profile_run.sh BUNDLE_DIR OUT_DIR
# Environment: N (200000), D (128), K (20), TESTS=1 runs the GPU test
# executables first, FUSED_TESTS=1 runs the exactness suites and
# compute-sanitizer with the fused kernel (--gemm=fused), BENCH=1 runs bench/gpu/run.sh
# (issue 3's four cases, or CASES), STAGES=0 / NCU=0 skip those parts.
# Logs, JSON and reports land in OUT_DIR/results.tar.
set -uo pipefail
bundle=$(cd "${1:?usage: profile_run.sh BUNDLE_DIR OUT_DIR}" && pwd)
final=${2:?usage: profile_run.sh BUNDLE_DIR OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$final"
# Everything is written to a scratch folder and packed into OUT_DIR/results.tar
# on exit (the device tool brings back only a few files).
out=$(mktemp -d)
trap 'tar cf "$final/results.tar" -C "$out" .' EXIT
n=${N:-200000} d=${D:-128} k=${K:-20}
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
nvidia-smi -L
if [ "${TESTS:-0}" = 1 ]; then
  export MANIFOLD_FASHION_MNIST_DIR=$(cd "$bundle/../data" 2>/dev/null && pwd)
  printf '#!/usr/bin/env bash\nexec %q manifold "$@"\n' "$bundle/run" > "$bundle/manifold"
  chmod +x "$bundle/manifold"
  export MANIFOLD_CLI=$bundle/manifold
  for t in test_gpu_precision test_gpu_engine test_gpu_knn test_gpu_select; do
    [ -x "$bundle/bin/$t" ] || continue
    timeout 300 "$bundle/bin/$t" --gtest_color=no --gtest_filter='-GpuSanitizer.*' > "$out/$t.log" 2>&1
    echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED) ' "$out/$t.log" | tr '\n' ' ')"
    grep -E '^\[  FAILED  \]' "$out/$t.log" | head -5
  done
fi
if [ "${FUSED_TESTS:-0}" = 1 ]; then
  # The exactness suites again with the fused kernel on every tile, then
  # compute-sanitizer on its small runs.
  for t in test_gpu_knn test_gpu_engine test_gpu_precision; do
    timeout 300 "$bundle/bin/$t" --gemm=fused --gtest_color=no --gtest_filter='-GpuSanitizer.*' \
      > "$out/${t}_fused.log" 2>&1
    echo "$t (fused): exit $? $(grep -E '^\[  (PASSED|FAILED) ' "$out/${t}_fused.log" | tr '\n' ' ')"
    grep -E '^\[  FAILED  \]' "$out/${t}_fused.log" | head -5
  done
  for tool in memcheck racecheck; do
    filter='GpuSanitizer.*'
    [ "$tool" = racecheck ] && filter='GpuSanitizer.Tiny*'
    timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 3 "$bundle/bin/test_gpu_engine" --gemm=fused \
      --gtest_filter="$filter" --gtest_color=no > "$out/sanitizer_fused_$tool.log" 2>&1
    echo "compute-sanitizer $tool (fused): exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_fused_$tool.log" | tr '\n' ' ')"
  done
fi
if [ "${BENCH:-0}" = 1 ]; then
  bash "$here/run.sh" "$bundle/run manifold" "$out/bench" 3 > "$out/bench.log" 2>&1
  echo "bench/gpu/run.sh: exit $?"
  tail -20 "$out/bench.log"
fi
if [ "${SASS:-0}" = 1 ] && command -v cuobjdump > /dev/null; then
  # Instruction mix of the fused kernels' machine code.
  cuobjdump -sass "$bundle/bin/manifold" > "$out/sass.txt" 2>&1
  python3 - "$out/sass.txt" <<'PY'
import collections, re, sys
fn, counts = None, {}
for line in open(sys.argv[1]):
    m = re.search(r"Function : (\S+)", line)
    if m:
        fn = m.group(1)
        continue
    m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
    if fn and m and "fused_tile" in fn:
        counts.setdefault(fn, collections.Counter())[m.group(1).split(".")[0]] += 1
for fn, c in counts.items():
    print(fn[-60:], sum(c.values()), "instructions:", ", ".join("%s %d" % kv for kv in c.most_common(14)))
PY
fi
# Stage timings on the profiled shape (the kernel the default picks for d).
[ "${STAGES:-1}" = 1 ] && for path in default; do
  "$bundle/bin/manifold" bench --backend gpu -n "$n" -d "$d" -k "$k" --repeats 3 --warmup 1 \
    --json "$out/stages_$path.json" > "$out/stages_$path.log" 2>&1
  echo "stages $path: exit $?"; grep -E "gpu |SGEMM|TFLOP" "$out/stages_$path.log" | head -8
done
# Nsight Compute: a few tiles well after the seeds.
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  sections="--section SpeedOfLight --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis
            --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section InstructionStats
            --section SourceCounters"
  timeout 240 ncu $sections -k regex:fused_tile --launch-skip 300 --launch-count 2 \
    "$bundle/bin/manifold" bench --backend gpu -n "$n" -d "$d" -k "$k" --repeats 1 --warmup 0 > "$out/ncu_fused.txt" 2>&1
  echo "ncu fused: exit $?"
  timeout 240 ncu $sections -k 'regex:gemm|filter|merge' --launch-skip 900 --launch-count 6 \
    "$bundle/bin/manifold" bench --backend gpu -n "$n" -d "$d" -k "$k" --repeats 1 --warmup 0 > "$out/ncu_cublas.txt" 2>&1
  echo "ncu cublas: exit $?"
  grep -E "^  [a-z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|No Eligible" \
    "$out/ncu_fused.txt" "$out/ncu_cublas.txt" | head -80
fi
