# SPDX-License-Identifier: MIT
"""asifcheck.py: the client side of the ASIF tests (samples.sh, synthetic.sh, mutations.sh):
many checks per server start through python3-libnbd, against what asifimg.py (written from
shared/asif.md) says a reader must return.

  asifcheck.py layout DIR MANIFEST
      every sample gunzipped in DIR: the metadata mapping of asif.md 11 A5 read from the file
      itself (table 33288, group 7, index 2047 -> status 11, chunk 2, `meta`; bitmap chunk
      3, byte 0xFFE00 = 0x05; the plist parses and holds MANIFEST's stable uuid), and the
      generator rebuilds three of them (REBUILT) byte for byte from GUID and stable uuid
  asifcheck.py sample URI SIZE [URI SIZE...]
      each served blank sample: size, read-only, minimum block size 512, zero reads (A3),
      a read past the size is an error reply, BLOCK_STATUS one HOLE|ZERO extent (A4)
  asifcheck.py cases
      the names of the synthetic cases (CASES)
  asifcheck.py write CASE PATH [swapped]
      writes the synthetic image CASE (swapped: the other directory generation active)
  asifcheck.py write-all DIR
      writes every case to DIR/CASE.asif (and DIR/CASE-swapped.asif for two generations)
  asifcheck.py verify NAME URI [NAME URI...]
      NAME is a case, or CASE-swapped; each served image reads byte for byte as the generator says (whole chunks, odd offsets
      and lengths, boundaries) and BLOCK_STATUS says HOLE|ZERO exactly where it says
      unwritten
  asifcheck.py mutants SRC DIR < LINES
      for each line "NAME EXPECT FIELD VALUE [FIELD VALUE...]": DIR/NAME.asif, a copy of SRC
      with asifimg.mutate(FIELD, VALUE) applied
  asifcheck.py write-bad DIR
      writes the hostile synthetic images BAD_CASES (a fault in guest chunk 1) to
      DIR/NAME.asif and prints "NAME REGEX" lines (the regex of the log line, _ for space)
  asifcheck.py verify-bad URI...
      each served BAD_CASES image: reads and BLOCK_STATUS of chunk 1 are error replies, the
      rest reads as the generator says
  asifcheck.py snapshot URI CASE
      the served synthetic image CASE under --snapshot: writes patterns (the last one ending
      at the size), reads them back on a new connection, and untouched bytes as the image's
  asifcheck.py readonly URI CASE
      the served synthetic image CASE says read-only; WRITE, WRITE_ZEROES and TRIM are
      refused with EPERM and change nothing
  asifcheck.py probedraw URI
      a WRITE of "shdw" to sector 0 (whole, and in pieces) is refused with EPERM, a WRITE of
      other bytes there succeeds
Exit 0 and one line per check group, or an AssertionError naming what differs.
"""
import errno
import os
import plistlib
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import asifimg  # noqa: E402
import nbd  # noqa: E402
from libnbd_helpers import expect_err  # noqa: E402

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
HOLE_ZERO = nbd.STATE_HOLE | nbd.STATE_ZERO
CTX = "base:allocation"


def connect(uri, strict=None):
    """A libnbd handle on uri with base:allocation negotiated; strict: libnbd's strict-mode
    flags (0 = send anything, so the server, not libnbd, has to refuse bad requests)."""
    h = nbd.NBD()
    h.add_meta_context(CTX)
    if strict is not None:
        h.set_strict_mode(strict)
    h.connect_uri(uri)
    assert h.can_meta_context(CTX), "the server did not agree to %s" % CTX
    return h


def pattern(seed, length):
    """length bytes that differ from block to block and from seed to seed."""
    r = random.Random(seed)
    return r.randbytes(length)


