#!/bin/sh
# pstat.sh BIN : over TCP on 127.0.0.1, 4K randread QD32 (fio's nbd engine, 6 s), a 3 s
# perf stat of the server; prints per disk read (block:block_rq_issue): task-clock,
# context switches, io_uring_enter calls and packets sent on lo (net:net_dev_xmit). BIN is a
# diskgate binary or a wrapper that execs one. Needs root, perf and
# /var/tmp/cmp/compare.img (bench/compare creates it). A record of what was run for
# output.txt, not a test.
DG=$1; IMG=/var/tmp/cmp/compare.img; PORT=10898; OUT=$(mktemp -d)
$DG serve --cache direct --sync full --listen 127.0.0.1:$PORT $IMG 2>/dev/null & S=$!
sleep 0.7
fio --name=x --ioengine=nbd --uri=nbd://127.0.0.1:$PORT/ --rw=randread --bs=4k --iodepth=32 \
    --size=1G --runtime=6 --time_based --output-format=json > $OUT/fio.json 2>$OUT/fio.err &
F=$!; sleep 2
perf stat -x, -e task-clock,context-switches,syscalls:sys_enter_io_uring_enter,block:block_rq_issue,net:net_dev_xmit -p $S -o $OUT/stat.txt -- sleep 3 >/dev/null 2>&1
wait $F; kill $(pgrep -P $S) $S 2>/dev/null; wait $S 2>/dev/null
python3 - $OUT/stat.txt $OUT/fio.json "$DG" <<'PY'
import sys, json
st = {}
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].replace(".", "").isdigit():
        st[f[2]] = float(f[0])
n = st["block:block_rq_issue"]
iops = json.loads(open(sys.argv[2]).read()[open(sys.argv[2]).read().index("{"):])["jobs"][0]["read"]["iops"]
print(f"{sys.argv[3][-12:]:12} iops {iops:7.0f} cpu/read {st['task-clock']*1000/n:5.1f} us  cs/read {st['context-switches']/n:.3f}  enter/read {st['syscalls:sys_enter_io_uring_enter']/n:.3f}  xmit/read {st['net:net_dev_xmit']/n:.3f}")
PY
rm -rf $OUT
