#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/guest-image.sh: builds (once, cached) the kernel + base initramfs of the test guest.
#
# Usage: scripts/guest-image.sh [--with fio] [--with e2fsprogs]
# Prints ONE line on stdout: the directory holding `vmlinuz` and `initramfs.cpio.gz` (and
# `vmlinux`, the same kernel uncompressed, which boots faster; see below).
# Progress and errors go to stderr.
#
# What goes in:
#   - the kernel: /boot/vmlinuz-* of Debian's linux-image-<abi>-amd64 package (the one that
#     linux-image-amd64 depends on), fetched with `apt-get download` and unpacked with dpkg-deb;
#   - the modules the guest needs (virtio-blk, NVMe, ext4 and their dependencies, soft ones
#     included), resolved on the host with kmod's `modprobe --show-depends`, decompressed, and
#     listed in load order in /etc/dg-modules (tests/guest/init insmods them);
#   - busybox-static as the userland, tests/guest/init as /init;
#   - with `--with e2fsprogs`: mke2fs/mkfs.ext*, e2fsck/fsck.ext*, debugfs, dumpe2fs, tune2fs,
#     resize2fs (+ /etc/mke2fs.conf); with `--with fio`: fio. Both with their ldd closure and
#     an ld.so.cache made for the image (fio's closure is ~82 MB: only when asked).
#
# Cache: ${DISKGATE_CACHE:-/var/cache/diskgate}/guest-<key>; the key covers the kernel package
# and version, the options and a hash of the init script, this script and the packed tools'
# versions. A build happens in a temporary directory under the cache, under a per-key lock, and
# is renamed into place at the end: concurrent callers either wait or find the finished image.
#
# Environment:
#   DISKGATE_CACHE               cache root (default /var/cache/diskgate)
#   DISKGATE_GUEST_KERNEL_DEB    use this linux-image .deb instead of downloading one
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srcdir=$(cd "$here/.." && pwd)
init_script=$srcdir/tests/guest/init
cache=${DISKGATE_CACHE:-/var/cache/diskgate}

log() { echo "guest-image: $*" >&2; }
die() { echo "guest-image: error: $*" >&2; exit 1; }

# ---- options ---------------------------------------------------------------------------------
with_fio=0 with_e2fs=0
while [ $# -gt 0 ]; do
  case "$1" in
    --with) [ $# -ge 2 ] || die "--with needs an argument (fio|e2fsprogs)"; opt=$2; shift 2 ;;
    --with=*) opt=${1#--with=}; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument '$1'" ;;
  esac
  case "$opt" in
    fio) with_fio=1 ;;
    e2fsprogs) with_e2fs=1 ;;
    *) die "unknown --with '$opt' (fio|e2fsprogs)" ;;
  esac
done

for tool in apt-get apt-cache dpkg-deb dpkg-query modprobe depmod cpio gzip ldd ldconfig flock \
            sha256sum /bin/busybox; do
  command -v "$tool" >/dev/null || die "'$tool' not found (run scripts/deps.sh test)"
done
[ -r "$init_script" ] || die "missing $init_script"

# ---- the kernel package ----------------------------------------------------------------------
pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo none; }

if [ -n "${DISKGATE_GUEST_KERNEL_DEB:-}" ]; then
  [ -r "$DISKGATE_GUEST_KERNEL_DEB" ] || die "DISKGATE_GUEST_KERNEL_DEB: cannot read it"
  kpkg=$(dpkg-deb -f "$DISKGATE_GUEST_KERNEL_DEB" Package)
  kver=$(dpkg-deb -f "$DISKGATE_GUEST_KERNEL_DEB" Version)
