#!/usr/bin/env bash
# On the GPU machine, from the repository root: the diffusion map end to end
# as a user runs it -- `manifold run` on Fashion-MNIST (GPU k-NN, then the
# embedding with --eigensolver gpu and cpu), and `manifold embed` with the
# default (auto) on a 100,000-point graph -- comparing the GPU's eigenvalues
# with the CPU's. Writes OUT_DIR/end_to_end.txt.
#   bash bench/diffusion/gpu_end_to_end.sh BUNDLE_DIR OUT_DIR   (data in BUNDLE_DIR/../data)
set -euo pipefail
bundle=$(cd "${1:?usage: gpu_end_to_end.sh BUNDLE_DIR OUT_DIR}" && pwd)
out=${2:?usage}
mkdir -p "$out"
m() { "$bundle/run" manifold "$@"; }
work=$(mktemp -d)
data=$(cd "$bundle/../data" && pwd)/t10k-images-idx3-ubyte.gz
{
  for solver in gpu cpu; do
    "$bundle/run" manifold run "$data" -k 15 --components 10 --eigensolver "$solver" -q \
      -o "$work/fmnist_$solver" 2>&1 | tail -3
  done
  m bench embed -n 100000 -k 20 --repeats 1 --only device --graph "$work/graph" --json /dev/null > /dev/null 2>&1
  for solver in auto cpu; do
    "$bundle/run" manifold embed "$work/graph" --eigensolver "$solver" -q \
      -o "$work/roll_$solver" 2>&1 | tail -3
  done
  python3 - "$work" <<'PY'
import json, sys, numpy as np
w = sys.argv[1]
for a, b in (("fmnist_gpu", "fmnist_cpu"), ("roll_auto", "roll_cpu")):
    ja, jb = (json.load(open(f"{w}/{x}/embedding.json")) for x in (a, b))
    ea, eb = (np.load(f"{w}/{x}/eigenvalues.npy") for x in (a, b))
    ya, yb = (np.load(f"{w}/{x}/embedding.npy") for x in (a, b))
    # Coordinate c is eigenpair c + 1; compared up to sign where that
    # eigenvalue is 1e-5 from both neighbours (the last one's next is unknown).
    ok = [c for c in range(ya.shape[1] - 1) if min(ea[c] - ea[c + 1], ea[c + 1] - ea[c + 2]) > 1e-5]
    cos = [abs(ya[:, c] @ yb[:, c]) / np.linalg.norm(ya[:, c]) / np.linalg.norm(yb[:, c]) for c in ok]
    print(f"{a}: N={ya.shape[0]} solver={ja['solver']['method']!r} eigensolve {ja['timings_s']['eigensolve']:.3f} s, total {ja['timings_s']['total']:.3f} s")
    print(f"{b}: solver={jb['solver']['method']!r} eigensolve {jb['timings_s']['eigensolve']:.3f} s, total {jb['timings_s']['total']:.3f} s")
    print(f"  max |eigenvalue difference| {np.max(np.abs(ea - eb)):.2e}, worst |cos| of {len(cos)} separated coordinates {min(cos):.12f}")
PY
} > "$out/end_to_end.txt" 2>&1
cat "$out/end_to_end.txt"
