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
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
SAMPLES=${DG_ASIF_SAMPLES:-$SRCDIR/../shared/samples/asif}
[ -f "$SAMPLES/MANIFEST.tsv" ] || fail "no ASIF samples at $SAMPLES (shared/ beside the repository)"
CHECK=$HERE/asifcheck.py
BASE=$T/base.asif
gunzip -c "$SAMPLES/kernova-blank/BlankDisk-100GB.asif.gz" >"$BASE"
SIZE=100000000000
UUID=76433c2b-4294-4c25-a6df-9f690dedf9ff
mkdir "$T/m"

# NAME EXPECT FIELD VALUE...: EXPECT = the word the refusal line must hold (a regex,
# case-insensitive), or "meta" (served, the metadata unreadable); "-" ends the magic-less
# cases that cannot be probed
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
cut-in-dir-b        director|short|end|truncat  truncate 0x41000
dir-entry0-past-eof table|director   dir[0] 1000
dir-entry0-bit55    table|director   dir[0] 0x80000000000000
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

# refused IMAGE WORD WHAT [serve options...]: exit 2, one line holding WORD
refused() {
  local img=$1 word=$2 what=$3 rc=0
  shift 3
  timeout 20 "$DISKGATE" serve --socket "$T/r.sock" --engine "${DG_ENGINE:-uring}" "$@" "$img" \
    >"$T/r.out" 2>&1 || rc=$?
  assert_eq "$rc" 2 "$what: exit status ($(head -c 600 "$T/r.out"))"
  assert_eq "$(wc -l <"$T/r.out" | tr -d ' ')" 1 "$what: lines of output ($(cat "$T/r.out"))"
  grep -qiE "$word" "$T/r.out" || fail "$what: the line does not name '$word': $(cat "$T/r.out")"
  [ ! -e "$T/r.sock" ] || fail "$what: a refused image left its socket"
}

nref=0 nmeta=0
while read -r name expect _; do
  img=$T/m/$name.asif
  if [ "$expect" != meta ]; then
    refused "$img" "$expect" "$name (--format asif)" --format asif
    [ "$name" = magic ] || refused "$img" "$expect" "$name (probed)"
    echo "$name: refused: $(cat "$T/r.out")"
    nref=$((nref + 1))
    continue
  fi
  # B4/B5 on the metadata: served, guest reads work, one warning about the metadata
  dg_start --format asif "$img"
  $PY "$CHECK" sample "$DG_UNIX" "$SIZE" >/dev/null || fail "$name: guest checks above"
  dg_stop
  ! grep -qF "$UUID" "$DG_LOG" || fail "$name: the stable uuid was logged: $(cat "$DG_LOG")"
  assert_eq "$(grep -ci "metadata" "$DG_LOG")" 1 "$name: lines about the metadata ($(cat "$DG_LOG"))"
  echo "$name: served: $(grep -i "metadata" "$DG_LOG")"
  nmeta=$((nmeta + 1))
done <"$T/cases"

# B5 inside the guest range: a bad entry is refused when read, not at start-up
mkdir "$T/b"
nbad=0
for name in $($PY "$CHECK" write-bad "$T/b"); do
  dg_start --format asif "$T/b/$name.asif"
  $PY "$CHECK" verify-bad "$DG_UNIX" >/dev/null || fail "$name: the checks above"
  kill -0 "$DG_PID" || fail "$name: the server died"
  dg_stop
  grep -qiE "entry|bitmap|chunk" "$DG_LOG" ||
    fail "$name: no log line about the bad entry: $(cat "$DG_LOG")"
  nbad=$((nbad + 1))
done
pass "ASIF mutations: $nref refused in one line, $nmeta served without their metadata, $nbad bad guest entries refused per read"
