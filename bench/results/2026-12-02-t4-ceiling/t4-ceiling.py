#!/usr/bin/python3
"""T4's job (4K random writes, 4 jobs x iodepth 8, fsync=1) against every way of running it on
this machine, in interleaved rounds, with the virtual disk's own view of each cell:
  - host-direct fsync=K: fio on the file, io_uring, O_DIRECT, an fdatasync after every K
    writes of each job (fio's --fdatasync=K; K = 1 is T4's job; K = 0 never syncs): what
    the disk gives with syncs at that rate, without any server. (The first recorded run,
    t4-ceiling-fsync.txt, used --fsync=K, a full fsync(2), in the host cells.)
  - host-buffered: the same through the page cache, K = 1 (bench/compare's T4 host figure).
  - diskgate direct / writeback: --cache direct|writeback --sync full.
  - qemu-nbd --cache=none --aio=io_uring --shared=4, nbdkit's file plugin (page cache).
For each cell fio gives the write IOPS and the mean latency of a write (W) and of a sync or
FLUSH (F); bpftrace, over 3 s in the middle of the cell, counts the requests the virtual disk
gets (block_rq_issue, by blktrace's rwbs letters, printed raw too): writes, and flushes (a
flush request, or a write carrying a preflush). The servers answer fio's FLUSH with
fdatasync (diskgate --sync full; nbdkit's file plugin).
usage: t4-ceiling.py DISKGATE FILE ROUNDS"""
import json, os, re, statistics, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "2026-12-02-qd1-limit"))
from served import served  # noqa: E402  (bench/compare's Server)

dg, path, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
# Requests by rwbs (blktrace's letters): a leading F is a preflush ("FF" a flush request,
# "FWS" a write after one), W a write.
BT = """tracepoint:block:block_rq_issue { @r[args->rwbs] = count(); }
interval:s:3 { exit(); }
"""


def run_cell(target, fsync=1, direct=True):
    cmd = ["fio", "--name=t4", "--rw=randwrite", "--bs=4k", "--iodepth=8", "--numjobs=4",
           "--group_reporting", "--time_based", "--runtime=6", "--ramp_time=1", "--size=1G",
           "--output-format=json"]
    if target.startswith("nbd"):
        cmd += ["--ioengine=nbd", "--uri=" + target, "--fsync=%d" % fsync]  # an NBD FLUSH
    else:
        cmd += ["--ioengine=io_uring", "--filename=" + target, "--direct=%d" % direct,
                "--fdatasync=%d" % fsync]
    f = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(2)
    bt = subprocess.run(["bpftrace", "-e", BT], capture_output=True, text=True, timeout=30).stdout
    out = f.communicate()[0]
    job = json.loads(out[out.index("{"):])["jobs"][0]
    rq = {k: int(n) for k, n in re.findall(r"@r\[(\w+)\]: (\d+)", bt)}
    sync = job.get("sync", {}).get("lat_ns", {}).get("mean", 0) / 1000
    return {"iops": job["write"]["iops"], "w": job["write"]["clat_ns"]["mean"] / 1000,
            "f": sync, "dev_writes": sum(n for k, n in rq.items() if "W" in k) / 3.0,
            "dev_flushes": sum(n for k, n in rq.items() if k.startswith("F")) / 3.0,
            "rwbs": " ".join("%s:%d" % kv for kv in sorted(rq.items()))}


CELLS = [("host-direct fsync=1", {"fsync": 1}), ("host-direct fsync=4", {"fsync": 4}),
         ("host-direct fsync=16", {"fsync": 16}), ("host-direct fsync=64", {"fsync": 64}),
         ("host-direct fsync=0", {"fsync": 0}), ("host-buffered fsync=1", {"direct": False}),
         ("diskgate direct", ("diskgate", {})),
         ("diskgate writeback", ("diskgate", {"writeback": 1})),
         ("qemu-nbd", ("qemu-nbd", {"shared": 4})), ("nbdkit", ("nbdkit", {}))]
res = {name: [] for name, _ in CELLS}
for r in range(rounds):
    print("round %d:" % (r + 1), flush=True)
    for name, how in CELLS:
        if isinstance(how, dict):
            x = run_cell(path, **how)
        else:
            with served(*how, dg, path) as uri:
                x = run_cell(uri)
        res[name].append(x)
        print("  %-22s %6.0f writes/s  W %6.0f us  F %6.0f us  disk: %6.0f writes/s %6.0f flushes/s"
              % (name, x["iops"], x["w"], x["f"], x["dev_writes"], x["dev_flushes"]), flush=True)
        print("  %-22s   the disk's requests in 3 s by rwbs: %s" % ("", x["rwbs"]), flush=True)
    ceiling = res["host-direct fsync=1"][-1]["iops"]
    print("  nbdkit x 2 = %.0f; host-direct fsync=1 = %.0f; diskgate direct / host %.2f, "
          "/ nbdkit %.2fx" % (2 * res["nbdkit"][-1]["iops"], ceiling,
                              res["diskgate direct"][-1]["iops"] / ceiling,
                              res["diskgate direct"][-1]["iops"] / res["nbdkit"][-1]["iops"]),
          flush=True)
print("medians over %d rounds:" % rounds)
for name, v in res.items():
    print("  %-22s " % name + "  ".join("%s %.0f" % (m, statistics.median(x[m] for x in v))
                                       for m in ("iops", "w", "f", "dev_writes", "dev_flushes")))
for num, den in (("diskgate direct", "nbdkit"), ("diskgate writeback", "nbdkit"),
                 ("host-direct fsync=1", "nbdkit"), ("diskgate direct", "host-direct fsync=1"),
                 ("diskgate writeback", "host-direct fsync=1"), ("qemu-nbd", "host-direct fsync=1")):
    rs = [a["iops"] / b["iops"] for a, b in zip(res[num], res[den])]
    print("  %s / %s: %.2fx (rounds %s)" % (num, den, statistics.median(rs),
                                            ", ".join("%.2f" % x for x in rs)))
