#!/bin/bash
# smaps-libs.sh IMAGE SECONDS NAME=BIN...: for each binary in turn, `diskgate serve --cache
# direct --sync full` of IMAGE under T6's load (fio's nbd engine, randrw 4K, 16 jobs x
# iodepth 64, one Unix socket) for SECONDS; at the largest VmRSS sampled each second it
# keeps /proc/PID/smaps, then prints VmRSS, RssAnon and RssFile (kB) and the mappings of
# 300 kB or more, summed by file (anonymous mappings as "[anon]").
set -euo pipefail
IMG=$1 SECS=$2
shift 2
S=/tmp/smaps-libs.$$.sock
SM=/tmp/smaps-libs.$$.smaps
status() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
date
for nb in "$@"; do
  name=${nb%%=*} bin=${nb#*=}
  rm -f "$S"
  "$bin" serve --cache direct --sync full --socket "$S" "$IMG" >/dev/null 2>&1 &
  p=$!
  until [ -S "$S" ]; do sleep 0.05; done
  fio --name=mem --ioengine=nbd --uri="nbd+unix:///?socket=$S" --rw=randrw --bs=4k \
    --iodepth=64 --numjobs=16 --time_based --runtime="$SECS" --size=1G >/dev/null 2>&1 &
  fp=$! max=0 line=""
  while kill -0 $fp 2>/dev/null; do
    r=$(status $p VmRSS)
    if [ "$r" -gt "$max" ]; then
      max=$r
      line="VmRSS $r RssAnon $(status $p RssAnon) RssFile $(status $p RssFile)"
      cp "/proc/$p/smaps" "$SM"
    fi
    sleep 1
  done
  wait $fp || true
  kill $p; wait $p 2>/dev/null || true
  echo "== $name ($bin; $(ldd "$bin" | grep -cE 'librbd|librados') Ceph libraries linked): $line"
  awk '/^[0-9a-f]+-[0-9a-f]+ / { name = ($6 == "" ? "[anon]" : $6) }
       /^Rss:/ { r[name] += $2 }
       END { for (n in r) if (r[n] >= 300) printf "  %6d kB  %s\n", r[n], n }' "$SM" | sort -rn
done
rm -f "$S" "$SM"
date
