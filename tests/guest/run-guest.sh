#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/guest/run-guest.sh: boots the test guest under QEMU, runs one task script in it against
# one disk, prints the task's output and exits with the task's exit status.
#
# Usage: tests/guest/run-guest.sh --task FILE [options]
#   --task FILE            shell script (busybox sh) run in the guest as /task.sh, with env
#                          DISK=/dev/vda (or /dev/nvme0n1 with --nvme; empty without a disk)
#   --file SRC:DEST        also put host file SRC at DEST in the guest (repeatable)
#   --image-dir DIR        kernel + base initramfs (default: built/cached by scripts/guest-image.sh)
#   --with fio|e2fsprogs   tools the image must have (passed to guest-image.sh; repeatable)
#   --nbd URI              the disk is an NBD export: nbd+unix:///NAME?socket=/path or
#                          nbd://127.0.0.1:PORT/NAME (-drive file=URI,format=raw,cache=none)
#   --drive SPEC           a full QEMU -drive spec, passed as is (raw files etc.); `if=none` and
#                          `id=d0` are added when SPEC has no if= / id=; with an if= other than
#                          none no device is added (QEMU makes it)
#   --nvme                 attach the disk as an NVMe controller instead of virtio-blk-pci
#   --timeout SEC          limit on the guest run, from QEMU's start (default 600); on expiry
#                          QEMU is killed and the exit status is 124
#   --qemu-pid-file F      write QEMU's pid to F while it runs (removed afterwards)
#   --mem MB / --smp N     guest size (default 1024 MB, 2 vCPUs)
#   --log FILE             copy the guest's console log to FILE
#   -v, --verbose          stream the console to stderr while the guest runs
# Exit status: the task's; 124 on timeout; 1 when the guest did not report (log tail on stderr).
#
# Accelerator: KVM when a short probe boot under `-accel kvm -cpu host` reaches /init (result
# cached per host boot in the cache dir), else TCG (`-accel tcg,thread=multi -cpu max`). This
# machine's nested KVM cannot run the Debian kernel, so expect TCG. The accelerator is reported
# on stderr as `guest: accel=...`.
# Environment: DISKGATE_CACHE (cache root, see guest-image.sh), DISKGATE_GUEST_ACCEL=kvm|tcg
# (skip the probe), DG_GUEST_APPEND (extra kernel parameters), QEMU (the qemu binary),
# DG_GUEST_KEEP_ON_SIGNAL=0 (on SIGINT/SIGTERM remove the scratch directory too; by default
# it is kept, with the console log, for a person who interrupted a run to look at).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srcdir=$(cd "$here/../.." && pwd)
qemu=${QEMU:-qemu-system-x86_64}
cache=${DISKGATE_CACHE:-/var/cache/diskgate}

say() { echo "guest: $*" >&2; }
die() { echo "guest: error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit "${1:-2}"; }

# ---- options ---------------------------------------------------------------------------------
task='' image_dir='' drive='' nbd='' nvme=0 timeout=600 pidfile='' mem=1024 smp=2 logcopy='' verbose=0
withs=() files=()
need() { [ $# -ge 2 ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --task) need "$@"; task=$2; shift ;;
    --file) need "$@"; files+=("$2"); shift ;;
    --image-dir) need "$@"; image_dir=$2; shift ;;
    --with) need "$@"; withs+=(--with "$2"); shift ;;
    --drive) need "$@"; drive=$2; shift ;;
    --nbd) need "$@"; nbd=$2; shift ;;
    --nvme) nvme=1 ;;
    --timeout) need "$@"; timeout=$2; shift ;;
    --qemu-pid-file) need "$@"; pidfile=$2; shift ;;
    --mem) need "$@"; mem=$2; shift ;;
    --smp) need "$@"; smp=$2; shift ;;
    --log) need "$@"; logcopy=$2; shift ;;
    -v|--verbose) verbose=1 ;;
    -h|--help) usage 0 ;;
    *) echo "guest: unknown argument '$1'" >&2; usage 2 ;;
  esac
  shift
done
[ -n "$task" ] || { echo "guest: --task is required" >&2; usage 2; }
[ -r "$task" ] || die "cannot read task $task"
[ -z "$drive" ] || [ -z "$nbd" ] || die "--drive and --nbd are exclusive (one disk per run)"
[[ "$timeout" =~ ^[0-9]+$ ]] && [ "$timeout" -gt 0 ] || die "bad --timeout '$timeout'"
command -v "$qemu" >/dev/null || die "$qemu not found (run scripts/deps.sh test)"

if [ -z "$image_dir" ]; then
  image_dir=$("$srcdir/scripts/guest-image.sh" "${withs[@]}") || die "guest-image.sh failed"
