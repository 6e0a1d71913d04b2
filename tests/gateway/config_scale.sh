#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 1,000 exports over sparse files in one daemon: every export is lazy (nothing opened before
# a client's NBD_OPT_GO), so the daemon's RSS stays under 64 MiB; a few exports opened
# serve their own files. (Start time is reported, not asserted: speed lives in benchmarks.)
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
source "$HERE/gwlib.sh"

mkdir "$T/img"
body=$($PY - "$T/img" <<'PY'
import os, sys
d = sys.argv[1]
for i in range(1000):
    p = os.path.join(d, "e%d.img" % i)
    with open(p, "wb") as f:
        f.truncate((i + 1) << 20)
    print("[export e%d]\npath = %s\ndescription = export %d" % (i, p, i))
PY
)
GW_SERVER_EXTRA="threads = 2" gw_start "$body"
bound=$((64 * 1024))
# ASan's shadow memory and quarantine are not the server's: the bound is for plain builds
grep -a __asan_init "$DISKGATE" >/dev/null && bound=$((1024 * 1024))
rss_kib=$(awk '/^VmRSS/ {print $2}' "/proc/$DG_PID/status")
echo "RSS after start with 1000 exports: $rss_kib KiB"
[ "$rss_kib" -lt "$bound" ] || fail "RSS $rss_kib KiB with 1000 exports (bound 64 MiB)"
for i in 0 499 999; do
  assert_eq "$(nbdinfo --size "nbd+unix:///e$i?socket=$DG_SOCK")" $(((i + 1) << 20)) "size of e$i"
done
assert_eq "$(nbdinfo --list --json "nbd+unix:///?socket=$DG_SOCK" | grep -c '"export-name"')" 1000 \
  "exports listed"
rss_kib=$(awk '/^VmRSS/ {print $2}' "/proc/$DG_PID/status")
echo "RSS after 3 exports opened: $rss_kib KiB"
[ "$rss_kib" -lt "$bound" ] || fail "RSS $rss_kib KiB after 3 exports opened"
dg_stop
pass "1000 exports: RSS under 64 MiB"
