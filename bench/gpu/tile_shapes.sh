#!/usr/bin/env bash
# On the GPU machine: the fused kernel's tile shapes (MANIFOLD_GPU_TILE=TxW,
# rows x columns of one tile, i.e. of one launch) on the same random data,
# each a fresh `manifold bench --backend gpu` process.
#   bash bench/gpu/tile_shapes.sh MANIFOLD_RUNNER OUT_DIR
# env: CASES ("100000:256:20:5:2048x8192,1024x8192,2048x4096,2048x16384,4096x8192
#              1000000:128:20:3:2048x8192,1024x8192,2048x16384"; N:d:k:repeats:shapes)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
runner=${1:?usage: tile_shapes.sh MANIFOLD_RUNNER OUT_DIR}
out=${2:?usage: tile_shapes.sh MANIFOLD_RUNNER OUT_DIR}
cases=${CASES:-"100000:256:20:5:2048x8192,1024x8192,2048x4096,2048x16384,4096x8192 1000000:128:20:3:2048x8192,1024x8192,2048x16384"}
tmp=${TMPDIR:-/tmp}/manifold-tiles
mkdir -p "$out" "$tmp"
for c in $cases; do
  IFS=: read -r n d k reps shapes <<<"$c"
  data="$tmp/x_${n}_${d}.npy"
  python3 "$here/torch_baseline.py" make "$n" "$d" 7 "$data" > /dev/null
  for s in ${shapes//,/ }; do
    echo "== $s ($n, $d, $k)"
    MANIFOLD_GPU_TILE=$s $runner bench --backend gpu --data "$data" -k "$k" --repeats "$reps" --warmup 1 \
      --json "$out/tile_${s}_${n}_${d}.json" | tail -1
  done
  rm -f "$data"
done
