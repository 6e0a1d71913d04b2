#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C18: names are not paths (docs/cases.md). Run with $1, the LD_PRELOAD
# module open_hook.c.
# 1. Export names are keys into what the operator configured, never paths: clients asking
#    for "../../etc/shadow", "/dev/vda", the image's own path or its file name are told
#    there is no such export (NBD_REP_ERR_UNKNOWN: libnbd's ENOENT), the configured export
#    still serves, and the server (traced with strace) opened none of those paths.
# 2. A path swapped between the server's check and its open (open_hook.c renames the
#    replacement onto the path just before the server's open, winning the race every time)
#    is not served: one line saying it was replaced, exit status 2, and no byte of the
#    file swapped in is served. Three swaps: a regular file for a symbolic link to a
#    secret file (caught by O_NOFOLLOW), a regular file for another regular file, and the
#    target of a symbolic link the operator named (both caught by comparing the inode
#    fstat gives with the one checked). The reason given names the swap, not "Too many
#    levels of symbolic links" or "Resource temporarily unavailable". Without --format the
#    swap meets the format probe's read of the path (its open is checked the same way);
#    the first two swaps again with --format raw meet the backing's own open.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
hook=${1:?usage: case_names_not_paths.sh OPEN_HOOK_MODULE}
[ -f "$hook" ] || fail "no module $hook"
command -v strace >/dev/null || fail "strace not found (scripts/deps.sh installs it)"
dg_allow_preload

mkrandom "$T/disk.img" 1048576
printf 'SECRET-BYTES' >"$T/secret.img"
truncate -s 1M "$T/secret.img"

# 1. Names are keys.
# --engine threads: strace -f stops at io_uring's kernel worker threads and the server
# hangs (valgrind cannot follow io_uring either); the names are looked up before any I/O.
# An ASan build's leak check cannot run under a tracer (it uses ptrace itself): off here.
DG_SOCK=$T/names.sock
ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" strace -f -qq -e trace=open,openat,openat2,stat,lstat,newfstatat,statx -o "$T/strace.txt" \
  "$DISKGATE" serve --engine threads --socket "$DG_SOCK" "$T/disk.img" \
  >"$T/names.out" 2>"$T/names.log" &
tracer=$!
DG_PIDS+=("$tracer")
wait_until 20 grep -q "listening on" "$T/names.out" || fail "no server: $(cat "$T/names.log")"
lines_before=$(wc -l <"$T/strace.txt") # what the server does from here on is for the clients
$PY - "$DG_SOCK" "$T/disk.img" <<'PY' || fail "C18: a name was taken for a path"
import errno, nbd, os, sys
sock, image = sys.argv[1], sys.argv[2]
for name in ["../../etc/shadow", "/dev/vda", image, os.path.basename(image), "/etc/shadow"]:
    h = nbd.NBD()
    h.set_export_name(name)
    try:
        h.connect_unix(sock)
    except nbd.Error as e:
        assert e.errnum == errno.ENOENT, (name, e.errnum, e.string)
        print(f"export name {name!r}: {e.string}")
        continue
    raise SystemExit(f"export name {name!r} was served ({h.get_size()} bytes)")
h = nbd.NBD()
h.connect_unix(sock)
with open(image, "rb") as f:
    assert h.pread(4096, 0) == f.read(4096), "the configured export serves other bytes"
h.shutdown()
print("the configured export (name '') serves the image")
PY
server=$(pgrep -P "$tracer") || fail "no server under strace"
kill -INT "$server" # the server stops, and strace with it
wait "$tracer" || fail "the traced server did not exit cleanly: $(cat "$T/names.log")"
# the trace sees the server's opens: the image's, at start-up
head -n "$lines_before" "$T/strace.txt" | grep -F "\"$T/disk.img\"" >/dev/null ||
  fail "strace did not see the server open the image: $(head -c 2000 "$T/strace.txt")"
