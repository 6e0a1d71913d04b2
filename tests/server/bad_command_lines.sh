#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bad command lines: `diskgate serve` exits 2 promptly, prints nothing on stdout and exactly
# one line on stderr, and that line names the problem (the option, value or path at fault).
# Cases: unknown long and short options, a value given to an option that takes none, an
# ambiguous abbreviation, a repeated --listen/--socket/--export, --sync/--cache bogus,
# --threads 0, --max-connections out of range or not a number, --force-share without
# --read-only, an option without its value, an option whose value is forgotten
# (`--export --read-only`), an empty path, name or --listen address, missing PATH,
# two PATHs, a missing file, a directory, an image that cannot be opened for writing (the
# --read-only hint only for one that can be read), --allow-busy-device with rbd:, a file
# already served by another diskgate, --listen 'bad::addr', a bare port, a host that does
# not resolve, a port out of range, a Unix socket another diskgate is accepting on; no
# command, or an unknown one. The first server keeps working afterwards.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

truncate -s 1M "$T/a.img" "$T/b.img"
mkdir "$T/dir"
# Port 0: the kernel picks one at bind time, so no later free_port can hand out the same one.
L=(--socket "$T/bad.sock" --listen "127.0.0.1:0")   # so nothing would use the defaults
failures=0

# no command at all, and an unknown one: one line too (it printed the 4-line usage)
for args in "" "frobnicate"; do
  rc=0
  # shellcheck disable=SC2086 # the empty case is no argument at all
  "$DISKGATE" $args >"$T/out" 2>"$T/err" || rc=$?
  if [ "$rc" != 2 ] || [ -s "$T/out" ] || [ "$(wc -l <"$T/err")" != 1 ] ||
     ! grep -q "command" "$T/err"; then
    echo "FAIL: diskgate $args: exit $rc, want 2 and one line naming the command:" >&2
    cat "$T/err" >&2
    failures=$((failures + 1))
  fi
done

# bad WORD ARGS...: expect exit 2, empty stdout, one stderr line containing WORD
bad() {
  local word=$1 rc=0 lines; shift
  timeout 10 "$DISKGATE" serve "$@" >"$T/out" 2>"$T/err" || rc=$?
  lines=$(wc -l <"$T/err")
  if [ "$rc" != 2 ] || [ -s "$T/out" ] || [ "$lines" != 1 ] || ! grep -qiF -- "$word" "$T/err"; then
    echo "FAIL: serve $*: exit $rc (want 2), stdout $(wc -c <"$T/out") bytes (want 0)," \
         "$lines stderr lines (want 1 naming '$word'):" >&2
    sed 's/^/    | /' "$T/out" "$T/err" >&2
    failures=$((failures + 1))
  fi
}

bad --bogus       "${L[@]}" --bogus "$T/a.img"
bad bogus         "${L[@]}" --sync bogus "$T/a.img"
bad --cache       "${L[@]}" --cache bogus "$T/a.img"
bad --threads     "${L[@]}" --threads 0 "$T/a.img"
# digits only: a space or a sign was taken by strtoul (' -0' meant no limit)
for v in -1 x 1000001 2k ' 5' +5 ' -0'; do
  bad "--max-connections takes a number from 0 (no limit) to 1000000, not '$v'" \
      "${L[@]}" --max-connections "$v" "$T/a.img"
done
bad "'--export' needs a value" "${L[@]}" --export
# a forgotten value: the next option is not taken as it (it served a writable export named
# "--read-only", or made a socket named "--read-only")
bad "'--export' needs a value, not the option '--read-only'" "${L[@]}" --export --read-only "$T/a.img"
bad "'--socket' needs a value, not the option '--read-only'" --listen "127.0.0.1:0" --socket --read-only "$T/a.img"
# an empty path or name (--socket '' was taken for the working directory, "the path exists
# and is not a socket")
for opt in --socket --pid-file --tls-certificates --tls-psk --ceph-conf --ceph-id; do
  bad "$opt needs a" --listen "127.0.0.1:0" "$opt" '' "$T/a.img"
  grep -q "not an empty" "$T/err" || { cat "$T/err" >&2; failures=$((failures + 1)); }
done
# an empty --listen listened on the default 127.0.0.1:10809
bad "--listen needs" --socket "$T/bad.sock" --listen '' "$T/a.img"
grep -q "not an empty" "$T/err" || { cat "$T/err" >&2; failures=$((failures + 1)); }
# each kind of refused option named as what it is (not all as "needs a value")
bad "unknown option '-r'"       "${L[@]}" -r "$T/a.img"
bad "'--read-only' takes no value" "${L[@]}" --read-only=yes "$T/a.img"
bad "'--s' is ambiguous"        "${L[@]}" --s x "$T/a.img"
bad "unknown option '--bogus'"  "${L[@]}" --bogus=1 "$T/a.img"
# a bare port is not an address (never bound as the IPv4 address 0.0.47.165)
bad "HOST:PORT"   --socket "$T/bad.sock" --listen 12101 "$T/a.img"
RES_OPTIONS="timeout:1 attempts:1" \
  bad "no such host" --socket "$T/bad.sock" --listen nosuchhost.invalid:1 "$T/a.img"
