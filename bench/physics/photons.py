#!/usr/bin/env python3
"""Circle recovery against the photon count (issue 27, item 1).

Simulates ubiquitin (1UBQ) rotating about the x axis (in the detector plane),
2,000 patterns of 64 x 64 with Poisson noise at mean photon counts from 1e5 down
to 1e2 per pattern (fixed seeds), embeds each set with and without the Anscombe
transform, and scores the circle: |Fisher-Lee circular correlation| between the
true angle and atan2(psi2, psi1). It then searches, at 1e3 and 1e2 photons,
which graph and kernel settings keep the score up: metric (Euclidean, cosine),
transform, the embedding's k, the epsilon rule, local scaling, and coarser
pixels (--transform binB: b x b pixels summed, as a detector with larger pixels
would count).

Usage (from the repository root, with the CLI built):
    python3 bench/physics/photons.py [--manifold build/app/manifold] [--work DIR]
Writes bench/physics/photons.json and bench/physics/photons.png.
Needs NumPy; matplotlib for the plot (Debian: python3-numpy, python3-matplotlib).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PHOTONS = [1e5, 3e4, 1e4, 3e3, 1e3, 3e2, 1e2]
SEARCH_PHOTONS = [1e3, 1e2]
COUNT, SIZE, AXIS, SEED = 2000, 64, "x", 1
GRAPH_K = 60  # the graph keeps 60 neighbours; embeddings use k <= 60 of them


def fisher_lee(a, b):
    """Fisher-Lee circular correlation of two angle samples (as the core's circular_correlation)."""
    sa, ca, sb, cb = np.sin(a), np.cos(a), np.sin(b), np.cos(b)
    num = np.sum(sa * sb) * np.sum(ca * cb) - np.sum(sa * cb) * np.sum(ca * sb)
    den = np.sqrt((np.sum(sa * sa) * np.sum(ca * ca) - np.sum(sa * ca) ** 2) *
                  (np.sum(sb * sb) * np.sum(cb * cb) - np.sum(sb * cb) ** 2))
    return float(num / den) if den > 0 else 0.0


def score(embedding_dir, angles):
    """|rho| of the angle with atan2(psi2, psi1), and the best pair among psi1..psi6 (standardised)."""
    psi = np.load(os.path.join(embedding_dir, "embedding.npy"))
    idx = np.load(os.path.join(embedding_dir, "point_index.npy"))
    a = angles[idx]
    main = abs(fisher_lee(a, np.arctan2(psi[:, 1], psi[:, 0])))
    z = (psi - psi.mean(0)) / psi.std(0)
    best, pair = 0.0, (1, 2)
    m = min(6, psi.shape[1])
    for i in range(m):
        for j in range(i + 1, m):
            r = abs(fisher_lee(a, np.arctan2(z[:, j], z[:, i])))
            if r > best:
                best, pair = r, (i + 1, j + 1)
    return {"score": main, "best_pair_score": best, "best_pair": list(pair), "points": int(len(idx))}


def run(cmd):
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + res.stderr)
    return res.stdout


def simulate(cli, work, photons, threads):
    path = os.path.join(work, f"p{int(photons)}.npy")
    if not os.path.exists(path):
        run([cli, "simulate", "diffraction", "--pdb", "1ubq", "--count", str(COUNT), "--size", str(SIZE), "--axis",
             AXIS, "--photons", str(photons), "--seed", str(SEED), "--threads", str(threads), "-q", "-o", path])
    return path, np.load(path[:-4] + ".angles.npy")


def graph(cli, work, data, photons, transform, metric, threads, b=1):
    """k-NN graph (k = GRAPH_K) plus the default embedding (k' = 20), as `manifold run` makes them;
    b > 1 sums b x b pixels first (--transform binB, then the transform)."""
    if b > 1:
        transform = f"bin{b}" if transform == "none" else f"bin{b}+{transform}"
    out = os.path.join(work, f"g{int(photons)}_{transform.replace('+', '_')}_{metric}")
    if not os.path.exists(os.path.join(out, "embedding.npy")):
        run([cli, "run", data, "-k", str(GRAPH_K), "--embed-k", "20", "--transform", transform, "--metric", metric,
             "--threads", str(threads), "--components", "6", "-q", "-o", out])
    return out


def embed(cli, work, graph_dir, k, epsilon, local_scaling):
    out = f"{graph_dir}_k{k}_{epsilon}_ls{local_scaling}"
    if not os.path.exists(os.path.join(out, "embedding.npy")):
        run([cli, "embed", graph_dir, "--k", str(k), "--epsilon", epsilon, "--local-scaling", local_scaling,
             "--components", "6", "-q", "-o", out])
    return out


