#!/usr/bin/env bash
# Installs the Debian 12 packages diskgate needs to build, test and benchmark.
# Idempotent: installs only what is missing; safe to run many times.
# Usage: scripts/deps.sh [--list] [build|test|bench|ceph|all]   (default: test)
# --list prints the set's packages, one per line, and installs nothing.
set -euo pipefail

list=0
if [ "${1:-}" = --list ]; then
  list=1
  shift
fi
want="${1:-test}"

build_pkgs=(gcc make meson ninja-build pkg-config liburing-dev libcjson-dev libgnutls28-dev)
test_pkgs=(libcmocka-dev libnbd-bin nbdkit fio qemu-utils qemu-system-x86 busybox-static
           e2fsprogs cpio xz-utils zstd kmod util-linux strace python3 python3-libnbd libnbd-dev gnutls-bin clang libclang-rt-14-dev
           squashfs-tools fdisk)
bench_pkgs=(qemu-block-extra valgrind linux-perf)
ceph_pkgs=(ceph-mon ceph-osd ceph-common librbd-dev uuid-runtime)

pkgs=("${build_pkgs[@]}")
case "$want" in
  build) ;;
  test) pkgs+=("${test_pkgs[@]}") ;;
  bench) pkgs+=("${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
  ceph) pkgs+=("${ceph_pkgs[@]}") ;;
  all) pkgs+=("${test_pkgs[@]}" "${bench_pkgs[@]}" "${ceph_pkgs[@]}") ;;
  *) echo "deps.sh: unknown set '$want' (build|test|bench|ceph|all)" >&2; exit 2 ;;
esac
if [ "$list" = 1 ]; then
  printf '%s\n' "${pkgs[@]}"
  exit 0
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing packages (${missing[*]}); run as root or install them" >&2
  exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
stamp=/var/lib/apt/periodic/diskgate-update-stamp
if [ ! -e "$stamp" ] || [ -n "$(find /var/lib/apt/lists -maxdepth 0 -mmin +720 2>/dev/null)" ]; then
  apt-get update -qq
  mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
