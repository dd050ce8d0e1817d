#!/usr/bin/env bash
# On the GPU machine: `manifold run` on 1M x 128 random normal rows, k = 20,
# 10 coordinates, three times; each run's `steps:` line is its breakdown.
#   bash bench/io/device_run.sh BUNDLE_DIR OUT_DIR
# BUNDLE_DIR: made by shared/tools/device-bundle with manifold (bin/, lib/, run).
set -uo pipefail
bundle=$(cd "${1:?usage: device_run.sh BUNDLE_DIR OUT_DIR}" && pwd)
out=${2:?usage: device_run.sh BUNDLE_DIR OUT_DIR}
mkdir -p "$out"
work=$(mktemp -d)
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; free -g; } > "$out/machine.txt" 2>&1
python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(7).standard_normal((1000000, 128), dtype=np.float32))" \
  "$work/x.npy"
for i in 1 2 3; do
  /usr/bin/time -f "wall %e s" "$bundle/run" manifold run "$work/x.npy" -k 20 --components 10 --overwrite -o "$work/r" \
    > "$out/run_$i.txt" 2>&1
  echo "run $i: rc $?"; grep -E "^steps|^wall" "$out/run_$i.txt"
  cp "$work/r/embedding.json" "$out/embedding_$i.json"
done
rm -rf "$work"
