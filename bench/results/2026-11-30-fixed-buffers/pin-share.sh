#!/bin/sh
# pin-share.sh BINARY RW [unix|tcp]: serves /var/tmp/cmp/compare.img with BINARY
# (--cache direct --sync full), runs fio's nbd engine (4K RW, QD32, 6 s) and records the
# server with `perf record -g` for 3 s of it; prints fio's IOPS, then the share of the
# server's samples in each function that pins or maps a request's pages for O_DIRECT
# (get_user_pages: gup_fast_fallback, bio_iov_iter_get_pages, unpin) or imports a registered
# buffer instead (io_import_reg_buf). Needs root and perf. A record of how the shares in
# output.txt were taken, not a tool of the project.
BIN=$1 RW=$2 T=${3:-unix}
D=$(mktemp -d)
if [ "$T" = tcp ]; then L="--listen 127.0.0.1:14555"; URI="nbd://127.0.0.1:14555/";
else L="--socket $D/s.sock"; URI="nbd+unix:///?socket=$D/s.sock"; fi
$BIN serve --cache direct --sync full $L /var/tmp/cmp/compare.img 2>"$D/log" &
PID=$!
sleep 1
fio --name=r --ioengine=nbd --uri="$URI" --rw="$RW" --bs=4k --iodepth=32 --runtime=6 \
  --time_based --size=1g 2>&1 | grep -E "IOPS" &
sleep 2
perf record -F 10000 -g -p $PID -o "$D/perf.data" -- sleep 3 >/dev/null 2>&1
wait %2
kill $PID
wait $PID 2>/dev/null
perf report -i "$D/perf.data" --no-children --sort sym --stdio -g none 2>/dev/null |
  grep -E "\] (gup_fast_fallback|bio_iov_iter_get_pages|unpin_user_pages|bio_release_pages|__bio_release_pages|io_import_reg_buf|__io_import_rw_buffer)$"
rm -rf "$D"
