#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hostile qcow2 images (issue 35, point 7), written byte by byte by tests/qcow2/hostile.py:
# tables past the end of the file or over the header, an L1 of 2^31 entries, cluster_bits 8
# and 22, a refcount table at offset 0, backing file names past the header cluster, a
# backing chain that loops and one 1,000 deep, compressed entries that overflow, L2 entries
# past the end of the file or over metadata, unknown incompatible bits, encryption, an
# external data file, the dirty and the corrupt bit. For each, the server (Q2_SERVER) must
# either refuse it -- diskgate: exit status 2 and exactly one line on stderr -- or serve it
# without harm: reads return data or an error reply, the connection and the server stay
# up, a write aimed at the hostile mapping lands inside the file (the file grows by at most
# the 4 clusters an allocation may take) and changes neither the header, nor the refcount
# table, nor the L1 table, and the process's peak RSS stays under 100 MiB.
# Some cases allow one outcome only (hostile.py's EXPECT): the feature bits, encryption and
# the external data file are refused; the dirty bit is refused with a line naming
# `qemu-img check -r`; the corrupt bit is served read-only; a chain that loops or is 1,000
# deep is refused, the deep one within 3 s. qemu-nbd (the reference) is held to "refused
# (exit 1) or served without harm" only, and its outcome is printed for comparison.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib_qcow2.sh"
RSS_LIMIT_KIB=$((100 * 1024))
C=65536
D=$T/hostile
$PY "$HERE/hostile.py" "$D" >"$T/cases"
echo "hostile: $(wc -l <"$T/cases") images, server $Q2_SERVER"

# meta_sum IMAGE: checksum of the header's first 72 bytes (the version 2 fields: where the
# tables are, how large), the refcount table and the L1 table (clusters 1 and 3 of every
# image hostile.py writes). An allocating write may change the refcount block and the L2
# table, and a server may set the corrupt bit (or rewrite the header extensions), never
# these.
meta_sum() {
  { head -c 72 "$1"
    dd if="$1" bs=$C skip=1 count=1 status=none; dd if="$1" bs=$C skip=3 count=1 status=none
  } | cksum
}

