#!/bin/bash
# T4's job against a diskgate built with gather.patch (an experiment, not in the server):
# DG_GATHER_US=N holds each new sync up to N us, until as many FLUSHes joined it as the
# previous sync served, so that fewer syncs serve more FLUSHes each. Interleaved rounds of
# --cache direct|writeback x N = 0 (the server as it is) | 300; syncs/s from the group
# commit's counters (DG_STATS=1 prints them when the export closes).
# usage: gather.sh PATCHED_DISKGATE FILE ROUNDS
set -e
dg=$1 file=$2 rounds=$3 sock=/tmp/t4-gather.sock
for r in $(seq "$rounds"); do
  echo "round $r:"
  for cache in direct writeback; do
    for us in 0 300; do
      rm -f $sock
      DG_STATS=1 DG_GATHER_US=$us $dg serve --cache $cache --sync full --socket $sock "$file" \
        2>/tmp/t4-gather.log &
      pid=$!
      for i in $(seq 50); do [ -S $sock ] && break; sleep 0.1; done
      fio --name=t4 --rw=randwrite --bs=4k --iodepth=8 --numjobs=4 --group_reporting \
        --time_based --runtime=5 --ramp_time=1 --size=1G --fsync=1 --ioengine=nbd \
        --uri="nbd+unix:///?socket=$sock" --output-format=json >/tmp/t4-gather.json 2>/dev/null
      kill -TERM $pid; wait $pid || true
      python3 - "$cache" "$us" <<'PY'
import json, re, sys
t = open("/tmp/t4-gather.json").read(); j = json.loads(t[t.index("{"):])["jobs"][0]
st = dict(re.findall(r"(\w+) (\d+)", open("/tmp/t4-gather.log").read().split("gc:")[1]))
secs = 6.0  # the server counts the ramp second too
print("  %-9s gather %3s us  %6.0f writes/s  W %4.0f us  F %5.0f us  %5.0f syncs/s  %4.1f FLUSH per sync"
      % (sys.argv[1], sys.argv[2], j["write"]["iops"], j["write"]["clat_ns"]["mean"] / 1e3,
         j["sync"]["lat_ns"]["mean"] / 1e3, int(st["syncs"]) / secs,
         int(st["flushes"]) / max(int(st["syncs"]), 1)))
PY
    done
  done
done
