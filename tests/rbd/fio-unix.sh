#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fio's nbd engine (libnbd) with verify against an RBD export through the Unix socket
# (tests/rbd/fio.sh covers TCP): every block written is read back and checked
# (verify=crc32c, verify_fatal). Random 4 KiB writes at iodepth 16; then two jobs at once
# (two connections) writing mixed sizes 512 B-64 KiB into disjoint halves with a FLUSH
# every 16 writes; then sequential 1 MiB writes verified in a separate read-only pass.
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/rbd/rbd-lib.sh"

rbdc create --size 128M rbd/img
rbd_serve rbd:rbd/img
case $DG_UNIX in nbd+unix://*) ;; *) fail "not a Unix socket URI: $DG_UNIX" ;; esac

run_fio() { # name, extra fio options...
  local name=$1; shift
  # (in $T: fio leaves verify state files in its working directory)
  (cd "$T" && fio --name="$name" --ioengine=nbd --uri="$DG_UNIX" --output-format=terse \
      --terse-version=3 --group_reporting "$@") >"$T/fio-$name.out" 2>&1 \
    || { cat "$T/fio-$name.out" >&2; fail "fio $name"; }
  # terse v3: field 5 = error code; 6 = read KiB, 47 = written KiB
  local err
  err=$(cut -d';' -f5 "$T/fio-$name.out" | tail -1)
  assert_eq "$err" 0 "fio $name error field"
  echo "fio $name (unix socket): read $(cut -d';' -f6 "$T/fio-$name.out" | tail -1) KiB," \
       "written $(cut -d';' -f47 "$T/fio-$name.out" | tail -1) KiB, verified"
}
VERIFY=(--verify=crc32c --verify_fatal=1 --do_verify=1)

run_fio randwrite-4k --rw=randwrite --bs=4k --iodepth=16 --size=16m "${VERIFY[@]}"
run_fio two-conns-mixed --rw=randwrite --bsrange=512-64k --iodepth=8 --numjobs=2 \
  --size=16m --offset=64m --offset_increment=32m --fsync=16 "${VERIFY[@]}"
# Written in one pass, verified by a separate reader: the data must be in the cluster, not
# only in the writer's state.
run_fio seqwrite-1m --rw=write --bs=1m --iodepth=4 --size=32m --offset=32m --fsync=8 \
  --verify=crc32c --do_verify=0
run_fio seqwrite-1m --rw=write --bs=1m --iodepth=4 --size=32m --offset=32m \
  --verify=crc32c --verify_fatal=1 --verify_only=1
pass "fio nbd engine over the Unix socket, verify=crc32c: no errors"

# Negative control: with 4 KiB of that range overwritten, the same verify pass must fail.
$PY -c 'import nbd, sys
h = nbd.NBD(); h.connect_uri(sys.argv[1])
h.pwrite(b"x" * 4096, (40 << 20) + 8192); h.flush(); h.shutdown()' "$DG_UNIX"
if (cd "$T" && fio --name=seqwrite-1m --ioengine=nbd --uri="$DG_UNIX" --rw=write --bs=1m \
      --iodepth=4 --size=32m --offset=32m --verify=crc32c --verify_fatal=1 --verify_only=1) \
    >"$T/fio-negative.out" 2>&1; then
  fail "negative control: fio's verify pass did not notice a corrupted block"
fi
pass "negative control: fio's verify pass catches a corrupted 4 KiB block"
dg_stop