# Synthetic images, asif.md 11 C. Each: Image keyword arguments. Guest chunk k of 1 MiB is
# k; the stale bytes on disk are never zero, so a leak shows.
def _cases():
    d512 = 63 * 2048 * MiB  # D at 512 / 1 MiB: 126 GiB
    d4k = 7 * 16384 * MiB  # D at 4096 / 1 MiB: 112 GiB
    d64k = 3 * 2048 * 64 * KiB  # D at 512 / 64 KiB: 384 MiB
    return {
        # C1: full chunks, byte = MiB number; the last chunk only partly in the guest range
        "c1-full": dict(size=6 * MiB + 3 * 512,
                        chunks={k: ("full", k + 1) for k in range(7)} |
                        {3: ("full", pattern(3, MiB))}),
        # C2: partial chunks: blocks 0, 1, 2047 written, the rest stale; a partial chunk in
        # the same group as a full one and one in another group
        "c2-partial": dict(size=4100 * MiB,
                           chunks={1: ("partial", {0: pattern(10, 512), 1: 0x11,
                                                   2047: pattern(11, 512)}, 0xEE),
                                   2: ("full", pattern(12, MiB)),
                                   4095: ("partial", {5: 0x55, 6: 0x66}, 0xDD),
                                   4096: ("partial", {2046: 0x46}, 0xCC)}),
        # C3: unmapped (status 10) over old data, beside full and partial chunks
        "c3-unmapped": dict(size=8 * MiB,
                            chunks={0: ("full", 0x10), 1: ("unmapped", 0x77),
                                    2: ("partial", {3: 0x33}, 0x88), 3: ("unmapped", 0x99)}),
        # C4: data only past 126 GiB (table 1); directory entry 0 = 0
        "c4-table1": dict(size=d512 + 3 * GiB + 512,
                          chunks={d512 // MiB: ("full", pattern(40, MiB)),
                                  d512 // MiB + 5: ("partial", {0: 0x45, 100: 0x46}, 0xAA),
                                  (d512 + 3 * GiB) // MiB: ("full", 0x47)}),
        # C5: 4096-byte blocks: N = 16384, C = 7, D = 112 GiB; 256 blocks a chunk
        "c5-4k": dict(size=d4k + 2 * GiB, block_size=4096,
                      chunks={0: ("full", pattern(50, MiB)),
                              9: ("partial", {0: 0x51, 1: pattern(51, 4096), 255: 0x53}, 0xBB),
                              d4k // MiB + 1: ("partial", {7: 0x57}, 0xBC),
                              d4k // MiB + 2: ("unmapped", 0x58)}),
        # C6: 64 KiB chunks: C = 3, D = 384 MiB; one small file spans many tables
        "c6-64k": dict(size=5 * d64k + 7 * 512, chunk_size=64 * KiB,
                       chunks={k * (d64k // (64 * KiB)) + j: ("full", pattern(60 + k, 64 * KiB))
                               for k in range(6) for j in (0, 2047, 2048)
                               if (k * (d64k // (64 * KiB)) + j) * 64 * KiB < 5 * d64k} |
                       {d64k // (64 * KiB) + 1: ("partial", {0: 0x61, 127: 0x62}, 0xCD),
                        5 * d64k // (64 * KiB): ("partial", {1: 0x63, 3: 0x64}, 0xCE)}),
        # Two directory generations with different tables: B (sequence 1) is active;
        # "swapped" makes A active (sequence 2) and its own tables must be read
        "gen2": dict(size=3 * GiB,
                     chunks={0: ("full", 0xB0), 7: ("partial", {1: 0xB1}, 0xE1)},
                     old_chunks={0: ("full", 0xA0), 8: ("full", 0xA8),
                                 7: ("partial", {2: 0xA1}, 0xE2)}),
    }


CASES = _cases()


def case_image(name, swapped=False):
    kw = dict(CASES[name])
    size = kw.pop("size")
    if swapped:
        if "old_chunks" not in kw:
            raise ValueError("case %s has one generation" % name)
        kw["chunks"], kw["old_chunks"] = kw["old_chunks"], kw["chunks"]
        kw["seq"] = (2, 1)
    return asifimg.Image(size, **kw)


def block_status_all(h, size, bs, start=0):
    """[(offset, length, flags)] over [start, start + size), adjacent runs of equal flags
    merged."""
    runs = []
    pos = start
    size += start
    while pos < size:
        want = min(size - pos, (1 << 32) - bs)
        got = []

        def cb(meta, offset, entries, err):
            if meta == CTX:
                got.extend(zip(entries[0::2], entries[1::2]))
            return 0
        h.block_status(want, pos, cb)
        assert got, "BLOCK_STATUS at %d returned no extent" % pos
        for length, flags in got:
            length = min(length, size - pos)
            assert length > 0, "BLOCK_STATUS at %d: an empty extent" % pos
            if runs and runs[-1][2] == flags and runs[-1][0] + runs[-1][1] == pos:
                runs[-1] = (runs[-1][0], runs[-1][1] + length, flags)
            else:
                runs.append((pos, length, flags))
            pos += length
            if pos >= size:
                break
    return runs


def read_eq(h, img_or_none, off, length, what, expect=None):
    got = h.pread(length, off)
    want = expect if expect is not None else img_or_none.expected(off, length)
    if got != want:
        i = next(j for j in range(length) if got[j] != want[j])
        raise AssertionError("%s: read [%d, +%d) differs at guest byte %d: got %#x, "
                             "expected %#x" % (what, off, length, off + i, got[i], want[i]))


def cmd_sample(uri, size):
    size = int(size)
    h = connect(uri, strict=0)
    assert h.get_size() == size, "export size %d, expected %d" % (h.get_size(), size)
    assert h.is_read_only(), "the export is not read-only"
    minb = h.get_block_size(nbd.SIZE_MINIMUM)
    assert minb == 512, "minimum block size %d, expected 512" % minb
    last = (size - 1) // MiB * MiB
    reads = [(0, 4096), (size - 512, 512), (last - 4096, size - last + 4096),
             (size // 2 // 512 * 512 + 512 * 3, 2 * MiB)]
    d = 126 * GiB
    if size >= d + 4096:
        reads.append((d - 4096, 8192))
    for off, n in reads:
        got = h.pread(n, off)
        assert got.count(0) == n, \
            "read [%d, +%d) is not all zero" % (off, n)
    expect_err((errno.EINVAL, errno.EIO), "a read ending past the size", h.pread, 1024,
               size - 512)
    expect_err((errno.EINVAL, errno.EIO), "a read past the size", h.pread, 512, size)
    # the connection still serves after the refusals
    assert h.pread(512, size - 512) == bytes(512), "read after the refused ones"
    # BLOCK_STATUS over the first and the last 8 GiB and across the 126 GiB table boundary
    # (a whole 10 TB disk takes 2,329 requests, seconds under ASan; samples.sh maps whole
    # disks up to 1 TB with nbdinfo --map)
    win = min(size, 8 * GiB)
    starts = {0, size - win}
    if size >= d + 4 * GiB:
        starts.add(d - 4 * GiB)
    for start in sorted(starts):
        runs = block_status_all(h, win, 512, start)
        assert runs == [(start, win, HOLE_ZERO)], \
            "BLOCK_STATUS of [%d, +%d): %s, expected one HOLE|ZERO extent" % (start, win, runs[:4])
    h.shutdown()
    print("ok: size %d, read-only, min block 512, %d zero reads, hole extents" % (size,
                                                                                  len(reads)))


# The samples the generator rebuilds byte for byte (all 25 do; three keep the run short)
REBUILT = ("BlankDisk-10GB.asif", "BlankDisk-150GB.asif", "BlankDisk-10000GB.asif")


def cmd_layout(folder, manifest):
    rows = [line.rstrip("\n").split("\t") for line in open(manifest)]
    head, rows = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(head)}
    for row in rows:
        name = row[col["file"]][:-len(".gz")]
        path = os.path.join(folder, name)
        p = asifimg.parse(path)
        assert p["sector_count"] * p["block_size"] == int(row[col["virtual_bytes"]]), name
        assert (p["seq_a"], p["seq_b"], p["active"]) == (0, 1, 1), "%s: A2" % name
        ent, bent, bbyte, shift = asifimg.locate(path, p["metadata_chunk"] * p["chunk_size"])
        assert (ent, bent, bbyte, shift) == (0x120030, 0x120038, 0x3FFE00, 0), \
            "%s: metadata mapping at %s" % (name, (hex(ent), hex(bent), bbyte, shift))
        with open(path, "rb") as f:
            blob = f.read()
        assert struct.unpack_from(">Q", blob, ent)[0] == 0xC000000000000002, name
        assert struct.unpack_from(">Q", blob, bent)[0] == 3, name
        assert blob[bbyte] == 0x05, name
        meta = blob[2 * MiB:3 * MiB]
        assert meta[:4] == b"meta", "%s: no meta magic in chunk 2" % name
        hsize = struct.unpack_from(">I", meta, 8)[0]
        text = meta[hsize:meta.index(b"\0", hsize)]
        pl = plistlib.loads(text)
        su = pl["internal metadata"]["stable uuid"]
        assert su == row[col["stable_uuid"]], "%s: stable uuid %s" % (name, su)
        if name in REBUILT:
            img = asifimg.Image(p["sector_count"] * 512, guid=row[col["header_guid"]],
                                stable_uuid=su)
            assert img.tobytes() == blob, "%s: the generator does not rebuild it" % name
    print("ok: %d samples: metadata mapping (A5), directory B active (A2); the generator "
          "rebuilds %d byte for byte" % (len(rows), len(REBUILT)))


def odd_reads(img, seed, count):
    """(offset, length) pairs: boundaries of every written chunk and block, and random odd
    offsets and lengths, all inside the guest range."""
    r = random.Random(seed)
    size, cs, bs = img.size, img.cs, img.bs
    out = [(0, min(size, 3 * cs + 1)), (size - 1, 1), (size - 3 * bs - 7, 3 * bs + 7)]
    for k in img.chunks:
        base = k * cs
        for off in (base - 1, base, base + bs - 3, base + cs - bs - 1, base + cs - 5):
            for n in (1, 7, bs + 2, 2 * bs + 1, cs + 3):
                if 0 <= off and off + n <= size:
                    out.append((off, n))
        if base + cs <= size:
            out.append((base, cs))
        for _ in range(count):
            off = base + r.randrange(-cs // 2, cs + cs // 2)
            n = r.randrange(1, 3 * bs + 1) if r.random() < 0.6 else r.randrange(1, 2 * cs)
            if 0 <= off and off + n <= size:
                out.append((off, n))
    return out


def cmd_verify(name, uri, swapped=False):
    img = case_image(name, swapped)
    h = connect(uri, strict=0)
    assert h.get_size() == img.size, "%s: size %d, expected %d" % (name, h.get_size(), img.size)
    assert h.is_read_only(), "%s: the export is not read-only" % name
    minb = h.get_block_size(nbd.SIZE_MINIMUM)
    assert minb == img.bs, "%s: minimum block size %d, expected %d" % (name, minb, img.bs)
    reads = odd_reads(img, name, 12)
    for off, n in reads:
        read_eq(h, img, off, n, name)
    runs = block_status_all(h, img.size, img.bs)
    got = [(o, n, not (f & nbd.STATE_HOLE)) for o, n, f in runs]
    # merge by the generator's two kinds (a server may report data with or without ZERO)
    merged = []
    for o, n, d in got:
        if merged and merged[-1][2] == d:
            merged[-1] = (merged[-1][0], merged[-1][1] + n, d)
        else:
            merged.append((o, n, d))
    want = img.extents()
    assert merged == want, "%s: BLOCK_STATUS %s, expected %s" % (name, merged[:8], want[:8])
    for o, n, f in runs:
        if f & nbd.STATE_HOLE:
            assert f == HOLE_ZERO, "%s: extent at %d has flags %d (HOLE without ZERO)" % (
                name, o, f)
        else:
            assert not (f & nbd.STATE_ZERO), "%s: data extent at %d says ZERO" % (name, o)
    h.shutdown()
    print("ok: %s%s: %d reads byte for byte, %d extents as the generator says" % (
        name, " (swapped)" if swapped else "", len(reads), len(want)))


def cmd_snapshot(uri, name):
    img = case_image(name)
    size = img.size
    h = connect(uri, strict=0)
    assert not h.is_read_only(), "--snapshot: the export is read-only"
    minb = h.get_block_size(nbd.SIZE_MINIMUM)
    assert minb == img.bs, "--snapshot: minimum block size %d, the image's is %d" % (minb, img.bs)
    writes = [(0, pattern(1, 4096)), (MiB - 1024, pattern(2, 3072)),
              (size - 8192, pattern(3, 8192)), (3 * MiB + 512, pattern(4, 2 * MiB))]
    for off, data in writes:
        h.pwrite(data, off)
    h.flush()
    h.shutdown()
    h = connect(uri, strict=0)
    for off, data in writes:
        assert h.pread(len(data), off) == data, "--snapshot: write at %d does not read back" % off
    read_eq(h, img, 2 * MiB, 4096, "--snapshot: bytes no write touched")
    read_eq(h, img, MiB + 2048, 4096, "--snapshot: bytes no write touched")
    h.shutdown()
    print("ok: --snapshot of %s: block size %d, %d writes read back on a new connection" % (
        name, minb, len(writes)))


def cmd_readonly(uri, name):
    img = case_image(name)
    h = connect(uri, strict=0)
    assert h.is_read_only(), "the export is not read-only"
    expect_err(errno.EPERM, "a WRITE to the read-only export", h.pwrite, b"x" * 512, 0)
    expect_err(errno.EPERM, "a WRITE_ZEROES to the read-only export", h.zero, 512, 512)
    expect_err(errno.EPERM, "a TRIM to the read-only export", h.trim, 512, 1024)
    read_eq(h, img, 0, 4096, "block 0 after the refused writes")
    h.shutdown()
    print("ok: read-only, WRITE, WRITE_ZEROES and TRIM refused with EPERM")


def cmd_probedraw(uri):
    h = connect(uri, strict=0)
    sector = b"shdw" + bytes(508)
    expect_err(errno.EPERM, "a WRITE of shdw to sector 0", h.pwrite, sector, 0)
    expect_err(errno.EPERM, "a WRITE of 'sh' to byte 0", h.pwrite, b"sh", 0)
    expect_err(errno.EPERM, "a WRITE of 'dw' to byte 2", h.pwrite, b"dw", 2)
    h.pwrite(b"shdX" + bytes(508), 0)
    assert h.pread(4, 0) == b"shdX", "the allowed WRITE to sector 0 did not land"
    h.shutdown()
    print("ok: probed raw: writes of the ASIF magic to sector 0 refused with EPERM")


def cmd_mutants(src, folder):
    """Reads lines "NAME EXPECT FIELD VALUE [FIELD VALUE...]" on stdin and writes
    folder/NAME.asif: a copy of src with each FIELD set to VALUE (asifimg.mutate; VALUE an
    int, 0x.. allowed)."""
    with open(src, "rb") as f:
        blob = f.read()
    for line in sys.stdin:
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        path = os.path.join(folder, words[0] + ".asif")
        with open(path, "wb") as f:
            f.write(blob)
        pairs = words[2:]
        assert len(pairs) % 2 == 0, "mutants: %s: FIELD VALUE pairs" % words[0]
        for field, value in zip(pairs[0::2], pairs[1::2]):
            asifimg.mutate(path, field, int(value, 0))


# Hostile synthetic images (asif.md 11 B5 inside the guest range): guest chunk 0 is a full
# chunk of 0x5A, guest chunk 1 carries the fault. Each: (Image keyword arguments, the
# bitmap byte of guest chunk 1's blocks 0-3 to write afterwards or None, an extended regex
# the server's log line about the fault must match).
def _bad_cases():
    e = asifimg.entry
    full0 = {0: ("full", 0x5A)}
    part1 = full0 | {1: ("partial", {0: 0x11, 1: 0x12}, 0xEE)}
    return {
        "b5-full-index0": (dict(chunks=full0, entries={1: e(1, 0)}), None, "01 with chunk 0"),
        "b5-partial-index0": (dict(chunks=part1, entries={1: e(3, 0)}), None,
                              "11 with chunk 0"),
        "b5-never-index5": (dict(chunks=full0, entries={1: e(0, 5)}), None, "00 with chunk 5"),
        "b5-unmapped-index5": (dict(chunks=full0, entries={1: e(2, 5)}), None,
                               "10 with chunk 5"),
        "b5-reserved-bit58": (dict(chunks=full0, entries={1: e(1, 1) | 1 << 58}), None,
                              "reserved"),
        "b5-reserved-bit55": (dict(chunks=full0, entries={1: e(1, 1) | 1 << 55}), None,
                              "reserved"),
        "b5-past-eof": (dict(chunks=full0, entries={1: e(1, 1000)}), None,
                        "chunk 1000 .*end of the file"),
        "b5-huge-index": (dict(chunks=full0, entries={1: e(1, (1 << 55) - 1)}), None,
                          "chunk %d .*end of the file" % ((1 << 55) - 1)),
        "b5-bitmap-entry0": (dict(chunks=part1, bitmap_entries={1: 0}), None,
                             "bitmap entry is 0"),
        "b5-bitmap-entry-flags": (dict(chunks=part1, bitmap_entries={1: 1 << 62 | 4}), None,
                                  "bitmap entry .*bits 55-63"),
        "b5-bitmap-past-eof": (dict(chunks=part1, bitmap_entries={1: 1000}), None,
                               "bitmap entry.*chunk 1000 .*end of the file"),
        "b5-bitmap-state11": (dict(chunks=part1), 0xFF, "state 10 or 11"),
        "b5-bitmap-state10": (dict(chunks=part1), 0xAA, "state 10 or 11"),
    }


BAD_CASES = _bad_cases()


def cmd_write_bad(folder):
    for name, (kw, byte, why) in BAD_CASES.items():
        img = asifimg.Image(8 * MiB, **kw)
        path = os.path.join(folder, name + ".asif")
        img.write(path)
        if byte is not None:
            asifimg.mutate(path, "bitmap_byte@%d" % MiB, byte)
        print(name, why.replace(" ", "_"))


def cmd_verify_bad(uri):
    """The guest chunk 1 of a BAD_CASES image: reads and BLOCK_STATUS there fail with an
    error reply; chunk 0 reads as 0x5A, chunks 2.. as zeroes, on the same connection."""
    h = connect(uri, strict=0)
    assert h.get_size() == 8 * MiB, "size %d" % h.get_size()
    for off, n in ((MiB, 512), (MiB + 1536, 512), (MiB - 512, 1024), (0, 4 * MiB)):
        expect_err((errno.EIO, errno.EINVAL), "read [%d, +%d)" % (off, n), h.pread, n, off)
        assert h.pread(512, 0) == b"\x5a" * 512, "chunk 0 after the refused read"
    expect_err((errno.EIO, errno.EINVAL), "BLOCK_STATUS of chunk 1", h.block_status, 4096, MiB,
               lambda *a: 0)
    assert h.pread(MiB, 0) == b"\x5a" * MiB, "chunk 0"
    assert h.pread(MiB, 2 * MiB) == bytes(MiB), "chunk 2"
    h.shutdown()
    print("ok: reads and BLOCK_STATUS of the bad entry fail; the rest reads right")


def named(uri, fn, *args):
    """fn(*args); a failure exits naming uri (its socket names the server)."""
    try:
        fn(*args)
    except (AssertionError, nbd.Error) as e:
        raise SystemExit("FAIL: %s: %s: %s" % (uri, type(e).__name__, e))


def main(argv):
    cmd, args = argv[0], argv[1:]
    if cmd == "layout":
        cmd_layout(*args)
    elif cmd == "sample":
        for uri, size in zip(args[0::2], args[1::2]):
            named(uri, cmd_sample, uri, size)
    elif cmd == "cases":
        print("\n".join(CASES))
    elif cmd == "write":
        case_image(args[0], len(args) > 2).write(args[1])
    elif cmd == "write-all":
        for name in CASES:
            case_image(name).write(os.path.join(args[0], name + ".asif"))
            if "old_chunks" in CASES[name]:
                case_image(name, True).write(os.path.join(args[0], name + "-swapped.asif"))
    elif cmd == "verify":
        for name, uri in zip(args[0::2], args[1::2]):
            swapped = name.endswith("-swapped")
            named(uri, cmd_verify, name[:-len("-swapped")] if swapped else name, uri, swapped)
    elif cmd == "mutants":
        cmd_mutants(*args)
    elif cmd == "write-bad":
        cmd_write_bad(*args)
    elif cmd == "verify-bad":
        for uri in args:
            named(uri, cmd_verify_bad, uri)
    elif cmd == "snapshot":
        cmd_snapshot(*args)
    elif cmd == "readonly":
        cmd_readonly(*args)
    elif cmd == "probedraw":
        cmd_probedraw(*args)
    else:
        raise SystemExit("asifcheck.py: unknown command %s" % cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
