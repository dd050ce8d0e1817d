#!/usr/bin/env python3
"""Host <-> device copy rates of every GPU of the machine, alone and all at once.

    python3 bench/gpu/copy_rates.py OUT.json [GIB]

Copies GIB (default 1) GiB each way, from pinned and from pageable host
memory, median of 5, and prints one line per rate; OUT.json holds the same
rates in GB/s (10^9 bytes per second). Needs PyTorch with CUDA (the GPU
machine has it). bench/gpu/RESULTS.md quotes it beside the streaming and
two-GPU cases, whose speed these rates bound.
"""
import json
import sys
import time

import torch


def median_seconds(fn, devices, reps=5):
    times = []
    for _ in range(reps):
        for g in devices:
            torch.cuda.synchronize(g)
        start = time.perf_counter()
        fn()
        for g in devices:
            torch.cuda.synchronize(g)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: copy_rates.py OUT.json [GIB]")
    nbytes = int(float(sys.argv[2]) * (1 << 30)) if len(sys.argv) > 2 else 1 << 30
    gpus = list(range(torch.cuda.device_count()))
    if not gpus:
        sys.exit("copy_rates.py: no CUDA device")
    pinned = [torch.full((nbytes,), 1, dtype=torch.uint8).pin_memory() for _ in gpus]
    pageable = [torch.full((nbytes,), 1, dtype=torch.uint8) for _ in gpus]
    device = [torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{g}") for g in gpus]
    rates = {"bytes": nbytes, "gpus": [torch.cuda.get_device_name(g) for g in gpus]}

    def copy(g, host, to_device):
        if to_device:
            device[g].copy_(host[g], non_blocking=True)
        else:
            host[g].copy_(device[g], non_blocking=True)

    for g in gpus:
        for kind, host in (("pinned", pinned), ("pageable", pageable)):
            for to_device, name in ((True, "H2D"), (False, "D2H")):
                s = median_seconds(lambda: copy(g, host, to_device), [g])
                rates[f"gpu{g} {name} {kind}"] = nbytes / s / 1e9
    if len(gpus) > 1:
        for to_device, name in ((True, "H2D"), (False, "D2H")):
            s = median_seconds(lambda: [copy(g, pinned, to_device) for g in gpus], gpus)
            rates[f"all {len(gpus)} GPUs at once {name} pinned, aggregate"] = len(gpus) * nbytes / s / 1e9
    a, b = pageable[0], torch.empty(nbytes, dtype=torch.uint8)
    s = median_seconds(lambda: b.copy_(a), [])
    rates["host to host copy (one torch copy)"] = nbytes / s / 1e9
    for key, value in rates.items():
        if isinstance(value, float):
            print(f"{key}: {value:.1f} GB/s")
    with open(sys.argv[1], "w") as f:
        json.dump(rates, f, indent=1)


if __name__ == "__main__":
    main()
