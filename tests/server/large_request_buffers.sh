#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Large requests reuse their buffers: 64 READs of 1 MiB make fewer than 16 mmap calls of
# about 1 MiB (glibc's default threshold would map and unmap each). glibc's malloc only:
# under AddressSanitizer its own allocator serves every allocation, so the check passes with
# a note there.
. "$SRCDIR/tests/lib.sh"
if ldd "$DISKGATE" | grep libasan >/dev/null; then
  pass "large request buffers (the mmap check needs glibc's malloc: not in the ASan build)"
  exit 0
fi
truncate -s 64M "$T/seq.img"
dg_start "$T/seq.img"
strace -f -qq -e trace=mmap,munmap -o "$T/mm.trace" -p "$DG_PID" &
st=$!
sleep 1
$PY -c "
import nbd, sys
h = nbd.NBD(); h.connect_uri(sys.argv[1])
for i in range(64):
    h.pread(1 << 20, (i % 60) << 20)
h.shutdown()" "$DG_UNIX"
sleep 0.5
kill "$st"; wait "$st" 2>/dev/null || true
maps=$(grep -c 'mmap(NULL, 10' "$T/mm.trace" || true)
[ "$maps" -lt 16 ] || fail "$maps mmap calls of ~1 MiB for 64 reads of 1 MiB (buffers should be reused)"
dg_stop
pass "large requests reuse their buffers"
