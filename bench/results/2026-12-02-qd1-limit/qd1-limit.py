#!/usr/bin/python3
"""T5's limit on this machine: 4K random reads at QD1 over a Unix socket (fio's nbd engine),
interleaved rounds. For each cell it records fio's completion-latency histogram (json+) and,
with bpftrace over 3 s in the middle of the job, the block layer's own latency for each read
(block_rq_issue to block_rq_complete, 1 us buckets, 1 ms and over counted as 1 ms: the virtual disk's service time, including
the delivery of its interrupt, as the guest sees it).
Cells: the host path (fio, io_uring, O_DIRECT); diskgate --cache direct; qemu-nbd --cache=none
--aio=io_uring; diskgate --cache writeback on a file already in the page cache (the round trip
with no disk); and diskgate --cache direct with two SCHED_IDLE spinners that keep both vCPUs from
halting (what busy polling could buy at best, at the cost of both CPUs).
Per round it prints p50s and floors: the p50 of a sum of independent draws from histograms.
floor-X: the block layer's latency under X (the host path alone, diskgate, qemu-nbd) + the
no-disk round trip; floor-host+kernel and floor-dg+kernel add the kernel's submit path (the read's SQE to
block_rq_issue) and wake (block_rq_complete to the read's CQE) as fio on the file pays them.
goal: 0.6 x qemu-nbd's p50 in the same round.
usage: qd1-limit.py DISKGATE FILE ROUNDS"""
import json, re, statistics, subprocess, sys, time

from served import served, warm_page_cache

dg, path, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
BT = """tracepoint:io_uring:io_uring_submit_req /comm == str($1) && (args->opcode == 22 || args->opcode == 4 || args->opcode == 1)/ {
  @sub = nsecs; }
tracepoint:block:block_rq_issue { @s[args->sector] = nsecs;
  if (@sub) { @submit = lhist((nsecs - @sub) / 1000, 0, 1000, 1); @sub = 0; } }
tracepoint:block:block_rq_complete /@s[args->sector]/ {
  @d2c = lhist((nsecs - @s[args->sector]) / 1000, 0, 1000, 1); delete(@s[args->sector]);
  @cmp = nsecs; }
tracepoint:io_uring:io_uring_complete /comm == str($1) && @cmp/ {
  @wake = lhist((nsecs - @cmp) / 1000, 0, 1000, 1); @cmp = 0; }
interval:s:3 { exit(); }
END { clear(@s); clear(@sub); clear(@cmp); }
"""


def hist_of(text, name):
    """The lhist @name of bpftrace's output as [(us, count)]; 1 ms and over as 1000 us."""
    body = text.split("@" + name + ":", 1)[1].split("\n\n", 1)[0]
    h = [(float(lo), int(c)) for lo, c in re.findall(r"\[(\d+), \d+\)\s+(\d+)", body) if int(c)]
    h += [(1000.0, int(c)) for c in re.findall(r"\[1000, \.\.\.\)\s+(\d+)", body)]
    return h


def run_cell(target, comm):
    """fio's histogram, and with comm (the process that submits the reads) the block layer's
    (d2c), the kernel's submit path (submit: the read's SQE to block_rq_issue) and the wake
    (wake: block_rq_complete to the read's CQE), each [(us, count)]."""
    cmd = ["fio", "--name=f", "--rw=randread", "--bs=4k", "--iodepth=1", "--time_based",
           "--runtime=6", "--ramp_time=1", "--size=1G", "--output-format=json+"]
    cmd += (["--ioengine=nbd", "--uri=" + target] if target.startswith("nbd")
            else ["--ioengine=io_uring", "--direct=1", "--filename=" + target])
    f = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    cell = {}
    if comm:
        time.sleep(2)
        bt = subprocess.run(["bpftrace", "-e", BT, comm], capture_output=True, text=True,
                            timeout=30)
        try:
            cell = {k: hist_of(bt.stdout, k) for k in ("d2c", "submit", "wake")}
        except IndexError:
            sys.exit("bpftrace gave no histogram for %s: %s" % (comm, bt.stderr.strip()))
    out = f.communicate()[0]
    job = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    cell["bins"] = sorted((int(k) / 1000.0, v) for k, v in job["clat_ns"]["bins"].items())
    cell["iops"] = job["iops"]
    return cell


