#!/usr/bin/env python3
"""PyTorch baseline for the exact k-NN graph, written the way a user would:
float32 (TF32 off), squared distances |x|^2 + |y|^2 - 2 x.y by torch.addmm
over row chunks of the full N x N matrix (no symmetry), self excluded,
torch.topk per chunk. Timed from host data to host result (the engine's
`manifold bench` wall time covers the same: upload, compute, download).

  torch_baseline.py make N D SEED OUT.npy      random normal data (never zeros)
  torch_baseline.py time DATA.npy K REPEATS    prints JSON: median of repeats after a warm-up
"""
import json
import sys
import time

import numpy as np
import torch


def knn(x_host, k, chunk_bytes=4e9):
    x = x_host.cuda(non_blocking=False)
    n = x.shape[0]
    sq = (x * x).sum(1)
    rows = max(1, min(n, int(chunk_bytes // (4 * n))))
    idx = torch.empty(n, k, dtype=torch.int64, device="cuda")
    dist = torch.empty(n, k, dtype=torch.float32, device="cuda")
    for s in range(0, n, rows):
        e = min(n, s + rows)
        d2 = torch.addmm(sq[None, :], x[s:e], x.T, beta=1, alpha=-2)
        d2 += sq[s:e, None]
        r = torch.arange(e - s, device="cuda")
        d2[r, r + s] = float("inf")  # a point is not its own neighbour
        v, i = torch.topk(d2, k, dim=1, largest=False)
        dist[s:e] = v.clamp_min_(0).sqrt_()
        idx[s:e] = i
    return idx.cpu(), dist.cpu()


def self_check(x_host, idx, k, rows=8):
    """The baseline must compute the right thing: float64 on a few rows."""
    x = x_host.double()
    for r in np.linspace(0, x.shape[0] - 1, rows).astype(int):
        d = ((x - x[r]) ** 2).sum(1)
        d[r] = float("inf")
        ref = torch.topk(d, k, largest=False).indices
        common = len(set(ref.tolist()) & set(idx[r].tolist()))
        if common < k - 1:
            raise SystemExit("torch baseline wrong on row %d: %d of %d neighbours agree" % (r, common, k))


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if sys.argv[1] == "make":
        n, d, seed, out = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
        g = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(n, d, generator=g, device="cuda", dtype=torch.float32).cpu().numpy()
        np.save(out, x)
        return
    path, k, repeats = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    x_host = torch.from_numpy(np.load(path)).pin_memory()
    knn(x_host[: min(20000, x_host.shape[0])], k)  # warm-up: cuBLAS and kernel loading
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        idx, dist = knn(x_host, k)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    self_check(x_host, idx, k)
    print(json.dumps({"baseline": "torch.addmm + torch.topk, float32 chunks", "torch": torch.__version__,
                      "device": torch.cuda.get_device_name(0), "n": int(x_host.shape[0]),
                      "d": int(x_host.shape[1]), "k": k, "wall_s": times,
                      "median_wall_s": float(np.median(times)),
                      "allow_tf32": torch.backends.cuda.matmul.allow_tf32}))


if __name__ == "__main__":
    main()
