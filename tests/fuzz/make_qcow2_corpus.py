#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""make_qcow2_corpus.py DIR: writes the seed inputs of fuzz_qcow2 into DIR (made if needed).

Deterministic. Each seed is the harness's input format (fuzz_qcow2.c): a knob byte, the
file size (8 bytes, little-endian), then the first bytes of a qcow2 image written by
tests/qcow2/qcow2img.py: valid images of both versions, every cluster size class, every
refcount width, extended L2, zstd, lazy refcounts, backing file name and format, a feature
name table; and the hostile images of tests/qcow2/hostile.py (one broken field each).
The seeds are made at build time rather than kept in the tree.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "qcow2"))
import qcow2img as q  # noqa: E402

C = 65536
FAR = 1 << 40


def feature_table():
    entries = [(0, 0, b"dirty bit"), (0, 1, b"corrupt bit"), (0, 4, b"extended L2 entries"),
               (0, 40, b"a future feature"), (1, 0, b"lazy refcounts")]
    data = b"".join(struct.pack(">BB46s", t, b, n) for t, b, n in entries)
    return q.ext(q.EXT_FEATURE_TABLE, data)


def seeds():
    out = {
        "v3": {}, "v2": {"version": 2}, "v3-512": {"cluster_bits": 9},
        "v3-2m": {"cluster_bits": 21}, "v3-extl2": {"extended_l2": True},
        "v3-zstd": {"incompatible": 1 << 3, "compression_type": 1},
        "v3-lazy": {"compatible": 1}, "v3-autoclear": {"autoclear": 3},
        "v3-backing": {"backing": "base.qcow2", "backing_fmt": "qcow2"},
        "v2-backing": {"version": 2, "backing": "../base.raw", "backing_fmt": "raw"},
        "v3-backing-noformat": {"backing": "base.img"},
        "v3-features": {"extra_exts": feature_table()},
        "v3-snapshots": {"nb_snapshots": 1, "snapshots_offset": 6 * C},
        "v3-header-104": {"header_length": 104},
        "v3-size0": {"size": 0, "l1_size": 0},
        "l1-2g": {"l1_size": 1 << 31}, "l1-far": {"l1_offset": FAR}, "l1-at-0": {"l1_offset": 0},
        "l1-small": {"size": 8 * C * (C // 8), "l1_size": 1},
        "reftable-far": {"reftable_offset": FAR}, "reftable-at-0": {"reftable_offset": 0},
        "reftable-huge": {"reftable_clusters": 1 << 31},
        "cluster-bits-8": {"cluster_bits": 8}, "cluster-bits-22": {"cluster_bits": 22},
        "refcount-order-7": {"refcount_order": 7}, "header-length-huge": {"header_length": C + 8},
        "backing-past-cluster": {"backing": "base.qcow2", "backing_fmt": "qcow2",
                                 "backing_offset": C - 16, "backing_size": 200},
        "backing-huge": {"backing": "b", "backing_size": 65535},
        "snapshots-far": {"nb_snapshots": 1, "snapshots_offset": FAR},
        "incompat-40": {"incompatible": 1 << 40, "extra_exts": feature_table()},
        "encrypted": {"crypt_method": 1}, "luks": {"crypt_method": 2},
        "data-file": {"incompatible": 1 << 2, "extra_exts": q.ext(q.EXT_DATA_FILE, b"d.raw")},
        "compression-7": {"incompatible": 1 << 3, "compression_type": 7},
        "dirty": {"incompatible": 1, "compatible": 1}, "corrupt": {"incompatible": 2},
        "version-4": {"version": 4},
    }
    for r in range(7):
        out[f"refcount-order-{r}"] = {"refcount_order": r}
    return out


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    for name, fields in seeds().items():
        img = q.build(**fields)
        head = img[:1024]
        for knobs in (2, 6):  # a 256-byte reason; the file size as is, or clamped
            data = bytes([knobs]) + struct.pack("<Q", len(img)) + head
            with open(os.path.join(d, f"{name}-{knobs}"), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