# a second --listen, --socket or --export is refused, never replaces the first silently
bad "--listen given twice" "${L[@]}" --listen 127.0.0.1:1 "$T/a.img"
bad "--socket given twice" "${L[@]}" --socket "$T/other.sock" "$T/a.img"
bad "--export given twice" "${L[@]}" --export a --export b "$T/a.img"
# an export name that is not UTF-8 (NBD strings are): it was served, and sent to clients
bad "--export needs a UTF-8 name, not 'caf\\xe9'" "${L[@]}" --export $'caf\xe9' "$T/a.img"
bad "--force-share needs --read-only" "${L[@]}" --force-share "$T/a.img"
bad "--force-share is for files and block devices" "${L[@]}" --read-only --force-share rbd:pool/img
# control characters in a value: escaped, still one line
bad "not '1\\x0a2'"      "${L[@]}" --threads $'1\n2' "$T/a.img"
bad "not '\\x1b[31mx'"    "${L[@]}" --cache $'\e[31mx' "$T/a.img"
bad "unknown option '--foo\\x01'" "${L[@]}" $'--foo\x01' "$T/a.img"   # escaped once, not twice
bad "'--listen' needs"   --socket "$T/bad.sock" --listen
bad path          "${L[@]}"
bad "$T/b.img"    "${L[@]}" "$T/a.img" "$T/b.img"
bad "$T/missing.img" "${L[@]}" "$T/missing.img"
bad "$T/dir"      "${L[@]}" "$T/dir"
# an image that cannot be opened for writing (immutable here: root is refused too): the
# line names --read-only, which serves it
truncate -s 1M "$T/immutable.img"
if chattr +i "$T/immutable.img" 2>/dev/null; then
  bad "add --read-only" "${L[@]}" "$T/immutable.img"
  chattr -i "$T/immutable.img"
else
  echo "note: chattr +i is not supported under $T; the read-only hint is not checked"
fi
# the hint names --read-only only where it would serve the file: readable, not writable.
# As an unprivileged user: mode 0444 gets it; mode 000 (EACCES on reading too) and a path
# that does not exist do not.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  mkdir -m 1777 "$T/pub"
  chmod 711 "$T"
  truncate -s 1M "$T/pub/readable.img" "$T/pub/unreadable.img"
  chmod 444 "$T/pub/readable.img"
  chmod 000 "$T/pub/unreadable.img"
  for f in readable unreadable missing; do
    rc=0
    timeout 10 setpriv --reuid=nobody --regid=nogroup --clear-groups "$DISKGATE" serve \
      --socket "$T/pub/nb.sock" "$T/pub/$f.img" >"$T/out" 2>"$T/err" || rc=$?
    hint=$(grep -c -- "--read-only" "$T/err" || true)
    if [ "$rc" != 2 ] || [ "$(wc -l <"$T/err")" != 1 ] || ! grep -qF "$T/pub/$f.img" "$T/err" ||
       [ "$hint" != "$([ $f = readable ] && echo 1 || echo 0)" ]; then
      echo "FAIL: serve $f.img as nobody: exit $rc, the --read-only hint $hint times:" >&2
      sed 's/^/    | /' "$T/err" >&2
      failures=$((failures + 1))
    fi
  done
else
  echo "note: not root or no setpriv; the hint for unreadable files is not checked"
fi
bad "--allow-busy-device is for block devices" "${L[@]}" --allow-busy-device rbd:pool/img
bad bad::addr     --socket "$T/bad.sock" --listen bad::addr "$T/a.img"
bad 99999         --socket "$T/bad.sock" --listen 127.0.0.1:99999 "$T/a.img"

# --NAME=VALUE still sets a value that looks like an option: a writable export of that name
dg_start --export=--read-only "$T/b.img"
grep -q "as export '--read-only'" "$DG_LOG" || { cat "$DG_LOG" >&2; fail "--export=--read-only"; }
assert_eq "$(nbdinfo --can write "nbd+unix:///--read-only?socket=$DG_SOCK" && echo writable)" \
  writable "the export named --read-only"
dg_stop

dg_start "$T/a.img"    # a running server: its file and its socket are taken
bad "$T/a.img"    "${L[@]}" "$T/a.img"
grep -qiE "served|lock|in use|busy" "$T/err" || { cat "$T/err" >&2; fail "already-served message does not say why"; }
bad "$DG_SOCK"    --socket "$DG_SOCK" --listen "127.0.0.1:0" "$T/b.img"
assert_eq "$(nbdinfo --size "$DG_UNIX")" 1048576 "the first server after the refused ones"
dg_stop
# An unknown command with a newline in it: one line, exit 2.
rc=0; timeout 10 "$DISKGATE" $'x\ny' >"$T/out" 2>"$T/err" || rc=$?
if [ "$rc" != 2 ] || [ "$(wc -l <"$T/err")" != 1 ] || ! grep -qF "unknown command 'x\x0ay'" "$T/err"; then
  echo "FAIL: an unknown command with a newline: exit $rc, $(wc -l <"$T/err") stderr lines:" >&2
  sed 's/^/    | /' "$T/err" >&2
  failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] || fail "$failures bad command lines mishandled"
pass "bad command lines"
