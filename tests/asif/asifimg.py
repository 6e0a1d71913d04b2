# SPDX-License-Identifier: MIT
"""asifimg.py: writes small ASIF v1 images byte by byte, from ../shared/asif.md alone (the
layout as reverse engineered; never from diskgate's reader), and mutates real ones, so that
tests and fuzz seeds can set any header field, directory or table entry to any value.

Geometry (asif.md section 2; all integers big-endian), bs = block size, cs = chunk size:
  N = 4 bs data entries per group, S = 8 (N + 1) bytes per group, C = cs // S groups per
  table, D = C N cs guest bytes per table, T = ceil(max_sector_count bs / D) directory
  entries. Guest offset L: table t = L // D, group g = (L % D) // (N cs), data index
  i = (L % (N cs)) // cs. Entry bits 0-54 physical chunk, 55-61 reserved, 62-63 status
  (00 never written, 01 full, 11 partial: per block from the group's bitmap chunk, 2 bits
  a block LSB first, 10 unmapped).

API
---
build(size, block_size=512, chunk_size=1 << 20, chunks=None, seq=(0, 1), **options)
    -> (image_bytes, expected)
  A valid image of `size` guest bytes (a multiple of block_size) and expected(offset,
  length) -> the bytes a reader must return for that guest range (ValueError past size).
  Shorthand for Image(...).tobytes() and Image.expected.

Image(size, block_size=512, chunk_size=1 << 20, chunks=None, seq=(0, 1), old_chunks=None,
      max_sector_count=None, metadata=True, stable_uuid=..., guid=..., entries=None,
      bitmap_entries=None, file_chunks=None)
  chunks: {guest chunk index: spec} (guest chunk k = guest bytes [k cs, (k+1) cs)), spec:
    ('full', data)             status 01: data (bytes, at most cs; the rest of the chunk is
                               zero) or an int fill byte
    ('partial', {block: data}, stale_byte)
                               status 11: the blocks named (index in the chunk, 0 .. cs/bs-1;
                               data: bytes of at most bs, or an int fill byte) marked 01 in
                               the group's bitmap; every other block holds stale_byte on
                               disk and reads as zero
    ('unmapped', old)          status 10, index 0: reads as zero; old (bytes or an int fill
                               byte, a chunk's worth) is left in an unreferenced chunk
  seq: the sequence numbers of directory A and B; the higher one is active (a tie: A).
  old_chunks: None: both directories name the same tables (as Apple's tool writes a fresh
    image); else the inactive directory gets its own tables and chunks made from old_chunks
    (two generations that differ).
  max_sector_count: None: 4 PiB (2^52 / bs) when the directory then fits 4 MiB, else the
    smallest whole number of tables covering size plus one more table (for the metadata).
  metadata: True: a metadata chunk at the last logical chunk (max_sector_count bs / cs - 1),
    status 11 with blocks 0 and 1 written (a `meta` header and a plist holding
    stable_uuid), as Apple's tool makes it; False: metadata_chunk = 0.
  guid, stable_uuid: uuid strings (the GUID is stored as its 16 raw bytes).
  entries: {logical chunk index: raw u64}: the active directory's data entry for that chunk,
    written as given (any state, for hostile images); bitmap_entries: {logical chunk index:
    raw u64}: the bitmap entry of the group holding that chunk.
  file_chunks: cut or extend the file to that many chunks (None: just what it holds).
  Attributes: size, bs, cs, N, S, C, D, T, max_sector_count, dir_offset (A, B),
  active (0 or 1), metadata_chunk, length (file bytes), guid, stable_uuid.
  Methods:
    tobytes() -> bytes              the whole file (use for small images only)
    write(path)                     writes the file sparsely (seek past zero ranges)
    expected(offset, length)        the guest bytes a reader must return
    extents() -> [(offset, length, is_data)]
                                    the guest range in maximal runs: is_data False where
                                    BLOCK_STATUS must say HOLE|ZERO (no table, status 00 or
                                    10, a bitmap block 00), True elsewhere
    data_ranges() -> [(offset, length)]   the is_data runs of extents()

parse(path) -> dict: the header fields of an image file (names as HEADER_FIELDS) with the
  geometry (N, S, C, D, T), seq_a, seq_b, active (0 or 1), file_size.

mutate(path, field, value): rewrites one thing in an image file in place (asif.md 11 B):
  a header field (HEADER_FIELDS: magic, version, header_size, flags, dir_a, dir_b, guid,
    sector_count, max_sector_count, chunk_size, block_size, total_segments,
    metadata_chunk); value an int (guid: 16 bytes)
  'seq_a', 'seq_b'              a directory's sequence number
  'dir_a[i]', 'dir_b[i]', 'dir[i]'
                                directory entry i of A, of B, of both
  'entry@L', 'bitmap_entry@L'   the data entry / the group's bitmap entry that maps logical
                                byte L in the active directory's table (L may be 'meta':
                                metadata_chunk cs)
  'bitmap_byte@L'               the bitmap byte holding logical byte L's block
  'bytes@OFF'                   value (bytes) written at file offset OFF
  'truncate'                    the file cut (or extended) to value bytes
  Geometry comes from the header as it is before the mutation.

Run as a script: `asifimg.py build OUT SIZE [BS CS]` writes a blank image;
`asifimg.py mutate PATH FIELD VALUE` (VALUE: an int, 0x.. allowed).
"""
import os
import struct
import sys
import uuid as uuidlib

