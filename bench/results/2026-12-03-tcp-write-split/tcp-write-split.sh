#!/bin/sh
# tcp-write-split.sh DISKGATE ROUNDS : where a 4K random write's server CPU goes over TCP
# (127.0.0.1) against a Unix socket, for diskgate (--cache direct --sync full) and qemu-nbd
# (--cache=none --aio=io_uring), T1's job (fio's nbd engine, 4K randwrite, QD32, one
# connection), in interleaved rounds. Per cell: fio's IOPS; the server's task-clock and
# the disk requests it issued and dispatched in a 1 s perf stat window (block_rq_issue,
# block_unplug), so CPU per write and writes per dispatch; and the shares of the server's
# CPU (perf record -g, 3 s at 4999 Hz, inclusive) under the kernel functions that send
# replies (io_sendmsg for diskgate, sendmsg(2)'s __sys_sendmsg for qemu-nbd), receive
# requests, write to the disk, run softirq work (handle_softirqs; over TCP it includes the
# loopback's receive processing) and ring the virtio doorbell (iowrite16), turned into µs
# per write; and, during the perf record window, in how many samples server and fio last
# ran on the same CPU. Needs root, perf and
# /var/tmp/cmp/compare.img. A record of what was run, not a test.
DG=$1; ROUNDS=${2:-3}; IMG=/var/tmp/cmp/compare.img; PORT=10899; D=$(mktemp -d); SOCK=$D/s.sock
# placement.py SERVER FIO: over 3 s (150 samples, 20 ms apart), in how many samples the
# server's busiest thread and fio's busiest thread (its job process included) last ran on
# the same CPU (field 39 of /proc/TID/stat), as bench/results/2026-12-01-multishot/modes.py.
cat > $D/placement.py <<'PY'
import glob, sys, time
def tasks(pids):
    out = {}
    for pid in pids:
        for t in glob.glob(f"/proc/{pid}/task/*/stat"):
            try:
                f = open(t).read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[t] = (int(f[11]) + int(f[12]), int(f[36]))
    return out
srv, fio = int(sys.argv[1]), int(sys.argv[2])
try:
    kids = [int(x) for x in open(f"/proc/{fio}/task/{fio}/children").read().split()]
except OSError:
    kids = []
a_f, a_d = tasks([fio] + kids), tasks([srv])
samples = []
for i in range(150):
    samples.append((tasks([fio] + kids), tasks([srv])))
    time.sleep(0.02)
b_f, b_d = samples[-1]
bf = max(b_f, key=lambda t: b_f[t][0] - a_f.get(t, (0, 0))[0])
bd = max(b_d, key=lambda t: b_d[t][0] - a_d.get(t, (0, 0))[0])
print(sum(1 for f, d in samples if bf in f and bd in d and f[bf][1] == d[bd][1]), len(samples))
PY
cell() { # $1 server, $2 transport
  rm -f $SOCK
  if [ $2 = tcp ]; then U=nbd://127.0.0.1:$PORT/; else U="nbd+unix:///?socket=$SOCK"; fi
  case $1/$2 in
    diskgate/tcp) $DG serve --cache direct --sync full --listen 127.0.0.1:$PORT $IMG 2>/dev/null & S=$! ;;
    diskgate/unix) $DG serve --cache direct --sync full --socket $SOCK $IMG 2>/dev/null & S=$! ;;
    qemu-nbd/tcp) qemu-nbd -f raw --cache=none --aio=io_uring -b 127.0.0.1 -p $PORT -t $IMG & S=$! ;;
    qemu-nbd/unix) qemu-nbd -f raw --cache=none --aio=io_uring -k $SOCK -t $IMG & S=$! ;;
  esac
  sleep 0.7
  fio --name=x --ioengine=nbd --uri="$U" --rw=randwrite --bs=4k --iodepth=32 --size=1G \
      --runtime=7 --time_based --output-format=json > $D/fio.json 2>/dev/null &
  F=$!; sleep 1.5
  perf stat -x, -e task-clock,block:block_rq_issue,block:block_unplug -p $S -o $D/stat.txt -- sleep 1 >/dev/null 2>&1
  python3 $D/placement.py $S $F > $D/place.txt &
  P=$!
  perf record -q -g -F 4999 -p $S -o $D/p.data -- sleep 3 >/dev/null 2>&1
  wait $P; wait $F; kill $S; wait $S 2>/dev/null
  perf report -i $D/p.data --children --stdio -g none --percent-limit 0.01 2>/dev/null > $D/rep.txt
  SERVER=$1 T=$2 D=$D python3 - <<'PY'
import json, os, re
d = os.environ["D"]
s = open(d + "/fio.json").read()
iops = json.loads(s[s.index("{"):])["jobs"][0]["write"]["iops"]
stat = {}
for line in open(d + "/stat.txt"):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].replace(".", "").isdigit():
        stat[f[2]] = float(f[0])
writes = stat["block:block_rq_issue"]
cpu = stat["task-clock"] * 1000 / writes
disp = writes / max(stat["block:block_unplug"], 1)
same, n = open(d + "/place.txt").read().split()
share = {}
for line in open(d + "/rep.txt"):
    m = re.match(r"\s+([\d.]+)%\s+([\d.]+)%\s+\S+\s+\S+\s+\[[k.]\]\s+(\S+)", line)
    if m:
        share.setdefault(m.group(3), float(m.group(1)))
send = share.get("io_sendmsg") or share.get("__sys_sendmsg", 0)
# inclusive shares: __x64_sys_recvmsg contains __sys_recvmsg, so take the larger, not the sum
recv = share.get("io_recv") or max(share.get("__sys_recvmsg", 0), share.get("__x64_sys_recvmsg", 0))
write = share.get("io_write", 0) or share.get("ext4_file_write_iter", 0)
parts = [("send replies", send), ("receive requests", recv), ("disk write", write),
         ("softirq", share.get("handle_softirqs", 0)), ("doorbell", share.get("iowrite16", 0))]
print(f"{os.environ['SERVER']:8} {os.environ['T']:4} {iops:7.0f} IOPS, {cpu:5.1f} us/write, "
      f"{disp:4.1f} writes/dispatch, same CPU {same}/{n}; " +
      ", ".join(f"{n} {p:4.1f}% = {p * cpu / 100:4.1f} us" for n, p in parts))
PY
}
for r in $(seq 1 $ROUNDS); do
  echo "round $r"
  for srv in diskgate qemu-nbd; do for t in unix tcp; do cell $srv $t; done; done
done
rm -rf $D
