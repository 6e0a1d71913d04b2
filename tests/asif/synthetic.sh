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
# refused with EPERM; with --snapshot a client's writes read back on a new connection,
# the export keeps the image's block size (4096 for C5) and the image file is unchanged; these two servers and a plain one share the image (an
# ASIF image is only read: no writer's lock); a raw file (probed) refuses a WRITE that
# would give it the ASIF magic.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib_asif.sh"
mkdir "$T/c" "$T/tmp"
$PY "$CHECK" write-all "$T/c"

# every case served at once (odd ones with --format asif, even ones probed), and three more
# servers: c1-full read-only and with --snapshot, and a probed raw file
names=() args=()
n=0
for img in "$T"/c/*.asif; do
  name=$(basename "$img" .asif)
  opts=()
  [ $((n % 2)) -eq 1 ] && opts=(--format asif)
  asif_launch "$name" "${opts[@]}" "$img"
  names+=("$name")
  args+=("$name" "$(asif_uri "$name")")
  n=$((n + 1))
done
# (all three on the one file: an ASIF image is only read, so its servers share it)
img=$T/c/c1-full.asif
sum=$(sha256sum <"$img")
asif_launch ro "$img"
TMPDIR=$T/tmp asif_launch snap --snapshot "$img"
TMPDIR=$T/tmp asif_launch snap4k --snapshot "$T/c/c5-4k.asif"
truncate -s 4M "$T/raw.img"
asif_launch raw "$T/raw.img"
asif_wait "${names[@]}" ro snap snap4k raw

$PY "$CHECK" verify "${args[@]}"
# read-only without --snapshot: the export says so, a WRITE is EPERM
$PY "$CHECK" readonly "$(asif_uri ro)" c1-full
# --snapshot: writes to a throw-away overlay
$PY "$CHECK" snapshot "$(asif_uri snap)" c1-full
# --snapshot keeps the image's 4096-byte blocks (the overlay's own are 512)
$PY "$CHECK" snapshot "$(asif_uri snap4k)" c5-4k
# a probed raw file: a WRITE giving sector 0 the ASIF magic is refused
$PY "$CHECK" probedraw "$(asif_uri raw)"
asif_stop "${names[@]}" ro snap snap4k raw

log=$(asif_log ro)
grep -qF ", read-only" "$log" || fail "ro: the serving line does not say read-only: $(cat "$log")"
grep -vF "serving $img" "$log" | grep -iE "read-only" >/dev/null ||
  fail "ro: no line says why the ASIF image is read-only: $(cat "$log")"
assert_eq "$(sha256sum <"$img")" "$sum" "the image's sha256 after --snapshot writes"
assert_eq "$(ls -A "$T/tmp")" "" "files left in TMPDIR by --snapshot"
grep -qF "writes to the temporary overlay" "$(asif_log snap)" ||
  fail "snap: the log does not name the overlay: $(cat "$(asif_log snap)")"
assert_eq "$(head -c 4 "$T/raw.img")" "shdX" "sector 0 of the raw file after the allowed WRITE"
grep -qF "raw image (probed)" "$(asif_log raw)" || fail "raw: not probed raw: $(cat "$(asif_log raw)")"
pass "ASIF synthetic images: $n served as the generator says; read-only, --snapshot, the probed-raw guard"
