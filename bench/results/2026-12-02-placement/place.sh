#!/bin/bash
# place.sh SERVER SERVERCPUS FIOCPUS unix|tcp -> one line: IOPS, server CPU us per read (fio nbd engine, 4K randread QD32, 4 s)
srv=$1 scpu=$2 fcpu=$3 tr=$4
img=/var/tmp/cmp/compare.img
sock=/tmp/place.sock; rm -f $sock
port=10877
if [ $tr = tcp ]; then uri="nbd://127.0.0.1:$port/"; else uri="nbd+unix:///?socket=$sock"; fi
case $srv in
 diskgate) if [ $tr = tcp ]; then a="--listen 127.0.0.1:$port"; else a="--socket $sock"; fi
   taskset -c $scpu ${DISKGATE:-build/diskgate} serve --cache direct --sync full $a $img 2>/dev/null >/dev/null & p=$! ;;
 qemu-nbd) if [ $tr = tcp ]; then a="-b 127.0.0.1 -p $port"; else a="-k $sock"; fi
   taskset -c $scpu qemu-nbd -f raw --cache=none --aio=io_uring --shared=1 -t $a $img 2>/dev/null & p=$! ;;
 host) out=$(taskset -c $fcpu fio --name=h --filename=$img --ioengine=io_uring --direct=1 --rw=randread --bs=4k --iodepth=32 --runtime=4 --time_based --output-format=terse --terse-version=3 2>/dev/null)
   echo "$out" | awk -F';' -v f=$fcpu '{printf "host     fio:%-4s %-4s iops %6d  fio-sys %s\n", f, "-", $8, $89}'; exit 0;;
esac
for i in $(seq 50); do { [ -S $sock ] || ss -ltn | grep -q ":$port " ; } && break; sleep 0.1; done
sleep 0.2
cpu0=$(cat /proc/$p/task/*/schedstat | awk "{s+=\$1} END{printf \"%d\", s}")
out=$(taskset -c $fcpu fio --name=t --ioengine=nbd --uri="$uri" --rw=randread --bs=4k --iodepth=32 --runtime=4 --time_based --output-format=terse --terse-version=3 2>/dev/null)
cpu1=$(cat /proc/$p/task/*/schedstat | awk "{s+=\$1} END{printf \"%d\", s}")
kill $p; wait $p 2>/dev/null
echo "$out" | awk -F';' -v s=$srv -v c=$((cpu1-cpu0)) -v sc=$scpu -v f=$fcpu -v t=$tr 'NF>10{ios=$6/4; printf "%-8s srv:%-3s fio:%-3s %-4s iops %6d  cpu/read %5.1f us\n", s, sc, f, t, $8, c/1000/ios}'
