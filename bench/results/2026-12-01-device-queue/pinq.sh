#!/bin/bash
# As run on 2026-12-01 (paths are that machine's: /tmp/s14 held these scripts).
# pinq.sh LABEL SERVERCPUS FIOCPUS
rm -f /tmp/s14/s.sock
taskset -c $2 /work/main/build/diskgate serve --cache direct --sync full --socket /tmp/s14/s.sock /var/tmp/cmp/compare.img 2>/dev/null & p=$!; sleep 0.5
python3 /tmp/s14/sampler.py 3 $1 & sp=$!
taskset -c $3 fio --name=t --ioengine=nbd --uri="nbd+unix:///?socket=/tmp/s14/s.sock" --rw=randread --bs=4k --iodepth=32 --runtime=3 --time_based --output-format=terse --terse-version=3 2>/dev/null | awk -F';' 'NF>10{print "'$1' read iops", $8}'
wait $sp; kill $p; wait $p
