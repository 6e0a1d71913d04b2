#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Mutations of a real ASIF image (asif.md 11 B; BlankDisk-100GB, copied per case): a bad
# header or directory (B1 magic, version, block and chunk sizes, total_segments,
# header_size; B2 sector counts whose products overflow or whose directory is too big; B3
# directories past the end, inside the header, overlapping, a file cut inside directory B;
# a guest-range directory entry past the end or with high bits) is refused at start-up
# with exit status 2 and exactly one line naming the field, with --format asif and, when
# the magic is intact, when probed; nothing crashes (the ASan build runs it too). A broken
# metadata mapping (B4: the metadata's directory entry 2^55-1 or past the end; B5 on the
# metadata's table entry: 01 with index 0, 00 and 10 with index 5, reserved bit 58, 11
# with bitmap entry 0, bitmap state 11; the bitmap chunk cut off) is served: the guest
# reads work, the log has one warning line about the metadata and no stable uuid. B5
# inside the guest range (synthetic images, asifcheck.py BAD_CASES): the server starts,
# reads and BLOCK_STATUS of the bad chunk are error replies on a connection that keeps
# serving, and the log says why.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib_asif.sh"
asif_samples
BASE=$T/base.asif
gunzip -c "$SAMPLES/kernova-blank/BlankDisk-100GB.asif.gz" >"$BASE"
SIZE=100000000000
UUID=76433c2b-4294-4c25-a6df-9f690dedf9ff
mkdir "$T/m"

# NAME EXPECT FIELD VALUE...: EXPECT = what the refusal line must name (an extended regex,
# any case), or "meta" (served without the metadata)
cat >"$T/cases" <<'EOF'
magic               magic            magic 0x73686478
version-2           version          version 2
block-size-0        block            block_size 0
block-size-1000     block            block_size 1000
block-size-8192     block            block_size 8192
chunk-size-0        chunk            chunk_size 0
chunk-size-1000     chunk            chunk_size 1000
chunk-size-8k       chunk|group      chunk_size 8192
total-segments-1    segment          total_segments 1
header-size-0x10    header           header_size 0x10
header-size-past-cs header           header_size 0x100001
sectors-over-max    sector           sector_count 0x80000000001
max-overflows       sector|overflow  max_sector_count 0x4000000000000000
directory-too-big   director         max_sector_count 0x40000000000000
dir-a-past-eof      director         dir_a 0x1000000
dir-b-past-eof      director         dir_b 0x1000000
dir-a-in-header     director|header  dir_a 0x100
dir-b-wraps         director         dir_b 0xfffffffffffffff8
dirs-overlap        director|overlap dir_b 0x400
cut-in-dirs         director         truncate 0x41000
cut-in-dir-b        directory.B      truncate 0x60000
dir-entry0-past-eof table|director   dir[0] 1000
dir-entry0-bit55    table|director   dir[0] 0x80000000000000
metadata-in-guest   metadata_chunk   metadata_chunk 1
meta-dir-huge       meta             dir[33288] 0x7fffffffffffff
meta-dir-past-eof   meta             dir[33288] 1000
meta-full-index0    meta             entry@meta 0x4000000000000000
meta-never-index5   meta             entry@meta 5
meta-unmapped-idx5  meta             entry@meta 0x8000000000000005
meta-reserved-58    meta             entry@meta 0xc400000000000002
meta-bitmap-entry0  meta             bitmap_entry@meta 0
meta-bitmap-state11 meta             bitmap_byte@meta 0xff
meta-bitmap-cut     meta             truncate 0x300000
EOF
$PY "$CHECK" mutants "$BASE" "$T/m" <"$T/cases"

# Every refusal at once (with --format asif; and probed, when the magic is intact), then
# every image served without its metadata at once, then every hostile synthetic image.
refusals=() metas=()
while read -r name expect _; do
  img=$T/m/$name.asif
  if [ "$expect" = meta ]; then
    asif_launch "$name" --format asif "$img"
    metas+=("$name")
    continue
  fi
  asif_launch "r-$name" --format asif "$img"
  refusals+=("r-$name $expect $img")
  if [ "$name" != magic ]; then
    # a copy: two servers of one file would meet its lock, not the malformed image
    cp --sparse=always "$img" "$T/m/p-$name.asif"
    asif_launch "p-$name" "$T/m/p-$name.asif"
    refusals+=("p-$name $expect $T/m/p-$name.asif")
  fi
done <"$T/cases"

for r in "${refusals[@]}"; do
  read -r name expect img <<<"$r"
  asif_exit "$name"
  log=$(asif_log "$name")
  assert_eq "$ASIF_RC" 2 "$name: exit status ($(head -c 600 "$log"))"
  assert_eq "$(wc -l <"$log" | tr -d ' ')" 1 "$name: lines of output ($(cat "$log"))"
  line=$(cat "$log")
  [[ "$line" == "diskgate serve: $img: not a valid ASIF image "* ]] ||
    fail "$name: not the refusal of a malformed image: $line"
  grep -qiE "$expect" <<<"${line#*"$img": }" || fail "$name: the line does not name '$expect': $line"
  [ ! -e "$T/$name.sock" ] || fail "$name: a refused image left its socket"
  echo "$name: $(cat "$log")"
done

# B4/B5 on the metadata: served, guest reads work, one warning about the metadata
asif_wait "${metas[@]}"
args=()
for name in "${metas[@]}"; do args+=("$(asif_uri "$name")" "$SIZE"); done
$PY "$CHECK" sample "${args[@]}" >/dev/null
asif_stop "${metas[@]}"
for name in "${metas[@]}"; do
  log=$(asif_log "$name")
  ! grep -qF "$UUID" "$log" || fail "$name: the stable uuid was logged: $(cat "$log")"
  assert_eq "$(grep -ci "metadata" "$log")" 1 "$name: lines about the metadata ($(cat "$log"))"
  echo "$name: served: $(grep -i "metadata" "$log")"
done

# B5 inside the guest range: the server starts; reads of the bad entry are refused
mkdir "$T/b"
bads=() args=()
for name in $($PY "$CHECK" write-bad "$T/b"); do
  asif_launch "$name" --format asif "$T/b/$name.asif"
  bads+=("$name")
  args+=("$(asif_uri "$name")")
done
asif_wait "${bads[@]}"
$PY "$CHECK" verify-bad "${args[@]}" >/dev/null
for name in "${bads[@]}"; do
  kill -0 "${ASIF_PID[$name]}" || fail "$name: the server died"
done
asif_stop "${bads[@]}"
for name in "${bads[@]}"; do
  log=$(asif_log "$name")
  grep -qiE "entry|bitmap|chunk" "$log" || fail "$name: no log line about the bad entry: $(cat "$log")"
done
pass "ASIF mutations: ${#refusals[@]} refusals in one line, ${#metas[@]} served without their metadata, ${#bads[@]} bad guest entries refused per read"