def quantile(bins, q):
    total, run = sum(c for _, c in bins), 0
    for v, c in bins:
        run += c
        if run >= q * total:
            return v
    return bins[-1][0]


def dist(h):
    """A histogram [(us, count)] as {whole us: probability}."""
    n, p = sum(c for _, c in h), {}
    for v, c in h:
        p[int(v)] = p.get(int(v), 0.0) + c / n
    return p


def conv(a, b):
    out = {}
    for i, x in a.items():
        for j, y in b.items():
            out[i + j] = out.get(i + j, 0.0) + x * y
    return {k: v for k, v in out.items() if v > 1e-12}


def sum_p50(*hists):
    """p50 (us, 1 us resolution) of the sum of independent draws from each histogram."""
    p = dist(hists[0])
    for h in hists[1:]:
        p = conv(p, dist(h))
    run = 0.0
    for i in sorted(p):
        run += p[i]
        if run >= 0.5:
            return float(i)
    return float(max(p))


CELLS = ["host", "diskgate-direct", "qemu-nbd", "diskgate-wb-warm", "diskgate-direct-spin"]
res = {k: [] for k in CELLS}
rows = []
for r in range(rounds):
    res["host"].append(run_cell(path, "fio"))
    with served("diskgate", {}, dg, path) as uri:
        res["diskgate-direct"].append(run_cell(uri, "diskgate"))
        spin = [subprocess.Popen(["chrt", "-i", "0", "sh", "-c", "while :; do :; done"])
                for _ in range(2)]
        try:
            res["diskgate-direct-spin"].append(run_cell(uri, "diskgate"))
        finally:
            for sp in spin:
                sp.kill()
                sp.wait()
    with served("qemu-nbd", {}, dg, path) as uri:
        res["qemu-nbd"].append(run_cell(uri, "qemu-nbd"))
    warm_page_cache(path)
    with served("diskgate", {"writeback": 1}, dg, path) as uri:
        res["diskgate-wb-warm"].append(run_cell(uri, None))
    last = {k: v[-1] for k, v in res.items()}
    rt, host = last["diskgate-wb-warm"]["bins"], last["host"]
    row = {"goal": 0.6 * quantile(last["qemu-nbd"]["bins"], .5),
           "floor-host": sum_p50(host["d2c"], rt),
           "floor-dg": sum_p50(last["diskgate-direct"]["d2c"], rt),
           "floor-qemu": sum_p50(last["qemu-nbd"]["d2c"], rt),
           "floor-host+kernel": sum_p50(host["d2c"], rt, host["submit"], host["wake"]),
           "floor-dg+kernel": sum_p50(last["diskgate-direct"]["d2c"], rt, host["submit"],
                                      host["wake"])}
    rows.append(row)
    print("round %d:" % (r + 1))
    for k in CELLS:
        x = last[k]
        d = ("  block layer p50 %5.1f (mean %5.1f), submit p50 %4.1f, wake p50 %4.1f us" % (
            quantile(x["d2c"], .5), sum(v * c for v, c in x["d2c"]) / sum(c for _, c in x["d2c"]),
            quantile(x["submit"], .5), quantile(x["wake"], .5)) if "d2c" in x else "")
        print("  %-21s fio p50 %6.1f us %6.0f IOPS%s" % (k, quantile(x["bins"], .5), x["iops"], d))
    print("  " + ", ".join("%s %.1f us" % kv for kv in row.items()), flush=True)
print("medians over %d rounds:" % rounds)
for k in CELLS:
    v = res[k]
    d = ("; block layer p50 %.1f, submit p50 %.1f, wake p50 %.1f us" % tuple(
        statistics.median(quantile(x[h], .5) for x in v) for h in ("d2c", "submit", "wake"))
         if "d2c" in v[0] else "")
    print("  %-21s fio p50 %6.1f us (rounds %s)%s" % (
        k, statistics.median(quantile(x["bins"], .5) for x in v),
        ", ".join("%.1f" % quantile(x["bins"], .5) for x in v), d))
for k in rows[0]:
    print("  %-21s %6.1f us (rounds %s)" % (k, statistics.median(r[k] for r in rows),
                                             ", ".join("%.1f" % r[k] for r in rows)))
