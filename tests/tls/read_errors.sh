#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Credentials that exist but cannot be read: the line keeps the reason (errno), and the
# exit status says whose fault it is (1: the machine ran out, 2: the file). Run with $1,
# the LD_PRELOAD module open_hook.c, which makes the open of one file fail with a chosen
# errno: the machine's own limits cannot be hit at start-up (the credentials load before
# anything else holds a descriptor). GnuTLS's file loaders said "Error while reading file"
# whatever the reason (exit 2), and a --tls-psk file out of descriptors did not name the
# limit; credentials are now read into memory by diskgate (util/file_read.c).
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/tls/tlslib.sh"
shim=${1:?usage: read_errors.sh OPEN_HOOK_MODULE}
[ -f "$shim" ] || fail "no module $shim"
dg_allow_preload

tls_standard
cp "$T/ca/ca-cert.pem" "$T/srv/" # client certificates asked for: ca-cert.pem is read too
printf 'crl_next_update = 2\ncrl_number = 1\n' >"$T/crl.info" # and a CRL, ca-crl.pem
certtool --generate-crl --load-ca-privkey "$T/ca/ca-key.pem" --load-ca-certificate \
  "$T/ca/ca-cert.pem" --template "$T/crl.info" --outfile "$T/srv/ca-crl.pem" >"$T/crl.log" 2>&1 ||
  { cat "$T/crl.log" >&2; fail "certtool: CRL"; }
truncate -s 1M "$T/disk.img"
printf 'alice:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/psk.keys"

# expect_read_error FILE ERRNO STATUS "stderr must contain" serve-options...: the open of
# FILE fails with ERRNO; serve must exit STATUS with that one line and nothing on stdout.
expect_read_error() {
  local file=$1 errno=$2 status=$3 want=$4 rc=0
  shift 4
  DG_OPEN_FAIL_SUFFIX=$file DG_OPEN_FAIL_ERRNO=$errno LD_PRELOAD=$shim \
    timeout 10 "$DISKGATE" serve --socket "$T/s.sock" "$@" "$T/disk.img" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = "$status" ] || fail "$file, errno $errno: exit $rc, want $status: $(cat "$T/err")"
  [ ! -s "$T/out" ] || fail "$file, errno $errno: printed on stdout: $(cat "$T/out")"
  assert_eq "$(wc -l <"$T/err")" 1 "$file, errno $errno: lines on stderr ($(cat "$T/err"))"
  grep -qF -- "$want" "$T/err" || fail "$file, errno $errno: '$(cat "$T/err")' lacks '$want'"
  [ ! -e "$T/s.sock" ] || fail "$file, errno $errno: the socket file was left behind"
  echo "$file, errno $errno: exit $rc: $(cat "$T/err")"
}

# the module works: it fails only the named file
DG_OPEN_FAIL_SUFFIX=nothing-has-this-name DG_OPEN_FAIL_ERRNO=23 LD_PRELOAD=$shim \
  cat "$T/srv/server-cert.pem" >/dev/null || fail "the module failed an open it should not"

# the line names the limit diskgate raised its soft limit to: the hard one (unless unlimited)
limit_text=" (the open-files limit, ulimit -Hn, is $(ulimit -Hn))"
[ "$(ulimit -Hn)" != unlimited ] || limit_text=
# the four files serve as they are
DG_OPEN_FAIL_SUFFIX=nothing-has-this-name DG_OPEN_FAIL_ERRNO=23 LD_PRELOAD=$shim \
  timeout 2 "$DISKGATE" serve --socket "$T/s.sock" --tls-certificates "$T/srv" "$T/disk.img" \
  >"$T/out" 2>"$T/err" && fail "the server exited: $(cat "$T/err")"
grep -q "listening on" "$T/out" || fail "the server did not serve with the four files: $(cat "$T/err")"
rm -f "$T/s.sock"

for f in server-cert.pem server-key.pem ca-cert.pem ca-crl.pem; do
  expect_read_error "$f" 23 1 "$T/srv/$f: Too many open files in system" --tls-certificates "$T/srv"
  expect_read_error "$f" 12 1 "$T/srv/$f: Cannot allocate memory" --tls-certificates "$T/srv"
  expect_read_error "$f" 24 1 \
    "$T/srv/$f: Too many open files$limit_text" \
    --tls-certificates "$T/srv"
  # as root, access(2) says readable: only the open can refuse
  expect_read_error "$f" 13 2 "$T/srv/$f: Permission denied" --tls-certificates "$T/srv"
done
expect_read_error psk.keys 24 1 \
  "--tls-psk $T/psk.keys: Too many open files$limit_text" \
  --tls-psk "$T/psk.keys"
expect_read_error psk.keys 5 2 "--tls-psk $T/psk.keys: Input/output error" --tls-psk "$T/psk.keys"
pass "credentials that cannot be read keep their reason and exit 1 (machine) or 2 (file)"
