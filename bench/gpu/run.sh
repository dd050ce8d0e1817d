#!/usr/bin/env bash
# GPU benchmark of issue 3, in one run on one GPU: for each (N, d, k) the
# engine (`manifold bench --backend gpu`, which also measures the cuBLAS SGEMM
# rate of the same GPU) and the PyTorch baseline on the same random data.
#   bash bench/gpu/run.sh MANIFOLD_RUNNER OUT_DIR [REPEATS]
# MANIFOLD_RUNNER runs the CLI: e.g. "build-gpu/app/manifold" or ".device/bundle/run manifold".
# Writes OUT_DIR/gpu_bench.json (all numbers) and prints the table.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
runner=${1:?usage: run.sh MANIFOLD_RUNNER OUT_DIR [REPEATS]}
out=${2:?usage: run.sh MANIFOLD_RUNNER OUT_DIR [REPEATS]}
reps=${3:-3}
cases=${CASES:-"100000:256:20 100000:1024:32 200000:4096:32 1000000:128:20"}
tmp=${TMPDIR:-/tmp}/manifold-gpu-bench
mkdir -p "$out" "$tmp"
export PYTHONUNBUFFERED=1
for c in $cases; do
  IFS=: read -r n d k <<<"$c"
  data="$tmp/x_${n}_${d}.npy"
  python3 "$here/torch_baseline.py" make "$n" "$d" 7 "$data"
  $runner bench --backend gpu --data "$data" -k "$k" --repeats "$reps" --warmup 1 \
    --json "$out/ours_${n}_${d}_${k}.json"
  python3 "$here/torch_baseline.py" time "$data" "$k" "$((reps > 2 ? 2 : reps))" > "$out/torch_${n}_${d}_${k}.json"
  rm -f "$data"
done
python3 "$here/summarize.py" "$out" "$out/gpu_bench.json"
