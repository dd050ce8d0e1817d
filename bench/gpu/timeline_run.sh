#!/usr/bin/env bash
# Where the tile loop spends its time: `manifold bench` with
# MANIFOLD_GPU_TIMELINE=1 (each tile's kernel and merge and each block's
# upload, by CUDA events, in the JSON's per_device extras), then the same
# case without it (the timeline waits once at the start: its cost).
#   bash bench/gpu/timeline_run.sh MANIFOLD_RUNNER OUT_DIR
# CASES="N:D:K[:REPEATS] ..." (default the two fused-kernel cases of issue 3).
# Read the result with bench/gpu/timeline.py OUT_DIR/timeline_N_D_K.json.
set -uo pipefail
runner=${1:?usage: timeline_run.sh MANIFOLD_RUNNER OUT_DIR}
out=${2:?usage: timeline_run.sh MANIFOLD_RUNNER OUT_DIR}
mkdir -p "$out"
cases=${CASES:-"100000:256:20:5 1000000:128:20:1"}
for c in $cases; do
  IFS=: read -r n d k reps <<<"$c"
  for mode in timeline plain; do
    timeline=0
    [ $mode = timeline ] && timeline=1
    MANIFOLD_GPU_TIMELINE=$timeline $runner bench --backend gpu -n "$n" -d "$d" -k "$k" --repeats "${reps:-3}" \
      --warmup 1 --json "$out/${mode}_${n}_${d}_${k}.json" > "$out/${mode}_${n}_${d}_${k}.txt" 2>&1
    python3 -c "import json,sys; [print(sys.argv[1], c['median_wall_s'], round(c['over_floor'],3)) for c in json.load(open(sys.argv[2]))['cases']]" \
      "$mode $n $d $k" "$out/${mode}_${n}_${d}_${k}.json"
  done
done
