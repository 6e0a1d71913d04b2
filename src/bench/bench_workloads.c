/* SPDX-License-Identifier: MIT */
/* bench_workloads.c: the workloads of the `seeds`, `sync`, `peers`, `collapse`, `gateway` and
 * `scaling` suites. */
#include <string.h>

#include "bench/bench_workloads.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

/* scaling: 4K random reads over `c` connections (fio jobs) at iodepth `q` each */
#define SCALE(c, q)                                                                           \
  { "randread-4k-" #c "x" #q, "4K randread " #c " conns x QD" #q, "scaling", BENCH_WL_FIO,    \
    "randread", 4 * KIB, q, 0, false, false, BENCH_UNIT_IOPS, c, 0 }

static const struct bench_workload workloads[] = {
  /* seeds: the VM-disk shapes of the published tables */
  { "read-1m", "1M seqread QD4", "seeds", BENCH_WL_FIO, "read", MIB, 4, 0, false, true,
    BENCH_UNIT_MBPS, 0, 0 },
  { "write-1m", "1M seqwrite QD4", "seeds", BENCH_WL_FIO, "write", MIB, 4, 0, false, true,
    BENCH_UNIT_MBPS, 0, 0 },
  { "randread-4k", "4K randread QD32", "seeds", BENCH_WL_FIO, "randread", 4 * KIB, 32, 0, false,
    false, BENCH_UNIT_IOPS, 0, 0 },
  { "randwrite-4k", "4K randwrite QD32", "seeds", BENCH_WL_FIO, "randwrite", 4 * KIB, 32, 0,
    false, false, BENCH_UNIT_IOPS, 0, 0 },
  { "read-4k", "4K seqread QD32", "seeds", BENCH_WL_FIO, "read", 4 * KIB, 32, 0, false, false,
    BENCH_UNIT_IOPS, 0, 0 },
  { "write-4k", "4K seqwrite QD32", "seeds", BENCH_WL_FIO, "write", 4 * KIB, 32, 0, false, false,
    BENCH_UNIT_IOPS, 0, 0 },
  { "randrw-4k", "4K randrw 70/30 QD32", "seeds", BENCH_WL_FIO, "randrw", 4 * KIB, 32, 70, false,
    false, BENCH_UNIT_IOPS, 0, 0 },
  { "randrw-1m", "1M randrw 70/30 QD4", "seeds", BENCH_WL_FIO, "randrw", MIB, 4, 70, false,
    false, BENCH_UNIT_MBPS, 0, 0 },
  /* sync: durability costs */
  { "randwrite-4k-qd8", "4K randwrite QD8", "sync", BENCH_WL_FIO, "randwrite", 4 * KIB, 8, 0,
    false, false, BENCH_UNIT_IOPS, 0, 0 },
  { "randwrite-4k-qd8-fsync", "4K randwrite QD8 fsync=1", "sync", BENCH_WL_FIO, "randwrite",
    4 * KIB, 8, 0, true, false, BENCH_UNIT_IOPS, 0, 0 },
  { "randwrite-4k-qd8-4j", "4K randwrite QD8 x4 jobs", "sync", BENCH_WL_FIO, "randwrite",
    4 * KIB, 8, 0, false, false, BENCH_UNIT_IOPS, 4, 0 },
  { "randwrite-4k-qd1", "4K randwrite QD1", "sync", BENCH_WL_FIO, "randwrite", 4 * KIB, 1, 0,
    false, false, BENCH_UNIT_IOPS, 1, 0 },
  { "randwrite-4k-qd1-fsync", "4K randwrite QD1 fsync=1", "sync", BENCH_WL_FIO, "randwrite",
    4 * KIB, 1, 0, true, false, BENCH_UNIT_IOPS, 1, 0 },
  { "copy", "copy tree + sync", "sync", BENCH_WL_COPY, NULL, 0, 0, 0, false, false,
    BENCH_UNIT_MIBPS, 0, 0 },
  /* peers: the jobs of the performance targets (bench_targets.c) besides seeds' */
  { "randread-4k-4j", "4K randread QD32 x4 jobs", "peers", BENCH_WL_FIO, "randread", 4 * KIB,
    32, 0, false, false, BENCH_UNIT_IOPS, 4, 0 },
  { "randwrite-4k-4j", "4K randwrite QD32 x4 jobs", "peers", BENCH_WL_FIO, "randwrite",
    4 * KIB, 32, 0, false, false, BENCH_UNIT_IOPS, 4, 0 },
  { "randwrite-4k-qd8-fsync-4j", "4K randwrite QD8 fsync=1 x4 jobs", "peers", BENCH_WL_FIO,
    "randwrite", 4 * KIB, 8, 0, true, false, BENCH_UNIT_IOPS, 4, 0 },
  { "randread-4k-qd1", "4K randread QD1", "peers", BENCH_WL_FIO, "randread", 4 * KIB, 1, 0,
    false, false, BENCH_UNIT_IOPS, 1, 0 },
  { "randrw-4k-16x64", "4K randrw 50/50 QD64 x16 jobs", "peers", BENCH_WL_FIO, "randrw",
    4 * KIB, 64, 50, false, false, BENCH_UNIT_IOPS, 16, 0 },
  /* collapse: 4K random writes QD32 from 4, 16 and 32 connections (fio jobs) into one
   * file, the cells of the target C1 (bench_targets_collapse.h) */
  { "randwrite-4k-4c", "4K randwrite QD32 x4 conns", "collapse", BENCH_WL_FIO, "randwrite",
    4 * KIB, 32, 0, false, false, BENCH_UNIT_IOPS, 4, 0 },
  { "randwrite-4k-16c", "4K randwrite QD32 x16 conns", "collapse", BENCH_WL_FIO, "randwrite",
    4 * KIB, 32, 0, false, false, BENCH_UNIT_IOPS, 16, 0 },
  { "randwrite-4k-32c", "4K randwrite QD32 x32 conns", "collapse", BENCH_WL_FIO, "randwrite",
    4 * KIB, 32, 0, false, false, BENCH_UNIT_IOPS, 32, 0 },
  /* gateway: 4K random reads over the 100 exports of a gateway row (bench_gateway.h), one
   * fio group per export: 1 connection each at QD8, and 5 each at QD4 (the targets G1-G2,
   * bench_targets_gateway.h) */
  { "gateway-randread-4k-1c", "4K randread QD8, 100 exports x 1 conn", "gateway", BENCH_WL_FIO,
    "randread", 4 * KIB, 8, 0, false, false, BENCH_UNIT_IOPS, 1, 100 },
  { "gateway-randread-4k-5c", "4K randread QD4, 100 exports x 5 conns", "gateway",
    BENCH_WL_FIO, "randread", 4 * KIB, 4, 0, false, false, BENCH_UNIT_IOPS, 5, 100 },
  SCALE(1, 1), SCALE(1, 8), SCALE(1, 32), SCALE(1, 128),
  SCALE(4, 1), SCALE(4, 8), SCALE(4, 32), SCALE(4, 128),
  SCALE(16, 1), SCALE(16, 8), SCALE(16, 32), SCALE(16, 128),
  SCALE(64, 1), SCALE(64, 8), SCALE(64, 32), SCALE(64, 128),
};

size_t bench_workloads_all(const struct bench_workload **out)
{
  *out = workloads;
  return sizeof(workloads) / sizeof(workloads[0]);
}

const struct bench_workload *bench_workloads_find(const char *name)
{
  for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++) {
    if (strcmp(workloads[i].name, name) == 0) {
      return &workloads[i];
    }
  }
  return NULL;
}

const char *bench_workloads_unit_label(enum bench_unit unit)
{
  switch (unit) {
  case BENCH_UNIT_IOPS:
    return "IOPS";
  case BENCH_UNIT_MBPS:
    return "MB/s";
  case BENCH_UNIT_MIBPS:
    return "MiB/s";
  }
  return "";
}
