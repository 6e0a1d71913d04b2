# SPDX-License-Identifier: MIT
"""oracle.py: the random workload of tests/qcow2/oracle.sh (run with /usr/bin/python3).

  oracle.py URI --start RAW --backing RAW --cluster BYTES --version 2|3 [--has-backing]
            --ops N --seed S --dir DIR [--exact-trim]

Applies a seeded random workload through the NBD server at URI (one connection, one request
at a time): READs, WRITEs (a fifth with FUA), TRIMs, WRITE_ZEROES (with and without
NO_HOLE, some with FUA) and a few FLUSHes, at random offsets and lengths, aligned (to 512,
4096 or the cluster) and not, concentrated on a few hot clusters so that writes overwrite,
copy on write and cross cluster and L2-table boundaries. It writes the same workload as a
qemu-io command script, DIR/qemu-io.cmds (write -s FILE, write -z [-u], discard, flush; the
data in DIR/w*.bin), for the caller to apply to a copy of the image with qemu-io.

The model: the disk's bytes (RAW --start: the image before the workload, as qemu-img convert
read it; RAW --backing: the backing file's bytes, shorter files read as zeroes beyond their
end). Every READ, and a read of the whole disk at the end, must equal the model. TRIM
follows QEMU 7.2's qcow2 (block/qcow2.c, qcow2_co_pdiscard): the whole clusters inside the
range read as zeroes afterwards, partial clusters keep their data, and a v2 image with a
backing file ignores it. The NBD spec leaves trimmed bytes undefined, so a byte trimmed and
not written since may also read as it was before the TRIM, as zeroes, or as the backing
file's byte (counted as "trim deviations"; --exact-trim makes them failures). At the end,
the deviating pieces are appended to the script as writes of the bytes the server returned,
so that `qemu-img compare` judges everything else exactly.

Exit 0 when every read matched; otherwise one line per mismatch (the first 10) and 1; 3
when a request got no reply for 30 s (STALL).
"""
import argparse
import bisect
import os
import random
import sys
import threading
import time

import nbd

SECTOR = 512


class Undefined:
    """Trimmed bytes not written since: disjoint sorted intervals [a, b), each with the bytes
    the disk held when it became undefined (`old`)."""

    def __init__(self):
        self.starts, self.items = [], []  # items: [a, b, old]

    def _cut(self, a, b):
        """Removes [a, b) from the set; returns the removed pieces as (a, b, old)."""
        out, keep = [], []
        for s, e, old in self.items:
            if e <= a or s >= b:
                keep.append([s, e, old])
                continue
            x, y = max(s, a), min(e, b)
            out.append((x, y, old[x - s:y - s]))
            if s < x:
                keep.append([s, x, old[:x - s]])
            if y < e:
                keep.append([y, e, old[y - s:]])
        keep.sort(key=lambda it: it[0])
        self.items = keep
        self.starts = [it[0] for it in keep]
        return out

    def define(self, a, b):
        self._cut(a, b)

    def trim(self, a, b, model):
        prev = self._cut(a, b)
        pieces, pos = [], a
        for x, y, old in sorted(prev):
            if pos < x:
                pieces.append([pos, x, bytes(model[pos:x])])
            pieces.append([x, y, old])
            pos = y
        if pos < b:
            pieces.append([pos, b, bytes(model[pos:b])])
        self.items = sorted(self.items + pieces, key=lambda it: it[0])
        self.starts = [it[0] for it in self.items]

    def overlapping(self, a, b):
        i = max(0, bisect.bisect_right(self.starts, a) - 1)
        while i < len(self.items) and self.items[i][0] < b:
            s, e, old = self.items[i]
            if e > a:
                x, y = max(s, a), min(e, b)
                yield x, y, old[x - s:y - s]
            i += 1


