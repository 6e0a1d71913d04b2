#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fio's nbd engine (libnbd) at iodepth 16 against an RBD export, writing with
# verify=crc32c: every block written is read back and checked. Random 4 KiB writes, then
# mixed sizes 512 B-128 KiB, then sequential 1 MiB writes with a FLUSH every 8 writes.
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/rbd/rbd-lib.sh"

rbdc create --size 128M rbd/img
rbd_serve rbd:rbd/img

run_fio() { # name, extra fio options...
  local name=$1; shift
  fio --name="$name" --ioengine=nbd --uri="$DG_TCP" --iodepth=16 --size=64m \
      --verify=crc32c --verify_fatal=1 --do_verify=1 --output-format=terse \
      --terse-version=3 "$@" >"$T/fio-$name.out" 2>&1 \
    || { cat "$T/fio-$name.out" >&2; fail "fio $name"; }
  # terse v3: field 5 = error code; 6 = read kB, 47 = write kB
  local err
  err=$(cut -d';' -f5 "$T/fio-$name.out" | tail -1)
  assert_eq "$err" 0 "fio $name error field"
  echo "fio $name: read $(cut -d';' -f6 "$T/fio-$name.out" | tail -1) KiB," \
       "written $(cut -d';' -f47 "$T/fio-$name.out" | tail -1) KiB, verified"
}

run_fio randwrite-4k --rw=randwrite --bs=4k
run_fio randwrite-mixed --rw=randwrite --bsrange=512-128k --offset=64m
run_fio seqwrite-1m --rw=write --bs=1m --fsync=8
pass "fio nbd engine, iodepth 16, verify=crc32c: no errors"
dg_stop
