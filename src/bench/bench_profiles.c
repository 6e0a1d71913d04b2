/* SPDX-License-Identifier: MIT */
/* bench_profiles.c: profiles and row/column selection. */
#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_configs.h"
#include "bench/bench_profiles.h"
#include "bench/bench_workloads.h"
#include "util/log.h"

struct profile {
  const char *name;
  const char *configs;
  const char *workloads;
  unsigned runs;
  unsigned runtime_s;
  uint64_t size;
};

static const struct profile profiles[] = {
  /* quick: serve's default on the file and on a loop device beside host and host-dev-4k
   * (file or partition?), the O_DIRECT mode beside the default (which mode?), the peers */
  { "quick",
    "host,host-dev-4k,diskgate-unix-writeback-full,diskgate-dev-unix-writeback-full,"
    "diskgate-unix-direct-full,qemu-nbd-unix,nbdkit-unix",
    "randread-4k,read-1m", 1, 5, 256ull << 20 },
  { "seeds",
    "host,host-dev-512,host-dev-4k,diskgate-unix-direct-full,diskgate-unix-writeback-full,"
    "diskgate-tcp-direct-full,qemu-nbd-unix,qemu-nbd-tcp,nbdkit-unix,"
    "guest-virtio-file,guest-virtio-diskgate,guest-virtio-qemu-nbd,guest-nvme-file,guest-9p",
    "read-1m,write-1m,randread-4k,randwrite-4k,read-4k,write-4k,randrw-4k,randrw-1m", 3, 10,
    1ull << 30 },
  { "sync",
    "host,host-dev-4k,diskgate-unix-*,qemu-nbd-unix,qemu-nbd-unix-writethrough,"
    "qemu-nbd-unix-directsync,nbdkit-unix,guest-virtio-file,"
    "guest-virtio-file-writeback,guest-virtio-file-noflush,guest-virtio-diskgate",
    "randwrite-4k-qd8,randwrite-4k-qd8-fsync,randwrite-4k-qd8-4j,randwrite-4k-qd8-fsync-4j,"
    "randwrite-4k-qd1,randwrite-4k-qd1-fsync,copy",
    3, 10, 2ull << 30 },
  { "rbd", "diskgate-rbd,qemu-nbd-rbd", "randread-4k,randwrite-4k,read-1m,write-1m", 3, 10,
    1ull << 30 },
  { "peers",
    "host,host-batched,host-buffered,diskgate-unix-direct-full,diskgate-unix-writeback-full,"
    "diskgate-tcp-direct-full,qemu-nbd-unix,qemu-nbd-tcp,nbdkit-unix",
    "randread-4k,randwrite-4k,randread-4k-4j,randwrite-4k-4j,read-1m,write-1m,"
    "randwrite-4k-qd8-fsync-4j,randread-4k-qd1,randrw-4k-16x64", 3, 5, 1ull << 30 },
  /* diskgate direct beside qemu-nbd (both O_DIRECT), diskgate writeback beside nbdkit (both
   * the page cache), each point once, as % of the host path at the same depth */
  { "scaling", "host,diskgate-unix-direct-full,qemu-nbd-unix,diskgate-unix-writeback-full,"
    "nbdkit-unix", "randread-4k-*x*", 1, 5, 1ull << 30 },
  /* collapse: diskgate on the page cache (--cache writeback) by 4K random writes from 4,
   * 16 and 32 connections into one file; the target C1 (bench_targets_collapse.h) */
  { "collapse", "diskgate-unix-writeback-full", "randwrite-4k-4c,randwrite-4k-16c,"
    "randwrite-4k-32c", 3, 5, 1ull << 30 },
  /* qcow2: diskgate --format qcow2 beside qemu-nbd -f qcow2 (both O_DIRECT) on a fully
   * allocated image, a fresh one and a 1 TiB one, and beside diskgate on the same data raw;
   * only the cells of the targets Q1-Q4 (bench_targets_qcow2.h) run */
  { "qcow2",
    "diskgate-qcow2,qemu-nbd-qcow2,diskgate-qcow2-fresh,qemu-nbd-qcow2-fresh,"
    "diskgate-unix-direct-full,diskgate-qcow2-1t,qemu-nbd-qcow2-1t",
    "randread-4k,randwrite-4k,read-1m,randrw-4k-16x64", 3, 5, 1ull << 30 },
  /* asif: diskgate --format asif on the test file's bytes as a fully written ASIF image
   * beside diskgate on the raw file (both O_DIRECT); the targets A1-A2
   * (bench_targets_asif.h). No host row: its reads of the raw file alone would warm the
   * caches under a virtual disk for the raw row only */
  { "asif", "diskgate-unix-direct-full,diskgate-asif", "read-1m,randread-4k", 3, 10,
    4ull << 30 },
  /* metrics: diskgate with --metrics on (scraped once a second) beside the same server
   * without it, 4K random reads QD32; the target M1 (bench_targets_metrics.h). Many short
   * rounds: interleaved, so that a busy machine's drift hits both rows alike */
  { "metrics", "diskgate-unix-direct-full,diskgate-metrics-unix-direct-full", "randread-4k",
    7, 5, 1ull << 30 },
  /* gateway: one diskgate serving 100 exports from a config file beside 100 qemu-nbd, one
   * per export, by 4K random reads from 1 connection per export; and 5 connections per
   * export into the diskgate alone; the targets G1-G2 (bench_targets_gateway.h). The test
   * file is the exports' 64 MiB */
  { "gateway", "diskgate-gateway,qemu-nbd-gateway",
    "gateway-randread-4k-1c,gateway-randread-4k-5c", 3, 10, 64ull << 20 },
  { "all", "*", "*", 3, 10, 2ull << 30 },
};

