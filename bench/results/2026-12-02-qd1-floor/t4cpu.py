#!/usr/bin/python3
"""T4's job (4K random writes, QD8, fsync=1, 4 jobs, page cache) against diskgate --cache
writeback --sync full and nbdkit's file plugin, interleaved rounds; for each round the
machine's CPU use over fio's run from /proc/stat (busy = all but idle and iowait, in CPUs),
the server's CPU (utime+stime) and fio's (user, sys) per fsynced write.
usage: t4cpu.py DISKGATE FILE ROUNDS RUNTIME"""
import json, os, resource, statistics, subprocess, sys, time

dg, path, rounds, runtime = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sock = os.path.join(os.path.dirname(os.path.abspath(path)), "t4.sock")
HZ = os.sysconf("SC_CLK_TCK")

def stat():
    f = open("/proc/stat").readline().split()[1:]
    v = [int(x) for x in f]
    return sum(v), v[3] + v[4]  # total, idle+iowait

def pcpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / HZ

CELLS = {"diskgate-wb": [dg, "serve", "--cache", "writeback", "--sync", "full", "--socket", sock, path],
         "nbdkit": ["nbdkit", "-f", "--exit-with-parent", "-U", sock, "file", path]}
res = {k: [] for k in CELLS}
for r in range(rounds):
    for name, cmd in CELLS.items():
        if os.path.exists(sock):
            os.unlink(sock)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not os.path.exists(sock):
            time.sleep(0.05)
        time.sleep(0.2)
        fio = ["fio", "--name=t4", "--rw=randwrite", "--bs=4k", "--iodepth=8", "--numjobs=4",
               "--fsync=1", "--group_reporting", "--time_based", "--runtime=%d" % runtime,
               "--size=1G", "--output-format=json", "--ioengine=nbd",
               "--uri=nbd+unix:///?socket=" + sock]
        t0, i0 = stat(); c0 = pcpu(p.pid); w0 = time.time(); r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(fio, capture_output=True, text=True, check=True).stdout
        t1, i1 = stat(); c1 = pcpu(p.pid); w1 = time.time(); r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        job = json.loads(out[out.index("{"):])["jobs"][0]
        ios = job["write"]["total_ios"]
        secs = job["job_runtime"] / 1000
        busy = (t1 - t0 - (i1 - i0)) / HZ / (w1 - w0)
        fio_us = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1e6 / ios  # includes its ramp and exit
        row = (job["write"]["iops"], busy, (c1 - c0) * 1e6 / ios, fio_us,
               job["write"]["clat_ns"]["percentile"]["50.000000"] / 1000,
               job["sync"]["lat_ns"]["mean"] / 1000 if "sync" in job else 0)
        res[name].append(row)
        p.terminate(); p.wait()
        subprocess.run(["sync"])
        print("round %d %-12s %7.0f writes/s  busy %.2f CPUs  server %.1f us/write  fio %.1f us/write  write p50 %.0f us  flush mean %.0f us"
              % ((r + 1, name) + row), flush=True)
print("medians:")
for k, v in res.items():
    print("  %-12s %s" % (k, "  ".join("%.1f" % statistics.median(x[i] for x in v) for i in range(6))))