MAGIC = b"shdw"
META_MAGIC = b"meta"
HEADER_SIZE = 0x200
FOUR_PIB = 1 << 52
DIR_ALIGN = 0x200

STATUS_NEVER = 0
STATUS_FULL = 1
STATUS_UNMAPPED = 2
STATUS_PARTIAL = 3
CHUNK_MASK = (1 << 55) - 1

# name: (file offset, struct format)
HEADER_FIELDS = {
    "magic": (0x00, ">I"),
    "version": (0x04, ">I"),
    "header_size": (0x08, ">I"),
    "flags": (0x0C, ">I"),
    "dir_a": (0x10, ">Q"),
    "dir_b": (0x18, ">Q"),
    "guid": (0x20, "16s"),
    "sector_count": (0x30, ">Q"),
    "max_sector_count": (0x38, ">Q"),
    "chunk_size": (0x40, ">I"),
    "block_size": (0x44, ">H"),
    "total_segments": (0x46, ">H"),
    "metadata_chunk": (0x48, ">Q"),
}


def entry(status, chunk):
    """A table entry: status (0..3) in bits 62-63, physical chunk in bits 0-54."""
    return (status << 62) | chunk


def geometry(bs, cs, max_sector_count):
    """(N, S, C, D, T) of asif.md section 2."""
    n = 4 * bs
    s = 8 * (n + 1)
    c = cs // s
    d = c * n * cs
    t = -(-(max_sector_count * bs) // d) if d else 0
    return n, s, c, d, t


def _fill(spec, length):
    if isinstance(spec, int):
        return bytes([spec]) * length
    b = bytes(spec)
    if len(b) > length:
        raise ValueError("data longer than %d bytes" % length)
    return b + bytes(length - len(b))


def plist(stable_uuid):
    """The metadata plist (an Apple XML property list) holding the stable uuid."""
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
            '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
            '<plist version="1.0">\n<dict>\n\t<key>internal metadata</key>\n\t<dict>\n'
            '\t\t<key>stable uuid</key>\n\t\t<string>%s</string>\n\t</dict>\n'
            '\t<key>user metadata</key>\n\t<dict/>\n</dict>\n</plist>\n' % stable_uuid).encode()


