#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A writable diskgate and a writable qemu-nbd side by side against the real QEMU tools: each
# server is started on the image, then every row of the table below runs beside it and its
# outcome is asserted for that server. "ok": the tool works (the -U tools see what was
# written through the server); "refused": it fails naming a lock. The servers differ in two
# rows only: qemu-nbd shares "write" (it holds bytes 100, 101 and 203), so a writer that
# shares it too (qemu-io, another qemu-nbd) opens the image beside it; diskgate also keeps
# byte 201 ("write" not shared, as a QEMU VM's disk does), so no second writer opens it.
# Then the bytes each server holds, as /proc/locks shows them; diskgate's are asserted.
source "$SRCDIR/tests/lib.sh"

for tool in qemu-img qemu-io qemu-nbd qemu-system-x86_64 nbdinfo; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/deps.sh test)"
done
img=$T/disk.img
truncate -s 16M "$img" "$T/expected.img"
# what the server is made to write (row "write through the server"): 1 MiB of 0x5a at 0
head -c 1M /dev/zero | tr '\0' '\132' | dd of="$T/expected.img" conv=notrunc status=none

# dg_try ARGS...: a second `diskgate serve ARGS`; 0 once it listens (then stopped), else its
# exit status (its log in $T/out)
dg_try() {
  local rc=0
  rm -f "$T/try.sock"
  "$DISKGATE" serve --socket "$T/try.sock" --engine "${DG_ENGINE:-uring}" "$@" >"$T/out" 2>&1 &
  local pid=$!
  DG_PIDS+=("$pid")
  wait_until 10 eval "grep -q 'listening on' '$T/out' || ! kill -0 $pid 2>/dev/null" || true
  if grep -q 'listening on' "$T/out"; then
    kill "$pid"; wait "$pid" || true
    return 0
  fi
  wait "$pid" || rc=$?
  return "$rc"
}
# qemu_nbd_try ARGS...: a second qemu-nbd (--fork: it returns once it serves); stopped again
qemu_nbd_try() {
  rm -f "$T/q2.sock" "$T/q2.pid"
  qemu-nbd --fork --pid-file "$T/q2.pid" -f raw -k "$T/q2.sock" "$@" "$img" || return 1
  kill "$(cat "$T/q2.pid")"
}
# vm_try: a QEMU VM (paused, -S) with the image as a virtio disk; -daemonize returns once
# the disk is attached; stopped again
vm_try() {
  rm -f "$T/vm.pid"
  qemu-system-x86_64 -M microvm -accel tcg -nodefaults -display none -S -daemonize \
    -pidfile "$T/vm.pid" -drive "file=$img,format=raw,if=none,id=d0" \
    -device virtio-blk-device,drive=d0 || return 1
  kill "$(cat "$T/vm.pid")"
}

# row | diskgate | qemu-nbd | command (runs beside the writable server)
TABLE=$(cat <<'ROWS'
qemu-img info -U         | ok      | ok      | qemu-img info -U "$img"
qemu-img map -U          | ok      | ok      | qemu-img map -U -f raw "$img"
qemu-img compare -U      | ok      | ok      | qemu-img compare -U -f raw -F raw "$img" "$T/expected.img"
qemu-img convert -U      | ok      | ok      | qemu-img convert -U -f raw -O raw "$img" "$T/copy.img" && cmp "$T/copy.img" "$T/expected.img"
qemu-io -r               | ok      | ok      | qemu-io -r -f raw -c 'read -P 0x5a 0 4096' "$img" && ! grep -qi fail "$T/out"
qemu-nbd -r              | ok      | ok      | qemu_nbd_try -r
diskgate -r -U           | ok      | ok      | dg_try --read-only --force-share "$img"
qemu-img convert         | refused | refused | qemu-img convert -f raw -O raw "$img" "$T/copy2.img"
diskgate --read-only     | refused | refused | dg_try --read-only "$img"
diskgate                 | refused | refused | dg_try "$img"
QEMU VM                  | refused | refused | vm_try
qemu-nbd                 | refused | ok      | qemu_nbd_try
qemu-io (writer)         | refused | ok      | qemu-io -f raw -c 'write -P 0x77 8M 4096' "$img"
ROWS
)

# lock_bytes: the bytes locked on the image, "TYPE START-END" per lock (/proc/locks)
lock_bytes() {
  local id
  id=$(stat -c '%Hd %Ld %i' "$img" | awk '{printf "%02x:%02x:%d", $1, $2, $3}')
  awk -v id="$id" '$6 == id { print $4, $7 "-" $8 }' /proc/locks | sort -t' ' -k2n | paste -sd' '
}

failures=0
for server in diskgate qemu-nbd; do
  truncate -s 0 "$img"; truncate -s 16M "$img"
  if [ "$server" = diskgate ]; then
    dg_start "$img"
    uri=$DG_UNIX
  else
    qemu-nbd -t -f raw -k "$T/qn.sock" "$img" 2>"$T/qn.err" & DG_PID=$!
    DG_PIDS+=("$DG_PID")
    wait_until 5 test -S "$T/qn.sock" || { cat "$T/qn.err" >&2; fail "qemu-nbd did not start"; }
    uri="nbd+unix:///?socket=$T/qn.sock"
  fi
  qemu-io -f raw -c 'write -P 0x5a 0 1M' "$uri" >"$T/out" 2>&1 ||
    { cat "$T/out" >&2; fail "writing through $server"; }
  held=$(lock_bytes)
  echo "$server (writable) holds: $held"
  col=$([ "$server" = diskgate ] && echo 2 || echo 3)
  while IFS='|' read -r -a f; do
    row=$(echo "${f[0]}" | xargs) want=$(echo "${f[$col - 1]}" | xargs) cmd=${f[3]}
    rc=0
    eval "$cmd" >"$T/out" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ]; then
      got=ok
    elif grep -qiE 'lock|already served' "$T/out"; then
      got=refused
    else
      got="failed (exit $rc)"
    fi
    printf '  %-22s beside %-8s: %-8s (want %s)\n' "$row" "$server" "$got" "$want"
    if [ "$got" != "$want" ]; then
      sed 's/^/    | /' "$T/out" >&2
      failures=$((failures + 1))
    fi
  done <<<"$TABLE"
  assert_eq "$(lock_bytes)" "$held" "$server's lock bytes after the table"
  if [ "$server" = diskgate ]; then
    # consistent read + write held (100-101), write and resize not shared (201, 203)
    assert_eq "$held" "READ 100-101 READ 201-201 READ 203-203" "diskgate's lock bytes"
    dg_stop
  else
    kill "$DG_PID"; wait "$DG_PID" 2>/dev/null || true
  fi
  assert_eq "$(lock_bytes)" "" "lock bytes once $server has stopped"
done
[ "$failures" -eq 0 ] || fail "$failures outcomes differ from the table"
pass "a writable diskgate locks as QEMU: -U tools and QEMU readers work beside it, no second writer"
