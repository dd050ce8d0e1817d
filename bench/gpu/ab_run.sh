#!/usr/bin/env bash
# Two builds of the CLI against each other on the same data, alternating
# (A, B, A, B), each run a fresh `manifold bench --backend gpu` process.
#   bash bench/gpu/ab_run.sh RUNNER_A RUNNER_B OUT_DIR
# RUNNER_*: commands that run the CLI (".device/old/run manifold").
# env: CASES ("100000:1024:32:3 100000:256:20:5", N:d:k:repeats), ENV_A, ENV_B
# (extra "VAR=value ..." for each side).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
a=${1:?usage: ab_run.sh RUNNER_A RUNNER_B OUT_DIR}
b=${2:?usage: ab_run.sh RUNNER_A RUNNER_B OUT_DIR}
out=${3:?usage: ab_run.sh RUNNER_A RUNNER_B OUT_DIR}
cases=${CASES:-"100000:1024:32:3 100000:256:20:5"}
tmp=${TMPDIR:-/tmp}/manifold-ab
mkdir -p "$out" "$tmp"
for c in $cases; do
  IFS=: read -r n d k reps <<<"$c"
  data="$tmp/x_${n}_${d}.npy"
  python3 "$here/torch_baseline.py" make "$n" "$d" 7 "$data"
  for round in 1 2; do
    for side in A B; do
      if [ $side = A ]; then runner=$a; extra=${ENV_A:-}; else runner=$b; extra=${ENV_B:-}; fi
      echo "== $side round $round ($n, $d, $k) $extra"
      env $extra $runner bench --backend gpu --data "$data" -k "$k" --repeats "$reps" --warmup 1 \
        --json "$out/${side}${round}_${n}_${d}.json" | tail -1
    done
  done
  rm -f "$data"
done
