#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/guest-9p-modules.sh: the kernel modules a test guest needs to mount a virtio-9p share
# (netfs, fscache, 9pnet, 9pnet_virtio, 9p), taken from the same Debian kernel package as the
# guest image, for `diskgate bench`'s guest-9p row.
#
# Usage: bench/guest-9p-modules.sh IMAGE_DIR
#   IMAGE_DIR is what scripts/guest-image.sh printed (its `info` file names the kernel package).
# Prints ONE line: a directory holding the .ko files and `order` (their load order, one file
# name per line). Cached in ${DISKGATE_CACHE:-/var/cache/diskgate}/bench-9p-<abi>.
set -euo pipefail

die() { echo "guest-9p-modules: error: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: $0 IMAGE_DIR"
info=$1/info
[ -r "$info" ] || die "no $info (is $1 a guest image directory?)"
cache=${DISKGATE_CACHE:-/var/cache/diskgate}
kpkg=$(sed -n 's/^kernel_package=//p' "$info")
kver=$(sed -n 's/^kernel_version=//p' "$info")
abi=$(sed -n 's/^kernel_abi=//p' "$info")
[ -n "$kpkg" ] && [ -n "$kver" ] && [ -n "$abi" ] || die "$info lacks the kernel's name"
out=$cache/bench-9p-$abi
if [ -s "$out/order" ]; then echo "$out"; exit 0; fi

deb=${DISKGATE_GUEST_KERNEL_DEB:-}
[ -n "$deb" ] || deb=$(ls "$cache/debs/${kpkg}_${kver//:/%3a}_"*.deb 2>/dev/null | head -n1 || true)
[ -n "$deb" ] && [ -r "$deb" ] || die "the kernel package $kpkg $kver is not in $cache/debs"

exec 9>"$cache/.bench-9p-$abi.lock"
flock 9
if [ -s "$out/order" ]; then echo "$out"; exit 0; fi
work=$(mktemp -d "$cache/.tmp-bench-9p.XXXXXX")
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$deb" "$work/root"
depmod -b "$work/root" "$abi"
mkdir -p "$work/out"
: >"$work/out/order"
for m in 9p 9pnet_virtio; do
  modprobe -d "$work/root" -S "$abi" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' | while read -r ko; do
  name=$(basename "$ko")
  case "$name" in
    virtio.ko|virtio_ring.ko) continue ;;   # already in the base image
  esac
  case "$ko" in
    *.ko.xz) xz -dc "$ko" >"$work/out/${name%.xz}"; name=${name%.xz} ;;
    *.ko.zst) zstd -qdc "$ko" >"$work/out/${name%.zst}"; name=${name%.zst} ;;
    *) cp "$ko" "$work/out/$name" ;;
  esac
  echo "$name" >>"$work/out/order"
done
[ -s "$work/out/order" ] || die "no 9p modules found in $deb"
rm -rf "$out"
mv "$work/out" "$out"
echo "$out"
