#!/bin/sh
# pin.sh SRVCPUS FIOCPUS KIND [QD] : one fio job (nbd engine, 4K randread, 4 s) against one
# server over a Unix socket, the server and fio each limited to a set of CPUs (taskset).
# KIND: dg (diskgate --cache writeback: page cache), dgd (--cache direct), nbdkit (file
# plugin: page cache), qemu-nbd (--cache=none --aio=io_uring). Prints IOPS and p50.
# DISKGATE: the binary (default build/diskgate). Needs /var/tmp/cmp/compare.img
# (bench/compare creates it). A record of what was run for output.txt, not a test.
IMG=/var/tmp/cmp/compare.img; SOCK=/tmp/pin.$$.sock; J=/tmp/pin.$$.json; rm -f $SOCK
DG=${DISKGATE:-build/diskgate}
case $3 in
  dg) taskset -c $1 $DG serve --cache writeback --socket $SOCK $IMG 2>/dev/null & S=$! ;;
  dgd) taskset -c $1 $DG serve --cache direct --socket $SOCK $IMG 2>/dev/null & S=$! ;;
  nbdkit) taskset -c $1 nbdkit -f -U $SOCK file $IMG & S=$! ;;
  qemu-nbd) taskset -c $1 qemu-nbd -f raw --cache=none --aio=io_uring -t -k $SOCK $IMG & S=$! ;;
esac
sleep 0.7
taskset -c $2 fio --name=x --ioengine=nbd --uri="nbd+unix:///?socket=$SOCK" --rw=randread --bs=4k \
    --iodepth=${4:-1} --size=1G --runtime=4 --time_based --output-format=json 2>/dev/null >$J
python3 -c '
import sys,json; t=open(sys.argv[2]).read(); j=json.loads(t[t.index("{"):])["jobs"][0]["read"]
print(sys.argv[1], "iops %7.0f p50 %6.1f us" % (j["iops"], j["clat_ns"]["percentile"]["50.000000"]/1000))' \
  "$3 server@$1 fio@$2 qd${4:-1}" $J
kill $S; wait $S 2>/dev/null; rm -f $J $SOCK
