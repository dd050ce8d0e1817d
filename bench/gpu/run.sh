#!/usr/bin/env bash
# GPU benchmark in one run on one GPU: for each case the engine (`manifold
# bench --backend gpu`, which also measures the cuBLAS SGEMM rate of the same
# GPU), the PyTorch baseline and, when FAISS is given, FAISS's exact bfKnn
# (shared/peers/faiss), all on the same random data file.
#   bash bench/gpu/run.sh MANIFOLD_RUNNER OUT_DIR [REPEATS]
# MANIFOLD_RUNNER runs the CLI: e.g. "build-gpu/app/manifold" or ".device/bundle/run manifold".
# CASES: "N:D:K[:PRECISION] ..." (PRECISION exact or fast-exact; cases of one
# N:D share one data file when they follow each other).
# FAISS: a faiss_bench runner ("" = no FAISS); FAISS_REPEATS (default REPEATS).
# TORCH_REPEATS: PyTorch's measured runs (default min(REPEATS, 2); 0 = none).
# A peer runs once per N:D:K, whatever the precisions.
# Writes OUT_DIR/gpu_bench.json (all numbers) and prints the tables.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
runner=${1:?usage: run.sh MANIFOLD_RUNNER OUT_DIR [REPEATS]}
out=${2:?usage: run.sh MANIFOLD_RUNNER OUT_DIR [REPEATS]}
reps=${3:-3}
cases=${CASES:-"100000:256:20 100000:1024:32 200000:4096:32 1000000:128:20"}
faiss=${FAISS:-}
faiss_reps=${FAISS_REPEATS:-$reps}
torch_reps=${TORCH_REPEATS:-$((reps > 2 ? 2 : reps))}
tmp=${TMPDIR:-/tmp}/manifold-gpu-bench
mkdir -p "$out" "$tmp"
export PYTHONUNBUFFERED=1
data=""
for c in $cases; do
  IFS=: read -r n d k precision <<<"$c"
  precision=${precision:-exact}
  if [ "$data" != "$tmp/x_${n}_${d}.npy" ]; then
    [ -n "$data" ] && rm -f "$data"
    data="$tmp/x_${n}_${d}.npy"
    python3 "$here/torch_baseline.py" make "$n" "$d" 7 "$data"
  fi
  tag="${n}_${d}_${k}"
  suffix=$([ "$precision" = exact ] || echo "_$precision")
  $runner bench --backend gpu --data "$data" -k "$k" --precision "$precision" --repeats "$reps" --warmup 1 \
    --json "$out/ours_${tag}${suffix}.json"
  if [ "$torch_reps" -gt 0 ] && [ ! -e "$out/torch_${tag}.json" ]; then
    python3 "$here/torch_baseline.py" time "$data" "$k" "$torch_reps" > "$out/torch_${tag}.json"
  fi
  if [ -n "$faiss" ] && [ ! -e "$out/faiss_${tag}.json" ]; then
    # FAISS aborts on what it refuses (k > 2048): keep its last line as the error.
    if ! $faiss "$data" "$k" "$faiss_reps" > "$out/faiss_${tag}.json" 2> "$tmp/faiss.err"; then
      python3 -c 'import json, sys; print(json.dumps({"peer": "faiss_bfknn", "error": sys.argv[1]}))' \
        "$(tail -n 1 "$tmp/faiss.err" | cut -c1-200)" > "$out/faiss_${tag}.json"
    fi
  fi
done
[ -n "$data" ] && rm -f "$data"
python3 "$here/summarize.py" "$out" "$out/gpu_bench.json"
