#!/usr/bin/env bash
# Tile shapes, cuBLAS math mode and merge strategy side by side on a few
# sizes, to choose the defaults (one run, same GPU):
#   bash bench/gpu/tune.sh MANIFOLD_RUNNER OUT_DIR
set -uo pipefail
runner=${1:?usage: tune.sh MANIFOLD_RUNNER OUT_DIR}
out=${2:?usage: tune.sh MANIFOLD_RUNNER OUT_DIR}
mkdir -p "$out"
run() {  # label, env..., -- bench args...
  local label=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" $runner bench --backend gpu --repeats 2 --warmup 1 --json "$out/tune_$label.json" "$@" \
    2>/dev/null | tail -n 1 | sed "s/^/$label /"
}
for tile in 2048x4096 2048x8192 4096x4096 1024x4096 2048x2048; do
  run "d128_$tile" MANIFOLD_GPU_TILE=$tile -- -n 300000 -d 128 -k 20 --sgemm 0
done
run d128_default_math MANIFOLD_GPU_MATH=default -- -n 300000 -d 128 -k 20 --sgemm 0
run d128_merge X=1 -- -n 300000 -d 128 -k 20 --select merge --sgemm 0
run d128_k1 X=1 -- -n 300000 -d 128 -k 1 --sgemm 0
run d1024 X=1 -- -n 100000 -d 1024 -k 32 --sgemm 0
run d1024_default_math MANIFOLD_GPU_MATH=default -- -n 100000 -d 1024 -k 32 --sgemm 0
run d4096 X=1 -- -n 50000 -d 4096 -k 32 --sgemm 0
run d4096_4096x4096 MANIFOLD_GPU_TILE=4096x4096 -- -n 50000 -d 4096 -k 32 --sgemm 0
run d256_k1000 X=1 -- -n 100000 -d 256 -k 1000 --sgemm 0
$runner bench --backend gpu -n 300000 -d 128 -k 20 --repeats 2 --json "$out/tune_sgemm.json" 2>/dev/null | head -1
