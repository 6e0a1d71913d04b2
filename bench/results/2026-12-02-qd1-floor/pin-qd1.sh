#!/bin/sh
# T5's job (4K random reads, QD1, O_DIRECT) with diskgate and fio pinned by taskset, two
# rounds of each placement; the disk's interrupt (virtio1-req.0) goes to CPU 1 only.
# usage: pin-qd1.sh DISKGATE FILE
DG=$1 FILE=$2
for round in 1 2; do
  for pl in "1 0" "0 1" "1 1" "0 0"; do
    set -- $pl
    rm -f /tmp/p.sock
    taskset -c "$1" "$DG" serve --cache direct --sync full --socket /tmp/p.sock "$FILE" >/dev/null 2>&1 &
    sleep 0.4
    r=$(taskset -c "$2" fio --name=f --rw=randread --bs=4k --iodepth=1 --runtime=3 --time_based \
        --ramp_time=1 --size=1G --ioengine=nbd --uri='nbd+unix:///?socket=/tmp/p.sock' \
        --output-format=json 2>/dev/null | python3 -c 'import json,sys;t=sys.stdin.read();j=json.loads(t[t.index("{"):])["jobs"][0]["read"];print("%.0f IOPS p50 %.1f us"%(j["iops"],j["clat_ns"]["percentile"]["50.000000"]/1000))')
    kill $!; wait $! 2>/dev/null
    echo "server cpu $1 fio cpu $2: $r"
  done
done
