#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Without /proc (a chroot or a minimal container) a writable file is served, with the page
# cache and with O_DIRECT: the extra sync channels and the O_DIRECT descriptor reopen the
# image by path, checked to be the same inode, when /proc/self/fd is missing. Needs a mount
# namespace (root); passes with a note under ASan, whose runtime reads /proc itself.
. "$SRCDIR/tests/lib.sh"
if ldd "$DISKGATE" | grep libasan >/dev/null || ! unshare -m --propagation private true 2>/dev/null; then
  echo "skip: serving without /proc needs unshare -m and a build without ASan"
else
  for cache in writeback direct; do
    rm -f "$T/noproc.sock"
    truncate -s 0 "$T/noproc.img"; truncate -s 4M "$T/noproc.img"
    unshare -m --propagation private sh -c \
      'mount -t tmpfs none /proc && exec "$0" serve --cache "$1" --socket "$2" "$3"' \
      "$DISKGATE" "$cache" "$T/noproc.sock" "$T/noproc.img" 2>"$T/noproc.log" &
    np_pid=$!
    for _ in $(seq 100); do [ -S "$T/noproc.sock" ] && break; sleep 0.05; done
    [ -S "$T/noproc.sock" ] || fail "no /proc, --cache $cache: the server did not start: $(cat "$T/noproc.log")"
    $PY - "$T/noproc.sock" <<'PY' || fail "no /proc, --cache $cache: write, flush and read back"
import sys, nbd
h = nbd.NBD()
h.connect_unix(sys.argv[1])
h.pwrite(b"\x5a" * 4096, 8192, nbd.CMD_FLAG_FUA)
h.pwrite(b"\xa5" * 4096, 0)
h.flush()
assert h.pread(4096, 0) == b"\xa5" * 4096 and h.pread(4096, 8192) == b"\x5a" * 4096
h.shutdown()
PY
    kill -TERM "$np_pid"
    rc=0; wait "$np_pid" || rc=$?
    assert_eq "$rc" 0 "exit status without /proc, --cache $cache"
    ! grep -q "cannot open" "$T/noproc.log" || fail "no /proc, --cache $cache: $(cat "$T/noproc.log")"
    cmp -s <(head -c 4096 "$T/noproc.img") <(head -c 4096 /dev/zero | tr '\0' '\245') ||
      fail "no /proc, --cache $cache: the image does not hold the write"
  done
  pass "no /proc: served with the page cache and with O_DIRECT"
fi
