#!/usr/bin/env bash
# Issue 10 on a GPU machine with several GPUs, from the repository root:
# `manifold bench --backend gpu` on 1, 2, 4 (and 8) of its GPUs for each case,
# one process per (case, GPU count), all in this one command; then
# summarize.py writes scaling.json and scaling.png.
#   bash bench/gpu/scaling/run.sh BUNDLE_DIR OUT_DIR
# Environment: CASES ("N:d:k ..."; default the issue's two), COUNTS (GPU
# counts; default 1 2 4 8 up to the machine's), REPEATS (2), WARMUP (1),
# CASE_SECONDS (timeout per process, 240).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "${1:?usage: run.sh BUNDLE_DIR OUT_DIR}" && pwd)
out=${2:?usage: run.sh BUNDLE_DIR OUT_DIR}
mkdir -p "$out"
gpus=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader | tee "$out/gpus.txt"
nvidia-smi topo -m > "$out/topology.txt" 2>&1
counts=${COUNTS:-}
if [ -z "$counts" ]; then
  for g in 1 2 4 8; do [ "$g" -le "$gpus" ] && counts="$counts $g"; done
fi
status=0
cases=${CASES:-2000000:256:32 500000:4096:32}
for c in $cases; do
  IFS=: read -r n d k <<< "$c"
  for g in $counts; do
    devs=$(seq -s, 0 $((g - 1)))
    t=$SECONDS
    timeout "${CASE_SECONDS:-240}" "$bundle/run" manifold bench --backend gpu --devices "$devs" -n "$n" -d "$d" -k "$k" \
      --repeats "${REPEATS:-2}" --warmup "${WARMUP:-1}" --json "$out/scale_${n}_${d}_${k}_g$g.json" \
      > "$out/scale_${n}_${d}_${k}_g$g.log" 2>&1 || { rc=$?; status=1; echo "N=$n d=$d k=$k on $g GPUs: exit $rc"; }
    echo "N=$n d=$d k=$k on $g GPUs ($devs): $((SECONDS - t)) s"
    grep -E "^gpu " "$out/scale_${n}_${d}_${k}_g$g.log" | tail -1
  done
done
python3 "$here/summarize.py" "$out/scaling.json" "$out/scaling.png" "$out"/scale_*.json || status=1
exit $status
