#!/bin/sh
# pst.sh BIN SERVER_CPUS FIO_CPUS [tcp]: 4K randread QD32 (fio's nbd engine, 6 s) against
# BIN (a diskgate binary, a wrapper that execs one, or `qemu-nbd`), each held to its CPUs by
# taskset ("0,1" lets the scheduler choose), over a Unix socket or TCP on 127.0.0.1; a 3 s
# perf stat of the server; prints, per disk read (block:block_rq_issue): server task-clock,
# context switches, io_uring_enter calls, block unplugs (disk dispatches) and wakeups the
# server made. Needs root, perf, taskset and /var/tmp/cmp/compare.img (bench/compare
# creates it). A record of what was run for output.txt, not a test.
DG=$1; SC=$2; FC=$3; IMG=/var/tmp/cmp/compare.img; OUT=$(mktemp -d); S=$OUT/sock
if [ "$4" = tcp ]; then L="--listen 127.0.0.1:10897"; U="nbd://127.0.0.1:10897/"; else L="--socket $S"; U="nbd+unix:///?socket=$S"; fi
if [ "$DG" = qemu-nbd ]; then
  if [ "$4" = tcp ]; then L="-b 127.0.0.1 -p 10897"; else L="-k $S"; fi
  taskset -c $SC qemu-nbd -f raw --cache=none --aio=io_uring -t $L $IMG & S2=$!
else
  taskset -c $SC $DG serve --cache direct --sync full $L $IMG 2>/dev/null & S2=$!
fi
sleep 0.7
taskset -c $FC fio --name=x --ioengine=nbd --uri=$U --rw=randread --bs=4k --iodepth=32 \
    --size=1G --runtime=6 --time_based --output-format=json > $OUT/fio.json 2>$OUT/fio.err &
F=$!; sleep 2
perf stat -x, -e task-clock,context-switches,syscalls:sys_enter_io_uring_enter,block:block_rq_issue,block:block_unplug,sched:sched_waking -p $S2 -o $OUT/stat.txt -- sleep 3 >/dev/null 2>&1
wait $F; kill $S2 2>/dev/null; wait $S2 2>/dev/null
python3 - $OUT/stat.txt $OUT/fio.json "$DG $SC/$FC" <<'PY'
import sys, json
st = {}
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].replace(".", "").isdigit():
        st[f[2]] = float(f[0])
n = st["block:block_rq_issue"]
t = open(sys.argv[2]).read()
iops = json.loads(t[t.index("{"):])["jobs"][0]["read"]["iops"]
print(f"{sys.argv[3]:20} iops {iops:7.0f} cpu/read {st['task-clock']*1000/n:5.2f} us cs {st['context-switches']/n:.3f} enter {st['syscalls:sys_enter_io_uring_enter']/n:.3f} unplug {st['block:block_unplug']/n:.3f} waking {st['sched:sched_waking']/n:.3f}")
PY
rm -rf $OUT
