#!/usr/bin/python3
"""bench/compare's cells that use the page cache, on fixed inputs (no fio, no servers).

The fault this guards: the scaling table put nbdkit's file plugin (page cache; it has no
O_DIRECT) in the same table as diskgate --cache direct with no column of its own kind
beside it, so at 1 connection x 32 nbdkit's 79,887 IOPS (run 9) stood next to diskgate's
41,312 read from the disk. And page-cache read cells ran on whatever the cells before them
had left in the cache, so the first configuration of a round paid the disk for the
others."""
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import types

SRC = os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
loader = importlib.machinery.SourceFileLoader("bench_compare", os.path.join(SRC, "bench", "compare"))
spec = importlib.util.spec_from_loader(loader.name, loader)
compare = importlib.util.module_from_spec(spec)
loader.exec_module(compare)

failures = []
checks = [0]


def check(name, got, want):
    checks[0] += 1
    if got != want:
        failures.append("%s: got %r, expected %r" % (name, got, want))


# Which cells go through the page cache.
check("nbdkit", compare.uses_page_cache("nbdkit", {}), True)
check("diskgate direct", compare.uses_page_cache("diskgate", {}), False)
check("diskgate direct over TCP", compare.uses_page_cache("diskgate", {"tcp": 1}), False)
check("diskgate writeback", compare.uses_page_cache("diskgate", {"writeback": 1}), True)
check("qemu-nbd cache=none", compare.uses_page_cache("qemu-nbd", {"shared": 4}), False)
check("host direct", compare.uses_page_cache("host", {"batched": 1}), False)
check("host buffered", compare.uses_page_cache("host", {"buffered": 1}), True)
# Which of them are warmed: reads only (a 4K write does not read the page it replaces).
check("warm: nbdkit randread", compare.needs_warm_cache("nbdkit", {}, "randread"), True)
check("warm: nbdkit read", compare.needs_warm_cache("nbdkit", {}, "read"), True)
check("warm: nbdkit randrw", compare.needs_warm_cache("nbdkit", {}, "randrw"), True)
check("warm: nbdkit randwrite", compare.needs_warm_cache("nbdkit", {}, "randwrite"), False)
check("warm: diskgate writeback randread",
      compare.needs_warm_cache("diskgate", {"writeback": 1}, "randread"), True)
check("warm: diskgate direct randread", compare.needs_warm_cache("diskgate", {}, "randread"),
      False)

# The scaling configurations: each page-cache peer has diskgate in the same mode beside it.
configs = compare.scaling_configs(4)
check("scaling names", [n for n, _, _ in configs], ["diskgate", "qemu-nbd", "diskgate-wb", "nbdkit"])
by_name = {n: (k, a) for n, k, a in configs}
check("diskgate column is direct", compare.uses_page_cache(*by_name["diskgate"]), False)
check("qemu-nbd shares its export with every connection", by_name["qemu-nbd"][1].get("shared"), 4)
check("diskgate-wb column uses the page cache", compare.uses_page_cache(*by_name["diskgate-wb"]),
      True)
check("nbdkit column uses the page cache", compare.uses_page_cache(*by_name["nbdkit"]), True)
check("configs do not share their argument dicts",
      compare.scaling_configs(1)[1][2].get("shared"), 1)

points = [{"server": "diskgate", "label": "1x32", "iops": 41312, "cpu_us_per_io": 10.5},
          {"server": "qemu-nbd", "label": "1x32", "iops": 32093, "cpu_us_per_io": 24.0},
          {"server": "diskgate-wb", "label": "1x32", "iops": 99334, "cpu_us_per_io": 15.9},
          {"server": "nbdkit", "label": "1x32", "iops": 79887, "cpu_us_per_io": 11.7},
          {"server": "diskgate", "label": "4x8", "iops": 47805, "cpu_us_per_io": 9.7}]
table = compare.scaling_table(points)
check("scaling header", table[2], "| connections x iodepth | diskgate direct | qemu-nbd (cache=none) "
      "| diskgate writeback | nbdkit (page cache) |")
check("scaling separator", table[3], "|---|---|---|---|---|")
check("scaling row", table[4], "| 1x32 | 41312 (10.5) | 32093 (24.0) | 99334 (15.9) | 79887 (11.7) |")
check("scaling row with missing cells", table[5], "| 4x8 | 47805 (9.7) | - | - | - |")
check("scaling rows", len(table), 6)

# measure() warms the cache before a page-cache read cell, and only then.
warmed = []
compare.warm_page_cache = lambda path: warmed.append(path)
compare.fio = lambda *a, **k: {"iops": 1.0, "mbps": 1.0, "p50_us": 1.0, "p99_us": 1.0,
                               "ios": 1, "client_sys_us_per_io": 1.0}
opts = types.SimpleNamespace(file="/nonexistent/compare.img", runtime=1)
compare.measure(opts, "host", {"buffered": 1}, "randread", "4k", 32)
check("buffered host read warms", warmed, ["/nonexistent/compare.img"])
compare.measure(opts, "host", {}, "randread", "4k", 32)
compare.measure(opts, "host", {"buffered": 1}, "randwrite", "4k", 8)
check("direct read and buffered write do not warm", len(warmed), 1)

# warm_page_cache reads every byte of the file (counted by /proc/self/io's rchar).
loader2 = importlib.machinery.SourceFileLoader("bench_compare2", os.path.join(SRC, "bench", "compare"))
fresh = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader2.name, loader2))
loader2.exec_module(fresh)


def rchar():
    with open("/proc/self/io") as f:
        return int([l for l in f if l.startswith("rchar:")][0].split()[1])


with tempfile.NamedTemporaryFile() as tmp:
    tmp.write(os.urandom(3 << 20) + b"x")
    tmp.flush()
    before = rchar()
    fresh.warm_page_cache(tmp.name)
    got = rchar() - before
    check("warm reads the whole file", got >= (3 << 20) + 1 and got < (3 << 20) + 65536, True)

for f in failures:
    print("FAIL: " + f, file=sys.stderr)
if failures:
    sys.exit(1)
print("ok: bench/compare page-cache cells and scaling table (%d checks)" % checks[0])
