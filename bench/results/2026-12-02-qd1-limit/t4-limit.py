#!/usr/bin/python3
"""T4's job (4K random writes, 4 jobs x iodepth 8, fsync=1, through the page cache) against
diskgate --cache writeback --sync full, nbdkit's file plugin, and fio on the file (buffered,
io_uring), in interleaved rounds. fio's json gives the write IOPS, the mean latency of a write
(W) and of a sync/FLUSH (F); bpftrace, over 3 s in the middle of the job, times every
ext4 sync of a file (tracepoints ext4_sync_file_enter/exit: the syncs the server, or fio
on the host path, makes: S).
fio keeps at most 4 x 8 = 32 requests in flight, syncs included, and issues one sync per write,
so by Little's law IOPS = 32 / (W + F) when the queue stays full. A FLUSH can be answered only
after a sync that started once every write completed before its arrival had completed; with
writes completing every few tens of us, that sync starts about when the FLUSH arrives, so F is
at least about S, and IOPS at most about 32 / (W + S): the bound printed, with W and S as
measured under that server.
usage: t4-limit.py DISKGATE FILE ROUNDS"""
import json, re, statistics, subprocess, sys, time

from served import served

dg, path, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
BT = """tracepoint:ext4:ext4_sync_file_enter { @t[tid] = nsecs; }
tracepoint:ext4:ext4_sync_file_exit /@t[tid]/ { @us = sum((nsecs - @t[tid]) / 1000); @n = count();
  delete(@t[tid]); }
interval:s:3 { exit(); }
END { clear(@t); }
"""


def run_cell(target):
    cmd = ["fio", "--name=t4", "--rw=randwrite", "--bs=4k", "--iodepth=8", "--numjobs=4",
           "--group_reporting", "--fsync=1", "--time_based", "--runtime=6", "--ramp_time=1",
           "--size=1G", "--output-format=json"]
    cmd += (["--ioengine=nbd", "--uri=" + target] if target.startswith("nbd")
            else ["--ioengine=io_uring", "--filename=" + target])
    f = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(2)
    bt = subprocess.run(["bpftrace", "-e", BT], capture_output=True, text=True, timeout=30).stdout
    out = f.communicate()[0]
    job = json.loads(out[out.index("{"):])["jobs"][0]
    n = int(re.search(r"@n: (\d+)", bt).group(1))
    return {"iops": job["write"]["iops"], "w": job["write"]["clat_ns"]["mean"] / 1000,
            "f": job["sync"]["lat_ns"]["mean"] / 1000, "s": int(re.search(r"@us: (\d+)", bt).group(1)) / n,
            "syncs": n / 3.0}


CELLS = {"diskgate": ("diskgate", {"writeback": 1}), "nbdkit": ("nbdkit", {}), "host": None}
res = {k: [] for k in CELLS}
for r in range(rounds):
    print("round %d:" % (r + 1))
    for k, server in CELLS.items():
        if server is None:
            x = run_cell(path)
        else:
            with served(*server, dg, path) as uri:
                x = run_cell(uri)
        x["bound"] = 32 / ((x["w"] + x["s"]) / 1e6)
        res[k].append(x)
        print("  %-8s %6.0f writes/s  W %6.0f us  F %6.0f us  S %6.0f us  %5.0f syncs/s"
              "  32/(W+F) %6.0f  bound 32/(W+S) %6.0f" % (
                  k, x["iops"], x["w"], x["f"], x["s"], x["syncs"],
                  32 / ((x["w"] + x["f"]) / 1e6), x["bound"]), flush=True)
    print("  diskgate / nbdkit %.2fx; diskgate's bound / nbdkit %.2fx" % (
        res["diskgate"][-1]["iops"] / res["nbdkit"][-1]["iops"],
        res["diskgate"][-1]["bound"] / res["nbdkit"][-1]["iops"]), flush=True)
print("medians over %d rounds:" % rounds)
for k, v in res.items():
    print("  %-8s " % k + "  ".join("%s %.0f" % (m, statistics.median(x[m] for x in v))
                                   for m in ("iops", "w", "f", "s", "syncs", "bound")))
ratios = [d["iops"] / n["iops"] for d, n in zip(res["diskgate"], res["nbdkit"])]
bounds = [d["bound"] / n["iops"] for d, n in zip(res["diskgate"], res["nbdkit"])]
print("  diskgate / nbdkit: %.2fx (rounds %s); diskgate's bound / nbdkit: %.2fx (rounds %s)" % (
    statistics.median(ratios), ", ".join("%.2f" % x for x in ratios),
    statistics.median(bounds), ", ".join("%.2f" % x for x in bounds)))
