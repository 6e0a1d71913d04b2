#!/bin/bash
# The block layer's latency (d2c.bt: block_rq_issue to block_rq_complete, 5 us buckets, 3 s) during a 6 s fio
# job of 4K random reads at QD1; prints fio's IOPS and p50, the mean, the p50 bucket and the share under 40 us.
# usage: d2c-run.sh LABEL [PREFIX...] -- FIO-TARGET-ARGS: runs fio QD1 randread for 6 s (the args after -- are fio's target args), D2C histogram over 3 s
label=$1; shift; pre=(); while [ "$1" != "--" ]; do pre+=("$1"); shift; done; shift
"${pre[@]}" fio --name=f --rw=randread --bs=4k --iodepth=1 --time_based --runtime=6 --size=1G "$@" --output-format=json > /tmp/fio-x.json 2>&1 & sleep 2
out=$(timeout 10 bpftrace "$(dirname "$0")/d2c.bt" 2>/dev/null); wait
python3 - "$label" "$out" <<'PY'
import json, sys, re
t = open('/tmp/fio-x.json').read(); j = json.loads(t[t.index('{'):])['jobs'][0]['read']
o = sys.argv[2]
n = int(re.search(r'@n: (\d+)', o).group(1)); s = int(re.search(r'@sum: (\d+)', o).group(1))
b = {int(k): int(v) for k, v in re.findall(r'\[(\d+), \d+\)\s+(\d+)', o)}
tot = sum(b.values()); run = 0; p50 = None
for k in sorted(b):
    run += b[k]
    if p50 is None and run >= tot / 2: p50 = k
fast = sum(v for k, v in b.items() if k < 40) / tot
print("%-28s fio IOPS %6.0f p50 %6.1f us | D2C mean %5.1f us, p50 bucket %d-%d, <40us %2.0f%%" % (sys.argv[1], j['iops'], j['clat_ns']['percentile']['50.000000']/1000, s/n, p50, p50+5, 100*fast))
PY
