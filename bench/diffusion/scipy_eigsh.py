#!/usr/bin/env python3
"""Times SciPy's eigsh (ARPACK) on the matrix `manifold bench embed --matrix DIR`
wrote: the symmetric conjugate D^-1/2 K D^-1/2 that manifold's Spectra solver
eigensolves, same number of eigenpairs, same tolerance. Writes JSON."""
import argparse
import json
import os
import time

import numpy as np
import scipy
import scipy.sparse as sp
import scipy.sparse.linalg as sla


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--matrix", required=True, help="folder with indptr.npy, indices.npy, data.npy")
    ap.add_argument("--eigenpairs", type=int, default=10)
    ap.add_argument("--tolerance", type=float, default=1e-10)
    ap.add_argument("--ncv", type=int, default=None, help="ARPACK basis size (default: SciPy's, 2k+1 or 20)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()

    indptr = np.load(os.path.join(a.matrix, "indptr.npy"))
    indices = np.load(os.path.join(a.matrix, "indices.npy"))
    data = np.load(os.path.join(a.matrix, "data.npy"))
    # 32-bit indices, as SciPy picks for a matrix this size: its fastest mat-vec.
    A = sp.csr_matrix((data, indices.astype(np.int32), indptr.astype(np.int32)))
    n = A.shape[0]
    asym = abs(A - A.T).max()

    runs = []
    w = v = None
    for _ in range(a.repeats):
        t = time.perf_counter()
        w, v = sla.eigsh(A, k=a.eigenpairs, which="LA", tol=a.tolerance, ncv=a.ncv)
        runs.append(time.perf_counter() - t)
    order = np.argsort(w)[::-1]
    w, v = w[order], v[:, order]
    resid = [float(np.linalg.norm(A @ v[:, i] - w[i] * v[:, i]) / abs(w[i])) for i in range(len(w))]

    # One more, untimed, run through a counting operator for the mat-vec count.
    count = [0]

    def matvec(x):
        count[0] += 1
        return A @ x

    sla.eigsh(sla.LinearOperator(A.shape, matvec=matvec, dtype=np.float64), k=a.eigenpairs, which="LA",
              tol=a.tolerance, ncv=a.ncv)

    out = {
        "solver": "scipy.sparse.linalg.eigsh (ARPACK), which='LA'",
        "scipy": scipy.__version__,
        "numpy": np.__version__,
        "n": n,
        "nnz": int(A.nnz),
        "max_asymmetry": float(asym),
        "eigenpairs": a.eigenpairs,
        "tolerance": a.tolerance,
        "ncv": a.ncv if a.ncv else min(n, max(2 * a.eigenpairs + 1, 20)),
        "runs_s": runs,
        "median_s": float(np.median(runs)),
        "matvecs": count[0],
        "max_residual": max(resid),
        "eigenvalues": [float(x) for x in w],
    }
    with open(a.json, "w") as f:
        json.dump(out, f, indent=2)
    print("scipy eigsh (%d pairs, tol %g, ncv %d): median %.4f s over %d runs, %d mat-vecs, max residual %.2e"
          % (a.eigenpairs, a.tolerance, out["ncv"], out["median_s"], a.repeats, count[0], max(resid)))


if __name__ == "__main__":
    main()
