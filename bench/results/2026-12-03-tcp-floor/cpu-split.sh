#!/usr/bin/env bash
# cpu-split.sh DISKGATE FILE CACHE ROUNDS [tcp|unix]
# The server's user and system CPU per 4K random write (fio's nbd engine, QD32, one
# connection, 5 s per round), from utime and stime in /proc/PID/stat (clock ticks), over TCP
# on 127.0.0.1 or a Unix socket. CACHE is diskgate's --cache (direct, or writeback for a
# tmpfs file, where O_DIRECT does not exist). --sync none: the job sends no FLUSH or FUA.
# Prints one line per round. Needs fio with the nbd engine (scripts/deps.sh bench).
set -euo pipefail
dg=$1 file=$2 cache=$3 rounds=$4 transport=${5:-tcp}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
tck=$(getconf CLK_TCK)
for _ in $(seq 1 "$rounds"); do
  if [ "$transport" = unix ]; then
    addr=(--socket "$dir/dg.sock")
  else
    addr=(--listen 127.0.0.1:0)
  fi
  "$dg" serve "${addr[@]}" --cache "$cache" --sync none "$file" >"$dir/dg.log" 2>&1 &
  pid=$!
  for _ in $(seq 50); do grep -q 'listening on' "$dir/dg.log" && break; sleep 0.1; done
  uri=$(grep -o 'nbd[+a-z]*://[^ ]*' "$dir/dg.log" | head -n 1)
  read -r u0 s0 < <(awk '{ print $14, $15 }' "/proc/$pid/stat")
  fio --name=w --ioengine=nbd --uri="$uri" --rw=randwrite --bs=4k --iodepth=32 \
    --runtime=5 --time_based --size=1G --output-format=json >"$dir/fio.out"
  read -r u1 s1 < <(awk '{ print $14, $15 }' "/proc/$pid/stat")
  kill "$pid"
  wait "$pid" || true
  python3 - "$u0" "$s0" "$u1" "$s1" "$tck" "$dir/fio.out" <<'PY'
import json, sys
u0, s0, u1, s1, tck = map(int, sys.argv[1:6])
text = open(sys.argv[6]).read()
job = json.loads(text[text.index('{'):])['jobs'][0]   # fio prints a line before its JSON
ios = job['write']['total_ios']
per = lambda ticks: ticks / tck * 1e6 / ios
print(f"IOPS {ios / job['job_runtime'] * 1000:.0f}  user {per(u1 - u0):.1f} us  "
      f"system {per(s1 - s0):.1f} us per write")
PY
done
