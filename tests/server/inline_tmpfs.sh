#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Inline page-cache writes on tmpfs (file_io.c, write_inline; file_impl.h, no_writeback).
# The event loops write to the page cache themselves, and a budget of how long those
# writes blocked the loops sends them to io_uring's workers when it is overspent; but it
# measures wall time, so a loop stopped mid-write looks blocked. On tmpfs, which has no
# writeback, journal or dirty-page throttling to block on, the budget is not kept: the
# writes stay inline. Here the server is stopped (SIGSTOP) for 30 ms forty times under 4
# connections of 4K random writes: on the ext4 of $T the budget trips (the debug line
# says so: the probe works), on a tmpfs it never does. Every write is then read back.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
DG_CLEANUP_EXTRA=dg_tmpfs_umount
dg_tmpfs 80M

TRIP="page-cache writes blocked the event loops"
# stall_under_load FILE: 4 connections write for 4 s while the server is stopped 40 times
stall_under_load() {
  dg_start --engine uring --cache writeback --verbose "$1"
  fio --name=w --ioengine=nbd --uri="$DG_UNIX" --rw=randwrite --bs=4k --iodepth=32 \
    --numjobs=4 --size=64m --time_based --runtime=4 --verify=crc32c --verify_backlog=512 \
    --do_verify=1 --group_reporting >"$T/fio.out" 2>&1 &
  local fio_pid=$! i
  sleep 0.5
  for i in $(seq 1 40); do
    kill -STOP "$DG_PID"
    sleep 0.03
    kill -CONT "$DG_PID"
    sleep 0.04
  done
  wait "$fio_pid" || { cat "$T/fio.out" "$DG_LOG" >&2; fail "fio on $1"; }
  dg_stop
}

[ "$(stat -f -c %T "$T")" != tmpfs ] || fail "\$T is on tmpfs: no file system to compare with"
truncate -s 64M "$T/disk.img" "$TFS/disk.img"
stall_under_load "$T/disk.img"
grep -F "$TRIP" "$DG_LOG" >/dev/null ||
  { cat "$DG_LOG" >&2; fail "the budget never tripped on $(stat -f -c %T "$T"): the stops did not reach a write"; }
stall_under_load "$TFS/disk.img"
if grep -F "$TRIP" "$DG_LOG" >&2; then fail "the budget turned inline writes off on tmpfs"; fi
pass "stopped loops trip the page-cache budget on $(stat -f -c %T "$T"), never on tmpfs"
