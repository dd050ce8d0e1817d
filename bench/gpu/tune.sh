#!/usr/bin/env bash
# The tile kernel (fused FFMA vs cuBLAS + filter) and the merge strategy
# side by side on a few sizes, to choose the defaults (one run, one GPU):
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
run d128_fused MANIFOLD_GPU_GEMM=fused -- -n 300000 -d 128 -k 20
run d128_cublas MANIFOLD_GPU_GEMM=cublas -- -n 300000 -d 128 -k 20
run d128_fused_merge MANIFOLD_GPU_GEMM=fused -- -n 300000 -d 128 -k 20 --select merge
for d in 256 512 1024; do
  for path in fused cublas; do
    run "d${d}_$path" MANIFOLD_GPU_GEMM=$path -- -n 100000 -d $d -k 32
  done
done
run d256_k1000 X=1 -- -n 100000 -d 256 -k 1000
run d4096 X=1 -- -n 50000 -d 4096 -k 32
