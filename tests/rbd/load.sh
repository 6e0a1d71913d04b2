#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# librados and librbd are loaded at run time by the first RBD export (src/backing/rbd_lib.h),
# not linked: a server of files never maps them (linked, they cost every server about 18 MiB
# of resident memory and 13 ms of start-up; docs/performance.md, T6). Needs no cluster: an
# RBD export is opened at the first NBD_OPT_GO, but its libraries are loaded at start-up.
#  1. the binary does not link them, and a server of a file has none of Ceph's libraries
#     mapped while it serves a client;
#  2. a server of rbd:POOL/IMAGE has librbd.so.1 and librados.so.2 mapped once started;
#  3. when librbd.so.1 or librados.so.2 cannot be loaded, or librbd lacks a function (broken
#     ones first in LD_LIBRARY_PATH), an RBD export fails at start-up with exit status 2
#     (like a missing file) and one line naming the library and its Debian package, or the
#     missing function; a file is still served in the same environment.
source "$SRCDIR/tests/lib.sh"

ceph_maps() { grep -cE '/(librbd|librados|libceph-common)\.so' "/proc/$1/maps" || true; }

# 1
if ldd "$DISKGATE" | grep -E 'librbd|librados'; then
  fail "diskgate is linked with librbd or librados"
fi
mkrandom "$T/disk.img" 1048576
dg_start "$T/disk.img"
assert_eq "$(nbdinfo --size "$DG_UNIX")" 1048576 "size of the file export"
assert_eq "$(ceph_maps "$DG_PID")" 0 "Ceph library mappings in a server of a file"
dg_stop
pass "a server of a file maps no Ceph library"

# 2
dg_start --export vm rbd:rbd/absent
grep -q "opened at the first NBD_OPT_GO" "$DG_LOG" || { cat "$DG_LOG" >&2; fail "start-up log"; }
grep -q '/librbd\.so\.1' "/proc/$DG_PID/maps" || fail "librbd.so.1 not mapped by an RBD export"
grep -q '/librados\.so\.2' "/proc/$DG_PID/maps" || fail "librados.so.2 not mapped by an RBD export"
dg_stop
pass "a server of rbd:rbd/absent maps librbd.so.1 and librados.so.2 at start-up"

# 3: broken libraries first in LD_LIBRARY_PATH: a file that is no ELF object as
# librbd.so.1, then as librados.so.2, then a valid librbd.so.1 that lacks librbd's functions.
# rbd_fails DIR WHAT EXPECTED_RE: an RBD export with LD_LIBRARY_PATH=DIR fails at start-up
# with exit status 2, nothing on stdout, no socket, and one line on stderr matching the
# extended regular expression.
rbd_fails() {
  local rc=0
  rm -f "$T/rbd.sock"
  LD_LIBRARY_PATH=$1 "$DISKGATE" serve --socket "$T/rbd.sock" rbd:rbd/absent \
    >"$T/out" 2>"$T/err" || rc=$?
  assert_eq "$rc" 2 "exit status with $2"
  assert_eq "$(wc -l <"$T/err")" 1 "stderr lines with $2"
  grep -qE "$3" "$T/err" || { cat "$T/err" >&2; fail "the start-up error line with $2"; }
  [ ! -s "$T/out" ] || { cat "$T/out" >&2; fail "stdout after a failed start-up with $2"; }
  [ ! -e "$T/rbd.sock" ] || fail "the socket was left behind with $2"
}
mkdir "$T/badrbd" "$T/badrados" "$T/stubrbd"
printf 'not an ELF file' >"$T/badrbd/librbd.so.1"
printf 'not an ELF file' >"$T/badrados/librados.so.2"
rbd_fails "$T/badrbd" "a librbd.so.1 that is no ELF file" \
  "^diskgate serve: rbd:rbd/absent: cannot load librbd\.so\.1 \(Debian's package librbd1\): .*/badrbd/librbd\.so\.1: .*short"
rbd_fails "$T/badrados" "a librados.so.2 that is no ELF file" \
  "^diskgate serve: rbd:rbd/absent: cannot load librados\.so\.2 \(Debian's package librados2\): .*/badrados/librados\.so\.2: "
echo 'int diskgate_stub_librbd;' >"$T/stub.c"
${CC:-cc} -shared -fPIC -o "$T/stubrbd/librbd.so.1" "$T/stub.c" || fail "cannot build the stub librbd.so.1"
rbd_fails "$T/stubrbd" "a librbd.so.1 without librbd's functions" \
  "^diskgate serve: rbd:rbd/absent: librbd\.so\.1 has no rbd_open \(older than the Ceph headers diskgate was built with\): .*undefined symbol: rbd_open"
nl=$T/$'new\nline'
mkdir "$nl"
cp "$T/badrbd/librbd.so.1" "$nl/"
rbd_fails "$nl" "a broken librbd.so.1 in a directory whose name holds a newline" \
  "^diskgate serve: rbd:rbd/absent: cannot load librbd\.so\.1 \(Debian's package librbd1\): .*new.*line/librbd\.so\.1: "
LD_LIBRARY_PATH=$T/badrbd:$T/badrados dg_start "$T/disk.img"
assert_eq "$(nbdinfo --size "$DG_UNIX")" 1048576 "size of the file export beside broken Ceph libraries"
dg_stop
pass "unloadable Ceph libraries: exit 2 and one line for rbd:, naming the library and its package or the missing function; a file still served"
