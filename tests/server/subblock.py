# SPDX-License-Identifier: MIT
"""subblock.py URI IMAGE SEED: the C06 client (subblock_4kn.sh). Sub-block I/O on a 4Kn device.

IMAGE holds what the export holds when we start (the loop device's backing file); at the end
we write our model of the export's content back to IMAGE.model for the script to compare with
the backing file once the server has stopped. Every request must succeed (never EIO).
"""
import random
import sys

import nbd

uri, image, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rnd = random.Random(seed)
model = bytearray(open(image, "rb").read())
size = len(model)

h = nbd.NBD()
h.connect_uri(uri)
h.set_strict_mode(h.get_strict_mode() & ~nbd.STRICT_ALIGN)  # send unaligned requests
assert h.get_size() == size
assert h.get_block_size(nbd.SIZE_MINIMUM) == 4096, "expected a 4Kn export"


def rbytes(n):
    return rnd.randbytes(n)


def check(off, n, what):
    got = h.pread(n, off)
    assert got == model[off:off + n], f"{what}: READ {off}+{n} differs from what was written"


def write(off, data, flags=0):
    h.pwrite(data, off, flags)
    model[off:off + len(data)] = data
    check(max(0, off - 4096), min(size, off + len(data) + 4096) - max(0, off - 4096),
          f"WRITE {off}+{len(data)}")


# the case's requests
check(1024, 1024, "READ offset 1024 length 1024")
write(512, rbytes(512))
h.trim(3584, 512)                      # TRIM [512, 4096): contents undefined afterwards ...
model[512:4096] = h.pread(3584, 512)   # ... whatever reads back, but nothing outside changed
check(0, 8192, "TRIM offset 512 length 3584: neighbours")
h.trim(5000, 4000)                     # [4000, 9000): one whole block, two partial ones
model[4000:9000] = h.pread(5000, 4000)
check(0, 16384, "TRIM offset 4000 length 5000: neighbours")
# WRITE_ZEROES inside a block and across blocks, with and without NO_HOLE
for off, n, fl in ((9216, 512, 0), (13000, 3000, nbd.CMD_FLAG_NO_HOLE), (20000, 9000, 0)):
    h.zero(n, off, fl)
    model[off:off + n] = bytes(n)
    check(off - 4096, n + 8192, f"WRITE_ZEROES {off}+{n} flags {fl}")
# odd lengths at odd offsets, reads and writes, including the device's last bytes
odd = [(1, 1), (4093, 7), (4095, 4097), (1, 3 * 4096 - 1), (777, 12345), (65535, 3),
       (size - 1, 1), (size - 4097, 4097), (size - 7, 7)]
for off, n in odd:
    check(off, n, "odd-length READ")
for off, n in odd:
    write(off, rbytes(n))
write(513, rbytes(100), nbd.CMD_FLAG_FUA)
for _ in range(200):
    n = rnd.choice((1, 7, 511, 513, 1000, 4095, 4097, 9999))
    off = rnd.randrange(0, size - n)
    if rnd.random() < 0.5:
        write(off, rbytes(n))
    else:
        check(off, n, "random odd READ")

# concurrency: many unaligned requests in flight at once over a 64 KiB window
base, win = 1 << 20, 65536


def run_all(reqs):
    """Submits every (kind, off, buf) at once, then waits; fails on any error."""
    cookies = []
    for kind, off, buf in reqs:
        if kind == "w":
            cookies.append(h.aio_pwrite(buf, off))
        else:
            cookies.append(h.aio_pread(buf, off))
    while h.aio_in_flight() > 0:
        h.poll(-1)
    for c in cookies:
        assert h.aio_command_completed(c), "command not completed"


# 1) disjoint pieces that share 4K blocks: writes of new data and reads of untouched pieces
#    in flight together. Lost updates from unserialised read-modify-write show up here.
for rnd_no in range(6):
    pieces, off = [], base
    while off < base + win:
        n = min(rnd.randint(1, 3000), base + win - off)
        pieces.append((off, n))
        off += n
    reqs, reads = [], []
    for off, n in pieces:
        if rnd.random() < 0.7:
            data = rbytes(n)
            reqs.append(("w", off, data))
            model[off:off + n] = data
        else:
            buf = nbd.Buffer(n)
            reqs.append(("r", off, buf))
            reads.append((off, n, buf))
    rnd.shuffle(reqs)
    run_all(reqs)
    for off, n, buf in reads:
        assert buf.to_bytearray() == model[off:off + n], \
            f"concurrent READ {off}+{n} next to RMW writes returned wrong data (round {rnd_no})"
    check(base, win, f"disjoint concurrent unaligned writes (round {rnd_no})")

# 2) overlapping writes: NBD does not order them, so each byte must hold the value of one of
#    the writes covering it (never the old value, never a mix-in from elsewhere).
h.pwrite(bytes(win), base)
model[base:base + win] = bytes(win)
cands = [set() for _ in range(win)]
reqs = []
for i in range(300):
    n = rnd.randint(1, 6000)
    off = rnd.randrange(0, win - n)
    v = i % 255 + 1
    reqs.append(("w", base + off, bytes([v]) * n))
    for b in range(off, off + n):
        cands[b].add(v)
run_all(reqs)
got = h.pread(win, base)
for b in range(win):
    ok = got[b] in cands[b] if cands[b] else got[b] == 0
    assert ok, f"overlapping concurrent writes: byte {base + b} = {got[b]}, " \
               f"expected one of {sorted(cands[b]) or [0]}"
model[base:base + win] = got
h.flush()
check(0, size, "whole device at the end")
h.shutdown()
open(image + ".model", "wb").write(model)
print(f"c06 sub-block I/O on {uri}: ok")
