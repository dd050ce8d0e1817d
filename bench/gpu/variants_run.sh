#!/usr/bin/env bash
# On the GPU machine: the fused kernel's launch variants against each other
# in one run, on the same random data (bench/gpu/torch_baseline.py make),
# each a fresh `manifold bench --backend gpu` process.
#   bash bench/gpu/variants_run.sh MANIFOLD_RUNNER OUT_DIR
# A variant is "name:VAR=value,VAR=value" (environment of its run; "name:-"
# for none), e.g. "trace:MANIFOLD_GPU_TIMELINE=1". BUNDLE=DIR runs that
# variant with another build (DIR/run manifold, made by device-bundle), so
# two builds go against each other on the same data:
#   VARIANTS="A1:BUNDLE=.device/old B1:- A2:BUNDLE=.device/old B2:-"
# env: CASES ("1000000:128:20:3 100000:256:20:5", N:d:k:repeats), VARIANTS.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
runner=${1:?usage: variants_run.sh MANIFOLD_RUNNER OUT_DIR}
out=${2:?usage: variants_run.sh MANIFOLD_RUNNER OUT_DIR}
cases=${CASES:-"1000000:128:20:3 100000:256:20:5"}
variants=${VARIANTS:-"default:- timeline:MANIFOLD_GPU_TIMELINE=1"}
tmp=${TMPDIR:-/tmp}/manifold-variants
mkdir -p "$out" "$tmp"
for c in $cases; do
  IFS=: read -r n d k reps <<<"$c"
  data="$tmp/x_${n}_${d}.npy"
  python3 "$here/torch_baseline.py" make "$n" "$d" 7 "$data"
  for v in $variants; do
    name=${v%%:*}
    settings=${v#*:}
    envs=()
    [ "$settings" != - ] && IFS=, read -r -a envs <<<"$settings"
    run=$runner
    for e in "${envs[@]}"; do [ "${e%%=*}" = BUNDLE ] && run="${e#BUNDLE=}/run manifold"; done
    echo "== $name ($n, $d, $k): ${envs[*]}"
    env "${envs[@]}" $run bench --backend gpu --data "$data" -k "$k" --repeats "$reps" --warmup 1 \
      --json "$out/variant_${name}_${n}_${d}.json" | tail -2
  done
  rm -f "$data"
done
