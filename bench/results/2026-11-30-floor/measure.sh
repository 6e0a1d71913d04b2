#!/bin/sh
# The measurements behind docs/performance.md's "T1 CPU per read" (2026-11-30, fifth
# session), as run: ./measure.sh DISKGATE > output-N.txt (root; perf; the file bench/compare
# writes at /var/tmp/cmp/compare.img). Three parts:
#  1. fio on the host, 4K random O_DIRECT at QD32: kernel CPU per I/O submitting one I/O at a
#     time (fio's default) and in batches of 4 to 32;
#  2. block:block_unplug: how many requests go to the disk per dispatch, under fio on the
#     host and under diskgate (fio's nbd engine at QD32);
#  3. net:net_dev_xmit: packets diskgate sends per 4K read over TCP, and how many are pure
#     ACKs (under 100 bytes).
set -u
DG=${1:?usage: measure.sh DISKGATE}
F=/var/tmp/cmp/compare.img
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

fio_json() { # prints iops and fio's kernel/user CPU per I/O from fio's JSON on stdin
  python3 -c '
import json, sys
t = sys.stdin.read(); j = json.loads(t[t.index("{"):])["jobs"][0]
ios = j["read"]["total_ios"] + j["write"]["total_ios"]
print("iops %6.0f  kernel %.2f us/IO  user %.2f us/IO" % (j["read"]["iops"] + j["write"]["iops"],
      j["sys_cpu"] / 100 * j["job_runtime"] * 1000 / ios, j["usr_cpu"] / 100 * j["job_runtime"] * 1000 / ios))'
}

echo "== 1. host, 4K QD32 O_DIRECT io_uring, 4 s after 1 s ramp"
for rw in randread randwrite; do
  for b in 1 4 8 16 32; do
    if [ $b = 1 ]; then opt=""; else
      opt="--iodepth_batch_submit=$b --iodepth_batch_complete_min=$((b < 16 ? b : 16)) --iodepth_batch_complete_max=32"; fi
    printf '%-9s batch %-2s ' $rw $b
    fio --name=x --ioengine=io_uring --direct=1 --filename=$F --rw=$rw --bs=4k --iodepth=32 $opt \
      --size=1G --runtime=4 --ramp_time=1 --time_based --output-format=json | fio_json
  done
done

serve() { # serve MODE: starts diskgate --cache direct; sets S and U
  if [ $1 = tcp ]; then
    $DG serve --cache direct --listen 127.0.0.1:10899 $F >/dev/null 2>&1 & U="nbd://127.0.0.1:10899/"
  else
    $DG serve --cache direct --socket $T/s.sock $F >/dev/null 2>&1 & U="nbd+unix:///?socket=$T/s.sock"
  fi
  S=$!; sleep 0.5
}

unplugs() { # unplugs WHO RW [MODE]: requests per dispatch for 2 s, from WHO's context
  if [ $1 = host ]; then
    fio --name=x --ioengine=io_uring --direct=1 --filename=$F --rw=$2 --bs=4k --iodepth=32 \
      --size=1G --runtime=6 --time_based --output-format=json > $T/f.json &
    F2=$!; sleep 1.5; P=$(pgrep -f 'fio --name=x' | tail -1)
  else
    serve $3
    fio --name=x --ioengine=nbd --uri="$U" --rw=$2 --bs=4k --iodepth=32 --size=1G \
      --runtime=6 --time_based --output-format=json > $T/f.json &
    F2=$!; sleep 1.5; P=$S
  fi
  perf record -q -e block:block_rq_issue -e block:block_unplug -p $P -o $T/p.data -- sleep 2 \
    >/dev/null 2>&1
  wait $F2; [ $1 = host ] || { kill $S; wait $S 2>/dev/null; }
  printf '%-8s %-9s %-4s ' $1 $2 "${3:-}"
  perf script -i $T/p.data -F event,trace 2>/dev/null | awk '
    /block_rq_issue/ {iss++} /block_unplug/ {un++}
    END {printf "requests issued %d, dispatches (unplugs) %d: %.2f requests per dispatch\n", iss, un, iss / un}'
}

echo "== 2. requests per dispatch to the disk"
unplugs host randread
unplugs host randwrite
unplugs diskgate randread unix
unplugs diskgate randwrite unix
unplugs diskgate randread tcp
unplugs diskgate randwrite tcp

echo "== 3. packets diskgate sends over TCP, 4K randread QD32, 2 s"
serve tcp
fio --name=x --ioengine=nbd --uri="$U" --rw=randread --bs=4k --iodepth=32 --size=1G \
  --runtime=6 --time_based --output-format=json > $T/f.json &
F2=$!; sleep 1.5
perf record -q -e net:net_dev_xmit -e io_uring:io_uring_submit_req -p $S -o $T/n.data -- sleep 2 \
  >/dev/null 2>&1
wait $F2; kill $S; wait $S 2>/dev/null
perf script -i $T/n.data 2>/dev/null | awk '
  /net_dev_xmit/ {x++; for (i = 1; i <= NF; i++) if ($i ~ /^len=/) {split($i, a, "="); if (a[2] < 100) small++}}
  /opcode READ/ {r++} /opcode RECV/ {rv++} /opcode SENDMSG/ {s++}
  END {printf "reads %d: RECV %.2f, SENDMSG %.2f per read; packets %d, of them under 100 bytes (pure ACKs) %d: %.2f per read\n", r, rv / r, s / r, x, small, small / r}'
