#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --metrics: GET /metrics in Prometheus' text format while fio (its nbd engine) reads and
# writes; once fio is done, diskgate_requests_total and diskgate_bytes_total equal fio's
# own counts (total_ios, io_bytes) exactly, every histogram's count equals its requests
# and its buckets never decrease, counters never went backwards across scrapes, a write to
# a read-only export is counted as an error, other paths get 404, and a bad --metrics or a
# port in use is one line with the exit status --listen's failures have.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

scrape() { curl -sf "http://127.0.0.1:$MPORT/metrics"; }
value() { # FILE SERIES: the value of one series, exactly as named
  S="$2" awk '{ v = $NF; sub(/ [^ ]*$/, ""); if ($0 == ENVIRON["S"]) print v }' "$1"
}

truncate -s 16M "$T/disk.img"
MPORT=$(free_port)
dg_start --export 'a "q"\b' --metrics "127.0.0.1:$MPORT" "$T/disk.img"
uri="nbd+unix:///a%20%22q%22%5Cb?socket=$DG_SOCK"
# one connection: fio's nbd engine opens one per job
(cd "$T" && fio --name=m --ioengine=nbd --uri="$uri" --rw=randrw --rwmixread=60 --bs=4k \
  --bsrange=512-64k --iodepth=16 --size=16M --io_size=24M --randrepeat=1 \
  --output-format=json --output="$T/fio.json" >/dev/null 2>&1) &
fio_pid=$!
n=0
while kill -0 "$fio_pid" 2>/dev/null; do
  scrape >"$T/scrape.$n" || fail "scrape $n failed during fio"
  n=$((n + 1))
  sleep 0.1
done
wait "$fio_pid" || { cat "$T/fio.json" >&2; fail "fio failed"; }
scrape >"$T/final" || fail "final scrape failed"
cp "$T/final" "$T/scrape.$n"

$PY - "$T/fio.json" "$T/final" "$T" "$n" <<'PY' || fail "metrics do not match fio's counts"
import json, re, sys
fio = json.load(open(sys.argv[1]))["jobs"][0]
label = 'export="a \\"q\\"\\\\b"'

def parse(path):
    vals = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        name, v = line.rsplit(" ", 1)
        vals[name] = float(v)
    return vals

final = parse(sys.argv[2])
bad = []
for op in ("read", "write"):
    want_n = fio[op]["total_ios"]
    want_b = fio[op]["io_bytes"]  # io_kbytes is rounded to KiB
    got_n = final.get('diskgate_requests_total{%s,op="%s"}' % (label, op))
    got_b = final.get('diskgate_bytes_total{%s,op="%s"}' % (label, op))
    if got_n != want_n or got_b != want_b or want_n == 0:
        bad.append("%s: requests %s bytes %s, fio %s %s" % (op, got_n, got_b, want_n, want_b))
# every histogram: cumulative buckets, +Inf == count == requests_total
for op in ("read", "write", "flush", "trim", "zero", "block_status"):
    base = 'diskgate_request_duration_seconds_bucket{%s,op="%s",le="' % (label, op)
    buckets = [v for k, v in final.items() if k.startswith(base)]
    if len(buckets) != 20 or buckets != sorted(buckets):
        bad.append("%s: buckets %s" % (op, buckets))
    count = final['diskgate_request_duration_seconds_count{%s,op="%s"}' % (label, op)]
    inf = final[base + '+Inf"}']
    req = final['diskgate_requests_total{%s,op="%s"}' % (label, op)]
    if not (count == inf == req):
        bad.append("%s: count %s +Inf %s requests %s" % (op, count, inf, req))
if final.get("diskgate_connections{%s}" % label) != 0:
    bad.append("connections after fio: %s" % final.get("diskgate_connections{%s}" % label))
for k in ("process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds",
          "process_start_time_seconds"):
    if not final.get(k, 0) > 0:
        bad.append("no %s" % k)
# counters never went backwards from one scrape to the next
prev = {}
for i in range(int(sys.argv[4]) + 1):
    cur = parse("%s/scrape.%d" % (sys.argv[3], i))
    for k, v in cur.items():
        if (k.startswith("diskgate_requests_total") or k.startswith("diskgate_bytes_total")) \
                and v < prev.get(k, 0):
            bad.append("scrape %d: %s went back from %s to %s" % (i, k, prev[k], v))
    prev = cur
text = open(sys.argv[2]).read()
for fam in ("diskgate_requests_total counter", "diskgate_request_duration_seconds histogram",
            "diskgate_connections gauge", "diskgate_sync_duration_seconds histogram"):
    if "# TYPE " + fam not in text:
        bad.append("no TYPE line " + fam)
for b in bad:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
[ "$n" -ge 1 ] || fail "no scrape happened while fio ran"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/")
assert_eq "$code" 404 "GET /"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/metricsx")
assert_eq "$code" 404 "GET /metricsx"

