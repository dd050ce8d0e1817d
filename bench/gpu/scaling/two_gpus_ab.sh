#!/usr/bin/env bash
# Issue 26 item 3 on a machine with two GPUs: one GPU, two GPUs and one GPU
# holding a quarter of the rows (--gpu-memory), N = 1M, d = 256, k = 32
# exact, for each build given, alternated ROUNDS times in one call; then a
# timeline run of two GPUs per build (MANIFOLD_GPU_TIMELINE=1: each
# device's uploads and seed phase). two_gpus_summary.py makes the JSON.
#   bash bench/gpu/scaling/two_gpus_ab.sh OUT_DIR NAME=RUNNER [NAME=RUNNER ...]
# e.g. two_gpus_ab.sh out new="W/b/run manifold" old="W/b/run manifold-old"
# Environment: ROUNDS (2), REPEATS (3), QUARTER (the --gpu-memory bytes that
# leave a quarter of the rows on the device at this size: the lists, the
# streaming tile buffers, the cuBLAS workspace and 256 MB of rows).
set -uo pipefail
out=${1:?usage: two_gpus_ab.sh OUT_DIR NAME=RUNNER ...}
shift
mkdir -p "$out"
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader > "$out/gpus.txt"
quarter=${QUARTER:-1357774208}
size=(-n 1000000 -d 256 -k 32 --warmup 1 --repeats "${REPEATS:-3}")
status=0
for round in $(seq 1 "${ROUNDS:-2}"); do
  for build in "$@"; do
    name=${build%%=*} runner=${build#*=}
    for run in one two quarter; do
      case $run in
        one) devices=(--devices 0) ;;
        two) devices=(--devices 0,1) ;;
        quarter) devices=(--devices 0 --gpu-memory "$quarter") ;;
      esac
      $runner bench --backend gpu "${devices[@]}" "${size[@]}" --json "$out/${name}_${run}_$round.json" \
        > "$out/${name}_${run}_$round.log" 2>&1 || { rc=$?; status=1; echo "$name $run $round: exit $rc"; }
      echo "$name $run $round: $(grep -E '^gpu ' "$out/${name}_${run}_$round.log" | tail -1)"
    done
  done
done
for build in "$@"; do
  name=${build%%=*} runner=${build#*=}
  MANIFOLD_GPU_TIMELINE=1 $runner bench --backend gpu --devices 0,1 "${size[@]}" \
    --json "$out/${name}_timeline.json" > "$out/${name}_timeline.log" 2>&1 || status=1
done
exit $status
