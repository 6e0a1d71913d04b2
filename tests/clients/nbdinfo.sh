#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbdinfo against diskgate over TCP and a Unix socket: exact size, every --can flag the
# server advertises, and --is read-only for a read-only export.
. "$SRCDIR/tests/lib.sh"

truncate -s 100M "$T/disk.img"
dg_start "$T/disk.img" --export vm1
for uri in "$DG_TCP" "$DG_UNIX"; do
  assert_eq "$(nbdinfo --size "$uri")" 104857600 "size over $uri"
  for cap in flush fua trim zero multi-conn; do
    nbdinfo --can "$cap" "$uri" || fail "nbdinfo --can $cap: not advertised over $uri"
  done
  if nbdinfo --is read-only "$uri"; then fail "writable export reported read-only"; fi
  # The export is found by name only: a wrong name is refused.
  if nbdinfo "${uri/vm1/nosuch}" >/dev/null 2>&1; then fail "unknown export accepted"; fi
done
nbdinfo --list "$DG_TCP" | grep 'export="vm1"' >/dev/null || fail "nbdinfo --list does not show vm1"
# The description rides in NBD_REP_SERVER's details, where nbdinfo --list reads it (it used
# to show none, while plain nbdinfo, through NBD_INFO_DESCRIPTION, did).
assert_eq "$(nbdinfo --list --json "$DG_UNIX" | $PY -c 'import json, sys; print(json.load(sys.stdin)["exports"][0]["description"])')" \
  "raw file" "the description nbdinfo --list shows"
# qemu-nbd --list too, over both transports: the export, its size and its meta context.
for args in "-k $DG_SOCK" "-b 127.0.0.1 -p $DG_PORT"; do
  out=$(qemu-nbd --list $args) || fail "qemu-nbd --list $args"
  grep -q "export: 'vm1'" <<<"$out" || fail "qemu-nbd --list $args does not show vm1: $out"
  grep -q "size:  104857600" <<<"$out" || fail "qemu-nbd --list $args: wrong size: $out"
  grep -q "base:allocation" <<<"$out" || fail "qemu-nbd --list $args: no base:allocation: $out"
done
dg_stop

dg_start --read-only "$T/disk.img"
for uri in "$DG_TCP" "$DG_UNIX"; do
  nbdinfo --is read-only "$uri" || fail "read-only export not reported read-only over $uri"
  for cap in trim zero fua; do
    if nbdinfo --can "$cap" "$uri"; then fail "read-only export advertises $cap"; fi
  done
done
dg_stop
pass "nbdinfo"
