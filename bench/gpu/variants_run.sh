#!/usr/bin/env bash
# On the GPU machine: the fused kernel's launch variants against each other
# in one run, on the same random data (bench/gpu/torch_baseline.py make),
# each a fresh `manifold bench --backend gpu` process.
#   bash bench/gpu/variants_run.sh MANIFOLD_RUNNER OUT_DIR
# A variant is "name:FUSED:GRID:STREAMS" (MANIFOLD_GPU_FUSED,
# MANIFOLD_GPU_FUSED_GRID, MANIFOLD_GPU_GEMM_STREAMS; "-" leaves it unset).
# env: CASES ("1000000:128:20:3 100000:256:20:5", N:d:k:repeats), VARIANTS.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
runner=${1:?usage: variants_run.sh MANIFOLD_RUNNER OUT_DIR}
out=${2:?usage: variants_run.sh MANIFOLD_RUNNER OUT_DIR}
cases=${CASES:-"1000000:128:20:3 100000:256:20:5"}
variants=${VARIANTS:-"before:direct:tiles:1 default:-:-:- persistent:direct:-:1 queue:-:tiles:1 streams:direct:tiles:2 before2:direct:tiles:1"}
tmp=${TMPDIR:-/tmp}/manifold-variants
mkdir -p "$out" "$tmp"
for c in $cases; do
  IFS=: read -r n d k reps <<<"$c"
  data="$tmp/x_${n}_${d}.npy"
  python3 "$here/torch_baseline.py" make "$n" "$d" 7 "$data"
  for v in $variants; do
    IFS=: read -r name fused grid streams <<<"$v"
    envs=()
    [ "$fused" != - ] && envs+=("MANIFOLD_GPU_FUSED=$fused")
    [ "$grid" != - ] && envs+=("MANIFOLD_GPU_FUSED_GRID=$grid")
    [ "$streams" != - ] && envs+=("MANIFOLD_GPU_GEMM_STREAMS=$streams")
    echo "== $name ($n, $d, $k): ${envs[*]}"
    env "${envs[@]}" $runner bench --backend gpu --data "$data" -k "$k" --repeats "$reps" --warmup 1 \
      --json "$out/variant_${name}_${n}_${d}.json" | tail -2
  done
  rm -f "$data"
done
