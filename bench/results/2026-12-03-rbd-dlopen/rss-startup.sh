#!/bin/bash
# rss-startup.sh LINKED NEW IMAGE ROUNDS: two diskgate binaries, one linked with librbd and
# librados (before) and one loading them at run time (after), in ROUNDS interleaved rounds:
#  - start-up: `diskgate --version`: the mean task-clock of 20 runs under perf stat -r 20,
#    then the mean wall time of 20 more runs timed with date (printed in that order);
#  - idle RSS: `diskgate serve --cache direct --sync full` of IMAGE, 1 s after it listens;
#  - T6's load for 20 s (bench/compare's memory_check: fio's nbd engine, randrw 4K,
#    16 jobs x iodepth 64, one Unix socket): the largest VmRSS, RssAnon and RssFile sampled
#    each second (kB, /proc/PID/status);
#  - idle RSS of a server of rbd:rbd/absent (no cluster: opened at the first NBD_OPT_GO).
set -euo pipefail
LINKED=$1 NEW=$2 IMG=$3 ROUNDS=${4:-3}
S=/tmp/rss-startup.$$.sock

status() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

serve_idle() { # BIN SPEC -> "rss anon file" 1 s after start
  rm -f "$S"
  "$1" serve --cache direct --sync full --socket "$S" "$2" >/dev/null 2>&1 &
  local p=$!
  until [ -S "$S" ]; do sleep 0.05; done
  sleep 1
  echo "$(status $p VmRSS) $(status $p RssAnon) $(status $p RssFile)"
  kill $p; wait $p 2>/dev/null || true
}

serve_load() { # BIN -> "max_rss anon file"
  rm -f "$S"
  "$1" serve --cache direct --sync full --socket "$S" "$IMG" >/dev/null 2>&1 &
  local p=$! max=0 a=0 f=0 r
  until [ -S "$S" ]; do sleep 0.05; done
  fio --name=mem --ioengine=nbd --uri="nbd+unix:///?socket=$S" --rw=randrw --bs=4k \
    --iodepth=64 --numjobs=16 --time_based --runtime=20 --size=1G >/dev/null 2>&1 &
  local fp=$!
  while kill -0 $fp 2>/dev/null; do
    r=$(status $p VmRSS)
    if [ "$r" -gt "$max" ]; then max=$r; a=$(status $p RssAnon); f=$(status $p RssFile); fi
    sleep 1
  done
  wait $fp || true
  echo "$max $a $f"
  kill $p; wait $p 2>/dev/null || true
}

startup() { # BIN -> "task_clock_ms wall_ms"
  perf stat -r 20 -x, -e task-clock "$1" --version 2>&1 >/dev/null |
    awk -F, '/task-clock/ { tc = $1 } END { printf "%.2f", tc }'
  local t0 t1
  t0=$(date +%s%N)
  for _ in $(seq 20); do "$1" --version >/dev/null; done
  t1=$(date +%s%N)
  printf " %.2f\n" "$(echo "($t1 - $t0) / 20 / 1000000" | bc -l)"
}

date
echo "binary start-up(task-clock ms, wall ms per --version) idle(rss anon file kB) T6-load-20s(max_rss anon file kB) rbd-idle(rss anon file kB)"
for round in $(seq "$ROUNDS"); do
  for b in "$LINKED" "$NEW"; do
    name=linked; [ "$b" = "$NEW" ] && name=dlopen
    echo "round $round $name start-up: $(startup "$b") idle: $(serve_idle "$b" "$IMG") load: $(serve_load "$b") rbd-idle: $(serve_idle "$b" rbd:rbd/absent)"
  done
done
date
rm -f "$S"
