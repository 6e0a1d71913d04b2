#!/usr/bin/env bash
# run.sh DISKGATE TMPFS_FILE DISK_FILE ROUNDS
# What made output.txt: cpu-split.sh's four configurations (TMPFS_FILE with --cache
# writeback and DISK_FILE with --cache direct, each over TCP and a Unix socket), one round
# each in turn for ROUNDS rounds, then fio alone writing to each file (io_uring, batches of
# 32; direct=0 on tmpfs, direct=1 on the disk), with its user and system CPU per write.
# Example: run.sh build/diskgate /dev/shm/ab.img /var/tmp/cmp/compare.img 3
# (both files 1 GiB and written in full first, as bench/compare leaves compare.img).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dg=$1 shm=$2 disk=$3 rounds=$4
date
for r in $(seq 1 "$rounds"); do
  for c in "$shm writeback tcp" "$disk direct tcp" "$shm writeback unix" "$disk direct unix"; do
    read -r file cache transport <<<"$c"
    echo "round $r: $file --cache $cache over $transport: $("$here/cpu-split.sh" "$dg" "$file" "$cache" 1 "$transport")"
  done
done
for c in "$shm 0" "$disk 1"; do
  read -r file direct <<<"$c"
  fio --name=w --filename="$file" --rw=randwrite --bs=4k --ioengine=io_uring --iodepth=32 \
    --direct="$direct" --iodepth_batch_submit=32 --iodepth_batch_complete_min=16 --runtime=5 \
    --time_based --size=1G --output-format=json |
    python3 -c '
import json, sys
file, direct = sys.argv[1:3]
j = json.load(sys.stdin)["jobs"][0]
ios, t = j["write"]["total_ios"], j["job_runtime"] * 1000
usr, sys_ = j["usr_cpu"] / 100 * t / ios, j["sys_cpu"] / 100 * t / ios
print(f"fio alone on {file} (direct={direct}, io_uring, batches of 32): IOPS {ios / t * 1e6:.0f}  "
      f"user {usr:.1f} us  system {sys_:.1f} us per write")' "$file" "$direct"
done
date
