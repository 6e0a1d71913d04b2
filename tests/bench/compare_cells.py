#!/usr/bin/python3
"""bench/compare's cells that use the page cache, on fixed inputs (no fio, no servers).

The fault this guards: the scaling table put nbdkit's file plugin (page cache; it has no
O_DIRECT) in the same table as diskgate --cache direct with no column of its own kind
beside it, so at 1 connection x 32 nbdkit's 79,887 IOPS (run 9) stood next to diskgate's
41,312 read from the disk. And page-cache read cells ran on whatever the cells before them
had left in the cache, so the first configuration of a round paid the disk for the
others."""
import os
import tempfile
import types

from compare_lib import Checks, load_compare

compare = load_compare()
checks = Checks()
check = checks.check

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
check("configs of another count do not change these", (compare.scaling_configs(1)[1][2].get(
    "shared"), by_name["qemu-nbd"][1].get("shared")), (1, 4))
check("SCALING itself is not changed", [a for _, _, a in compare.SCALING],
      [{}, {}, {"writeback": 1}, {}])

# Figures shaped like run 9's (the diskgate writeback cell is made up).
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

# measure(): the warm-up comes before the server starts, the sync after it stops, and
# only for cells that read (warm) or write (sync) through the page cache.
events = []


class FakeServer:
    def __init__(self, kind, args, opts):
        events.append("start")
        self.pid, self.uri = 1, "nbd+unix:///?socket=/nonexistent"

    def stop(self):
        events.append("stop")


def fake_fio(*a, **k):
    events.append("fio")
    return {"iops": 1.0, "mbps": 1.0, "p50_us": 1.0, "p99_us": 1.0, "ios": 1,
            "client_sys_us_per_io": 1.0}


compare.Server = FakeServer
compare.cpu_times = lambda pid: (0.0, 0.0)
compare.fio = fake_fio
compare.warm_page_cache = lambda path: events.append("warm")
compare.flush_page_cache = lambda path: events.append("sync")


def cell_events(kind, srv_args, rw, diskgate_args=""):
    del events[:]
    opts = types.SimpleNamespace(file="/nonexistent/compare.img", runtime=1,
                                 diskgate_args=diskgate_args)
    compare.measure(opts, kind, srv_args, rw, "4k", 32)
    return list(events)


check("nbdkit read", cell_events("nbdkit", {}, "randread"), ["warm", "start", "fio", "stop"])
check("nbdkit write", cell_events("nbdkit", {}, "randwrite"), ["start", "fio", "stop", "sync"])
check("nbdkit mixed", cell_events("nbdkit", {}, "randrw"),
      ["warm", "start", "fio", "stop", "sync"])
check("diskgate writeback read", cell_events("diskgate", {"writeback": 1}, "randread"),
      ["warm", "start", "fio", "stop"])
check("diskgate direct read", cell_events("diskgate", {}, "randread"), ["start", "fio", "stop"])
check("diskgate direct write", cell_events("diskgate", {}, "randwrite"), ["start", "fio", "stop"])
# --diskgate-args (and bench/ab's PATH:ARGS) come last on the command line and win.
check("diskgate direct made writeback by its args",
      cell_events("diskgate", {}, "randread", "--threads 2 --cache writeback"),
      ["warm", "start", "fio", "stop"])
check("diskgate writeback made direct by its args",
      cell_events("diskgate", {"writeback": 1}, "randwrite", "--cache=direct"),
      ["start", "fio", "stop"])
check("qemu-nbd read", cell_events("qemu-nbd", {"shared": 1}, "randread"), ["start", "fio", "stop"])
check("host buffered read", cell_events("host", {"buffered": 1}, "randread"), ["warm", "fio"])
check("host buffered fsynced write", cell_events("host", {"buffered": 1}, "randwrite"),
      ["fio", "sync"])
check("host direct read", cell_events("host", {}, "randread"), ["fio"])
check("host batched write", cell_events("host", {"batched": 1}, "randwrite"), ["fio"])

# A server cell's CPU per I/O is user + system; its system share is the kernel's part (one
# I/O, a window of the whole wall time, so no scaling: CPU seconds become µs).
times = iter([(1.0, 2.0), (4.0, 8.0)])
compare.cpu_times = lambda pid: next(times)
opts = types.SimpleNamespace(file="/nonexistent/compare.img", runtime=3600, diskgate_args="")
got = compare.measure(opts, "qemu-nbd", {"shared": 1}, "randread", "4k", 32)
check("server CPU per I/O: user + system", got["cpu_us_per_io"], 9e6)
check("server CPU per I/O: the system share", got["cpu_sys_us_per_io"], 6e6)
compare.cpu_times = lambda pid: (0.0, 0.0)

# warm_page_cache reads every byte of the file (counted by /proc/self/io's rchar).
fresh = load_compare("bench_compare2")  # the module above has stubs in it


def rchar():
    with open("/proc/self/io") as f:
        return int([l for l in f if l.startswith("rchar:")][0].split()[1])


with tempfile.NamedTemporaryFile() as tmp:
    tmp.write(os.urandom(3 << 20) + b"x")
    tmp.flush()
    before = rchar()
    check("warm says it warmed", fresh.warm_page_cache(tmp.name), True)
    got = rchar() - before
    check("warm reads the whole file", got >= (3 << 20) + 1 and got < (3 << 20) + 65536, True)
    fresh.mem_available = lambda: 4 << 20  # the file is over half of what is available
    before = rchar()
    check("warm skips a file that would not stay cached", fresh.warm_page_cache(tmp.name), False)
    check("and reads none of it", rchar() - before < 65536, True)
    fresh.flush_page_cache(tmp.name)  # an fdatasync through a read-only descriptor works

checks.finish("bench/compare page-cache cells and scaling table")
