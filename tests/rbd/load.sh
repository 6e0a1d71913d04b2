#!/usr/bin/env bash
# librados and librbd are loaded at run time by the first RBD export (src/backing/rbd_lib.h),
# not linked: a server of files never maps them (linked, they cost every server about 18 MiB
# of resident memory and 10 ms of start-up; docs/performance.md, T6). Needs no cluster: an
# RBD export is opened at the first NBD_OPT_GO, but its libraries are loaded at start-up.
#  1. the binary does not link them, and a server of a file has none of Ceph's libraries
#     mapped while it serves a client;
#  2. a server of rbd:POOL/IMAGE has librbd.so.1 and librados.so.2 mapped once started;
#  3. when librbd.so.1 cannot be loaded (a broken one first in LD_LIBRARY_PATH), an RBD
#     export fails at start-up with exit status 1 and one line that names the library and
#     the package, while a file is still served in the same environment.
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

# 3
mkdir "$T/badlib"
printf 'not an ELF file' >"$T/badlib/librbd.so.1"
rc=0
LD_LIBRARY_PATH=$T/badlib "$DISKGATE" serve --socket "$T/rbd.sock" rbd:rbd/absent \
  >"$T/out" 2>"$T/err" || rc=$?
assert_eq "$rc" 1 "exit status with an unloadable librbd.so.1"
assert_eq "$(wc -l <"$T/err")" 1 "stderr lines with an unloadable librbd.so.1"
grep -q "^diskgate serve: rbd:rbd/absent: cannot load librbd.so.1: .*librbd.so.1.*(Debian's package librbd1 provides it)$" "$T/err" ||
  { cat "$T/err" >&2; fail "the start-up error line"; }
[ ! -s "$T/out" ] || { cat "$T/out" >&2; fail "stdout after a failed start-up"; }
[ ! -e "$T/rbd.sock" ] || fail "the socket was left behind"
LD_LIBRARY_PATH=$T/badlib dg_start "$T/disk.img"
assert_eq "$(nbdinfo --size "$DG_UNIX")" 1048576 "size of the file export beside a broken librbd"
dg_stop
pass "an unloadable librbd.so.1: exit 1 and one line for rbd:, a file still served"