# a FLUSH after a write: counted, and timed as a backing sync of the export
$PY - "$DG_SOCK" <<'PY' || fail "the flushing client"
import sys
import nbd
h = nbd.NBD()
h.set_export_name('a "q"\\b')
h.connect_unix(sys.argv[1])
h.pwrite(b"y" * 4096, 0)
h.flush()
h.shutdown()
PY
scrape >"$T/flushed" || fail "scrape after the flush"
lab='export="a \"q\"\\b"'
assert_eq "$(value "$T/flushed" "diskgate_requests_total{$lab,op=\"flush\"}")" 1 "flushes"
syncs=$(value "$T/flushed" "diskgate_sync_duration_seconds_count{$lab}")
[ "${syncs:-0}" -ge 1 ] || { cat "$T/flushed" >&2; fail "no sync timed after a FLUSH ($syncs)"; }

# the metrics port in use: one line, the status --listen has for its port in use
truncate -s 1M "$T/other.img" # disk.img's lock is held by the server
rc_m=0
"$DISKGATE" serve --socket "$T/x.sock" --metrics "127.0.0.1:$MPORT" "$T/other.img" \
  >"$T/inuse.out" 2>&1 || rc_m=$?
rc_l=0
"$DISKGATE" serve --listen "127.0.0.1:$MPORT" "$T/other.img" >"$T/inuse_l.out" 2>&1 || rc_l=$?
assert_eq "$rc_m" "$rc_l" "exit status with the metrics port in use (as --listen's)"
[ "$rc_m" -ne 0 ] || fail "started with the metrics port in use"
assert_eq "$(wc -l <"$T/inuse.out")" 1 "lines for the metrics port in use"
grep -F "cannot serve metrics on 127.0.0.1:$MPORT" "$T/inuse.out" >/dev/null ||
  { cat "$T/inuse.out" >&2; fail "the line does not name the metrics address"; }
dg_stop

# bad --metrics values: one line, exit 2
for bad in "" "nonsense" "127.0.0.1" "127.0.0.1:99999" "127.0.0.1:x" "[::1"; do
  rc=0
  "$DISKGATE" serve --metrics "$bad" "$T/disk.img" >"$T/bad.out" 2>&1 || rc=$?
  assert_eq "$rc" 2 "exit status for --metrics '$bad'"
  assert_eq "$(wc -l <"$T/bad.out")" 1 "lines for --metrics '$bad'"
done

# a write to a read-only export is an error of op write; a read is not
MPORT=$(free_port)
dg_start --read-only --metrics "127.0.0.1:$MPORT" "$T/disk.img"
$PY - "$DG_SOCK" <<'PY' || fail "the read-only client"
import sys
import nbd
h = nbd.NBD()
h.set_strict_mode(0)  # send the WRITE: the server must refuse it
h.connect_unix(sys.argv[1])
h.pread(4096, 0)
try:
    h.pwrite(b"x" * 4096, 0)
    sys.exit("the write succeeded")
except nbd.Error:
    pass
h.shutdown()
PY
scrape >"$T/ro" || fail "scrape of the read-only server"
assert_eq "$(value "$T/ro" 'diskgate_errors_total{export="",op="write"}')" 1 "write errors"
assert_eq "$(value "$T/ro" 'diskgate_requests_total{export="",op="write"}')" 1 "write requests"
assert_eq "$(value "$T/ro" 'diskgate_bytes_total{export="",op="write"}')" 0 "bytes written"
assert_eq "$(value "$T/ro" 'diskgate_errors_total{export="",op="read"}')" 0 "read errors"
assert_eq "$(value "$T/ro" 'diskgate_bytes_total{export="",op="read"}')" 4096 "bytes read"
dg_stop
# SIGUSR2: the old server frees the metrics port before the new one binds it
MPORT=$(free_port)
dg_start --metrics "127.0.0.1:$MPORT" "$T/disk.img"
pidf=$T/dg.$BASHPID.$DG_N.pid
old=$DG_PID
DG_CLEANUP_EXTRA='p=$(cat "$pidf" 2>/dev/null) && [ "$p" != "$old" ] && kill -9 "$p"'
kill -USR2 "$old"
rc=0
wait "$old" || rc=$?
assert_eq "$rc" 0 "the old server's exit status after SIGUSR2"
wait_until 10 sh -c "[ -s '$pidf' ] && [ \"\$(cat '$pidf')\" != $old ]" ||
  { cat "$DG_LOG" >&2; fail "no new server took over"; }
new=$(cat "$pidf")
wait_until 5 scrape >/dev/null || { cat "$DG_LOG" >&2; fail "the new server does not serve metrics"; }
kill -TERM "$new"
wait_until 20 sh -c "! kill -0 $new 2>/dev/null" || fail "the new server did not stop"
pass "metrics match fio's counts; errors, histograms, 404 and bad options"
