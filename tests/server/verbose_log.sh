#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --verbose logs each connection's start and its end ("connection closed"), so a log tells a
# client still connected from one that has gone. Unix-socket connections are numbered, not
# named by their (reused) fd.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 1M "$T/a.img"
dg_start --verbose "$T/a.img"
for uri in "$DG_UNIX" "$DG_TCP" "$DG_UNIX"; do
  assert_eq "$(nbdinfo --size "$uri")" 1048576 "size over $uri"
done
dg_stop
assert_eq "$(grep -c ': transmission on export' "$DG_LOG")" 3 "connection start lines"
assert_eq "$(grep -c ': connection closed$' "$DG_LOG")" 3 "connection end lines"
# Two Unix-socket clients one after the other have different names (not the fd, which the
# second reuses).
names=$(grep ': transmission on export' "$DG_LOG" | grep -o "unix:[^ ]*#[0-9]*" | sort -u | wc -l)
assert_eq "$names" 2 "distinct names of the two Unix-socket connections"
pass "--verbose logs each connection's start and end"
