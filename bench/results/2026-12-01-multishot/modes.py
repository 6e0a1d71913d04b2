#!/usr/bin/python3
"""modes.py BIN ROUNDS: TCP 4K randread QD32, rounds of 4 s against one diskgate; per round
fio's IOPS and the share of 20 ms samples (over 3 s) in which fio's busiest thread and
diskgate's busiest thread last ran on the same CPU (field 39 of /proc/TID/stat)."""
import glob, json, os, subprocess, sys, time
dg, rounds = sys.argv[1], int(sys.argv[2])
img, port = "/var/tmp/cmp/compare.img", 10899
srv = subprocess.Popen([dg, "serve", "--cache", "direct", "--sync", "full", "--listen",
                        f"127.0.0.1:{port}", img], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.7)
def tasks(pids):
    out = {}
    for pid in pids:
        for t in glob.glob(f"/proc/{pid}/task/*/stat"):
            try:
                f = open(t).read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[t] = (int(f[11]) + int(f[12]), int(f[36]))  # utime+stime, processor
    return out
def children(pid):
    try:
        return [int(x) for x in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    except OSError:
        return []
for r in range(rounds):
    fio = subprocess.Popen(["fio", "--name=x", "--ioengine=nbd", f"--uri=nbd://127.0.0.1:{port}/",
                            "--rw=randread", "--bs=4k", "--iodepth=32", "--size=1G", "--runtime=4",
                            "--time_based", "--output-format=json"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    time.sleep(0.6)
    fpids = [fio.pid] + children(fio.pid)
    a_f, a_d = tasks(fpids), tasks([srv.pid])
    samples = []
    for i in range(150):
        f, d = tasks(fpids), tasks([srv.pid])
        samples.append((f, d))
        time.sleep(0.02)
    b_f, b_d = samples[-1]
    busy_f = max(b_f, key=lambda t: b_f[t][0] - a_f.get(t, (0, 0))[0])
    busy_d = max(b_d, key=lambda t: b_d[t][0] - a_d.get(t, (0, 0))[0])
    same = sum(1 for f, d in samples if busy_f in f and busy_d in d and f[busy_f][1] == d[busy_d][1])
    out = fio.communicate()[0]
    iops = json.loads(out[out.index("{"):])["jobs"][0]["read"]["iops"]
    print(f"round {r + 1}: {iops:7.0f} IOPS, same CPU in {same}/{len(samples)} samples")
srv.terminate(); srv.wait()
