#!/usr/bin/env bash
# Where the time goes at large k (issue 26, item 1), N = 100k, d = 256, one
# GPU: `manifold bench` over k (plain, then MANIFOLD_GPU_TIMELINE=1 for one
# repeat), every --select strategy at every k (the grid `auto`'s large-k
# cells are derived from: bench/gpu/select/make_table.py), and
# `manifold knn` at k = 4096 writing the graph (its "write graph" lap is the
# .npy writes).
#   bash bench/gpu/large_k_run.sh BUNDLE_DIR OUT_DIR
# BUNDLE_DIR: made by shared/tools/device-bundle (bin/manifold, lib/, run).
# KS: the k list (default 1024,2047,4096,8192,16384); 16385, one past the
# largest, is run once to record the refusal. SELECTS: the strategies of the
# grid (default warp,quick,sort,heap,auto). bitonic runs where its network
# fits one block's shared memory (k <= 4096). REPEATS (3), TIMELINE=0,
# BITONIC=0 and KNN=0 (skip those parts) shorten a call.
# Per-stage medians: the JSON's median_stage_s; the timeline: bench/gpu/timeline.py.
set -uo pipefail
bundle=$(cd "${1:?usage: large_k_run.sh BUNDLE_DIR OUT_DIR}" && pwd)
out=${2:?usage: large_k_run.sh BUNDLE_DIR OUT_DIR}
mkdir -p "$out"
m() { "$bundle/run" manifold "$@"; }
ks=${KS:-1024,2047,4096,8192,16384}
reps=${REPEATS:-3}
common=(bench --backend gpu --devices 0 -n 100000 -d 256)
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv; nproc; free -g; } > "$out/machine.txt" 2>&1
m "${common[@]}" -k "$ks" --repeats "$reps" --warmup 1 --json "$out/plain.json" > "$out/plain.txt" 2>&1
echo "plain: rc $?"
m "${common[@]}" -k 16385 --repeats 1 --warmup 0 > "$out/k16385.txt" 2>&1
echo "k 16385: rc $? $(tail -1 "$out/k16385.txt")"
if [ "${TIMELINE:-1}" = 1 ]; then
  MANIFOLD_GPU_TIMELINE=1 m "${common[@]}" -k "$ks" --repeats 1 --warmup 1 --json "$out/timeline.json" \
    > "$out/timeline.txt" 2>&1
  echo "timeline: rc $?"
fi
m "${common[@]}" -k "$ks" --select "${SELECTS:-warp,quick,sort,heap,auto}" --repeats "$reps" --warmup 1 \
  --json "$out/select.json" > "$out/select.txt" 2>&1
echo "select: rc $?"
bk=$(tr , '\n' <<<"$ks" | awk '$1 <= 4096' | paste -sd,)
if [ "${BITONIC:-1}" = 1 ] && [ -n "$bk" ]; then
  m "${common[@]}" -k "$bk" --select bitonic --repeats "$reps" --warmup 1 --json "$out/select_bitonic.json" \
    > "$out/select_bitonic.txt" 2>&1
  echo "select bitonic: rc $?"
fi
[ "${KNN:-1}" = 1 ] || exit 0
# manifold knn writes the graph: random normal rows as a .npy file first.
work=$(mktemp -d)
python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(1).standard_normal((100000, 256), dtype=np.float32))" \
  "$work/x.npy"
for i in 1 2; do
  m knn "$work/x.npy" -k 4096 --backend gpu --devices 0 --overwrite -o "$work/g" > "$out/knn_$i.txt" 2>&1
  echo "knn $i: rc $?"
  cp "$work/g/graph.json" "$out/knn_graph_$i.json"
done
ls -la "$work/g" >> "$out/knn_2.txt"
rm -rf "$work"
