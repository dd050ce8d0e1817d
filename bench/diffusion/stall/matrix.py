#!/usr/bin/env python3
"""The diffusion-map matrix of issue 22 on real data: Fashion-MNIST t10k and
the first 20,000 training images, metric x k x epsilon, 10 coordinates, one
`manifold embed` per cell on a k = 100 graph (k' = the cell's k).

    python3 bench/diffusion/stall/matrix.py --manifold build/app/manifold \
        --data-dir "$FASHION_MNIST_DIR" --eigensolver cpu \
        --json bench/diffusion/stall/cpu.json [--work DIR] [--backend cpu]

Each cell records the exit status, the eigensolve time and mat-vecs from
embedding.json, the points embedded and the warnings, or the one-line error;
epsilon 0.1x and 10x are the cell's median epsilon (the default) times 0.1
and 10. A cell "stalls" when it ran past its budget without its line, or
took longer than --stall-after seconds in all: the run is killed there.
"""
import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

METRICS = ["euclidean", "cosine", "pearson"]
KS = [5, 10, 30, 100]
EPSILONS = ["median", "auto", "0.1x", "10x"]


def images(path, n):
    with gzip.open(path) as f:
        raw = np.frombuffer(f.read(), np.uint8, offset=16)
    return raw.reshape(-1, 28 * 28)[:n]


def sh(cmd, timeout):
    t = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.time() - t
    except subprocess.TimeoutExpired:
        return None, "", "", time.time() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifold", required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--eigensolver", default="cpu")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--json", required=True)
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "manifold-stall-matrix"))
    ap.add_argument("--stall-after", type=float, default=120)
    ap.add_argument("--datasets", default="t10k,train20k")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)

    sources = {"t10k": ("t10k-images-idx3-ubyte.gz", 10000), "train20k": ("train-images-idx3-ubyte.gz", 20000)}
    cells = []
    for name in a.datasets.split(","):
        fname, n = sources[name]
        data = os.path.join(a.work, name + ".npy")
        if not os.path.exists(data):
            np.save(data, images(os.path.join(a.data_dir, fname), n))
        for metric in METRICS:
            graph = os.path.join(a.work, "%s_%s" % (name, metric))
            if not os.path.exists(os.path.join(graph, "graph.json")):
                rc, _, err, s = sh([a.manifold, "knn", data, "-k", "100", "--metric", metric, "--backend", a.backend,
                                    "-q", "-o", graph], 3600)
                if rc != 0:
                    sys.exit("knn failed: " + err)
                print("graph %s %s: %.1f s" % (name, metric, s), flush=True)
            for k in KS:
                median_eps = None
                for eps in EPSILONS:
                    out = os.path.join(a.work, "embed")
                    args = [a.manifold, "embed", graph, "--k", str(k), "--components", "10", "--eigensolver",
                            a.eigensolver, "-q", "-o", out]
                    if eps == "auto":
                        args += ["--epsilon", "auto"]
                    elif eps.endswith("x"):
                        args += ["--epsilon", repr(float(eps[:-1]) * median_eps)]
                    rc, _, err, wall = sh(args, a.stall_after)
                    cell = {"data": name, "n": n, "metric": metric, "k": k, "epsilon_rule": eps, "exit": rc,
                            "wall_s": round(wall, 3)}
                    if rc == 0:
                        j = json.load(open(os.path.join(out, "embedding.json")))
                        cell.update({"epsilon": j["epsilon"], "eigensolve_s": j["timings_s"]["eigensolve"],
                                     "matvecs": j["solver"]["matvecs"], "method": j["solver"]["method"],
                                     "points_embedded": j["points_embedded"],
                                     "weakly_joined_points": j["weakly_joined_points"],
                                     "localised_coordinates": j["diagnostics"]["localised_coordinates"],
                                     "near_one_coordinates": j["diagnostics"]["near_one_coordinates"],
                                     "warnings": j["diagnostics"]["warnings"],
                                     "warned_on_stderr": err.count("manifold: warning:")})
                        if eps == "median":
                            median_eps = j["epsilon"]
                    else:
                        cell["error"] = err.strip().splitlines()[-1] if err.strip() else "killed after %g s" % a.stall_after
                        cell["error_lines"] = len(err.strip().splitlines())
                    cells.append(cell)
                    print(json.dumps({x: cell[x] for x in cell if x != "warnings"}), flush=True)
                    if median_eps is None:
                        break  # no default epsilon to scale
    res = {"what": "Fashion-MNIST diffusion-map matrix (issue 22): metric x k x epsilon, 10 coordinates",
           "command": " ".join(sys.argv), "eigensolver": a.eigensolver, "host": platform.node(),
           "cpus": os.cpu_count(), "cells": cells}
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
