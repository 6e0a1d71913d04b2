#!/usr/bin/python3
"""bench/compare's fio command and T4's cells, on fixed inputs (fio itself does not run):
the sync fio asks for after every write, and which cells T4 measures.

The fault this guards: the host path's cells asked fio for --fsync, which on a file is a full
fsync(2), while a server answers the NBD FLUSH that --fsync sends through fio's nbd engine
with fdatasync (diskgate --sync full, nbdkit's file plugin). The host figure printed as
"fdatasync per write" (runs 1-22, inclusive) was an fsync per write. A file path that begins
with "nbd" (a --dir of that name) was taken for an NBD URI."""
import json
import types

from compare_lib import Checks, load_compare

compare = load_compare()
checks = Checks()
check = checks.check
commands = []
SIDE = {"iops": 0.0, "bw_bytes": 0, "total_ios": 0, "clat_ns": {}}
JOB = {"jobs": [{"read": SIDE, "write": SIDE, "sys_cpu": 0.0, "job_runtime": 1000}]}


def fake_run(cmd, **kwargs):
    commands.append(cmd)
    return types.SimpleNamespace(returncode=0, stdout=json.dumps(JOB), stderr="")


compare.subprocess = types.SimpleNamespace(run=fake_run)
opts = types.SimpleNamespace(runtime=1, size="1G", dir="/tmp")


def sync_options(target, fsync):
    del commands[:]
    compare.fio(opts, target, "randwrite", "4k", 8, numjobs=4, fsync=fsync)
    return [a for a in commands[0] if "sync" in a]


check("host file: fdatasync after every write", sync_options("/var/tmp/x.img", 1),
      ["--fdatasync=1"])
check("nbd export: FLUSH (fio's fsync) after every write",
      sync_options("nbd+unix:///?socket=/tmp/s", 1), ["--fsync=1"])
check("nbd over TCP: FLUSH after every write", sync_options("nbd://127.0.0.1:1/", 1),
      ["--fsync=1"])
check("host file, every 16 writes", sync_options("/var/tmp/x.img", 16), ["--fdatasync=16"])
check("no sync asked: none given", sync_options("/var/tmp/x.img", 0), [])
check("a relative file path beginning with nbd is a file",
      sync_options("nbd-scratch/compare.img", 1), ["--fdatasync=1"])
check("...and fio opens it with io_uring", [a for a in commands[0] if "ioengine" in a],
      ["--ioengine=io_uring"])

# T4's cells, in t4_row's order (diskgate, nbdkit, host page cache, host O_DIRECT): all the
# same job, 4 jobs x QD8 4K random writes with a sync after each; the host ones on the file.
spec = [(name, kind, dict(args), rw, bs, qd, kw) for name, (kind, args, rw, bs, qd), kw
        in compare.T4_CELLS]
check("T4 cells' kinds and cache modes", [(s[1], s[2]) for s in spec],
      [("diskgate", {"writeback": 1}), ("nbdkit", {}), ("host", {"buffered": 1}), ("host", {})])
check("T4 cells' job", {(s[3], s[4], s[5], s[6]["numjobs"], s[6]["fsync"]) for s in spec},
      {("randwrite", "4k", 8, 4, 1)})

checks.finish("bench/compare fio sync options and T4's cells")
