#!/usr/bin/env python3
"""Hit classification of a simulated mix (issue 27, item 2).

Simulates 1UBQ snapshots mixed as blanks (background only), single hits and
double hits (two molecules in independent orientations) with
`manifold simulate diffraction --mix blank=0.3,single=0.5,double=0.2`, embeds
them (`manifold run`, Anscombe) and clusters them (`manifold cluster`: the
k-NN graph's separate components, then k-means on the first diffusion
coordinates), at 1e4 and 1e3 photons per molecule, with and without
shot-to-shot fluence jitter (log-normal, relative spread 0.3 and 0.6), which
blurs the photon total that otherwise tells the classes apart. Reports the
agreement with the true classes (best one-to-one match of clusters to
classes) and the confusion matrix.

Usage (from the repository root, with the CLI built):
    python3 bench/physics/hits.py [--manifold build/app/manifold] [--work DIR]
Writes bench/physics/hits.json.
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CLASSES = ["blank", "single", "double"]
MIX = "blank=0.3,single=0.5,double=0.2"
COUNT, SIZE, BACKGROUND, SEED, K = 2000, 32, 1000, 1, 20


def run(cmd):
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + res.stderr)
    return res.stdout + res.stderr


def agreement(classes, clusters):
    """Best one-to-one match of clusters to classes; -1 (left out) counts as wrong."""
    nk = max(int(clusters.max()) + 1, 1)
    conf = np.zeros((len(CLASSES), nk), dtype=int)
    for c, k in zip(classes, clusters):
        if k >= 0:
            conf[c, k] += 1
    slots = max(nk, len(CLASSES))
    best, match = -1, None
    for perm in itertools.permutations(range(slots), nk):
        right = sum(conf[perm[k], k] for k in range(nk) if perm[k] < len(CLASSES))
        if right > best:
            best, match = right, perm
    return best / len(classes), conf, match


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifold", default="build/app/manifold")
    ap.add_argument("--work", default=None, help="scratch folder (default: a new temporary folder)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(HERE, "hits.json"))
    args = ap.parse_args()
    args.work = args.work or tempfile.mkdtemp(prefix="manifold-hits-")
    os.makedirs(args.work, exist_ok=True)
    cli = os.path.abspath(args.manifold)
    result = {"setup": {"molecule": "1UBQ", "count": COUNT, "size": SIZE, "axis": "random", "mix": MIX,
                        "background_photons": BACKGROUND, "seed": SEED, "k": K, "transform": "anscombe",
                        "agreement": "best one-to-one match of clusters to classes, points left out count as wrong",
                        "confusion": "rows = true classes (blank, single, double), columns = clusters"},
              "runs": []}
    for photons in (1e4, 1e3):
        for jitter in (0.0, 0.3, 0.6):
            data = os.path.join(args.work, f"mix_{int(photons)}_{jitter}.npy")
            run([cli, "simulate", "diffraction", "--pdb", "1ubq", "--count", str(COUNT), "--size", str(SIZE), "--axis",
                 "random", "--photons", str(photons), "--background", str(BACKGROUND), "--fluence-jitter", str(jitter),
                 "--mix", MIX, "--seed", str(SEED), "--threads", str(args.threads), "-q", "-o", data])
            classes = np.load(data[:-4] + ".labels.npy")
            for metric in ("euclidean", "cosine"):
                emb = f"{data[:-4]}_{metric}"
                if os.path.exists(emb):
                    import shutil
                    shutil.rmtree(emb)
                run([cli, "run", data, "-k", str(K), "--transform", "anscombe", "--metric", metric, "--components", "10",
                     "--threads", str(args.threads), "-q", "-o", emb])
                with open(os.path.join(emb, "embedding.json")) as f:
                    components = json.load(f)["graph_components"]
                for given in (None, 3):
                    out = f"{emb}_clusters{given or ''}.npy"
                    run([cli, "cluster", emb, "-q", "-o", out] + (["--clusters", str(given)] if given else []))
                    with open(out[:-4] + ".json") as f:
                        facts = json.load(f)
                    acc, conf, match = agreement(classes, np.load(out))
                    entry = {"photons": photons, "fluence_jitter": jitter, "metric": metric,
                             "graph_components": components, "clusters": facts["clusters"],
                             "clusters_from": facts["clusters_from"], "agreement": acc,
                             "confusion": conf.tolist(),
                             "class_of_cluster": [CLASSES[c] if c < len(CLASSES) else None for c in match]}
                    result["runs"].append(entry)
                    print(f"{photons:6.0f} jitter {jitter:.1f} {metric:9s} components {components} "
                          f"K={facts['clusters']} ({facts['clusters_from']}) agreement {acc:.4f} "
                          f"confusion {conf.tolist()}", flush=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