static const struct profile *profile_find(const char *name)
{
  for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
    if (strcmp(profiles[i].name, name) == 0) {
      return &profiles[i];
    }
  }
  return NULL;
}

int bench_profiles_apply(const char *name, struct bench_opts *opts)
{
  const struct profile *p = profile_find(name);

  if (p == NULL) {
    return -EINVAL;
  }
  opts->profile = p->name;
  if (!opts->runs_set) {
    opts->runs = p->runs;
  }
  if (!opts->runtime_set) {
    opts->runtime_s = p->runtime_s;
  }
  if (!opts->size_set) {
    opts->size = p->size;
  }
  return 0;
}

const char *bench_profiles_configs(const char *profile)
{
  const struct profile *p = profile_find(profile);

  return p != NULL ? p->configs : "";
}

const char *bench_profiles_workloads(const char *profile)
{
  const struct profile *p = profile_find(profile);

  return p != NULL ? p->workloads : "";
}

/* Marks in `chosen` (indexed like `names`) every name matched by an item of the list; returns
 * 0, or -EINVAL after printing the item that matched nothing. */
static int select_list(const char *list, const char *const *names, size_t n, bool *chosen,
                       const char *what, FILE *err)
{
  const char *p = list;

  while (*p != '\0') {
    const char *end = strchr(p, ',');
    size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
    char item[128];
    bool hit = false;

    if (len == 0 || len >= sizeof(item)) {
      char shown[LOG_SHOWN_MAX];
      fprintf(err, "diskgate bench: bad %s list '%s'\n", what,
              log_escape_str(shown, sizeof shown, list));
      return -EINVAL;
    }
    memcpy(item, p, len);
    item[len] = '\0';
    for (size_t i = 0; i < n; i++) {
      if (fnmatch(item, names[i], 0) == 0) {
        chosen[i] = true;
        hit = true;
      }
    }
    if (!hit) {
      char shown[LOG_SHOWN_MAX];
      fprintf(err, "diskgate bench: unknown %s '%s' (see diskgate bench --list)\n", what,
              log_escape_str(shown, sizeof shown, item));
      return -EINVAL;
    }
    p += len;
    if (*p == ',') {
      p++;
    }
  }
  return 0;
}

int bench_profiles_select(const struct bench_opts *opts, struct bench_results *r, FILE *err)
{
  const struct bench_config *cfgs;
  const struct bench_workload *wls;
  const char *names[BENCH_MAX_CONFIGS] = { NULL };
  bool chosen[BENCH_MAX_CONFIGS];
  size_t ncfg = bench_configs_all(&cfgs);
  size_t nwl = bench_workloads_all(&wls);
  const char *clist = opts->configs != NULL ? opts->configs : bench_profiles_configs(opts->profile);
  const char *wlist =
    opts->workloads != NULL ? opts->workloads : bench_profiles_workloads(opts->profile);
  int rc;

  r->nconfigs = 0;
  r->nworkloads = 0;
  memset(chosen, 0, sizeof(chosen));
  for (size_t i = 0; i < ncfg && i < BENCH_MAX_CONFIGS; i++) {
    names[i] = cfgs[i].name;
  }
  rc = select_list(clist, names, ncfg, chosen, "configuration", err);
  if (rc < 0) {
    return rc;
  }
  for (size_t i = 0; i < ncfg; i++) {
    if (!chosen[i]) {
      continue;
    }
    if (bench_configs_needs_root(&cfgs[i]) && geteuid() != 0) {
      fprintf(err, "diskgate bench: skipping %s: loop devices need root\n", cfgs[i].name);
      continue;
    }
    r->configs[r->nconfigs++] = &cfgs[i];
  }
  memset(chosen, 0, sizeof(chosen));
  for (size_t i = 0; i < nwl && i < BENCH_MAX_CONFIGS; i++) {
    names[i] = wls[i].name;
  }
  rc = select_list(wlist, names, nwl, chosen, "workload", err);
  if (rc < 0) {
    return rc;
  }
  for (size_t i = 0; i < nwl && r->nworkloads < BENCH_MAX_WORKLOADS; i++) {
    if (chosen[i]) {
      r->workloads[r->nworkloads++] = &wls[i];
    }
  }
  for (size_t c = 0; c < r->nconfigs; c++) {
    for (size_t w = 0; w < r->nworkloads; w++) {
      if (bench_configs_applies(r->configs[c], r->workloads[w], NULL)) {
        return 0;
      }
    }
  }
  return -ENOENT;
}
