#!/bin/sh
# acks.sh DISKGATE WHO : over TCP on 127.0.0.1, 4K randread QD32 (fio's nbd engine), the packets
# transmitted on lo in the server process's context per disk read, split by size (pure ACKs
# are 66 bytes on lo; data packets carry replies), and the server's task-clock per read.
# WHO: qemu-nbd (DISKGATE is then ignored), or any label for a run of DISKGATE (the binary, or
# a wrapper that execs it); both use O_DIRECT, so every read reaches the disk. "reads" counts
# the disk reads in the 2 s perf record window; task-clock comes from a 1 s perf stat window
# after it. net_dev_xmit in the server's context also catches packets that softirq work run
# there sends for other sockets: the profile (profile.txt) is what places the ACKs in the
# server's own RECVs. Needs root (perf, the
# tracepoints net:net_dev_xmit and block:block_rq_issue) and /var/tmp/cmp/compare.img
# (bench/compare creates it). A record of what was run for output.txt, not a test.
DG=$1; WHO=$2; IMG=/var/tmp/cmp/compare.img; PORT=10897; OUT=$(mktemp -d)
case $WHO in
  qemu-nbd) qemu-nbd -f raw --cache=none --aio=io_uring -b 127.0.0.1 -p $PORT -t $IMG & S=$! ;;
  *) $DG serve --cache direct --sync full --listen 127.0.0.1:$PORT $IMG 2>/dev/null & S=$! ;;
esac
sleep 0.7
fio --name=x --ioengine=nbd --uri=nbd://127.0.0.1:$PORT/ --rw=randread --bs=4k --iodepth=32 \
    --size=1G --runtime=8 --time_based --output-format=json > $OUT/fio.json &
F=$!; sleep 2
perf record -q -e net:net_dev_xmit -e block:block_rq_issue -p $S -o $OUT/p.data -- sleep 2 >/dev/null 2>&1
perf stat -x, -e task-clock,block:block_rq_issue -p $S -o $OUT/stat.txt -- sleep 1 >/dev/null 2>&1
wait $F; kill $S; wait $S 2>/dev/null
perf script -i $OUT/p.data -F event,trace 2>/dev/null | WHO=$WHO OUT=$OUT python3 -c '
import os, re, sys
reads = acks = data = 0
for line in sys.stdin:
    if "block_rq_issue" in line:
        reads += 1
        continue
    m = re.search(r"len=(\d+)", line)
    if m:
        if int(m.group(1)) <= 80:
            acks += 1
        else:
            data += 1
stat = {}
for line in open(os.environ["OUT"] + "/stat.txt"):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].replace(".", "").isdigit():
        stat[f[2]] = float(f[0])
cpu = stat["task-clock"] * 1000 / stat["block:block_rq_issue"]
who = os.environ["WHO"]
print(f"{who:14} reads {reads:6}: pure ACKs {acks / reads:.3f}, data packets {data / reads:.3f} per read; "
      f"server task-clock {cpu:.1f} us per read")'
rm -rf $OUT