# Each case runs in a subshell (its servers killed when it fails), so that one run reports
# every case that fails; the test fails at the end if any did.
# harm WHAT: a served image was harmed: diskgate fails; qemu-nbd is only reported (QEMU
# itself writes past the end of the file for some of these images).
harm() {
  [ "$Q2_SERVER" = diskgate ] && fail "$*"
  echo "  qemu-nbd (not held to it): $*"
  echo harm >>"$T/tally"
}
while read -r name image expect off grow what; do
  (
  trap 'for p in "${DG_PIDS[@]:-}"; do kill -9 "$p" 2>/dev/null || true; done' EXIT
  size0=$(q2_size "$image")
  sum0=$(meta_sum "$image")
  ro=()
  t0=$EPOCHREALTIME
  wait_s=10
  [ "$name" = backing-deep-1000 ] && wait_s=3
  Q2_LAUNCH_WAIT=$wait_s q2_launch "${ro[@]}" "$image"
  ms=$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))
  case "$Q2_STATE" in
    hung)
      # the server is /usr/bin/time's child and has written no pid file yet
      for p in $(ps -o pid= --ppid "$Q2_PID"); do kill -9 "$p"; done
      wait "$Q2_PID" 2>/dev/null || true
      if [ "$Q2_SERVER" = diskgate ] || [ "$name" != backing-deep-1000 ]; then
        fail "$name ($what): $Q2_SERVER neither served nor exited within $wait_s s"
      fi
      echo "$name: qemu-nbd was still opening the chain after $wait_s s (not held to it)"
      exit 0
      ;;
    refused)
      lines=$(wc -l <"$Q2_ERR")
      msg=$(head -c 300 "$Q2_ERR" | tr '\n' '|')
      if [ "$Q2_SERVER" = diskgate ]; then
        [ "$Q2_RC" -eq 2 ] || { cat "$Q2_ERR" >&2; fail "$name ($what): diskgate exited $Q2_RC, expected 2"; }
        [ "$lines" -eq 1 ] || { cat "$Q2_ERR" >&2; fail "$name ($what): $lines lines on stderr, expected exactly 1"; }
        case "$expect" in
          ro) fail "$name ($what): refused ('$msg'); it must be served read-only" ;;
          refuse-R) grep -q 'qemu-img check -r' "$Q2_ERR" ||
            fail "$name ($what): the refusal '$msg' does not name 'qemu-img check -r'" ;;
        esac
      else
        [ "$Q2_RC" -eq 1 ] || { cat "$Q2_ERR" >&2; fail "$name ($what): qemu-nbd exited $Q2_RC"; }
      fi
      [ "$name" != backing-deep-1000 ] || [ "$ms" -lt 3000 ] ||
        fail "$name: refused after $ms ms, expected < 3000"
      rss=$(cat "$Q2_RSSF" 2>/dev/null | tail -1)
      [ -n "$rss" ] && [ "$rss" -lt $RSS_LIMIT_KIB ] ||
        fail "$name ($what): peak RSS ${rss:-?} KiB before refusing, limit $RSS_LIMIT_KIB"
      echo "$name: refused in $ms ms (exit $Q2_RC, peak RSS $rss KiB): $msg"
      echo refused >>"$T/tally"
      ;;
    serving)
      if [ "$Q2_SERVER" = diskgate ] && [[ "$expect" == refuse* ]]; then
        q2_stop
        fail "$name ($what): served; diskgate must refuse it (exit 2, one line)"
      fi
      out=$($PY "$HERE/hostile.py" probe "$Q2_URI" "$off" 2>&1) ||
        fail "$name ($what): $out"
      kill -0 "$Q2_SPID" 2>/dev/null || fail "$name ($what): the server died during the probe"
      [[ "$out" != *DROPPED* ]] ||
        harm "$name ($what): the server closed the connection instead of an error reply: $out"
      # a second connection still works
      $PY -c 'import nbd, sys; h = nbd.NBD(); h.connect_uri(sys.argv[1]); h.get_size(); h.shutdown()' \
        "$Q2_URI" || fail "$name ($what): a new connection fails after the probe"
      hwm=$(q2_hwm_kib "$Q2_SPID")
      [ "$hwm" -lt $RSS_LIMIT_KIB ] || fail "$name ($what): VmHWM $hwm KiB, limit $RSS_LIMIT_KIB"
      if [ "$expect" = ro ] && [ "$Q2_SERVER" = diskgate ]; then
        [[ "$out" == *"read_only=1"* ]] || fail "$name ($what): served writable: $out"
        nbdinfo --json "$Q2_URI" | grep '"is_read_only": true' >/dev/null ||
          fail "$name ($what): nbdinfo does not say read-only"
      fi
      q2_stop
      if [ "$grow" = 0 ]; then
        size1=$(q2_size "$image")
        [ "$size1" -le $((size0 + 4 * C)) ] ||
          harm "$name ($what): the file grew from $size0 to $size1 bytes after: $out"
        [ "$(meta_sum "$image")" = "$sum0" ] ||
          harm "$name ($what): a write changed the header, the refcount table or the L1 table: $out"
      fi
      echo "$name: served (VmHWM $hwm KiB): $out"
      echo served >>"$T/tally"
      ;;
  esac
  ) || echo failed >>"$T/tally"
done <"$T/cases"
touch "$T/tally"
refused=$(grep -c '^refused' "$T/tally" || true)
served=$(grep -c '^served' "$T/tally" || true)
harmed=$(grep -c '^harm' "$T/tally" || true)
failed=$(grep -c '^failed' "$T/tally" || true)
[ "$failed" -eq 0 ] || fail "$failed of $(wc -l <"$T/cases") hostile images were not refused or served without harm by $Q2_SERVER (FAIL lines above)"
note=""
[ "$harmed" -gt 0 ] && note=" ($harmed harms by qemu-nbd, reported above)"
pass "hostile images through $Q2_SERVER: $refused refused, $served served$note"
