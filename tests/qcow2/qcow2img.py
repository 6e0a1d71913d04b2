# SPDX-License-Identifier: MIT
"""qcow2img.py: writes small qcow2 images byte by byte (QEMU's docs/interop/qcow2.txt), so
that tests and fuzz seeds can set any header field or table entry to any value, including
the ones qemu-img refuses to make. Used by hostile.py and tests/fuzz/make_qcow2_corpus.py.

build(**fields) -> bytes: a valid image unless a field says otherwise. Layout, in clusters:
  0 header (+ extensions, + backing file name)   1 refcount table   2 refcount block
  3 L1 table   4 L2 table   5, 6 data (guest clusters 0 and 1, bytes DATA0 / DATA1)
Every cluster the image holds has refcount 1 (refcount_order 4); the L1 and L2 entries
carry the COPIED flag. Fields override what build() computes (see the keyword arguments).
"""
import struct

MAGIC = 0x514649FB
EXT_END = 0x00000000
EXT_BACKING_FORMAT = 0xE2792ACA
EXT_FEATURE_TABLE = 0x6803F857
EXT_DATA_FILE = 0x44415441
OFLAG_COPIED = 1 << 63
OFLAG_COMPRESSED = 1 << 62
OFLAG_ZERO = 1

DATA0 = 0xA5
DATA1 = 0x5A


def ext(kind, data):
    pad = (-len(data)) % 8
    return struct.pack(">II", kind, len(data)) + data + bytes(pad)


def build(version=3, cluster_bits=16, size=None, backing=None, backing_fmt=None,
          crypt_method=0, incompatible=0, compatible=0, autoclear=0, refcount_order=4,
          compression_type=0, extra_exts=b"", l1_size=None, l1_offset=None,
          reftable_offset=None, reftable_clusters=1, l1_entries=None, l2_entries=None,
          reftable_entries=None, backing_offset=None, backing_size=None, nb_snapshots=0,
          snapshots_offset=0, header_length=None, file_clusters=None, extended_l2=False):
    """The image as bytes. l1_entries / l2_entries / reftable_entries: dicts index -> raw
    entry (host order) replacing the computed ones; file_clusters: cut or extend the file
    to that many clusters (None: 7)."""
    c = 1 << cluster_bits if 9 <= cluster_bits <= 21 else 65536  # layout of a sane image
    entry = 16 if extended_l2 else 8
    l2n = c // entry
    if size is None:
        size = 2 * c * 32
    need_l1 = max(1, -(-size // (c * l2n)))
    if header_length is None:
        header_length = 72 if version == 2 else 112
    if extended_l2:
        incompatible |= 1 << 4
    hdr_l1_size = need_l1 if l1_size is None else l1_size
    hdr_l1_off = 3 * c if l1_offset is None else l1_offset
    hdr_rt_off = 1 * c if reftable_offset is None else reftable_offset

    # extensions and backing file name
    exts = b""
    if backing_fmt is not None:
        exts += ext(EXT_BACKING_FORMAT, backing_fmt.encode())
    exts += extra_exts
    exts += ext(EXT_END, b"")
    name = backing.encode() if isinstance(backing, str) else (backing or b"")
    name_off = header_length + len(exts)
    if backing_offset is None:
        backing_offset = name_off if name else 0
    if backing_size is None:
        backing_size = len(name)

    head = struct.pack(">IIQIIQIIQQIIQ", MAGIC, version, backing_offset, backing_size,
                       cluster_bits, size, crypt_method, hdr_l1_size, hdr_l1_off, hdr_rt_off,
                       reftable_clusters, nb_snapshots, snapshots_offset)
    if version >= 3:
        head += struct.pack(">QQQII", incompatible, compatible, autoclear, refcount_order,
                            header_length)
        if header_length >= 112:
            head += struct.pack(">B7x", compression_type)
        head += bytes(max(0, header_length - len(head)))
    cluster0 = head + exts + name
    cluster0 = cluster0[:c] if len(cluster0) > c else cluster0 + bytes(c - len(cluster0))
    # backing names placed past the header cluster by backing_offset stay where build()
    # put them; a caller that wants bytes there supplies file_clusters

    nclusters = 7
    reftable = [0] * (c // 8)
    reftable[0] = 2 * c
    for i, v in (reftable_entries or {}).items():
        reftable[i] = v
    rbits = 1 << refcount_order if refcount_order <= 6 else 16
    refblock = bytearray(c)
    if rbits == 16:
        for i in range(nclusters):
            struct.pack_into(">H", refblock, 2 * i, 1)
    else:  # generic packing, big-endian bit order as the spec's
        for i in range(nclusters):
            bit = i * rbits
            if rbits >= 8:
                struct.pack_into(">Q", refblock, bit // 8, 1) if rbits == 64 else \
                    refblock.__setitem__(slice(bit // 8, bit // 8 + rbits // 8),
                                         (1).to_bytes(rbits // 8, "big"))
            else:
                refblock[bit // 8] |= 1 << (bit % 8)
    l1 = [0] * (c // 8)
    l1[0] = 4 * c | OFLAG_COPIED
    for i, v in (l1_entries or {}).items():
        l1[i] = v
    l2 = [0] * (c // 8)
    if extended_l2:
        l2[0], l2[1] = 5 * c | OFLAG_COPIED, 0xFFFFFFFF
        l2[2], l2[3] = 6 * c | OFLAG_COPIED, 0xFFFFFFFF
    else:
        l2[0], l2[1] = 5 * c | OFLAG_COPIED, 6 * c | OFLAG_COPIED
    for i, v in (l2_entries or {}).items():
        l2[i] = v
    out = bytearray()
    out += cluster0
    out += struct.pack(f">{len(reftable)}Q", *reftable)
    out += refblock
    out += struct.pack(f">{len(l1)}Q", *l1)
    out += struct.pack(f">{len(l2)}Q", *l2)
    out += bytes([DATA0]) * c
    out += bytes([DATA1]) * c
    if file_clusters is not None:
        want = file_clusters * c
        out = out[:want] if len(out) > want else out + bytes(want - len(out))
    return bytes(out)


def write(path, **fields):
    with open(path, "wb") as f:
        f.write(build(**fields))