else
  # linux-image-amd64 (a meta package) depends on the real one, e.g. linux-image-6.1.0-57-amd64.
  # apt-cache takes about a second per call here, so the answer is remembered per state of the
  # apt lists (it changes only with apt-get update).
  resolve_kpkg() {
    apt-cache depends --important linux-image-amd64 2>/dev/null |
      awk '$1 ~ /Depends:/ && $2 ~ /^linux-image-[0-9]/ && k == "" { k = $2 } END { print k }'
  }
  lists_sig() { stat -c '%n %s %Y' /var/lib/apt/lists/*_Packages* 2>/dev/null | sha256sum | cut -c1-16; }
  mkdir -p "$cache" || die "cannot create cache directory $cache (set DISKGATE_CACHE?)"
  rfile=$cache/kernel-package-$(lists_sig)
  kpkg='' kver=''
  [ -r "$rfile" ] && read -r kpkg kver <"$rfile" || true
  if [ -z "$kpkg" ] || [ -z "$kver" ]; then
    kpkg=$(resolve_kpkg || true)
    if [ -z "$kpkg" ] && [ "$(id -u)" -eq 0 ]; then
      log "apt lists do not know linux-image-amd64; running apt-get update"
      apt-get update -qq >&2 || true
      kpkg=$(resolve_kpkg || true)
      rfile=$cache/kernel-package-$(lists_sig)
    fi
    [ -n "$kpkg" ] || die "cannot resolve linux-image-amd64's kernel package (apt-get update?)"
    kver=$(apt-cache show --no-all-versions "$kpkg" 2>/dev/null | awk '/^Version:/ && v == "" { v = $2 } END { print v }')
    [ -n "$kver" ] || die "no version known for $kpkg"
    echo "$kpkg $kver" >"$rfile.$$" && mv -f "$rfile.$$" "$rfile"
  fi
fi

# ---- the cache key ---------------------------------------------------------------------------
opts=base
[ $with_e2fs -eq 1 ] && opts+=-e2fsprogs
[ $with_fio -eq 1 ] && opts+=-fio
hash=$( {
  sha256sum "$init_script" "$here/guest-image.sh" | cut -d' ' -f1
  echo "busybox-static $(pkg_version busybox-static)"
  [ $with_e2fs -eq 1 ] && echo "e2fsprogs $(pkg_version e2fsprogs)"
  [ $with_fio -eq 1 ] && echo "fio $(pkg_version fio)"
  true
} | sha256sum | cut -c1-12)
key="${kpkg#linux-image-}_${kver}_${opts}_${hash}"
key=${key//[^A-Za-z0-9._+-]/_}
final=$cache/guest-$key

ready() { [ -s "$final/vmlinuz" ] && [ -s "$final/initramfs.cpio.gz" ]; }
if ready; then echo "$final"; exit 0; fi

mkdir -p "$cache" || die "cannot create cache directory $cache (set DISKGATE_CACHE?)"

# One builder per key; the others wait here and then find the finished image.
exec 9>"$cache/.guest-$key.lock"
flock 9
if ready; then echo "$final"; exit 0; fi

work=$(mktemp -d "$cache/.tmp-guest-$key.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "building $final (this takes a minute the first time)"

# ---- fetch and unpack the kernel package -----------------------------------------------------
debdir=$cache/debs
mkdir -p "$debdir"
if [ -n "${DISKGATE_GUEST_KERNEL_DEB:-}" ]; then
  deb=$DISKGATE_GUEST_KERNEL_DEB
else
  deb=$(ls "$debdir/${kpkg}_${kver//:/%3a}_"*.deb 2>/dev/null | head -n1 || true)
  if [ -z "$deb" ]; then
    log "downloading $kpkg=$kver"
    mkdir -p "$work/dl"
    # apt's sandbox user cannot write into a root-only dir; downloading as root is fine here.
    (cd "$work/dl" && apt-get download -qq -o APT::Sandbox::User=root "$kpkg=$kver" >&2) ||
      die "apt-get download $kpkg=$kver failed"
    f=$(ls "$work/dl"/*.deb)
    mv -f "$f" "$debdir/"          # atomic within the cache file system
    deb=$debdir/$(basename "$f")
  fi
fi
kroot=$work/kernel
dpkg-deb -x "$deb" "$kroot"
vmlinuz=$(ls "$kroot"/boot/vmlinuz-* 2>/dev/null | sed -n 1p)
[ -n "$vmlinuz" ] || die "no /boot/vmlinuz-* in $deb"
kabi=$(basename "$vmlinuz"); kabi=${kabi#vmlinuz-}
moddir=lib/modules/$kabi
[ -d "$kroot/$moddir" ] || die "no /$moddir in $deb"
# The package does not ship modules.dep (its postinst runs depmod): make it to resolve deps.
depmod -b "$kroot" "$kabi"

# ---- the initramfs tree ----------------------------------------------------------------------
stage=$work/root
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,run,tmp,mnt,root,"$moddir"}
chmod 1777 "$stage/tmp"
# The kernel opens /dev/console before /init runs; its built-in initramfs has one too, so a
# failure here (not root) is harmless.
mknod -m 600 "$stage/dev/console" c 5 1 2>/dev/null || true
install -m 755 "$init_script" "$stage/init"

# Modules: everything these need, in load order, duplicates removed (first one wins).
want_modules=(virtio_pci virtio_blk crc32c_generic crc32c_intel ext4 nvme)
: >"$work/modules.order"
for m in "${want_modules[@]}"; do
  modprobe -d "$kroot" -S "$kabi" --show-depends "$m" >"$work/dep.txt" ||
    die "modprobe --show-depends $m failed"
  awk '$1 == "insmod" { print $2 }' "$work/dep.txt" >>"$work/modules.order"
done
: >"$stage/etc/dg-modules"
awk '!seen[$0]++' "$work/modules.order" | while read -r path; do
  rel=${path#"$kroot"/}
  dst=$stage/$rel
  mkdir -p "$(dirname "$dst")"
  case "$path" in
    *.ko.xz) xz -dc "$path" >"${dst%.xz}"; rel=${rel%.xz} ;;
    *.ko.zst) zstd -qdc "$path" >"${dst%.zst}"; rel=${rel%.zst} ;;
    *.ko.gz) gzip -dc "$path" >"${dst%.gz}"; rel=${rel%.gz} ;;
    *) cp "$path" "$dst" ;;
  esac
  echo "/$rel" >>"$stage/etc/dg-modules"
done
cp "$kroot/$moddir"/modules.{builtin,builtin.modinfo,order} "$stage/$moddir/" 2>/dev/null || true
depmod -b "$stage" "$kabi"    # so that `modprobe` works inside the guest too
echo "$kabi" >"$stage/etc/dg-kernel"

# Dynamically linked tools: copy each binary and its ldd closure to the same paths.
libdirs=$work/libdirs
: >"$libdirs"
add_binary() {  # add_binary PATH [NAME_IN_IMAGE]
  local src=$1 dst=${2:-$1} lib
  [ -x "$src" ] || die "missing $src (run scripts/deps.sh test)"
  mkdir -p "$stage$(dirname "$dst")"
  cp -L "$src" "$stage$dst"
  # ldd lines: "libx.so.1 => /path/libx.so.1 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
  ldd "$src" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
    while read -r lib; do
      [ -e "$stage$lib" ] && continue
      mkdir -p "$stage$(dirname "$lib")"
      cp -L "$lib" "$stage$lib"
      dirname "$lib" >>"$libdirs"
    done
}
if [ $with_e2fs -eq 1 ]; then
  for b in mke2fs e2fsck debugfs dumpe2fs tune2fs resize2fs; do add_binary "/sbin/$b" "/usr/sbin/$b"; done
  # mke2fs and e2fsck pick their behaviour from argv[0]: keep the mkfs.ext4-style names.
  for t in ext2 ext3 ext4; do
    ln -s mke2fs "$stage/usr/sbin/mkfs.$t"
    ln -s e2fsck "$stage/usr/sbin/fsck.$t"
  done
  [ -r /etc/mke2fs.conf ] && cp /etc/mke2fs.conf "$stage/etc/"
fi
if [ $with_fio -eq 1 ]; then
  add_binary /usr/bin/fio
fi
if [ -s "$libdirs" ]; then
  sort -u "$libdirs" >"$stage/etc/ld.so.conf"
  ldconfig -r "$stage"
fi

# busybox last: an applet link is made only where no real tool of that name is in the image.
cp /bin/busybox "$stage/bin/busybox"
/bin/busybox --list-full | while read -r applet; do
  name=$(basename "$applet")
  for d in bin sbin usr/bin usr/sbin; do
    [ -e "$stage/$d/$name" ] || [ -L "$stage/$d/$name" ] && continue 2
  done
  mkdir -p "$stage/$(dirname "$applet")"
  ln -s /bin/busybox "$stage/$applet"
done

# ---- pack ------------------------------------------------------------------------------------
out=$work/out
mkdir -p "$out"
cp "$vmlinuz" "$out/vmlinuz"

# Also keep the uncompressed ELF kernel, cut out of the bzImage: QEMU boots it through its PVH
# entry point, which skips the firmware's real-mode setup and the in-guest decompression (under
# TCG about 8 s -> 3.5 s for a whole run). Optional: run-guest.sh uses vmlinuz when it is absent.
extract_vmlinux() {  # extract_vmlinux BZIMAGE OUT: try each compressor's magic in turn
  local magic tool off
  for magic in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
    tool=${magic%%:*}
    command -v "$tool" >/dev/null || continue
    for off in $(LC_ALL=C grep -obUaP "${magic#*:}" "$1" | cut -d: -f1 | head -n 5); do
      tail -c +$((off + 1)) "$1" | "$tool" -dc >"$2" 2>/dev/null || true
      [ "$(head -c 4 "$2" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] && return 0
    done
  done
  rm -f "$2"
  return 1
}
extract_vmlinux "$vmlinuz" "$out/vmlinux" || log "note: could not extract vmlinux; vmlinuz only"
(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
   cpio --quiet -o -H newc -R 0:0 --reproducible) | gzip -6 -n >"$out/initramfs.cpio.gz"
cat >"$out/info" <<EOF
kernel_package=$kpkg
kernel_version=$kver
kernel_abi=$kabi
options=$opts
modules=$(tr '\n' ' ' <"$stage/etc/dg-modules")
EOF

mv -T "$out" "$final" || { ready || die "could not move the image into $final"; }
log "built $final ($(du -sh "$final" | cut -f1))"
echo "$final"
