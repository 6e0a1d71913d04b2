#!/bin/sh
# qd1-timeline.sh DISKGATE FILE: where one 4K QD1 read's time goes in diskgate --cache direct
# (fio's nbd engine over a Unix socket; bpftrace over 3 s of a 6 s job, once per script).
set -e
dg=$1; file=$2; sock=/tmp/qd1-timeline.sock; here=$(dirname "$0")
rm -f $sock; "$dg" serve --cache direct --sync full --socket $sock "$file" 2>/dev/null & srv=$!
trap 'kill $srv' EXIT; sleep 0.5
for bt in qd1-timeline.bt qd1-submit.bt; do
  fio --name=f --rw=randread --bs=4k --iodepth=1 --time_based --runtime=6 --size=1G \
      --ioengine=nbd --uri="nbd+unix:///?socket=$sock" --output-format=json > /tmp/qd1-timeline.json &
  sleep 2; bpftrace "$here/$bt" > /tmp/qd1-timeline.out 2>/dev/null; wait $!
  echo "== $bt (fio p50 $(python3 -c "import json; t = open('/tmp/qd1-timeline.json').read(); print(json.loads(t[t.index('{'):])['jobs'][0]['read']['clat_ns']['percentile']['50.000000']/1000)") us)"
  python3 "$here/hist-summary.py" /tmp/qd1-timeline.out
done