fi
[ -s "$image_dir/initramfs.cpio.gz" ] || die "no initramfs.cpio.gz in $image_dir"
kernel=$image_dir/vmlinux                       # uncompressed: boots faster (PVH entry)
[ -s "$kernel" ] || kernel=$image_dir/vmlinuz
[ -s "$kernel" ] || die "no vmlinuz in $image_dir"

# ---- scratch space and cleanup ---------------------------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dg-guest.XXXXXX")
log=$tmp/console.log            # the guest's serial console
qout=$tmp/qemu.out              # QEMU's own stdout/stderr
qpid='' tailpid='' keep=0
cleanup() {
  [ -n "$qpid" ] && kill -KILL "$qpid" 2>/dev/null || true
  [ -n "$tailpid" ] && kill "$tailpid" 2>/dev/null || true
  [ -n "$pidfile" ] && rm -f "$pidfile"
  if [ "$keep" = 1 ]; then say "console log kept in $log"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'keep=${DG_GUEST_KEEP_ON_SIGNAL:-1}; exit 130' INT
trap 'keep=${DG_GUEST_KEEP_ON_SIGNAL:-1}; exit 143' TERM

# ---- per-run overlay: /task.sh + extra files, appended to the base initramfs -----------------
# The kernel unpacks concatenated (separately compressed) cpio archives in order, later files
# replacing earlier ones.
ov=$tmp/overlay
mkdir -p "$ov"
install -m 755 "$task" "$ov/task.sh"
for f in "${files[@]}"; do
  src=${f%%:*} dest=${f#*:}
  [ "$src" != "$f" ] && [ -n "$dest" ] || die "--file wants SRC:DEST, got '$f'"
  [ -e "$src" ] || die "--file: no such file $src"
  mkdir -p "$ov/$(dirname "${dest#/}")"
  cp -a "$src" "$ov/${dest#/}"
done
(cd "$ov" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) |
  gzip -1 >"$tmp/overlay.cpio.gz"
cat "$image_dir/initramfs.cpio.gz" "$tmp/overlay.cpio.gz" >"$tmp/initrd.cpio.gz"

# ---- accelerator -----------------------------------------------------------------------------
# probe_kvm: boot the base image under KVM with dg.probe=1 (init prints DG-PROBE-OK and reboots
# at once). Nested KVM here either aborts QEMU at start or crawls, so a few seconds decide.
probe_kvm() {
  [ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
  local plog=$tmp/probe.log
  # (in a subshell with stderr discarded: bash would report QEMU's abort there)
  ( timeout -k 2 "${DG_GUEST_KVM_PROBE_TIMEOUT:-8}" "$qemu" -accel kvm -cpu host -smp 1 -m 512 \
      -display none -nodefaults -no-user-config -no-reboot -serial "file:$plog" \
      -kernel "$kernel" -initrd "$image_dir/initramfs.cpio.gz" \
      -append "console=ttyS0 panic=-1 loglevel=4 dg.probe=1" </dev/null >/dev/null 2>&1 \
      || true ) 2>/dev/null
  grep -aq DG-PROBE-OK "$plog" 2>/dev/null
}
accel=${DISKGATE_GUEST_ACCEL:-auto}
if [ "$accel" = auto ]; then
  # The answer depends on this host (boot), QEMU and the kernel: cache it per that triple.
  boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
  pkey=$(echo "$boot_id $("$qemu" --version | head -n1) $(stat -c '%n %s %Y' "$kernel")" |
         sha256sum | cut -c1-16)
  pfile=$cache/accel-probe-$pkey
  if [ -r "$pfile" ]; then
    accel=$(cat "$pfile")
  else
    if probe_kvm; then accel=kvm; else accel=tcg; fi
    { mkdir -p "$cache" && echo "$accel" >"$pfile.$$" && mv -f "$pfile.$$" "$pfile"; } \
      2>/dev/null || true
  fi
fi
case "$accel" in
  kvm) accel_args=(-accel kvm -cpu host) ;;
  tcg) accel_args=(-accel tcg,thread=multi -cpu max) ;;
  *) die "DISKGATE_GUEST_ACCEL must be kvm or tcg, not '$accel'" ;;
esac
say "accel=$accel"

# ---- the disk --------------------------------------------------------------------------------
disk_args=() gdisk=none
if [ -n "$nbd" ]; then
  # QEMU option values escape a comma by doubling it.
  disk_args=(-drive "file=${nbd//,/,,},format=raw,if=none,id=d0,cache=none")
  devid=d0
elif [ -n "$drive" ]; then
  disk_args=(-drive "$drive")
  devid=$(sed -n 's/^\(.*,\)\{0,1\}id=\([^,]*\).*/\2/p' <<<"$drive")
  [ -n "$devid" ] || { devid=d0; disk_args=(-drive "$drive,id=d0"); }
  if [[ ",$drive" == *,if=* ]] && [[ ",$drive" != *,if=none* ]]; then
    devid=                                   # QEMU attaches it itself (if=virtio etc.)
    gdisk=auto
  elif [[ ",$drive" != *,if=* ]]; then
    disk_args[1]+=",if=none"
  fi
fi
if [ -n "${devid:-}" ]; then
  if [ "$nvme" = 1 ]; then
    disk_args+=(-device "nvme,drive=$devid,serial=dg0"); gdisk=/dev/nvme0n1
  else
    disk_args+=(-device "virtio-blk-pci,drive=$devid"); gdisk=/dev/vda
  fi
fi

# ---- boot ------------------------------------------------------------------------------------
append="console=ttyS0 panic=-1 loglevel=4 dg.disk=$gdisk ${DG_GUEST_APPEND:-}"
: >"$log"
start=$SECONDS
"$qemu" "${accel_args[@]}" -smp "$smp" -m "$mem" \
  -display none -nodefaults -no-user-config -no-reboot -serial "file:$log" \
  -kernel "$kernel" -initrd "$tmp/initrd.cpio.gz" -append "$append" \
  "${disk_args[@]}" </dev/null >"$qout" 2>&1 &
qpid=$!
if [ -n "$pidfile" ]; then echo "$qpid" >"$pidfile.tmp" && mv -f "$pidfile.tmp" "$pidfile"; fi
if [ "$verbose" = 1 ]; then
  tail -n +1 -F --pid="$qpid" "$log" >&2 2>/dev/null & tailpid=$!
fi

# Wait for QEMU to exit (the guest reboots = powers off), for the time limit, or for a guest
# that reported DG-EXIT= but somehow did not power off (grace of 15 s).
timed_out=0 reported_at=''
while kill -0 "$qpid" 2>/dev/null; do
  if [ $((SECONDS - start)) -ge "$timeout" ]; then timed_out=1; break; fi
  if [ -z "$reported_at" ] && grep -aq '^DG-EXIT=' "$log" 2>/dev/null; then reported_at=$SECONDS; fi
  if [ -n "$reported_at" ] && [ $((SECONDS - reported_at)) -ge 15 ]; then break; fi
  sleep 0.2
done
if kill -0 "$qpid" 2>/dev/null; then
  kill -TERM "$qpid" 2>/dev/null || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$qpid" 2>/dev/null || break; sleep 0.3; done
  kill -KILL "$qpid" 2>/dev/null || true
fi
qrc=0; wait "$qpid" || qrc=$?
qpid=
[ -n "$tailpid" ] && { wait "$tailpid" 2>/dev/null || true; tailpid=; }
[ -n "$pidfile" ] && rm -f "$pidfile"
[ -n "$logcopy" ] && cp "$log" "$logcopy" 2>/dev/null || true
say "guest ran $((SECONDS - start)) s"

# ---- results ---------------------------------------------------------------------------------
# The task's output is between the first ===DG-BEGIN=== line and the last ===DG-END=== that is
# directly followed by DG-EXIT=<n> (an END marker may share a line with output that did not end
# in a newline). Serial lines end in CR LF. Prints the output; the status goes to $tmp/status.
tr -d '\r' <"$log" | awk -v statusfile="$tmp/status" '
  { line[NR] = $0 }
  END {
    b = 0
    for (i = 1; i <= NR; i++) if (line[i] ~ /^===DG-BEGIN===$/) { b = i; break }
    if (!b) exit
    e = 0
    for (i = NR - 1; i > b; i--)
      if (line[i] ~ /===DG-END===$/ && line[i + 1] ~ /^DG-EXIT=[0-9]+$/) { e = i; break }
    last = e ? e - 1 : NR
    for (i = b + 1; i <= last; i++) print line[i]
    if (e) {
      pre = substr(line[e], 1, length(line[e]) - 12)
      if (pre != "") print pre
      print substr(line[e + 1], 9) > statusfile
    }
  }'

tail_log() {
  echo "guest: ---- last lines of the console log ----" >&2
  tr -d '\r' <"$log" | tail -n "${1:-40}" >&2
  if [ -s "$qout" ]; then echo "guest: ---- qemu said ----" >&2; tail -n 20 "$qout" >&2; fi
}
if [ "$timed_out" = 1 ]; then
  say "timeout after ${timeout}s"
  keep=1; tail_log; exit 124
fi
if [ ! -s "$tmp/status" ]; then
  say "the guest did not report a result (qemu exit status $qrc)"
  keep=1; tail_log; exit 1
fi
rc=$(cat "$tmp/status")
if [ "$rc" != 0 ]; then
  say "task exited $rc"
  keep=1; tail_log 30
fi
exit "$rc"
