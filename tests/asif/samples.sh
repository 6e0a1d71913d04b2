#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The 25 blank ASIF images Apple's diskutil made (shared/samples/asif, asif.md 11 A), each
# gunzipped once and served: export size = MANIFEST's virtual_bytes, read-only, minimum
# block size 512, the log names the format (probed, or --format asif) and the header GUID
# and the metadata's stable uuid of MANIFEST (A1; A5: the uuid is read through the table
# 33288 / group 7 / index 2047 mapping, which asifcheck.py layout also checks in the file);
# zero reads at [0, 4096), [size-512, size), across the last chunk boundary to the size, at
# 126 GiB where the size allows; reads past the size are error replies (A3); BLOCK_STATUS
# and nbdinfo --map give one hole,zero extent (A4). Directory choice: with directory A's
# metadata table entry broken the uuid is still read (B, sequence 1, is active: A2); with
# A's sequence raised to 2 and B's entry broken, likewise, and the results are unchanged
# (A6).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
SAMPLES=${DG_ASIF_SAMPLES:-$SRCDIR/../shared/samples/asif}
MANIFEST=$SAMPLES/MANIFEST.tsv
[ -f "$MANIFEST" ] || fail "no ASIF samples at $SAMPLES (shared/ beside the repository)"
command -v nbdinfo >/dev/null || fail "nbdinfo is not installed (Debian: apt-get install libnbd-bin)"
CHECK=$HERE/asifcheck.py
T_META=33288 # the directory entry of the metadata's table (4 PiB / 126 GiB, rounded up)
mkdir "$T/s"

while IFS=$'\t' read -r file _ _ _ _ _ _ _ sha _; do
  img=$T/s/${file%.gz}
  gunzip -c "$SAMPLES/kernova-blank/$file" >"$img"
  assert_eq "$(sha256sum <"$img" | cut -d' ' -f1)" "$sha" "sha256 of $file gunzipped"
done < <(tail -n +2 "$MANIFEST")
$PY "$CHECK" layout "$T/s" "$MANIFEST"

# serve_check IMG SIZE GUID UUID WHAT [serve options...]: one server, every check of A1-A4
serve_check() {
  local img=$1 size=$2 guid=$3 uuid=$4 what=$5
  shift 5
  dg_start "$@" "$img"
  $PY "$CHECK" sample "$DG_UNIX" "$size" >/dev/null || fail "$what: the checks above"
  map=$(nbdinfo --map "$DG_UNIX")
  [ "$(wc -l <<<"$map")" -eq 1 ] && [ "$(awk '{print $1, $2, $3, $4}' <<<"$map")" = "0 $size 3 hole,zero" ] ||
    fail "$what: nbdinfo --map: $map"
  dg_stop
  local probed=""
  [ $# -eq 0 ] && probed=" (probed)"
  grep -qF "as export '': $size bytes, asif image$probed, " "$DG_LOG" ||
    fail "$what: no serving line naming the asif format$probed: $(cat "$DG_LOG")"
  local line bad
  line=$(grep -F "$guid" "$DG_LOG" || true)
  [ "$(grep -c . <<<"$line")" -eq 1 ] && [[ "$line" == *"$uuid"* ]] ||
    fail "$what: no one line with the GUID $guid and the stable uuid $uuid: $(cat "$DG_LOG")"
  bad=$(grep -i "metadata" "$DG_LOG" | grep -vF "$uuid" || true)
  [ -z "$bad" ] || fail "$what: a line about the metadata: $bad"
}

n=0
while IFS=$'\t' read -r file _ size sc bs _ guid uuid _; do
  img=$T/s/${file%.gz}
  assert_eq "$((sc * bs))" "$size" "$file: MANIFEST's sector_count x block_size"
  opts=()
  [ $((n % 2)) -eq 1 ] && opts=(--format asif)
  serve_check "$img" "$size" "$guid" "$uuid" "$file" "${opts[@]}"
  n=$((n + 1))
done < <(tail -n +2 "$MANIFEST")

# A2 and A6 on five sizes: below one table, across the 126 GiB boundary, the largest
for gb in 10 125 150 2500 10000; do
  row=$(awk -F'\t' -v f="BlankDisk-${gb}GB.asif.gz" '$1 == f' "$MANIFEST")
  IFS=$'\t' read -r file _ size _ _ _ guid uuid _ <<<"$row"
  img=$T/s/${file%.gz}
  cp "$img" "$T/a2.asif"
  # A2: the inactive A's metadata table entry points past the end of the file
  $PY "$HERE/asifimg.py" mutate "$T/a2.asif" "dir_a[$T_META]" 1000
  serve_check "$T/a2.asif" "$size" "$guid" "$uuid" "$file with A's entry broken (A2)"
  # A6: A's sequence 2 > B's 1: A is active; B's entry broken
  cp "$img" "$T/a6.asif"
  $PY "$HERE/asifimg.py" mutate "$T/a6.asif" seq_a 2
  $PY "$HERE/asifimg.py" mutate "$T/a6.asif" "dir_b[$T_META]" 1000
  serve_check "$T/a6.asif" "$size" "$guid" "$uuid" "$file with sequences swapped (A6)" --format asif
done
pass "25 ASIF samples: size, read-only, GUID and stable uuid, zero reads, one hole extent; directory choice on 5"
