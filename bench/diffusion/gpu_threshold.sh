#!/usr/bin/env bash
# On the GPU machine: where the device eigensolver starts to pay, for
# `--eigensolver auto`'s threshold (kDeviceEigensolveMinRows). For each N,
# `manifold bench embed --only eigensolve` times Spectra (the CPU default,
# all cores) and the device solve on the same swiss-roll matrix in one
# process (device context already made: its one-time cost is measured
# separately by timing `manifold embed` cold, --eigensolver gpu vs cpu).
#   bash bench/diffusion/gpu_threshold.sh MANIFOLD_RUNNER OUT_DIR
# env: NS ("5000 10000 20000 50000"), K (20), REPEATS (5)
set -uo pipefail
runner=${1:?usage: gpu_threshold.sh MANIFOLD_RUNNER OUT_DIR}
out=${2:?usage: gpu_threshold.sh MANIFOLD_RUNNER OUT_DIR}
mkdir -p "$out"
K=${K:-20}
REPEATS=${REPEATS:-5}
work=$(mktemp -d)
for n in ${NS:-5000 10000 20000 50000}; do
  $runner bench embed -n "$n" -k "$K" --repeats "$REPEATS" --only eigensolve --graph "$work/g$n" \
    --json "$out/threshold_$n.json" 2>/dev/null | grep -E "^graph|median"
  # Whole commands, each a fresh process (the device's context included).
  for solver in gpu cpu; do
    TIMEFORMAT=%R
    s=$( { time $runner embed "$work/g$n" --eigensolver "$solver" -q -o "$work/e_${n}_$solver" > /dev/null 2>&1; } 2>&1)
    echo "embed N=$n --eigensolver $solver: whole command $s s, eigensolve $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['timings_s']['eigensolve'])" "$work/e_${n}_$solver/embedding.json" 2>/dev/null || echo "(failed)") s" | tee -a "$out/threshold_cold.txt"
  done
done
rm -rf "$work"
