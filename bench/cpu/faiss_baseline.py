#!/usr/bin/env python3
"""FAISS exact CPU baseline (IndexFlatL2) on the same data `manifold bench` uses.

Self-search with k+1 neighbours (FAISS returns the point itself first), the
way a user builds a k-NN graph with FAISS. Prints JSON with the median of
repeats after a warm-up."""
import json, sys, time
import numpy as np
import faiss

path, k, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
x = np.ascontiguousarray(np.load(path, mmap_mode="r"), dtype=np.float32)
x = x.reshape(x.shape[0], -1)
times = []
for r in range(repeats + 1):
    t0 = time.perf_counter()
    index = faiss.IndexFlatL2(x.shape[1])
    index.add(x)
    d, i = index.search(x, k + 1)
    t = time.perf_counter() - t0
    if r > 0:
        times.append(t)
print(json.dumps({"baseline": "faiss.IndexFlatL2", "faiss_version": faiss.__version__,
                  "omp_threads": faiss.omp_get_max_threads(), "n": int(x.shape[0]), "d": int(x.shape[1]),
                  "k": k, "wall_s": times, "median_wall_s": float(np.median(times))}))
