"""The table of bench/e2e/run.sh: per step, the median over the runs of
each binary, seconds from its `steps:` line; then what lies outside the
graph and the embedding and its ratio to them (the issue's target: at most
0.3), the process wall time, and the checks run.sh made.
    python3 table.py OUT_DIR REPS"""
import re
import statistics
import sys

out, reps = sys.argv[1], int(sys.argv[2])
binaries = ["manifold-before", "manifold"]


def steps_of(path):
    text = open(path).read()
    line = next(l for l in text.splitlines() if l.startswith("steps: "))
    steps = {}
    for item in line[len("steps: "):].split(", "):
        name, seconds = re.fullmatch(r"(.+) ([0-9.]+) s", item).groups()
        steps[name] = float(seconds)
    wall = re.search(r"^wall ([0-9.]+) s", text, re.M)
    steps["process wall"] = float(wall.group(1)) if wall else float("nan")
    return steps


runs = {b: [] for b in binaries}
for b in binaries:
    for i in range(1, reps + 1):
        try:
            runs[b].append(steps_of(f"{out}/{b}_{i}.txt"))
        except (OSError, StopIteration):
            print(f"{b} run {i}: no steps line")
for b in binaries:
    for s in runs[b]:
        s["outside graph + embedding"] = s["total"] - s["graph"] - s["embedding"]
        s["ratio to graph + embedding"] = s["outside graph + embedding"] / (s["graph"] + s["embedding"])
        s["process wall - total"] = s["process wall"] - s["total"]

names = []
for b in binaries:
    for s in runs[b]:
        for name in s:
            if name not in names:
                names.append(name)
tail = ["total", "outside graph + embedding", "ratio to graph + embedding", "process wall", "process wall - total"]
names = [n for n in names if n not in tail] + tail


def median(b, name):
    values = [s[name] for s in runs[b] if name in s]
    return f"{statistics.median(values):.3f}" if values else ""


print(f"medians of {reps} runs each, seconds (the `steps:` line; process wall from /usr/bin/time)\n")
print("| step | before | after |")
print("|---|---|---|")
for name in names:
    print(f"| {name} | {median('manifold-before', name)} | {median('manifold', name)} |")
print()
try:
    start = {}
    for line in open(f"{out}/start.txt"):
        b, seconds = line.split()
        start.setdefault(b, []).append(float(seconds))
    print("process start and exit alone (`manifold --help`), median of 3: " +
          ", ".join(f"{b} {statistics.median(v):.3f} s" for b, v in start.items()))
except (OSError, ValueError):
    pass
for f in ["fsync.txt", "compare.txt"]:
    try:
        print(open(f"{out}/{f}").read().strip())
    except OSError:
        pass