class Image:
    def __init__(self, size, block_size=512, chunk_size=1 << 20, chunks=None, seq=(0, 1),
                 old_chunks=None, max_sector_count=None, metadata=True,
                 stable_uuid="5e1f0000-0000-4000-8000-00000000a51f",
                 guid="9a1d0000-0000-4000-8000-000000000001", entries=None,
                 bitmap_entries=None, file_chunks=None):
        bs, cs = block_size, chunk_size
        if size % bs or cs % bs:
            raise ValueError("size and chunk_size must be multiples of block_size")
        self.size, self.bs, self.cs = size, bs, cs
        self.guid, self.stable_uuid = guid, stable_uuid
        n, s, c, _, _ = geometry(bs, cs, 1)
        if c < 1:
            raise ValueError("chunk_size too small for one group")
        d = c * n * cs
        if max_sector_count is None:
            t = -(-FOUR_PIB // d)
            if 8 * (t + 1) > (4 << 20):
                t = -(-size // d) + 1
                max_sector_count = t * d // bs
            else:
                max_sector_count = FOUR_PIB // bs
        self.max_sector_count = max_sector_count
        self.N, self.S, self.C, self.D, self.T = geometry(bs, cs, max_sector_count)
        self.seq = seq
        self.active = 0 if seq[0] >= seq[1] else 1
        self.metadata_chunk = max_sector_count * bs // cs - 1 if metadata else 0
        self.chunks = dict(chunks or {})
        for k in self.chunks:
            if not 0 <= k * cs < size:
                raise ValueError("guest chunk %d is outside the guest range" % k)
        self.writes = {}  # file offset -> bytes
        dir_bytes = 8 * (self.T + 1)
        a = DIR_ALIGN
        b = -(-(a + dir_bytes) // DIR_ALIGN) * DIR_ALIGN
        self.dir_offset = (a, b)
        self.next_chunk = -(-(b + dir_bytes) // cs)
        self.tables = {}  # (generation, t) -> physical chunk
        self.table_bytes = {}  # physical chunk -> bytearray (C S bytes)
        self.bitmaps = {}  # (generation, t, g) -> (physical chunk, bytearray cs)
        gens = [(self.active, self.chunks)]
        if old_chunks is not None:
            gens.append((1 - self.active, dict(old_chunks)))
        for gen, chs in gens:
            for k in sorted(chs):
                self._place(gen, k, chs[k])
        if metadata:
            head = bytearray(bs)
            head[0:4] = META_MAGIC
            struct.pack_into(">IIQ", head, 4, 1, HEADER_SIZE, HEADER_SIZE)
            text = plist(stable_uuid) + b"\0"
            blocks = {0: bytes(head)}
            for i in range(0, len(text), bs):
                blocks[1 + i // bs] = text[i:i + bs]
            for gen, _ in gens:
                self._place(gen, self.metadata_chunk, ("partial", blocks, 0))
        for k, raw in (entries or {}).items():
            self._entry_set(self.active, k, raw)
        for k, raw in (bitmap_entries or {}).items():
            t, g, _ = self._locate(k * cs)
            self._table(self.active, t)
            struct.pack_into(">Q", self.table_bytes[self.tables[(self.active, t)]],
                             g * self.S + 8 * self.N, raw)
        self._finish(seq, old_chunks is not None, file_chunks)

    # -- layout ------------------------------------------------------------------------------
    def _alloc(self):
        chunk = self.next_chunk
        self.next_chunk += 1
        return chunk

    def _locate(self, offset):
        t, r = divmod(offset, self.D)
        g, q = divmod(r, self.N * self.cs)
        return t, g, q // self.cs

    def _table(self, gen, t):
        if (gen, t) not in self.tables:
            chunk = self._alloc()
            self.tables[(gen, t)] = chunk
            self.table_bytes[chunk] = bytearray(self.C * self.S)
        return self.tables[(gen, t)]

    def _entry_set(self, gen, k, raw):
        t, g, i = self._locate(k * self.cs)
        table = self.table_bytes[self._table(gen, t)]
        struct.pack_into(">Q", table, g * self.S + 8 * i, raw)

    def _place(self, gen, k, spec):
        kind = spec[0]
        cs, bs = self.cs, self.bs
        if kind == "full":
            chunk = self._alloc()
            self.writes[chunk * cs] = _fill(spec[1], cs)
            self._entry_set(gen, k, entry(STATUS_FULL, chunk))
        elif kind == "partial":
            blocks, stale = spec[1], spec[2]
            data = bytearray(_fill(stale, cs))
            t, g, i = self._locate(k * cs)
            table_chunk = self._table(gen, t)
            chunk = self._alloc()  # data before bitmap: the order of Apple's fresh images
            if (gen, t, g) not in self.bitmaps:
                bchunk = self._alloc()
                self.bitmaps[(gen, t, g)] = (bchunk, bytearray(cs))
                struct.pack_into(">Q", self.table_bytes[table_chunk], g * self.S + 8 * self.N,
                                 bchunk)
            bitmap = self.bitmaps[(gen, t, g)][1]
            for blk, b in blocks.items():
                if not 0 <= blk < cs // bs:
                    raise ValueError("block %d is outside the chunk" % blk)
                data[blk * bs:(blk + 1) * bs] = _fill(b, bs)
                kbit = i * (cs // bs) + blk
                bitmap[kbit // 4] |= 1 << ((kbit % 4) * 2)
            self.writes[chunk * cs] = bytes(data)
            self._entry_set(gen, k, entry(STATUS_PARTIAL, chunk))
        elif kind == "unmapped":
            chunk = self._alloc()  # the old data, no longer referenced
            self.writes[chunk * cs] = _fill(spec[1], cs)
            self._entry_set(gen, k, entry(STATUS_UNMAPPED, 0))
        else:
            raise ValueError("unknown chunk kind %r" % (kind,))

    def _finish(self, seq, two_gens, file_chunks):
        cs = self.cs
        h = bytearray(HEADER_SIZE)
        h[0:4] = MAGIC
        struct.pack_into(">IIIQQ", h, 4, 1, HEADER_SIZE, 0, self.dir_offset[0], self.dir_offset[1])
        h[0x20:0x30] = uuidlib.UUID(self.guid).bytes
        struct.pack_into(">QQIHHQ", h, 0x30, self.size // self.bs, self.max_sector_count, cs,
                         self.bs, 0, self.metadata_chunk)
        self.writes[0] = bytes(h)
        for gen in (0, 1):
            src = gen if two_gens else self.active
            d = bytearray(8 * (self.T + 1))
            struct.pack_into(">Q", d, 0, seq[gen])
            for (g2, t), chunk in self.tables.items():
                if g2 == src:
                    struct.pack_into(">Q", d, 8 + 8 * t, chunk)
            self.writes[self.dir_offset[gen]] = bytes(d)
        for chunk, tb in self.table_bytes.items():
            self.writes[chunk * cs] = bytes(tb)
        for bchunk, bm in self.bitmaps.values():
            self.writes[bchunk * cs] = bytes(bm)
        self.length = self.next_chunk * cs if file_chunks is None else file_chunks * cs

    # -- output ------------------------------------------------------------------------------
    def tobytes(self):
        out = bytearray(self.length)
        for off, b in self.writes.items():
            if off < self.length:
                out[off:off + len(b)] = b[:self.length - off]
        return bytes(out)

    def write(self, path):
        with open(path, "wb") as f:
            for off in sorted(self.writes):
                b = self.writes[off]
                if off >= self.length:
                    continue
                b = b[:self.length - off]
                for i in range(0, len(b), 65536):
                    piece = b[i:i + 65536]
                    if piece.count(0) != len(piece):
                        f.seek(off + i)
                        f.write(piece)
            f.truncate(self.length)

    # -- what a reader must see --------------------------------------------------------------
    def _chunk_view(self, k):
        """(bytes of guest chunk k as a reader sees them, [is_data per block])."""
        cs, bs = self.cs, self.bs
        nblk = cs // bs
        spec = self.chunks.get(k)
        if spec is None or spec[0] == "unmapped":
            return None, [False] * nblk
        if spec[0] == "full":
            return _fill(spec[1], cs), [True] * nblk
        data = bytearray(cs)
        mask = [False] * nblk
        for blk, b in spec[1].items():
            data[blk * bs:(blk + 1) * bs] = _fill(b, bs)
            mask[blk] = True
        return bytes(data), mask

    def expected(self, offset, length):
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ValueError("range past the guest size")
        out = bytearray(length)
        cs = self.cs
        pos = offset
        while pos < offset + length:
            k, o = divmod(pos, cs)
            n = min(cs - o, offset + length - pos)
            data, _ = self._chunk_view(k)
            if data is not None:
                out[pos - offset:pos - offset + n] = data[o:o + n]
            pos += n
        return bytes(out)

    def extents(self):
        runs = []

        def add(off, length, is_data):
            if length <= 0:
                return
            if runs and runs[-1][2] == is_data and runs[-1][0] + runs[-1][1] == off:
                runs[-1] = (runs[-1][0], runs[-1][1] + length, is_data)
            else:
                runs.append((off, length, is_data))
        cs, bs = self.cs, self.bs
        prev = 0
        for k in sorted(self.chunks):
            add(prev, k * cs - prev, False)
            _, mask = self._chunk_view(k)
            for blk, is_data in enumerate(mask):
                start = k * cs + blk * bs
                if start >= self.size:
                    break
                add(start, bs, is_data)
            prev = min((k + 1) * cs, self.size)
        add(prev, self.size - prev, False)
        return runs

    def data_ranges(self):
        return [(o, n) for o, n, d in self.extents() if d]


def build(size, block_size=512, chunk_size=1 << 20, chunks=None, seq=(0, 1), **options):
    """(image bytes, expected(offset, length) -> guest bytes); see the module's text."""
    img = Image(size, block_size, chunk_size, chunks, seq, **options)
    return img.tobytes(), img.expected


# -- real files --------------------------------------------------------------------------------
def parse(path):
    with open(path, "rb") as f:
        head = f.read(HEADER_SIZE).ljust(HEADER_SIZE, b"\0")
        f.seek(0, 2)
        file_size = f.tell()
        out = {"file_size": file_size}
        for name, (off, fmt) in HEADER_FIELDS.items():
            out[name] = struct.unpack_from(fmt, head, off)[0]
        n, s, c, d, t = geometry(out["block_size"], out["chunk_size"], out["max_sector_count"])
        out.update(N=n, S=s, C=c, D=d, T=t)
        for key, off in (("seq_a", out["dir_a"]), ("seq_b", out["dir_b"])):
            f.seek(off)
            raw = f.read(8)
            out[key] = struct.unpack(">Q", raw)[0] if len(raw) == 8 else None
        out["active"] = 0 if (out["seq_a"] or 0) >= (out["seq_b"] or 0) else 1
    return out


def _read_u64(path, off):
    with open(path, "rb") as f:
        f.seek(off)
        return struct.unpack(">Q", f.read(8))[0]


def locate(path, logical):
    """File offsets (data entry, bitmap entry, bitmap byte or None) that map logical byte
    `logical` in the active directory of image `path`, and the bit shift in the byte."""
    p = parse(path)
    cs, bs, n = p["chunk_size"], p["block_size"], p["N"]
    t, r = divmod(logical, p["D"])
    g, q = divmod(r, n * cs)
    i, o = divmod(q, cs)
    dir_off = p["dir_b"] if p["active"] else p["dir_a"]
    table = (_read_u64(path, dir_off + 8 + 8 * t) & CHUNK_MASK) * cs
    ent = table + g * p["S"] + 8 * i
    bent = table + g * p["S"] + 8 * n
    bchunk = _read_u64(path, bent) & CHUNK_MASK
    kbit = i * (cs // bs) + o // bs
    return ent, bent, (bchunk * cs + kbit // 4 if bchunk else None), (kbit % 4) * 2


def _pwrite(path, off, data):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(data)


def mutate(path, field, value):
    """Rewrites `field` of image `path` in place; see the module's text."""
    if field in HEADER_FIELDS:
        off, fmt = HEADER_FIELDS[field]
        _pwrite(path, off, struct.pack(fmt, value))
        return
    if field == "truncate":
        os.truncate(path, value)
        return
    p = parse(path)
    if field in ("seq_a", "seq_b"):
        _pwrite(path, p["dir_a" if field == "seq_a" else "dir_b"], struct.pack(">Q", value))
        return
    if field.startswith("dir") and field.endswith("]"):
        which, idx = field[:-1].split("[")
        dirs = {"dir_a": ["dir_a"], "dir_b": ["dir_b"], "dir": ["dir_a", "dir_b"]}[which]
        for d in dirs:
            _pwrite(path, p[d] + 8 + 8 * int(idx, 0), struct.pack(">Q", value))
        return
    if field.startswith("bytes@"):
        _pwrite(path, int(field[6:], 0), bytes(value))
        return
    name, _, where = field.partition("@")
    logical = p["metadata_chunk"] * p["chunk_size"] if where == "meta" else int(where, 0)
    ent, bent, bbyte, _ = locate(path, logical)
    if name == "entry":
        _pwrite(path, ent, struct.pack(">Q", value))
    elif name == "bitmap_entry":
        _pwrite(path, bent, struct.pack(">Q", value))
    elif name == "bitmap_byte":
        if bbyte is None:
            raise ValueError("no bitmap chunk maps %s" % where)
        _pwrite(path, bbyte, bytes([value]))
    else:
        raise ValueError("unknown field %r" % field)


def main(argv):
    if len(argv) >= 3 and argv[0] == "build":
        bs = int(argv[3], 0) if len(argv) > 3 else 512
        cs = int(argv[4], 0) if len(argv) > 4 else 1 << 20
        Image(int(argv[2], 0), bs, cs).write(argv[1])
    elif len(argv) == 4 and argv[0] == "mutate":
        mutate(argv[1], argv[2], int(argv[3], 0))
    else:
        sys.stderr.write(__doc__.split("Run as a script: ")[1])
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
