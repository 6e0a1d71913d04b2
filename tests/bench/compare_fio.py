#!/usr/bin/python3
"""bench/compare's fio command for T4's cells, on fixed inputs (fio itself does not run):
the sync fio asks for after every write.

The fault this guards: the host path's cells asked fio for --fsync, which on a file is a full
fsync(2), while a server answers the NBD FLUSH that --fsync sends through fio's nbd engine
with fdatasync (diskgate --sync full, nbdkit's file plugin). The host figure printed as
"fdatasync per write" (runs up to 22) was an fsync per write."""
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

checks.finish("bench/compare fio sync options")
