#!/usr/bin/env python3
"""Reads the tile timeline of a `manifold bench` JSON made with
MANIFOLD_GPU_TIMELINE=1 (bench/gpu/timeline_run.sh) and prints where the
loop's time went: the seed phase (uploads, seed kernels, seed merges), the
strips, how long 0, 1 or 2 tile kernels and 0 or 1 merges ran at once,
where the kernels stopped (gaps with none running, the longest kernel),
and on the host the build's milestones and each copy home of the final
step beside the loop.
    python3 bench/gpu/timeline.py FILE.json [FILE.json.xz ...]"""
import json
import lzma
import sys


def load(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def overlap_states(tiles):
    """ms spent with (kernels running, merges running), over the tiles given."""
    ev = []
    for t in tiles:
        ev += [(t["gemm_start"], 1, 0), (t["gemm_end"], -1, 0), (t["sel_start"], 0, 1), (t["sel_end"], 0, -1)]
    ev.sort()
    k = m = 0
    last = ev[0][0]
    acc = {}
    for tm, dk, dm in ev:
        acc[(k, m)] = acc.get((k, m), 0.0) + tm - last
        last = tm
        k += dk
        m += dm
    return acc


def print_stalls(strips):
    """Where the strips' kernels stopped: the gaps with no tile kernel running
    (a host call that holds the device, such as a pinned allocation, shows as
    one long gap and one long kernel), the longest kernel against the median,
    and how many kernels started the moment tile t - 4's merge ended (the
    candidate set they wait for)."""
    runs = sorted((t["gemm_start"], t["gemm_end"], t["t"]) for t in strips)
    gaps, end = [], runs[0][1]
    for start, stop, t in runs[1:]:
        if start > end:
            gaps.append((start - end, t, end))
        end = max(end, stop)
    gaps.sort(reverse=True)
    line = f"  no tile kernel running: {sum(g for g, _, _ in gaps):.2f} ms in {len(gaps)} gaps"
    if gaps:
        line += f", the longest {gaps[0][0]:.2f} ms before tile {gaps[0][1]} (from {gaps[0][2]:.2f} ms)"
    print(line)
    times = sorted((t["gemm_end"] - t["gemm_start"], t["t"]) for t in strips)
    print(f"  strip kernels: median {times[len(times) // 2][0]:.3f} ms, longest {times[-1][0]:.3f} ms (tile {times[-1][1]})")
    by_t = {t["t"]: t for t in strips}
    gated = sum(1 for t in strips if t["t"] - 4 in by_t and abs(t["gemm_start"] - by_t[t["t"] - 4]["sel_end"]) < 0.02)
    print(f"  kernels started as tile t - 4's merge ended: {gated} of {len(strips)}")


def print_host_side(extra):
    """The build's host milestones and the final step's ranges beside the
    loop, on the tiles' clock (ms since the loop's start; the build's own
    start is negative): when each range was reported final, taken by the
    worker, and home, and its certify and copy time on the GPU."""
    ev = extra.get("timeline_host_events")
    if not ev:
        return
    origin = ev.get("tiles_origin", 0.0)
    print("  host (ms on the tiles' clock): " +
          ", ".join(f"{k} {v - origin:.2f}" for k, v in sorted(ev.items(), key=lambda x: x[1]) if k != "tiles_origin"))
    fr = extra.get("timeline_final_ranges")
    if not fr:
        return
    for row in fr["ranges"]:
        r = dict(zip(fr["fields"], row))
        print(f"    rows {r['r0']:>8}-{r['r1']:<8} reported {r['reported'] - origin:8.2f} taken {r['woke'] - origin:8.2f} "
              f"home {r['done'] - origin:8.2f}  certify {r['certify_ms']:6.2f} copy {r['copy_ms']:6.2f}")
    ready = [dict(zip(fr["fields"], row))["host_ready"] for row in fr["ranges"]]
    if ready and ready[0] > 0:
        print(f"    result's host pages ready at {ready[0] - origin:.2f}")


def main(paths):
    for path in paths:
        case = load(path)["cases"][0]
        for dev in case["extra"]["per_device"]:
            tl = dev.get("timeline")
            if not tl:
                print(f"{path}: no timeline (run with MANIFOLD_GPU_TIMELINE=1)")
                continue
            tiles = [dict(zip(tl["tile_fields"], row)) for row in tl["tiles"]]
            ups = [dict(zip(tl["upload_fields"], row)) for row in tl["uploads"]]
            seeds = [t for t in tiles if t["dense"]]
            strips = [t for t in tiles if not t["dense"]]
            print(f"{path}: N={case['n']} d={case['d']} k={case['k']}, median {case['median_wall_s']:.4f} s "
                  f"({case.get('over_floor', 0):.3f} of the floor), device {dev['device']}")
            st = case["median_stage_s"]
            print("  stages (ms): " + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in st.items() if v > 1e-4))
            print(f"  uploads: {len(ups)}, host copies {sum(u['copied'] - u['issued'] for u in ups):.2f} ms, "
                  f"last on the device at {max(u['done'] for u in ups):.2f} ms")
            print(f"  seeds: {len(seeds)} launches, kernels {sum(t['gemm_end'] - t['gemm_start'] for t in seeds):.2f} ms, "
                  f"merges {sum(t['sel_end'] - t['sel_start'] for t in seeds):.2f} ms, "
                  f"done at {max(t['sel_end'] for t in seeds):.2f} ms")
            if strips:
                t0 = min(t["gemm_start"] for t in strips)
                t1 = max(t["sel_end"] for t in strips)
                print(f"  strips: {len(strips)} tiles from {t0:.2f} to {t1:.2f} ms ({t1 - t0:.2f} ms), kernels "
                      f"{sum(t['gemm_end'] - t['gemm_start'] for t in strips):.2f} ms, merges "
                      f"{sum(t['sel_end'] - t['sel_start'] for t in strips):.2f} ms of stream time")
                acc = overlap_states(strips)
                print("  (kernels, merges) running at once, ms: " +
                      ", ".join(f"{k}: {v:.2f}" for k, v in sorted(acc.items()) if v > 0.005))
                print_stalls(strips)
            print_host_side(case["extra"])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