class Oracle:
    def __init__(self, a):
        self.a = a
        self.rnd = random.Random(a.seed)
        with open(a.start, "rb") as f:
            self.model = bytearray(f.read())
        self.size = len(self.model)
        with open(a.backing, "rb") as f:
            back = f.read()
        self.backing = back[:self.size] + bytes(max(0, self.size - len(back)))
        self.undef = Undefined()
        self.cmds = []
        self.errors = 0
        self.deviations = 0
        self.adopted = []  # [a, b): trimmed bytes whose value the server chose
        self.counts = {}
        self.nfile = 0
        self.h = nbd.NBD()
        self.h.set_strict_mode(self.h.get_strict_mode() & ~nbd.STRICT_ALIGN)
        self.h.connect_uri(a.uri)
        h = self.h
        assert h.get_size() == self.size, f"export size {h.get_size()} != image {self.size}"
        assert h.can_trim() and h.can_zero() and h.can_fua() and h.can_flush(), \
            "the export must offer TRIM, WRITE_ZEROES, FUA and FLUSH"
        c = a.cluster
        self.hot = sorted(self.rnd.sample(range(self.size // c), min(6, self.size // c)))

    # ---- choosing ranges ----
    def pick(self, kind):
        rnd, c, size = self.rnd, self.a.cluster, self.size
        r = rnd.random()
        if r < 0.5:
            off = rnd.choice(self.hot) * c + rnd.randrange(-c // 2, c + c // 2)
        elif r < 0.58:
            off = size - rnd.randrange(1, 2 * c + 1)
        else:
            off = rnd.randrange(size)
        r = rnd.random()
        if kind in ("trim", "zero") and r < 0.4:
            ln = rnd.randrange(1, 5) * c
        elif r < 0.35:
            ln = rnd.randrange(1, 4097)
        elif r < 0.8:
            ln = rnd.randrange(1, c + 1)
        else:
            ln = rnd.randrange(c, 3 * c + 1)
        ln = min(ln, (4 << 20) if kind in ("trim", "zero") else (5 << 19))
        align = rnd.choice([1, 1, SECTOR, SECTOR, 4096, c])
        off = max(0, min(off, size - 1)) // align * align
        ln = max(align, (ln + align - 1) // align * align)
        ln = min(ln, size - off)
        return off, ln

    # ---- checking ----
    def check(self, off, data, what):
        want = self.model[off:off + len(data)]
        if data == want:
            return
        for x, y, old in self.undef.overlapping(off, off + len(data)):
            got = data[x - off:y - off]
            if got == want[x - off:y - off]:
                continue
            # piece by piece within sectors: each piece must be one of the allowed values
            p = x
            while p < y:
                q = min(y, (p // SECTOR + 1) * SECTOR)
                g = data[p - off:q - off]
                if g != want[p - off:q - off]:
                    if g in (bytes(q - p), old[p - x:q - x], self.backing[p:q]):
                        self.deviations += 1
                    else:
                        self.report(f"{what}: trimmed bytes [{p}, {q}) read as none of: "
                                    f"QEMU's result, zeroes, the data before the TRIM, the "
                                    f"backing file's")
                    self.model[p:q] = g  # what this server keeps there: see fixups()
                    self.adopted.append((p, q))
                p = q
        want = self.model[off:off + len(data)]
        if data != want:
            i = next(i for i in range(len(data)) if data[i] != want[i])
            self.report(f"{what}: byte {off + i} (0x{off + i:x}) reads 0x{data[i]:02x}, "
                        f"expected 0x{want[i]:02x}")
            self.model[off:off + len(data)] = data  # report each corruption once

    def report(self, line):
        self.errors += 1
        if self.errors <= 10:
            print(f"oracle: {line}", file=sys.stderr)

    # ---- operations ----
    def op_read(self):
        off, ln = self.pick("read")
        self.check(off, self.h.pread(ln, off), f"READ {off}+{ln}")

    def op_write(self):
        off, ln = self.pick("write")
        pat = self.rnd.randbytes(self.rnd.randrange(509, 5003))
        data = (pat * (ln // len(pat) + 1))[:ln]
        fua = self.rnd.random() < 0.2
        self.nfile += 1
        path = os.path.join(self.a.dir, f"w{self.nfile}.bin")
        with open(path, "wb") as f:
            f.write(pat)
        self.h.pwrite(data, off, nbd.CMD_FLAG_FUA if fua else 0)
        self.model[off:off + ln] = data
        self.undef.define(off, off + ln)
        self.cmds.append(f"write -q {'-f ' if fua else ''}-s {path} {off} {ln}")
        return "write-fua" if fua else "write"

    def op_zero(self):
        off, ln = self.pick("zero")
        no_hole = self.rnd.random() < 0.5
        fua = self.rnd.random() < 0.2
        flags = (nbd.CMD_FLAG_NO_HOLE if no_hole else 0) | (nbd.CMD_FLAG_FUA if fua else 0)
        self.h.zero(ln, off, flags)
        self.model[off:off + ln] = bytes(ln)
        self.undef.define(off, off + ln)
        self.cmds.append(f"write -q -z {'' if no_hole else '-u '}{'-f ' if fua else ''}{off} {ln}")
        return "zero"

    def op_trim(self):
        off, ln = self.pick("trim")
        c = self.a.cluster
        self.h.trim(ln, off)
        self.undef.trim(off, off + ln, self.model)
        if not (self.a.version == 2 and self.a.has_backing):
            a, b = (off + c - 1) // c * c, (off + ln) // c * c
            if a < b:
                self.model[a:b] = bytes(b - a)
        self.cmds.append(f"discard -q {off} {ln}")
        return "trim"

    def op_flush(self):
        self.h.flush()
        self.cmds.append("flush")
        return "flush"

    def run(self):
        ops = [(self.op_read, 30), (self.op_write, 36), (self.op_zero, 14), (self.op_trim, 14),
               (self.op_flush, 3)]
        fns = [f for f, _ in ops]
        weights = [w for _, w in ops]
        for i in range(self.a.ops):
            fn = self.rnd.choices(fns, weights)[0]
            self.current = f"op {i} ({fn.__name__})"
            self.started = time.monotonic()
            name = fn() or "read"
            self.counts[name] = self.counts.get(name, 0) + 1
            if i % 40 == 39:  # re-read a hot cluster and its neighbours
                c = self.a.cluster
                off = max(0, self.rnd.choice(self.hot) * c - c)
                ln = min(3 * c, self.size - off)
                self.check(off, self.h.pread(ln, off), f"READ {off}+{ln} (after op {i})")
        self.current = "the final FLUSH and read"
        self.started = time.monotonic() + 30
        self.h.flush()
        chunk = 4 << 20
        for off in range(0, self.size, chunk):
            ln = min(chunk, self.size - off)
            self.check(off, self.h.pread(ln, off), f"final READ {off}+{ln}")
        self.h.shutdown()
        self.fixups()
        with open(os.path.join(self.a.dir, "qemu-io.cmds"), "w") as f:
            f.write("\n".join(self.cmds) + "\n")
        summary = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        print(f"oracle: {self.a.ops} ops ({summary}); {self.deviations} trimmed pieces read "
              f"otherwise than QEMU leaves them; {self.errors} mismatches")
        if self.deviations and self.a.exact_trim:
            self.report(f"{self.deviations} trimmed pieces read otherwise than QEMU's qcow2 "
                        f"leaves them (--exact-trim)")
        return 1 if self.errors else 0

    def fixups(self):
        """Trimmed bytes whose value the server chose otherwise than QEMU, and not written
        since: writes of those bytes (self.model holds them; the final read confirmed them)
        at the end of the qemu-io script."""
        pieces = []
        for p, q in self.adopted:
            pieces += [(x, y) for x, y, _ in self.undef.overlapping(p, q)]
        for x, y in sorted(set(pieces)):
            piece = bytes(self.model[x:y])
            self.nfile += 1
            path = os.path.join(self.a.dir, f"w{self.nfile}.bin")
            with open(path, "wb") as f:
                f.write(piece)
            self.cmds.append(f"write -q -s {path} {x} {y - x}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("uri")
    p.add_argument("--start", required=True)
    p.add_argument("--backing", required=True)
    p.add_argument("--cluster", type=int, required=True)
    p.add_argument("--version", type=int, choices=(2, 3), required=True)
    p.add_argument("--has-backing", action="store_true")
    p.add_argument("--ops", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dir", required=True)
    p.add_argument("--exact-trim", action="store_true")
    a = p.parse_args()
    state = {"o": None, "t0": time.monotonic()}

    def watchdog():  # a thread: libnbd's blocking calls hold off Python's signal handlers
        while True:
            time.sleep(0.5)
            o = state["o"]
            t = getattr(o, "started", state["t0"])
            if time.monotonic() - t > 30:
                what = getattr(o, "current", "connecting")
                print(f"oracle: STALL: no reply for 30 s at {what}", file=sys.stderr,
                      flush=True)
                os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()
    state["o"] = Oracle(a)
    return state["o"].run()


if __name__ == "__main__":
    sys.exit(main())
