#!/usr/bin/env python3
"""Times `manifold knn --backend mpi` under mpirun -np 1, 2 and 4 against the
single-process CPU backend on the first N Fashion-MNIST training images, and
reports the bytes each rank sends against the input size. Every MPI result is
checked to be byte-identical to the CPU backend's before it is reported.

usage: bench_mpi.py --manifold PATH [--n 20000] [--k 10] [--ranks 1,2,4]
                    [--repeats 3] [--json results.json] [--work DIR]
Needs only the Python standard library (no numpy).
"""
import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

# FASHION_MNIST_DIR: the folder of the images (Debian's dataset-fashion-mnist by default).
FASHION = os.path.join(os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"),
                       "train-images-idx3-ubyte.gz")


def write_fashion_npy(path, n, source):
    """First n images of an IDX file as an n x 784 float32 .npy (memory-mappable)."""
    with gzip.open(source, "rb") as f:
        magic, count, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 2051:
            sys.exit(f"{source}: not an IDX image file")
        if n > count:
            sys.exit(f"{source}: has {count} images, fewer than {n}")
        pixels = f.read(n * rows * cols)
    d = rows * cols
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (n, d)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as out:
        out.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        out.write(struct.pack("<%df" % len(pixels), *pixels))
    return n, d


def run(cmd, env):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + r.stderr)
    return wall


def same_files(a, b):
    for name in ("indices.npy", "distances.npy"):
        with open(os.path.join(a, name), "rb") as x, open(os.path.join(b, name), "rb") as y:
            if x.read() != y.read():
                return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifold", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.json"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--data", default=FASHION)
    a = ap.parse_args()

    work = a.work or tempfile.mkdtemp(prefix="manifold-bench-mpi-")
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "fashion-train-%d.npy" % a.n)
    n, d = write_fashion_npy(data, a.n, a.data)
    env = dict(os.environ)
    # Unbound ranks: a lone rank may use every core, as the CPU backend does
    # (mpirun's default binds each of up to two ranks to a single core).
    mpirun = [a.mpirun, "-q", "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        mpirun.append("--allow-run-as-root")
    knn = ["knn", data, "-k", str(a.k), "-q"]

    def loadavg():
        try:
            with open("/proc/loadavg") as f:
                return [float(x) for x in f.read().split()[:3]]
        except OSError:
            return None

    load_before = loadavg()
    runs = []
    cpu_out = os.path.join(work, "cpu")

    # Configurations run round-robin, so that load from elsewhere on the
    # machine falls on all of them alike; min is the least disturbed run.
    configs = [("cpu", [a.manifold] + knn + ["--backend", "cpu"], cpu_out, 1)]
    for p in [int(x) for x in a.ranks.split(",")]:
        configs.append(("mpi-np%d" % p, mpirun + ["-np", str(p), a.manifold] + knn + ["--backend", "mpi"],
                        os.path.join(work, "mpi%d" % p), p))
    walls = {c[0]: [] for c in configs}
    totals = {c[0]: [] for c in configs}
    graphs = {}
    for _ in range(a.repeats):
        for label, cmd, out, ranks in configs:
            shutil.rmtree(out, ignore_errors=True)
            walls[label].append(run(cmd + ["-o", out], env))
            with open(os.path.join(out, "graph.json")) as f:
                graphs[label] = json.load(f)
            totals[label].append(graphs[label]["timings_s"]["total"])
            if label != "cpu" and not same_files(out, cpu_out):
                sys.exit(f"{label}: result differs from the CPU backend")

    for label, cmd, out, ranks in configs:
        g = graphs[label]
        entry = {"label": label, "ranks": ranks, "command": " ".join(cmd + ["-o", "OUT"]),
                 "wall_s_median": statistics.median(walls[label]), "wall_s_min": min(walls[label]),
                 "wall_s": walls[label],
                 "backend_total_s_median": statistics.median(totals[label]),
                 "backend_total_s_min": min(totals[label]), "backend_total_s": totals[label],
                 "timings_s_last_run": g["timings_s"]}
        if label != "cpu":
            entry["identical_to_cpu"] = True
            x = g["extra"]
            entry["input_bytes"] = x["input_bytes"]
            entry["bytes_sent_total"] = x["bytes_sent_total"]
            entry["per_rank"] = [{
                "rank": r["rank"], "threads": r["threads"], "tiles": r["tiles"],
                "rows_read": r["rows_read"], "input_bytes_read": r["input_bytes_read"],
                "input_fraction_read": r["input_bytes_read"] / x["input_bytes"],
                "bytes_sent": r["bytes_sent"], "bytes_sent_merge": r["bytes_sent_merge"],
                "bytes_sent_gather": r["bytes_sent_gather"], "bytes_sent_control": r["bytes_sent_control"],
                "bytes_sent_over_input": r["bytes_sent"] / x["input_bytes"],
                "timings_s": r["timings_s"]} for r in x["per_rank"]]
        runs.append(entry)
        print(f"{label:10s} wall median {entry['wall_s_median']:.3f} s (min {entry['wall_s_min']:.3f})  "
              f"backend median {entry['backend_total_s_median']:.3f} s (min {entry['backend_total_s_min']:.3f})",
              file=sys.stderr)

    cpu_model = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu_model = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mpi_version = subprocess.run([a.mpirun, "--version"], stdout=subprocess.PIPE, text=True).stdout.splitlines()[0]
    result = {
        "benchmark": "manifold knn --backend mpi vs --backend cpu",
        "data": {"source": os.path.basename(a.data), "n": n, "d": d, "dtype": "float32 .npy (memory-mapped)"},
        "k": a.k, "metric": "euclidean", "repeats": a.repeats,
        "machine": {"cores": os.cpu_count(), "cpu": cpu_model, "platform": platform.platform(), "mpi": mpi_version},
        "load_average_before": load_before, "load_average_after": loadavg(),
        "note": "ranks beyond the core count are oversubscribed; each rank uses cores/ranks-per-node threads; "
                "wall_s includes mpirun start-up and loading; backend_total_s is graph.json's total on rank 0",
        "runs": runs,
    }
    with open(a.json, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print("wrote " + a.json, file=sys.stderr)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
