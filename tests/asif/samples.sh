#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The 25 blank ASIF images Apple's diskutil made (shared/samples/asif, asif.md 11 A), each
# gunzipped once and served (odd ones with --format asif, even ones probed): export size =
# MANIFEST's virtual_bytes, read-only, minimum block size 512; the log names the format
# (probed or not) and has one line with MANIFEST's header GUID and metadata stable uuid
# (A1; A5: the uuid is read through the table 33288 / group 7 / index 2047 mapping, which
# `asifcheck.py layout` also checks in the files themselves, with the generator rebuilding
# each file byte for byte); zero reads at [0, 4096), [size-512, size), across the last
# chunk boundary up to the size, at 126 GiB where the size allows; reads past the size are
# error replies (A3); BLOCK_STATUS and nbdinfo --map give one hole,zero extent (A4).
# Directory choice on 3 sizes: with the inactive directory A's metadata table entry
# pointing past the end of the file, the uuid is still read (B, sequence 1, is active:
# A2); with A's sequence raised to 2 and B's entry broken instead, likewise, and every
# check above gives the same results (A6).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib_asif.sh"
asif_samples
command -v nbdinfo >/dev/null || fail "nbdinfo is not installed (Debian: apt-get install libnbd-bin)"
T_META=33288 # the directory entry of the metadata's table (4 PiB / 126 GiB, rounded up)
mkdir "$T/s"

# rows: NAME IMAGE SIZE GUID UUID PROBED (served with the checks of serve_checks)
ROWS=()
n=0
while IFS=$'\t' read -r file _ size sc bs _ guid uuid sha _; do
  img=$T/s/${file%.gz}
  gunzip -c "$SAMPLES/kernova-blank/$file" >"$img"
  assert_eq "$(sha256sum <"$img" | cut -d' ' -f1)" "$sha" "sha256 of $file gunzipped"
  assert_eq "$((sc * bs))" "$size" "$file: MANIFEST's sector_count x block_size"
  ROWS+=("s$n $img $size $guid $uuid $((n % 2))")
  n=$((n + 1))
done < <(tail -n +2 "$MANIFEST")
assert_eq "$n" 25 "samples in MANIFEST.tsv"
$PY "$CHECK" layout "$T/s" "$MANIFEST"

# A2 and A6: below one table, across the 126 GiB boundary, the largest
for gb in 10 150 10000; do
  row=$(awk -F'\t' -v f="BlankDisk-${gb}GB.asif.gz" '$1 == f' "$MANIFEST")
  IFS=$'\t' read -r file _ size _ _ _ guid uuid _ <<<"$row"
  cp "$T/s/${file%.gz}" "$T/a2-$gb.asif"
  $PY "$ASIFIMG" mutate "$T/a2-$gb.asif" "dir_a[$T_META]" 1000
  ROWS+=("a2-$gb $T/a2-$gb.asif $size $guid $uuid 1")
  cp "$T/s/${file%.gz}" "$T/a6-$gb.asif"
  $PY "$ASIFIMG" mutate "$T/a6-$gb.asif" seq_a 2
  $PY "$ASIFIMG" mutate "$T/a6-$gb.asif" "dir_b[$T_META]" 1000
  ROWS+=("a6-$gb $T/a6-$gb.asif $size $guid $uuid 0")
done

# log_check NAME SIZE GUID UUID PROBED: the serving line, one GUID + uuid line, no warning
log_check() {
  local name=$1 size=$2 guid=$3 uuid=$4 probed="" log line bad
  [ "$5" = 1 ] && probed=" (probed)"
  log=$(asif_log "$name")
  grep -qF "as export '': $size bytes, asif image$probed, " "$log" ||
    fail "$name: no serving line naming the asif format$probed: $(cat "$log")"
  line=$(grep -F "$guid" "$log" || true)
  [ "$(grep -c . <<<"$line")" -eq 1 ] && [[ "$line" == *"$uuid"* ]] ||
    fail "$name: no one line with the GUID $guid and the stable uuid $uuid: $(cat "$log")"
  bad=$(grep -i "metadata" "$log" | grep -vF "$uuid" || true)
  [ -z "$bad" ] || fail "$name: a line about the metadata: $bad"
}

# servers in batches of 10: their start-ups overlap; one Python process checks a batch
for ((b = 0; b < ${#ROWS[@]}; b += 10)); do
  names=() args=()
  for row in "${ROWS[@]:b:10}"; do
    read -r name img size _ _ probed <<<"$row"
    opts=()
    [ "$probed" = 1 ] || opts=(--format asif)
    asif_launch "$name" "${opts[@]}" "$img"
    names+=("$name")
    args+=("$(asif_uri "$name")" "$size")
  done
  asif_wait "${names[@]}"
  $PY "$CHECK" sample "${args[@]}" >/dev/null
  for ((i = 0; i < ${#names[@]}; i++)); do
    size=${args[2 * i + 1]}
    map=$(nbdinfo --map "${args[2 * i]}")
    [ "$(wc -l <<<"$map")" -eq 1 ] && [ "$(awk '{print $1, $2, $3, $4}' <<<"$map")" = "0 $size 3 hole,zero" ] ||
      fail "${names[i]}: nbdinfo --map: $map"
  done
  asif_stop "${names[@]}"
  for row in "${ROWS[@]:b:10}"; do
    read -r name _ size guid uuid probed <<<"$row"
    log_check "$name" "$size" "$guid" "$uuid" "$probed"
  done
done
pass "25 ASIF samples served: size, read-only, GUID and stable uuid, zero reads, one hole extent; directory choice (A2, A6) on 3"