tail -n +"$((lines_before + 1))" "$T/strace.txt" >"$T/strace.clients"
for p in /etc/shadow /dev/vda "../../etc/shadow"; do
  ! grep -qF "\"$p\"" "$T/strace.clients" || fail "C18: the server touched $p: $(grep -F "$p" "$T/strace.clients")"
done
! grep -qF "\"$T/disk.img\"" "$T/strace.clients" ||
  fail "C18: the server opened the image again for a client: $(grep -F "$T/disk.img" "$T/strace.clients")"
echo "C18: no path named by a client was opened or looked up ($(wc -l <"$T/strace.clients") calls traced)"

# 2. Swaps between check and open. expect_swap_refused WHAT PATH REPLACEMENT
# [SERVE OPTION...]: a --format given skips the format probe's read of the path, so the
# swap meets the backing's own checked open instead.
expect_swap_refused() {
  local what=$1 path=$2 with=$3 rc=0
  shift 3
  rm -f "$T/swap.sock"
  DG_SWAP_PATH=$path DG_SWAP_WITH=$with LD_PRELOAD=$hook timeout 10 "$DISKGATE" serve \
    --engine "${DG_ENGINE:-uring}" --socket "$T/swap.sock" "$@" "$path" >"$T/out" 2>"$T/err" || rc=$?
  [ ! -e "$with" ] || fail "$what: the module did not swap (is $with still there?)"
  [ "$rc" = 2 ] || fail "$what: exit $rc, want 2: $(cat "$T/err")"
  [ ! -s "$T/out" ] || fail "$what: printed on stdout (served?): $(cat "$T/out")"
  assert_eq "$(wc -l <"$T/err")" 1 "$what: lines on stderr ($(cat "$T/err"))"
  grep -qF "$path was replaced between its check and its open; not served" "$T/err" ||
    fail "$what: the line does not say so: $(cat "$T/err")"
  [ ! -e "$T/swap.sock" ] || fail "$what: a socket was left behind"
  echo "$what: $(cat "$T/err")"
}

cp "$T/disk.img" "$T/a.img"
ln -s "$T/secret.img" "$T/evil"
expect_swap_refused "a regular file swapped for a link to another file" "$T/a.img" "$T/evil"

cp "$T/disk.img" "$T/b.img"
cp "$T/secret.img" "$T/other.img"
expect_swap_refused "a regular file swapped for another file" "$T/b.img" "$T/other.img"

# the same two swaps with --format raw: no probe reads the path first
cp "$T/disk.img" "$T/a2.img"
ln -s "$T/secret.img" "$T/evil2"
expect_swap_refused "--format raw: a regular file swapped for a link" "$T/a2.img" "$T/evil2" \
  --format raw
cp "$T/disk.img" "$T/b2.img"
cp "$T/secret.img" "$T/other2.img"
expect_swap_refused "--format raw: a regular file swapped for another file" "$T/b2.img" \
  "$T/other2.img" --format raw

cp "$T/disk.img" "$T/c.img"
ln -s "$T/c.img" "$T/named-link"
ln -s "$T/secret.img" "$T/evil-link"
expect_swap_refused "the operator's symbolic link pointed elsewhere" "$T/named-link" "$T/evil-link"

# without a swap, the operator's link serves its target (the module alone changes nothing)
ln -sfn "$T/c.img" "$T/named-link"
DG_SWAP_PATH=$T/nothing DG_SWAP_WITH=$T/nothing2 LD_PRELOAD=$hook dg_start "$T/named-link"
$PY - "$DG_UNIX" "$T/c.img" <<'PY' || fail "the operator's link did not serve its target"
import nbd, sys
h = nbd.NBD()
h.connect_uri(sys.argv[1])
assert h.pread(4096, 0) == open(sys.argv[2], "rb").read(4096)
h.shutdown()
PY
dg_stop
pass "C18: export names are never paths, and a path swapped between check and open is not served"
