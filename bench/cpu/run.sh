#!/usr/bin/env bash
# CPU backend against FAISS's exact CPU search, same data, same machine, one run:
#   bash bench/cpu/run.sh BUILD_DIR [N] [K] [REPEATS]
# Data: the first N Fashion-MNIST training images (Debian's dataset-fashion-mnist).
# Writes bench/cpu/cpu_vs_faiss.json.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: run.sh BUILD_DIR [N] [K] [REPEATS]}
n=${2:-20000}; k=${3:-10}; reps=${4:-5}
py=/usr/bin/python3   # Debian's python3 with python3-faiss and python3-numpy
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
$py - "$tmp/x.npy" "$n" <<'PY'
import gzip, sys, numpy as np
out, n = sys.argv[1], int(sys.argv[2])
import os
with gzip.open(os.path.join(os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"),
                       "train-images-idx3-ubyte.gz")) as f:
    raw = np.frombuffer(f.read(), dtype=np.uint8, offset=16)
np.save(out, raw.reshape(-1, 784)[:n].astype(np.float32))
PY
"$build/app/manifold" bench --backend cpu --data "$tmp/x.npy" -k "$k" --repeats "$reps" --json "$tmp/ours.json" >/dev/null
$py "$here/faiss_baseline.py" "$tmp/x.npy" "$k" "$reps" > "$tmp/faiss.json"
$py - "$tmp/ours.json" "$tmp/faiss.json" "$here/cpu_vs_faiss.json" <<'PY'
import json, sys, platform, os
ours, faiss_, out = (json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3])
o = ours["cases"][0]
r = {"machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
     "data": "Fashion-MNIST train, first %d images, d=784" % o["n"], "k": o["k"],
     "manifold_cpu": {"median_wall_s": o["median_wall_s"], "wall_s": o["wall_s"], "stages": o["median_stage_s"],
                      "threads": ours["cpu_threads"]},
     "faiss_IndexFlatL2": {"median_wall_s": faiss_["median_wall_s"], "wall_s": faiss_["wall_s"],
                           "version": faiss_["faiss_version"], "threads": faiss_["omp_threads"]},
     "ratio_manifold_over_faiss": o["median_wall_s"] / faiss_["median_wall_s"]}
json.dump(r, open(out, "w"), indent=2)
print("manifold cpu %.3f s   faiss %.3f s   ratio %.3f" % (o["median_wall_s"], faiss_["median_wall_s"], r["ratio_manifold_over_faiss"]))
PY
