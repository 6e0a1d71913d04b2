#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""make_asif_corpus.py DIR: writes the seed inputs of fuzz_asif into DIR (made if needed).

Deterministic. Each seed is the harness's input format (fuzz_asif.c): a knob byte, the file
size (8 bytes, little-endian), a guest offset to walk (8 bytes, little-endian), the first
0x80 bytes of the header, then records (file offset: 4 bytes, length: 2 bytes, little-endian;
the bytes) holding the image's other non-zero bytes: directories, tables, bitmap chunks,
the metadata, and the first bytes of each data chunk (the harness checks where data is read,
not what it holds). The images are written by tests/asif/asifimg.py: blank images as Apple's
tool makes them, full, partial (stale bytes under 00 blocks) and unmapped chunks, data past
the first table, 4096-byte blocks, small chunks, two directory generations, and the
hostile images of docs/asif.md (one broken field each). One more seed is the real
100 GB sample rebuilt from ../shared/samples/asif/BlankDisk-100GB.nonzero-lines.txt when
that file is there. The seeds are made at build time rather than kept in the tree.
"""
import os
import re
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "asif"))
import asifimg as a  # noqa: E402

SAMPLE = os.path.join(HERE, "..", "..", "..", "shared", "samples", "asif",
                      "BlankDisk-100GB.nonzero-lines.txt")
HEADER_IN = 0x80
RUN_MAX = 512  # bytes of a non-zero run kept (data chunks are long runs the harness never checks)
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
GAP = re.compile(rb"\0{32,}")


def runs(blob, base, cap):
    """(file offset, bytes) of the non-zero runs of blob (at file offset base): runs apart
    by fewer than 32 zero bytes are one run, each run cut at cap bytes."""
    out = []
    pos = 0
    for gap in list(GAP.finditer(blob)) + [None]:
        end = gap.start() if gap else len(blob)
        piece = blob[pos:end]
        lead = len(piece) - len(piece.lstrip(b"\0"))
        piece = piece.strip(b"\0")
        if piece:
            out.append((base + pos + lead, piece[:cap]))
        pos = gap.end() if gap else len(blob)
    return out


def encode(knobs, file_size, pick, regions):
    """The harness input: regions are (file offset, bytes, cap); offset 0 holds the header."""
    head = bytearray(HEADER_IN)
    records = []
    for off, b, cap in sorted(regions):
        if off < HEADER_IN:
            n = min(len(b), HEADER_IN - off)
            head[off:off + n] = b[:n]
            off, b = off + n, b[n:]
        for roff, rb in runs(b, off, cap):
            records.append(struct.pack("<IH", roff, len(rb)) + rb)
    return (bytes([knobs]) + struct.pack("<QQ", file_size, pick) + bytes(head) +
            b"".join(records))


def from_image(img, mutations=()):
    """(file size, regions) of an asifimg.Image, after mutations [(field, value)] applied
    through asifimg.mutate on a temporary file. A region is what the image wrote at one
    offset, read back from the (mutated) file; data chunks keep RUN_MAX bytes per run."""
    meta = {0, img.dir_offset[0], img.dir_offset[1]}
    meta |= {c * img.cs for c in img.table_bytes}
    meta |= {c * img.cs for c, _ in img.bitmaps.values()}
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "x.asif")
        img.write(p)
        for field, value in mutations:
            a.mutate(p, field, value)
        with open(p, "rb") as f:
            data = f.read()
    regions = [(off, data[off:off + len(b)], len(b) if off in meta else RUN_MAX)
               for off, b in img.writes.items()]
    return len(data), regions


def sample_regions():
    """(file size, regions) of the real 100 GB sample, or None without the text."""
    if not os.path.exists(SAMPLE):
        return None
    regions = []
    size = 4194304
    with open(SAMPLE) as f:
        for line in f:
            if line.startswith("#") or ":" not in line:
                if "(" in line and "bytes)" in line:
                    size = int(line.split("(")[1].split()[0])
                continue
            off, rest = line.split(":", 1)
            hexpart = rest.strip().split("  ")[0]
            regions.append((int(off, 16), bytes(int(x, 16) for x in hexpart.split()), 16))
    return size, regions


def images():
    """name -> (Image, guest offset to walk, mutations)."""
    small = dict(chunk_size=64 * KiB)
    pattern = {k: ("full", k + 1) for k in range(4)}
    partial = {1: ("partial", {0: 0xA1, 1: 0xA2, 15: 0xAF}, 0xEE)}
    out = {
        "blank-100g": (a.Image(10**11), 0, ()),
        "blank-10g-4k": (a.Image(10**10 // 4096 * 4096, 4096, 256 * KiB), 0, ()),
        "full": (a.Image(16 * MiB, chunks=pattern, **small), 64 * KiB + 100, ()),
        "partial": (a.Image(16 * MiB, chunks=partial, **small), 64 * KiB + 512 * 15, ()),
        "unmapped": (a.Image(16 * MiB, chunks={2: ("unmapped", 0x77)}, **small),
                     128 * KiB, ()),
        "past-table-0": (a.Image(1 * GiB, chunks={400 * 16: ("full", 9)}, **small),
                         400 * MiB + 7, ()),
        "bs4096": (a.Image(64 * MiB, 4096, 256 * KiB,
                           chunks={1: ("full", 5), 2: ("partial", {3: 1, 63: 2}, 0x99)}),
                   512 * KiB + 4096 * 3, ()),
        "two-generations": (a.Image(16 * MiB, chunks={0: ("full", 1)},
                                    old_chunks={0: ("full", 2), 1: ("full", 3)}, **small),
                            0, ()),
        "seq-tie": (a.Image(16 * MiB, chunks={0: ("full", 1)}, seq=(4, 4), **small), 0, ()),
        "seq-a-newer": (a.Image(16 * MiB, chunks={0: ("full", 1)}, seq=(9, 2), **small),
                        0, ()),
        "odd-size": (a.Image(16 * MiB + 4096 + 512, chunks={256: ("full", 1)}, **small),
                     16 * MiB + 4096, ()),
        "no-metadata": (a.Image(16 * MiB, chunks=pattern, metadata=False, **small), 0, ()),
    }
    base = lambda: a.Image(16 * MiB, chunks={0: ("full", 1), 1: ("partial", {0: 3}, 0x55)},
                           **small)
    hostile = [
        ("magic", 0), ("version", 2), ("block_size", 0), ("block_size", 1000),
        ("block_size", 8192), ("chunk_size", 0), ("chunk_size", 1000),
        ("chunk_size", 8 * KiB), ("total_segments", 1), ("header_size", 0x10),
        ("header_size", 0x100000), ("sector_count", 1 << 50), ("max_sector_count", 1 << 62),
        ("max_sector_count", 1 << 45), ("dir_a", 1 << 40), ("dir_b", 0x100),
        ("dir_b", (1 << 64) - 8), ("dir_b", 0x200), ("seq_a", 7), ("dir[0]", (1 << 55) - 1),
        ("dir[0]", 1 << 30), ("dir[0]", 0), ("dir[0]", 1 << 58),
        ("entry@0", a.entry(1, 0)), ("entry@0", a.entry(0, 5)), ("entry@0", a.entry(2, 5)),
        ("entry@0", a.entry(1, 5) | 1 << 58), ("entry@0", a.entry(1, 1 << 40)),
        ("bitmap_entry@65536", 0), ("bitmap_entry@65536", 1 << 60),
        ("bitmap_entry@65536", 1 << 50), ("bitmap_byte@65536", 0xFF),
        ("bitmap_byte@65536", 0x02), ("entry@meta", a.entry(3, 1 << 20)),
        ("truncate", 0x41000),
    ]
    for field, value in hostile:
        name = "bad-%s-%x" % (field.replace("@", "-at-").replace("[", "-").replace("]", ""),
                              value)
        out[name] = (base(), 65536, ((field, value),))
    return out


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    seeds = {}
    for name, (img, pick, mutations) in images().items():
        seeds[name] = (from_image(img, mutations=mutations), pick)
    real = sample_regions()
    if real is not None:
        seeds["apple-blank-100g"] = (real, 10**11 - 1)
    for name, ((size, regions), pick) in seeds.items():
        for knobs in (2, 7):  # a 256-byte reason, size clamped; no reason, size as is
            with open(os.path.join(d, "%s-%d" % (name, knobs)), "wb") as f:
                f.write(encode(knobs, size, pick, regions))


if __name__ == "__main__":
    main()
