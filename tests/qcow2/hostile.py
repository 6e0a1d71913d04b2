# SPDX-License-Identifier: MIT
"""hostile.py DIR: writes the hostile qcow2 images of tests/qcow2/hostile.sh into DIR
(issue 35, point 7) and prints one line per case:

    NAME IMAGE EXPECT WRITE_OFFSET GROW WHAT

EXPECT (what diskgate must do):
    refuse    exit status 2 and exactly one line on stderr
    refuse-R  refuse, and the line names `qemu-img check -r`
    ro        served read-only (the corrupt bit)
    any       refuse, or serve without harm
WRITE_OFFSET: the guest byte a served image's write attempt goes to (the hostile mapping).
GROW: 0 when the write may make the file at most 4 clusters longer (an allocation) and
must leave the header, refcount table and L1 table as they are; 1 when it may allocate
anything (no check).
WHAT: a description, to the end of the line.

Every image is qcow2img.build() of a valid image with one thing broken.

hostile.py probe URI OFFSET: the probe of a served image (see probe()).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qcow2img as q  # noqa: E402

C = 65536
FAR = 1 << 40  # a cluster-aligned host offset far past the end of every image


def cases(d):
    out = []
    q.write(os.path.join(d, "base.qcow2"))  # what a backing file name may name
    with open(os.path.join(d, "data.raw"), "wb") as f:  # what the data file names
        f.truncate(4 * C * 32)

    def add(name, expect, what, off=0, grow=0, **fields):
        path = os.path.join(d, name + ".qcow2")
        q.write(path, **fields)
        out.append((name, path, expect, off, grow, what))

    add("l1-2g-entries", "any", "an L1 table of 2^31 entries (16 GiB, past the end)",
        l1_size=1 << 31)
    add("l1-past-eof", "any", "the L1 table past the end of the file", l1_offset=FAR)
    add("l1-over-header", "any", "the L1 table at offset 0, over the header", l1_offset=0)
    add("l1-too-small", "any", "an L1 table too small for the disk size",
        size=8 * C * (C // 8), l1_size=1)
    add("l2-past-eof", "any", "an L1 entry: the L2 table past the end of the file",
        l1_entries={0: FAR | q.OFLAG_COPIED})
    add("l2-over-l1", "any", "an L1 entry: the L2 table is the L1 table's cluster",
        l1_entries={0: 3 * C | q.OFLAG_COPIED})
    add("l2-over-header", "any", "an L1 entry: the L2 table is the refcount table's cluster",
        l1_entries={0: 1 * C | q.OFLAG_COPIED})
    add("l2-unaligned", "any", "an L1 entry: an L2 table offset not cluster aligned",
        l1_entries={0: (4 * C + 512) | q.OFLAG_COPIED})
    add("reftable-past-eof", "any", "the refcount table past the end of the file",
        reftable_offset=FAR, off=9 * C, grow=0)
    add("reftable-at-0", "any", "the refcount table at offset 0, over the header",
        reftable_offset=0, off=9 * C)
    add("reftable-huge", "any", "a refcount table of 2^31 clusters",
        reftable_clusters=1 << 31, off=9 * C)
    add("refblock-past-eof", "any", "a refcount table entry past the end of the file",
        reftable_entries={0: FAR}, off=9 * C)
    add("cluster-bits-8", "any", "cluster_bits 8 (below 512-byte clusters)", cluster_bits=8)
    add("cluster-bits-22", "any", "cluster_bits 22 (4 MiB clusters, above 2 MiB)",
        cluster_bits=22)
    add("refcount-order-7", "any", "refcount_order 7 (128-bit refcounts)", refcount_order=7)
    add("header-length-huge", "any", "header_length larger than the cluster",
        header_length=C + 8)
    add("backing-name-past-cluster", "any",
        "a backing file name that runs past the header cluster",
        backing="base.qcow2", backing_fmt="qcow2", backing_offset=C - 16, backing_size=200,
        grow=1)
    add("backing-name-huge", "any", "a backing file name of 65535 bytes",
        backing="base.qcow2", backing_fmt="qcow2", backing_size=65535, grow=1)
    add("snapshots-past-eof", "any", "a snapshot table past the end of the file",
        nb_snapshots=1, snapshots_offset=FAR, grow=1, off=9 * C)
    add("l2-entry-past-eof", "any", "an L2 entry (COPIED) pointing past the end of the file",
        l2_entries={0: FAR | q.OFLAG_COPIED})
    add("l2-entry-unaligned", "any", "an L2 entry pointing at an unaligned host offset",
        l2_entries={0: (5 * C + 512) | q.OFLAG_COPIED})
    add("l2-entry-over-reftable", "any",
        "an L2 entry (COPIED) mapping the refcount table's cluster",
        l2_entries={0: 1 * C | q.OFLAG_COPIED})
    # compressed: host offset in bits 0..x-1, sector count - 1 in x..61, x = 62 - (16 - 8)
    x = 62 - (16 - 8)
    add("compressed-overflow", "any",
        "a compressed L2 entry whose offset and size fields are all ones (overflow)",
        l2_entries={0: q.OFLAG_COMPRESSED | ((1 << 62) - 1)})
    add("compressed-past-eof", "any", "a compressed L2 entry past the end of the file",
        l2_entries={0: q.OFLAG_COMPRESSED | (FAR & ((1 << x) - 1)) | (3 << x)})
    add("incompat-unknown", "refuse", "an unknown incompatible feature bit (bit 40)",
        incompatible=1 << 40)
    add("encrypted", "refuse", "encryption (crypt_method 1, AES)", crypt_method=1)
    add("data-file", "refuse", "an external data file (incompatible bit 2)",
        incompatible=1 << 2, extra_exts=q.ext(q.EXT_DATA_FILE, b"data.raw"))
    add("compression-unknown", "refuse", "compression type 7 (neither zlib nor zstd)",
        incompatible=1 << 3, compression_type=7)
    add("dirty", "refuse-R", "the dirty bit (lazy refcounts not written back)",
        incompatible=1, compatible=1)
    add("corrupt", "ro", "the corrupt bit", incompatible=1 << 1)

    # a backing chain that loops: a -> b -> a
    for me, other in (("loop-a", "loop-b"), ("loop-b", "loop-a")):
        q.write(os.path.join(d, me + ".qcow2"), backing=other + ".qcow2", backing_fmt="qcow2")
    out.append(("backing-loop", os.path.join(d, "loop-a.qcow2"), "refuse", 0, 0,
                "a backing chain that loops: a -> b -> a"))
    # a chain 1,000 deep: deep0 (no backing) <- deep1 <- ... <- deep999
    deep = os.path.join(d, "deep")
    os.makedirs(deep, exist_ok=True)
    for i in range(1000):
        q.write(os.path.join(deep, f"deep{i}.qcow2"), cluster_bits=9, size=1 << 20,
                backing=f"deep{i - 1}.qcow2" if i else None,
                backing_fmt="qcow2" if i else None)
    out.append(("backing-deep-1000", os.path.join(deep, "deep999.qcow2"), "refuse", 0, 0,
                "a backing chain 1,000 images deep"))
    return out


def probe(uri, off):
    """Serves-without-harm probe of a served image: reads (the start, the hostile mapping at
    `off`, the end), then a 512-byte write inside the mapping's cluster, a whole-cluster
    write and a FLUSH. Prints one line: size, read-only, each result (ok or E + the errno),
    and DROPPED where the server closed the connection instead of replying (then it
    reconnects)."""
    import signal
    import nbd

    signal.alarm(30)  # a server that stops answering fails the test, not hangs it
    res = []
    conn = {}

    def connect():
        h = nbd.NBD()
        h.connect_uri(uri)
        conn["h"] = h
        return h

    def attempt(what, fn):
        try:
            fn(conn["h"])
            res.append(f"{what}=ok")
        except nbd.Error as e:
            res.append(f"{what}=E{e.errnum}")
            h = conn["h"]
            if h.aio_is_closed() or h.aio_is_dead():
                res.append("DROPPED")  # the server closed the connection: reconnect
                connect()

    h = connect()
    size = h.get_size()
    ro = h.is_read_only()
    off = min(off, max(0, size - C))
    attempt("read-start", lambda h: h.pread(min(size, C), 0))
    attempt("read-target", lambda h: h.pread(min(size - off, 4096), off))
    attempt("read-end", lambda h: h.pread(min(size, C), size - min(size, C)))
    if not ro:
        attempt("write-partial", lambda h: h.pwrite(b"\x3c" * 512, off + 512))
        attempt("write-cluster", lambda h: h.pwrite(b"\xc3" * C, off // C * C))
        attempt("flush", lambda h: h.flush())
    h = conn["h"]
    h.shutdown()
    print(f"size={size} read_only={int(ro)} " + " ".join(res))


def main():
    if sys.argv[1] == "probe":
        probe(sys.argv[2], int(sys.argv[3]))
        return
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    for name, path, expect, off, grow, what in cases(d):
        print(name, path, expect, off, grow, what)


if __name__ == "__main__":
    main()
