#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's demo: make a small ext4 disk image with a few files, serve it with diskgate,
# and let real clients use it: nbdinfo, qemu-img compare against the file, a file read out of
# the file system through the export, and a QEMU virtual machine that boots with the export
# as its disk and reads the same file. Then stop the server.
# Usage: scripts/demo.sh [PATH_TO_DISKGATE]
set -euo pipefail
cd "$(dirname "$0")/.."
DG=${1:-build/diskgate}
work=$(mktemp -d /tmp/diskgate-demo.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
step() { printf '\n== %s\n' "$*"; }

step "1. A 64 MiB ext4 disk image with a few files"
mkdir -p "$work/files/etc"
echo "Hello from a disk served by diskgate." >"$work/files/hello.txt"
printf 'vm-demo\n' >"$work/files/etc/hostname"
head -c 3000000 /dev/urandom >"$work/files/random.bin"
truncate -s 64M "$work/disk.img"
mkfs.ext4 -q -F -L demo -d "$work/files" "$work/disk.img"
ls -l "$work/disk.img"

step "2. Serve it: diskgate serve --export demo --socket SOCK --listen 127.0.0.1:PORT disk.img"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$DG" serve --export demo --socket "$work/nbd.sock" --listen "127.0.0.1:$port" \
  --pid-file "$work/pid" "$work/disk.img" 2>"$work/server.log" | tee "$work/uris" &
for _ in $(seq 100); do [ -s "$work/pid" ] && break; sleep 0.05; done
pid=$(cat "$work/pid")
unix_uri="nbd+unix:///demo?socket=$work/nbd.sock"
tcp_uri="nbd://127.0.0.1:$port/demo"

step "3. nbdinfo $tcp_uri"
nbdinfo "$tcp_uri" | grep -E 'export-size|can_flush|can_fua|can_trim|can_zero|can_multi_conn|block_size'

step "4. qemu-img compare $unix_uri disk.img (the file opened with locking=off)"
# diskgate holds the image's lock while it serves it; locking=off lets qemu-img read it too.
qemu-img compare -f raw "$unix_uri" \
  "json:{\"driver\":\"raw\",\"file\":{\"driver\":\"file\",\"filename\":\"$work/disk.img\",\"locking\":\"off\"}}"

step "5. Read /hello.txt out of the file system through the export"
nbdcopy "$unix_uri" "$work/copy.img"
debugfs -R 'cat /hello.txt' "$work/copy.img" 2>/dev/null

step "6. Boot a QEMU VM whose virtio disk is the export; it mounts it and reads the file"
cat >"$work/task.sh" <<'TASK'
mkdir -p /mnt && mount -t ext4 -o ro "$DISK" /mnt && cat /mnt/hello.txt && cat /mnt/etc/hostname && umount /mnt
TASK
if tests/guest/run-guest.sh --task "$work/task.sh" --nbd "$unix_uri" --timeout 120; then
  echo "(the guest read the file through diskgate)"
else
  echo "the guest step failed (see above)"; exit 1
fi

step "7. Stop the server (SIGTERM: in-flight requests finish, exit status 0)"
kill -TERM "$pid"
status=0; wait "$pid" 2>/dev/null || status=$?
pid=""
sed 's/^/   server log: /' "$work/server.log"
echo "diskgate exited with status $status"
[ "$status" -eq 0 ]
echo
echo "Demo finished: served, inspected, compared, read, booted and stopped."
