#!/usr/bin/env python3
"""Diffusion map of orientations uniform in SO(3) (issue 27, item 4).

Simulates 1UBQ in orientations uniform in SO(3) (unit quaternions uniform on
the 3-sphere), embeds the patterns with 20 coordinates, groups the leading
eigenvalues into multiplets and correlates the coordinates with the entries of
the true rotation matrix R (the molecule is rotated r -> R r; the detector
samples the lab plane q_z = 0, so a pattern is I(q) = |F(R^T q)|^2).

What to expect: the Laplacian on SO(3) has the Wigner D-functions D^l_mn of
degree l as eigenfunctions, (2l+1)^2 of them per l, eigenvalue l(l+1) under a
bi-invariant metric. Friedel's law I(q) = I(-q) on the flat (small-angle)
detector makes R and diag(-1,-1,1) R give the same pattern (a half turn about
the beam), so the data live on SO(3)/C2 with C2 acting on the lab side; only
functions invariant under flipping the signs of R's first two rows survive:
for l = 1 the three entries of the third row (the beam direction seen from the
molecule, D^1_0n), for l = 2 the 15 functions with m in {-2, 0, 2}. The
metric the images induce is invariant under turns about the beam (they rotate
the image) but not under turns of the molecule, so the (2l+1)-fold
degeneracy over n splits by the molecule's shape.

Usage (from the repository root, with the CLI built):
    python3 bench/physics/so3.py [--manifold build/app/manifold] [--work DIR]
Writes bench/physics/so3.json and bench/physics/so3.png.
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


def run(cmd):
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + res.stderr)
    return res.stdout


def rotation_matrices(q):
    w, x, y, z = q.T
    return np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                     2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                     2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=1)


def uniformity(q):
    """Checks of uniformity on SO(3): E[R] = 0, E[R_ij^2] = 1/3, and the angle of rotation
    has density (1 - cos t) / pi on [0, pi] (mean pi/2 + 2/pi)."""
    r = rotation_matrices(q)
    angle = 2 * np.arccos(np.clip(np.abs(q[:, 0]), 0, 1))
    return {"max_abs_mean_entry": float(np.abs(r.mean(0)).max()),
            "mean_square_entry_range": [float((r ** 2).mean(0).min()), float((r ** 2).mean(0).max())],
            "expected_mean_square_entry": 1 / 3,
            "mean_rotation_angle": float(angle.mean()), "expected_mean_rotation_angle": float(np.pi / 2 + 2 / np.pi)}


def r2(target, features):
    """Coefficient of determination of the best linear fit (with intercept)."""
    x = np.column_stack([np.ones(len(features)), features])
    coef, *_ = np.linalg.lstsq(x, target, rcond=None)
    res = target - x @ coef
    return float(1 - res.var() / target.var())


def canonical_correlations(a, b):
    qa, _ = np.linalg.qr(a - a.mean(0))
    qb, _ = np.linalg.qr(b - b.mean(0))
    return np.linalg.svd(qa.T @ qb, compute_uv=False)


def classify_harmonics(psi, r):
    """For each coordinate, R^2 of its best fit by functions of the beam direction n (the third
    row of R) alone (m = 0: polynomials of degree <= 4 in n) and by cos(m a), sin(m a) times
    polynomials of degree <= 2 in n (m = 1 to 4; Friedel's law allows only even m), a = the in-plane angle of the molecule's z axis
    (R = Rz(a) Ry(b) Rz(g)). A turn about the beam shifts a and only a, so the Laplacian's
    eigenfunctions carry one m each, and m and -m (cos and sin) share an eigenvalue."""
    rr = r.reshape(-1, 3, 3)
    n = rr[:, 2, :]
    a = np.arctan2(rr[:, 1, 2], rr[:, 0, 2])

    def monomials(degree):
        cols = [np.ones(len(n))]
        for d in range(1, degree + 1):
            cols += [np.prod(n[:, list(c)], axis=1) for c in itertools.combinations_with_replacement(range(3), d)]
        return np.column_stack(cols)

    m0 = monomials(4)[:, 1:]
    p2 = monomials(2)
    out = []
    for i in range(psi.shape[1]):
        fits = {"m0": r2(psi[:, i], m0)}
        for m in (1, 2, 3, 4):
            fits[f"m{m}"] = r2(psi[:, i], np.column_stack([p2 * np.cos(m * a)[:, None], p2 * np.sin(m * a)[:, None]]))
        best = max(fits, key=fits.get)
        out.append({"coordinate": i + 1, **fits, "best": best})
    return out


def multiplets(values, gap):
    """Groups consecutive sorted Laplacian estimates whose relative step is below `gap`."""
    groups = [[0]]
    for i in range(1, len(values)):
        if values[i] / values[i - 1] - 1 > gap:
            groups.append([])
        groups[-1].append(i)
    return groups


def plot(lap, harmonics, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    styles = {"m0": ("o", "C0", "m = 0 (function of the beam direction n)"),
              "m2": ("s", "C1", "m = 2 (cos 2a, sin 2a times a function of n)"),
              "m4": ("^", "C2", "m = 4"), "m1": ("x", "C3", "m = 1"), "m3": ("x", "C4", "m = 3")}
    for key, (marker, colour, label) in styles.items():
        idx = [h["coordinate"] - 1 for h in harmonics if h["best"] == key]
        if idx:
            ax.plot(np.array(idx) + 1, lap[idx], marker, color=colour, label=label)
    ax.set_xlabel("eigenvalue index i (psi_i)")
    ax.set_ylabel("-log(lambda_i) / -log(lambda_1)")
    ax.set_title(title, fontsize=9)
    ax.set_xticks(range(1, len(lap) + 1))
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifold", default="build/app/manifold")
    ap.add_argument("--work", default=None, help="scratch folder (default: a new temporary folder)")
    ap.add_argument("--count", type=int, default=4000)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--photons", type=float, default=1e6)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("-k", type=int, default=20)
    ap.add_argument("--local-scaling", default="0")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gap", type=float, default=0.08, help="relative step that starts a new multiplet")
    ap.add_argument("--out", default=os.path.join(HERE, "so3.json"))
    args = ap.parse_args()
    args.work = args.work or tempfile.mkdtemp(prefix="manifold-so3-")
    os.makedirs(args.work, exist_ok=True)
    cli = os.path.abspath(args.manifold)

    data = os.path.join(args.work, "so3.npy")
    sim = [cli, "simulate", "diffraction", "--pdb", "1ubq", "--count", str(args.count), "--size", str(args.size),
           "--axis", "random", "--photons", str(args.photons), "--seed", str(args.seed), "--threads", str(args.threads),
           "-q", "-o", data]
    emb = os.path.join(args.work, "embedding")
    embed = [cli, "run", data, "-k", str(args.k), "--transform", "anscombe", "--local-scaling", args.local_scaling,
             "--components", "20", "--threads", str(args.threads), "-q", "-o", emb]
    run(sim)
    if os.path.exists(emb):
        import shutil
        shutil.rmtree(emb)
    run(embed)

    q = np.load(data[:-4] + ".quaternions.npy")
    psi = np.load(os.path.join(emb, "embedding.npy"))
    idx = np.load(os.path.join(emb, "point_index.npy"))
    lam = np.load(os.path.join(emb, "eigenvalues.npy"))[1:]  # lambda_0 = 1 is the constant
    lap = np.log(lam) / np.log(lam[0])
    groups = multiplets(lap, args.gap)

    r = rotation_matrices(q[idx])
    names = [f"R{i + 1}{j + 1}" for i in range(3) for j in range(3)]
    psi9 = psi[:, :9]
    # Functions of R the half turn about the beam leaves alone: the third row (l = 1) and
    # quadratics in the first two rows that keep their sign (l = 2, m = 0, +-2).
    row3 = r[:, 6:9]
    quad = np.column_stack([r[:, 3 * 0 + i] * r[:, 3 * 0 + j] - r[:, 3 * 1 + i] * r[:, 3 * 1 + j]
                            for i in range(3) for j in range(i, 3)] +
                           [r[:, 3 * 0 + i] * r[:, 3 * 1 + j] + r[:, 3 * 1 + i] * r[:, 3 * 0 + j]
                            for i in range(3) for j in range(i, 3)])
    corr = np.corrcoef(np.column_stack([psi9, r]).T)[:9, 9:]
    harmonics = classify_harmonics(psi, r)
    result = {
        "command": {"simulate": " ".join(["manifold"] + sim[1:]).replace(args.work, "WORK"),
                    "run": " ".join(["manifold"] + embed[1:]).replace(args.work, "WORK")},
        "uniformity": uniformity(q),
        "eigenvalues": [float(v) for v in lam],
        "laplacian_ratio": [float(v) for v in lap],
        "multiplets": [{"indices": [i + 1 for i in g], "size": len(g),
                        "mean_ratio": float(lap[g].mean())} for g in groups],
        "multiplet_gap": args.gap,
        "r2_of_entries_from_psi1_9": {n: r2(r[:, i], psi9) for i, n in enumerate(names)},
        "r2_of_entries_from_psi1_20": {n: r2(r[:, i], psi) for i, n in enumerate(names)},
        "r2_of_third_row_from_psi1_3": [r2(row3[:, i], psi[:, :3]) for i in range(3)],
        "r2_of_half_turn_invariant_quadratics_from_psi1_20": [r2(quad[:, i], psi) for i in range(quad.shape[1])],
        "canonical_correlations_psi1_9_vs_R": [float(v) for v in canonical_correlations(psi9, r)],
        "canonical_correlations_psi1_3_vs_third_row": [float(v) for v in canonical_correlations(psi[:, :3], row3)],
        "harmonic_of_each_coordinate": harmonics,
        "pearson_psi1_9_vs_R": {f"psi{a + 1}": {n: float(corr[a, i]) for i, n in enumerate(names)} for a in range(9)},
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(json.dumps({k: result[k] for k in ("uniformity", "multiplets", "r2_of_entries_from_psi1_9",
                                              "r2_of_third_row_from_psi1_3", "canonical_correlations_psi1_9_vs_R",
                                              "canonical_correlations_psi1_3_vs_third_row",
                                              "r2_of_half_turn_invariant_quadratics_from_psi1_20")}, indent=1))
    print("laplacian ratios:", np.round(lap, 3).tolist())
    for h, v in zip(harmonics, lap):
        print(f"psi{h['coordinate']:<2d} {v:6.3f}  m0 {h['m0']:.3f}  m1 {h['m1']:.3f}  m2 {h['m2']:.3f}  m3 {h['m3']:.3f}  m4 {h['m4']:.3f}  -> {h['best']}")
    try:
        plot(lap, harmonics, os.path.splitext(args.out)[0] + ".png",
             f"1UBQ, {args.count} patterns {args.size}x{args.size}, uniform SO(3), {args.photons:g} photons, "
             f"k={args.k}, local scaling {args.local_scaling}")
    except ImportError:
        print("matplotlib not found: no plot written", file=sys.stderr)


if __name__ == "__main__":
    main()
