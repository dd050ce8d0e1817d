#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus (tests/fuzz/corpus/NAME/): a few tiny
valid files per reader, made here with the standard library only. The HDF5
seed is written by `manifold simulate` (see scripts/fuzz.sh); run from the
repository root: python3 tests/fuzz/make_corpus.py"""
import gzip, io, json, os, struct, zipfile, zlib

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(name, file, data):
    os.makedirs(os.path.join(root, name), exist_ok=True)
    with open(os.path.join(root, name, file), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def npy(descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload


put("npy", "f4_2x3.npy", npy("<f4", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, 6)))
put("npy", "u1_3x2x2.npy", npy("|u1", (3, 2, 2), bytes(range(12))))
put("npy", "f8_2x2.npy", npy("<f8", (2, 2), struct.pack("<4d", 1.5, -2, 3, 0.25)))
put("npy", "i2_3x1.npy", npy("<i2", (3, 1), struct.pack("<3h", -7, 0, 9)))
put("npy", "be_fortran_2x3.npy",
    npy(">f4", (2, 3), struct.pack(">6f", 1, 4, 2, 5, 3, 6)).replace(b"'fortran_order': False", b"'fortran_order': True "))


def npz(arrays, method):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as z:
        for name, data in arrays:
            z.writestr(name + ".npy", data)
    return out.getvalue()


images = npy("<f4", (3, 2), struct.pack("<6f", 1, 2, 3, 4, 5, 6))
labels = npy("<i8", (3,), struct.pack("<3q", 0, 1, 0))
put("npz", "stored.npz", npz([("images", images), ("labels", labels)], zipfile.ZIP_STORED))
put("npz", "deflated.npz", npz([("images", images), ("labels", labels)], zipfile.ZIP_DEFLATED))

idx = bytes([0, 0, 8, 3]) + struct.pack(">3I", 3, 2, 2) + bytes(range(12))
put("idx", "u8_3x2x2", idx)
put("idx", "u8_3x2x2.gz", gzip.compress(idx, mtime=0))
put("idx", "f32_2x3", bytes([0, 0, 0x0D, 2]) + struct.pack(">2I", 2, 3) + struct.pack(">6f", 1, 2, 3, 4, 5, 6))


def png(w, h, color, depth, rows):
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    raw = b"".join(b"\0" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


put("png", "gray8_3x2.png", png(3, 2, 0, 8, [bytes([1, 2, 3]), bytes([4, 5, 6])]))
put("png", "rgb8_2x2.png", png(2, 2, 2, 8, [bytes([255, 0, 0, 0, 255, 0]), bytes([0, 0, 255, 9, 9, 9])]))
put("png", "gray16_2x1.png", png(2, 1, 0, 16, [struct.pack(">2H", 1000, 65535)]))


def tiff(w, h, bits, data, pages=1):
    """Little-endian, one strip per page, pages chained."""
    out = bytearray(b"II*\0")
    entries = 10
    ifd_size = 2 + entries * 12 + 4
    out += struct.pack("<I", 8)
    for p in range(pages):
        ifd = len(out)
        strip = ifd + ifd_size
        nxt = strip + len(data) if p + 1 < pages else 0
        out += struct.pack("<H", entries)
        for tag, typ, val in [(256, 4, w), (257, 4, h), (258, 3, bits), (259, 3, 1), (262, 3, 1),
                              (273, 4, strip), (277, 3, 1), (278, 4, h), (279, 4, len(data)), (339, 3, 1)]:
            out += struct.pack("<HHI", tag, typ, 1) + (struct.pack("<HH", val, 0) if typ == 3 else struct.pack("<I", val))
        out += struct.pack("<I", nxt)
        out += data
    return bytes(out)


put("tiff", "u16_4x2.tif", tiff(4, 2, 16, struct.pack("<8H", *range(8))))
put("tiff", "u8_3x3_2pages.tif", tiff(3, 3, 8, bytes(range(9)), pages=2))


def mrc(nx, ny, nz, mode, payload):
    h = bytearray(1024)
    struct.pack_into("<4i", h, 0, nx, ny, nz, mode)
    struct.pack_into("<3i", h, 28, nx, ny, nz)
    h[208:212] = b"MAP "
    h[212:214] = b"\x44\x44"
    return bytes(h) + payload


put("mrc", "f32_2x2x2.mrc", mrc(2, 2, 2, 2, struct.pack("<8f", *range(8))))
put("mrc", "i16_3x1x2.mrc", mrc(3, 1, 2, 1, struct.pack("<6h", -3, -2, -1, 1, 2, 3)))
put("mrc", "f16_2x1x1.mrc", mrc(2, 1, 1, 12, struct.pack("<2e", 0.5, -2.0)))

indices = npy("<i8", (3, 1), struct.pack("<3q", 1, 0, 1))
distances = npy("<f4", (3, 1), struct.pack("<3f", 1, 1, 2))
meta = json.dumps({"format": "manifold-knn-graph", "version": 1, "n": 3, "d": 2, "k": 1, "metric": "euclidean",
                   "keep_self": False, "backend": "cpu", "strategy": "", "fingerprint": "", "timings_s": {}, "extra": {}})
put("graph", "3x1", struct.pack("<HH", len(indices), len(distances)) + indices + distances + meta.encode())

put("session", "full.json", json.dumps({
    "format": "manifold-session", "version": 1, "data": "patterns.npy", "dataset": "", "transform": "anscombe",
    "knn": {"k": 10, "metric": "cosine", "backend": "cpu", "select": "auto", "keep_self": False, "devices": [0],
            "gpu_memory": 0, "threads": 2, "precision": "exact"},
    "diffusion": {"k": 0, "epsilon": "median", "alpha": 1.0, "components": 4, "t": 1.0, "symmetrize": "or",
                  "local_scaling": 0, "tolerance": 1e-10, "ncv": 0, "lock_check": True, "threads": 0},
    "output": "run1", "view": {"axes": [1, 2, 3], "colour": {"by": "label"}}}))
put("session", "minimal.json", '{"format": "manifold-session", "version": 1, "data": "x.npy"}')

put("profile", "mpirun.json", json.dumps({"kind": "mpirun", "ranks": 4, "hostfile": "hosts",
                                          "mpirun_args": ["--oversubscribe"], "env": {"OMP_NUM_THREADS": "1"}}))
put("profile", "slurm.json", json.dumps({"kind": "slurm", "name": "nightly", "partition": "gpu", "nodes": 3,
                                         "ranks_per_node": 2, "gpus_per_node": 2, "time_limit": "1-02:00:00",
                                         "work_dir": "/shared/jobs dir", "sbatch_args": ["--account=x"]}))
