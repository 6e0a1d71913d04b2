#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# meson install puts diskgate@.service and diskgate@.socket into the systemd unit
# directory, ExecStart naming the diskgate installed into bindir; systemd-analyze verify
# accepts them (skipped, with a line saying so, where systemd-analyze cannot run).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
: "${BUILDDIR:?}"

D=$T/dest
meson install -C "$BUILDDIR" --destdir "$D" --no-rebuild --quiet >"$T/install.log" 2>&1 ||
  { cat "$T/install.log" >&2; fail "meson install"; }
svc=$(find "$D" -name 'diskgate@.service' -type f)
sock=$(find "$D" -name 'diskgate@.socket' -type f)
[ -n "$svc" ] && [ -n "$sock" ] || fail "units not installed (service '$svc', socket '$sock')"
assert_eq "$(dirname "$svc")" "$(dirname "$sock")" "both units in one directory"
bin=$(find "$D" -name diskgate -type f -perm -u+x | head -1)
[ -n "$bin" ] || fail "diskgate not installed"
exec_start=$(sed -n 's/^ExecStart=//p' "$svc")
assert_eq "${exec_start%% *}" "${bin#"$D"}" "ExecStart's program (the installed diskgate)"
grep -Fx "Type=notify" "$svc" >/dev/null || fail "the service is not Type=notify"
grep -Fx "NotifyAccess=all" "$svc" >/dev/null || fail "NotifyAccess=all is needed for SIGUSR2"
grep -F -- "--config /etc/diskgate/%i.conf" "$svc" >/dev/null || fail "ExecStart without the instance's config"

# systemd-analyze verify, with ExecStart pointed at this build's diskgate (the installed
# path is not on this machine)
mkdir "$T/units"
sed "s|^ExecStart=[^ ]*|ExecStart=$DISKGATE|" "$svc" >"$T/units/diskgate@t.service"
cp "$sock" "$T/units/diskgate@t.socket"
printf '[Service]\nExecStart=/bin/true\n' >"$T/units/probe.service"
if ! timeout 60 systemd-analyze verify --man=no "$T/units/probe.service" >"$T/probe.log" 2>&1; then
  echo "skip: systemd-analyze verify cannot run here: $(head -1 "$T/probe.log")"
else
  timeout 60 systemd-analyze verify --man=no "$T/units/diskgate@t.service" \
    "$T/units/diskgate@t.socket" >"$T/verify.log" 2>&1 || { cat "$T/verify.log" >&2; fail "systemd-analyze verify"; }
  [ ! -s "$T/verify.log" ] || { cat "$T/verify.log" >&2; fail "systemd-analyze verify warned"; }
fi
pass "units installed into $(dirname "${svc#"$D"}") and accepted"