def plot(result, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    xs = [row["photons"] for row in result["curve"]]
    for key, label, style in [("none", "raw counts", "o-"), ("anscombe", "Anscombe", "s-"),
                              ("best", "--transform bin8+anscombe (8 x 8 pixels summed)", "^--")]:
        ys = [row[key]["score"] for row in result["curve"] if key in row]
        if len(ys) == len(xs):
            ax.plot(xs, ys, style, label=label)
    ax.axhline(0.99, color="grey", lw=0.6, ls=":")
    ax.axhline(0.9, color="grey", lw=0.6, ls=":")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("mean photons per pattern")
    ax.set_ylabel("|circ. correlation| angle vs atan2(psi2, psi1)")
    ax.set_title(f"1UBQ, {COUNT} patterns {SIZE}x{SIZE}, rotation about {AXIS}, Euclidean k-NN k=20")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifold", default="build/app/manifold")
    ap.add_argument("--work", default=None, help="scratch folder (default: a new temporary folder)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(HERE, "photons.json"))
    ap.add_argument("--best", default="", help="BIN,METRIC,TRANSFORM,K,EPSILON,LS: also score this setting on the whole curve")
    args = ap.parse_args()
    args.work = args.work or tempfile.mkdtemp(prefix="manifold-photons-")
    os.makedirs(args.work, exist_ok=True)
    cli = os.path.abspath(args.manifold)

    result = {"setup": {"molecule": "1UBQ", "count": COUNT, "size": SIZE, "axis": AXIS, "seed": SEED,
                        "graph_k": GRAPH_K, "default_embedding": "k=20, epsilon median, local scaling auto (7th neighbour), alpha 1",
                        "score": "|Fisher-Lee rho| of the true angle with atan2(psi2, psi1)",
                        "best_pair_score": "the same for the best pair among psi1..psi6, standardised"},
              "curve": [], "search": []}
    data = {}
    for p in PHOTONS:
        data[p] = simulate(cli, args.work, p, args.threads)
        row = {"photons": p}
        for transform in ("none", "anscombe"):
            row[transform] = score(graph(cli, args.work, data[p][0], p, transform, "euclidean", args.threads), data[p][1])
        result["curve"].append(row)
        print(f"{p:8.0f}  none {row['none']['score']:.4f} (pair {row['none']['best_pair_score']:.4f})  "
              f"anscombe {row['anscombe']['score']:.4f} (pair {row['anscombe']['best_pair_score']:.4f})", flush=True)

    # Graph and kernel settings first, then coarser pixels (b x b summed) with the two transforms.
    for p in SEARCH_PHOTONS:
        for b, metrics, ks, epsilons, scalings in [(1, ("euclidean", "cosine"), (10, 20, 40, 60), ("median", "auto"),
                                                    ("auto", "0")),
                                                   (2, ("euclidean",), (20,), ("median",), ("auto",)),
                                                   (4, ("euclidean", "cosine"), (20, 40), ("median",), ("auto",)),
                                                   (8, ("euclidean", "cosine"), (10, 20, 40, 60), ("median", "auto"),
                                                    ("auto", "0")),
                                                   (16, ("euclidean",), (20, 40), ("median",), ("auto",))]:
            for metric in metrics:
                for transform in ("none", "anscombe"):
                    g = graph(cli, args.work, data[p][0], p, transform, metric, args.threads, b)
                    for k in ks:
                        for epsilon in epsilons:
                            for ls in scalings:
                                s = score(embed(cli, args.work, g, k, epsilon, ls), data[p][1])
                                entry = {"photons": p, "bin": b, "metric": metric, "transform": transform, "k": k,
                                         "epsilon": epsilon, "local_scaling": ls, **s}
                                result["search"].append(entry)
                                print(f"{p:6.0f} bin{b:<2d} {metric:9s} {transform:8s} k={k:2d} eps={epsilon:6s} "
                                      f"ls={ls:4s} {s['score']:.4f} (pair {s['best_pair_score']:.4f} {s['best_pair']})",
                                      flush=True)

    if args.best:
        b, metric, transform, k, epsilon, ls = args.best.split(",")
        b = int(b)
        result["best_setting"] = {"bin": b, "metric": metric, "transform": transform, "k": int(k), "epsilon": epsilon,
                                  "local_scaling": ls}
        for row in result["curve"]:
            p = row["photons"]
            g = graph(cli, args.work, data[p][0], p, transform, metric, args.threads, b)
            row["best"] = score(embed(cli, args.work, g, int(k), epsilon, ls), data[p][1])
            print(f"{p:8.0f}  best {row['best']['score']:.4f}", flush=True)

    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    try:
        plot(result, os.path.splitext(args.out)[0] + ".png")
    except ImportError:
        print("matplotlib not found: no plot written", file=sys.stderr)


if __name__ == "__main__":
    main()
