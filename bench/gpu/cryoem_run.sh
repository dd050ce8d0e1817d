#!/usr/bin/env bash
# Issue 26 item 6 on the GPU machine: 500,000 images of 128 x 128
# (d = 16384, a 32.8 GB float32 .npy, memory-mapped), k = 20, fast-exact, one
# GPU. Makes structured data with PyTorch on the GPU (smooth basis images x
# class coefficients + noise) in WORK_DIR (default: a new folder under
# $TMPDIR), then times `manifold knn` (wall,
# peak RSS by /usr/bin/time -v, GPU memory sampled by nvidia-smi).
# N (default 500000) and SIDE (default 128) make a smaller stack.
#   bash bench/gpu/cryoem_run.sh BUNDLE_DIR OUT_DIR
set -uo pipefail
b=$(cd "${1:?usage: cryoem_run.sh BUNDLE_DIR OUT_DIR}" && pwd)
o=${2:?usage: cryoem_run.sh BUNDLE_DIR OUT_DIR}; mkdir -p "$o"
w=${WORK_DIR:-$(mktemp -d)}; mkdir -p "$w"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$o/machine.txt"; df -h "$w" >> "$o/machine.txt"; free -g >> "$o/machine.txt"
t0=$SECONDS
PYTHONUNBUFFERED=1 timeout 200 python3 - "$w/x.npy" "${N:-500000}" "${SIDE:-128}" <<'PY' > "$o/gen.log" 2>&1
import sys, time, numpy as np, torch
N, side, B, chunk = int(sys.argv[2]), int(sys.argv[3]), 256, 10_000
d = side * side
g = torch.Generator(device="cuda").manual_seed(7)
# Smooth basis images: random low-frequency cosines times a Gaussian envelope (particle-like).
y, x = torch.meshgrid(torch.linspace(-1, 1, side, device="cuda"), torch.linspace(-1, 1, side, device="cuda"), indexing="ij")
fx = torch.randint(0, 6, (B, 1, 1), device="cuda", generator=g).float()
fy = torch.randint(0, 6, (B, 1, 1), device="cuda", generator=g).float()
ph = torch.rand((B, 1, 1), device="cuda", generator=g) * 6.283
cx = torch.rand((B, 1, 1), device="cuda", generator=g) - 0.5
cy = torch.rand((B, 1, 1), device="cuda", generator=g) - 0.5
basis = torch.cos(3.1416 * (fx * x + fy * y) + ph) * torch.exp(-((x - cx) ** 2 + (y - cy) ** 2) / 0.3)
basis = basis.reshape(B, d)
# Coefficients: 50 classes (centres) plus spread, so neighbours are structured.
centres = torch.randn((50, B), device="cuda", generator=g)
out = np.lib.format.open_memmap(sys.argv[1], mode="w+", dtype=np.float32, shape=(N, d))
t = time.time()
for s in range(0, N, chunk):
    n = min(chunk, N - s)
    cls = torch.randint(0, 50, (n,), device="cuda", generator=g)
    coef = centres[cls] + 0.3 * torch.randn((n, B), device="cuda", generator=g)
    imgs = coef @ basis + 0.05 * torch.randn((n, d), device="cuda", generator=g)
    out[s:s + n] = imgs.cpu().numpy()
out.flush(); del out
print("wrote", N, "x", d, "in", round(time.time() - t, 1), "s")
PY
echo "gen rc $? in $((SECONDS-t0))s: $(tail -1 $o/gen.log)"; ls -la $w
( while sleep 1; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits; done ) > "$o/gpu_mem.txt" 2>/dev/null &
smi=$!
t0=$SECONDS
tv=""; [ -x /usr/bin/time ] && tv="/usr/bin/time -v"
timeout 280 $tv "$b/run" manifold knn "$w/x.npy" -k 20 --backend gpu --devices 0 --precision fast-exact --overwrite -o "$w/g" > "$o/knn.log" 2>&1
echo "knn rc $? in $((SECONDS-t0))s"
kill $smi
echo "peak GPU memory used (MiB): $(sort -n $o/gpu_mem.txt | tail -1)"
grep -E "Maximum resident|Elapsed|graph|total|certif" "$o/knn.log" | head -20
cp "$w/g/graph.json" "$o/" 2>/dev/null
