#!/usr/bin/env bash
# --verbose logs each connection's start and, now, its end: "connection closed" used to be
# missing, so a log could not tell a client still connected from one that had gone.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 1M "$T/a.img"
dg_start --verbose "$T/a.img"
for uri in "$DG_UNIX" "$DG_TCP"; do
  assert_eq "$(nbdinfo --size "$uri")" 1048576 "size over $uri"
done
dg_stop
assert_eq "$(grep -c ': transmission on export' "$DG_LOG")" 2 "connection start lines"
assert_eq "$(grep -c ': connection closed$' "$DG_LOG")" 2 "connection end lines"
pass "--verbose logs each connection's start and end"
