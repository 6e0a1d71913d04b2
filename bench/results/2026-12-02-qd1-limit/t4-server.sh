#!/bin/sh
# t4-server.sh DISKGATE FILE: T4's job (6 s) against diskgate --cache direct, then --cache
# writeback (--sync full both), with t4-server.bt over 3 s of each: the client's mean write and
# FLUSH latency (fio) beside the server's (txn_submit to txn_reply_encode) and the syncs' (S).
dg=$(realpath "$1"); file=$2; sock=/tmp/t4-server.sock; here=$(dirname "$0")
for mode in direct writeback; do
  rm -f $sock; "$dg" serve --cache $mode --sync full --socket $sock "$file" >/dev/null 2>&1 & srv=$!
  sleep 0.5
  fio --name=t4 --rw=randwrite --bs=4k --iodepth=8 --numjobs=4 --group_reporting --fsync=1 \
      --time_based --runtime=6 --size=1G --ioengine=nbd --uri="nbd+unix:///?socket=$sock" \
      --output-format=json > /tmp/t4-server.json 2>/dev/null &
  sleep 2; bpftrace "$here/t4-server.bt" "$dg" > /tmp/t4-server.out 2>/dev/null; wait $!
  kill $srv; wait $srv 2>/dev/null
  python3 - $mode <<'PY'
import json, re, sys
t = open('/tmp/t4-server.json').read(); j = json.loads(t[t.index('{'):])['jobs'][0]
o = open('/tmp/t4-server.out').read()
g = lambda pat: int(re.search(pat, o).group(1))
w_srv = g(r'@sum_us\[1\]: (\d+)') / g(r'@n\[1\]: (\d+)')
f_srv = g(r'@sum_us\[3\]: (\d+)') / g(r'@n\[3\]: (\d+)')
s = g(r'@sync_us: (\d+)') / g(r'@syncs: (\d+)')
w, f = j['write']['clat_ns']['mean'] / 1000, j['sync']['lat_ns']['mean'] / 1000
print("--cache %-9s %6.0f writes/s | client: W %5.0f  F %5.0f us | server: write %5.0f  FLUSH %5.0f us"
      " | sync S %5.0f us, %4.0f/s | outside the server: W %4.0f, F %4.0f us" % (
      sys.argv[1], j['write']['iops'], w, f, w_srv, f_srv, s, g(r'@syncs: (\d+)') / 3, w - w_srv, f - f_srv))
PY
done
