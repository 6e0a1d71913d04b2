#!/bin/bash
# As run on 2026-12-01 (paths are that machine's: /tmp/s14 held these scripts).
# cmpq.sh ROUND: device in-flight samples for diskgate, nbdkit, qemu-nbd, host at 4K randread QD32
r=$1
one() { # label uri
  python3 /tmp/s14/sampler.py 3 $1-$r & sp=$!
  fio --name=t --ioengine=nbd --uri="$2" --rw=randread --bs=4k --iodepth=32 --runtime=3 --time_based --output-format=terse --terse-version=3 2>/dev/null | awk -F';' 'NF>10{print "'$1' read iops", $8}'
  wait $sp
}
rm -f /tmp/s14/*.sock
/work/main/build/diskgate serve --cache direct --sync full --socket /tmp/s14/s.sock /var/tmp/cmp/compare.img 2>/dev/null & p=$!; sleep 0.5
one dg 'nbd+unix:///?socket=/tmp/s14/s.sock'; kill $p; wait $p
nbdkit -f -U /tmp/s14/k.sock file /var/tmp/cmp/compare.img & p=$!; sleep 0.5
one kit 'nbd+unix:///?socket=/tmp/s14/k.sock'; kill $p; wait $p
qemu-nbd -f raw --cache=none --aio=io_uring -t -k /tmp/s14/q.sock /var/tmp/cmp/compare.img & p=$!; sleep 0.5
one qemu 'nbd+unix:///?socket=/tmp/s14/q.sock'; kill $p; wait $p
python3 /tmp/s14/sampler.py 3 host-$r & sp=$!
fio --name=t --filename=/var/tmp/cmp/compare.img --ioengine=io_uring --direct=1 --rw=randread --bs=4k --iodepth=32 --runtime=3 --time_based --output-format=terse --terse-version=3 2>/dev/null | awk -F';' 'NF>10{print "host read iops", $8}'
wait $sp
