#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A qcow2 file given as PATH: diskgate serves its bytes (as nbdkit's file plugin does; the
# README says raw images), and now says so at start-up in one warning line, since a user of
# qemu-nbd expects the disk inside it. A raw file gets no such line.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

qemu-img create -q -f qcow2 "$T/a.qcow2" 64M
size=$(stat -c %s "$T/a.qcow2")
dg_start --read-only "$T/a.qcow2"
assert_eq "$(nbdinfo --size "$DG_UNIX")" "$size" "export size (the qcow2 file's own bytes)"
dg_stop
assert_eq "$(grep -c "warning: $T/a.qcow2 starts with a qcow2 header: it is served as raw bytes" "$DG_LOG")" 1 \
  "warning lines for the qcow2 file"
truncate -s 1M "$T/b.img"
dg_start --read-only "$T/b.img"
dg_stop
assert_eq "$(grep -c "qcow2" "$DG_LOG")" 0 "qcow2 warnings for a raw file"
pass "a qcow2 file is served raw, with one warning"
