#!/usr/bin/python3
"""T5's floor on this machine: 4K random reads at QD1 over a Unix socket (fio's nbd engine),
interleaved rounds, p50 medians. Beside the T5 cells (host O_DIRECT, diskgate --cache direct,
qemu-nbd --cache=none --aio=io_uring) it runs two servers that touch no disk: nbdkit's memory
plugin and diskgate --cache writeback on a file already in the page cache. Their p50 is the
client + socket + server round trip alone; added to the host's own disk p50 it estimates the
lowest p50 an NBD server can reach here with O_DIRECT.
usage: floor.py DISKGATE FILE ROUNDS RUNTIME"""
import json, os, statistics, subprocess, sys, time

dg, path, rounds, runtime = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
d = os.path.dirname(os.path.abspath(path))
sock = os.path.join(d, "floor.sock")

def fio(target):
    cmd = ["fio", "--name=f", "--rw=randread", "--bs=4k", "--iodepth=1", "--time_based",
           "--runtime=" + runtime, "--ramp_time=1", "--size=1G", "--output-format=json"]
    cmd += (["--ioengine=nbd", "--uri=" + target] if target.startswith("nbd")
            else ["--ioengine=io_uring", "--direct=1", "--filename=" + target])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    return job["clat_ns"]["percentile"]["50.000000"] / 1000, job["iops"]

CELLS = {
    "host": None,
    "diskgate-direct": [dg, "serve", "--cache", "direct", "--sync", "full", "--socket", sock, path],
    "qemu-nbd": ["qemu-nbd", "-f", "raw", "--cache=none", "--aio=io_uring", "-t", "-k", sock, path],
    "nbdkit-memory": ["nbdkit", "-f", "--exit-with-parent", "-U", sock, "memory", "1G"],
    "diskgate-wb-warm": [dg, "serve", "--cache", "writeback", "--sync", "full", "--socket", sock, path],
}
res = {k: [] for k in CELLS}
for r in range(rounds):
    for name, cmd in CELLS.items():
        if cmd is None:
            res[name].append(fio(path))
            continue
        if name == "diskgate-wb-warm":
            subprocess.run(["dd", "if=" + path, "of=/dev/null", "bs=1M"], capture_output=True)
        if os.path.exists(sock):
            os.unlink(sock)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not os.path.exists(sock):
            time.sleep(0.05)
        time.sleep(0.2)
        if name == "nbdkit-memory":  # fill it, so reads copy data as the others do
            subprocess.run(["fio", "--name=fill", "--rw=write", "--bs=1M", "--size=1G",
                            "--ioengine=nbd", "--uri=nbd+unix:///?socket=" + sock],
                           capture_output=True, check=True)
        res[name].append(fio("nbd+unix:///?socket=" + sock))
        p.terminate(); p.wait()
    print("round %d: %s" % (r + 1, "  ".join("%s %.1f us" % (k, v[-1][0]) for k, v in res.items())), flush=True)
print("medians (p50 us, IOPS):")
for k, v in res.items():
    print("  %-18s %7.1f us  %8.0f IOPS   rounds: %s" % (k, statistics.median(x[0] for x in v),
          statistics.median(x[1] for x in v), ", ".join("%.1f" % x[0] for x in v)))
