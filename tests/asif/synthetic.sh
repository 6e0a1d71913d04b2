#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Synthetic ASIF images written by asifimg.py from shared/asif.md (11 C; asifcheck.py
# CASES): full chunks (C1), partly written chunks whose stale bytes must read as zero
# (C2), unmapped chunks over old data (C3), data past 126 GiB with directory entry 0 = 0
# (C4), 4096-byte blocks (C5), 64 KiB chunks over many tables (C6), two directory
# generations with different tables (the newer one read; swapped, the other). Each is
# served and read byte for byte as the generator says (every written chunk's edges, odd
# offsets and lengths) and BLOCK_STATUS says HOLE|ZERO exactly where it says unwritten.
# Writes: without --snapshot the export is read-only, the log says why and a WRITE is
# refused with EPERM; with --snapshot a client's writes read back on a new connection
# and the image file is unchanged; a raw file (probed) refuses a WRITE that would give it
# the ASIF magic.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
CHECK=$HERE/asifcheck.py
mkdir "$T/c"
$PY "$CHECK" write-all "$T/c"

n=0
for img in "$T"/c/*.asif; do
  name=$(basename "$img" .asif)
  swapped=()
  case "$name" in *-swapped) name=${name%-swapped}; swapped=(swapped) ;; esac
  opts=()
  [ $((n % 2)) -eq 1 ] && opts=(--format asif)
  dg_start "${opts[@]}" "$img"
  $PY "$CHECK" verify "$name" "$DG_UNIX" "${swapped[@]}" || fail "$name ${swapped[*]}: the checks above"
  dg_stop
  n=$((n + 1))
done

# read-only without --snapshot: the export says so, a WRITE is EPERM, the log says why
img=$T/c/c1-full.asif
sum=$(sha256sum <"$img")
dg_start "$img"
$PY "$CHECK" readonly "$DG_UNIX" || fail "read-only: the checks above"
dg_stop
grep -qF ", read-only" "$DG_LOG" || fail "the serving line does not say read-only: $(cat "$DG_LOG")"
grep -qiE "read-only.*(asif|writ)|(asif|writ).*read-only" <(grep -vF "serving $img" "$DG_LOG") ||
  fail "no line says why the ASIF image is read-only: $(cat "$DG_LOG")"
# --snapshot: writes to a throw-away overlay; the image is unchanged
mkdir "$T/tmp"
TMPDIR=$T/tmp dg_start --snapshot "$img"
$PY "$CHECK" snapshot "$DG_UNIX" c1-full ||
  fail "--snapshot: the checks above"
dg_stop
assert_eq "$(sha256sum <"$img")" "$sum" "the image's sha256 after --snapshot writes"
assert_eq "$(ls -A "$T/tmp")" "" "files left in TMPDIR by --snapshot"
# a probed raw file: a WRITE giving sector 0 the ASIF magic is refused
truncate -s 4M "$T/raw.img"
dg_start "$T/raw.img"
$PY "$CHECK" probedraw "$DG_UNIX" || fail "probed raw: the checks above"
dg_stop
assert_eq "$(head -c 4 "$T/raw.img")" "shdX" "sector 0 of the raw file"
pass "ASIF synthetic images: $n served as the generator says; read-only, --snapshot, the probed-raw guard"
