#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages diskgate needs to build, demo, test and benchmark.
# Idempotent: installs only what is missing; safe to run many times.
# Usage: scripts/deps.sh [--list] [build|demo|test|bench|ceph|all]   (default: test)
#   build  compile diskgate and its man pages (what plain `make` installs)
#   demo   build + what scripts/demo.sh runs (`make demo`)
#   test   demo + the test suite's tools
#   bench  test + the lab's extras (qemu's rbd driver, valgrind, perf)
#   ceph   build + the throw-away Ceph cluster the rbd tests start
#   all    everything (`make check`)
# --list prints the set's packages, one per line, and installs nothing.
set -euo pipefail

list=0
if [ "${1:-}" = --list ]; then
  list=1
  shift
fi
want="${1:-test}"

# librbd-dev: the headers RBD support is compiled against (librados and librbd are loaded at
# run time, only by an rbd: export); the Ceph daemons are test packages, not build ones.
build_pkgs=(gcc make meson ninja-build pkg-config liburing-dev libcjson-dev libinih-dev libgnutls28-dev
            zlib1g-dev libzstd-dev librbd-dev scdoc libsystemd-dev
            libmicrohttpd-dev)
demo_pkgs=(e2fsprogs python3 libnbd-bin qemu-utils qemu-system-x86 busybox-static cpio kmod
           xz-utils zstd util-linux)
test_pkgs=("${demo_pkgs[@]}" libcmocka-dev nbdkit fio strace python3-libnbd libnbd-dev gnutls-bin
           clang libclang-rt-14-dev squashfs-tools fdisk man-db systemd curl)
bench_pkgs=(qemu-block-extra valgrind linux-perf)
ceph_pkgs=(ceph-mon ceph-osd ceph-common uuid-runtime)

pkgs=("${build_pkgs[@]}")
case "$want" in
  build) ;;
  demo) pkgs+=("${demo_pkgs[@]}") ;;
  test) pkgs+=("${test_pkgs[@]}") ;;
  bench) pkgs+=("${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
  ceph) pkgs+=("${ceph_pkgs[@]}") ;;
  all) pkgs+=("${test_pkgs[@]}" "${bench_pkgs[@]}" "${ceph_pkgs[@]}") ;;
  *) echo "deps.sh: unknown set '$want' (build|demo|test|bench|ceph|all)" >&2; exit 2 ;;
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
