/* SPDX-License-Identifier: MIT */
/* bench_configs.c: every configuration the lab knows, and which workloads apply to which. */
#include <string.h>

#include "bench/bench_configs.h"

#define DG(tr, trn, cache, sync)                                                             \
  { "diskgate-" trn "-" cache "-" sync,                                                      \
    "diskgate serve --sync " sync " --cache " cache ", fio nbd engine over " trn,            \
    BENCH_CFG_NBD, BENCH_SERVER_DISKGATE, tr, sync, cache, 0, BENCH_GUEST_FILE, false, NULL,   \
    BENCH_IMAGE_NONE }

#define GUEST(nm, title, backing, server, nvme, qcache)                                       \
  { nm, title, BENCH_CFG_GUEST, server, BENCH_TRANSPORT_UNIX, "full", "direct", 0, backing, nvme, \
    qcache, BENCH_IMAGE_NONE }

/* qcow2 rows: diskgate --format qcow2 --cache direct --sync full beside qemu-nbd -f qcow2
 * --cache=none --aio=io_uring (both O_DIRECT), over a Unix socket */
#define QCOW2(nm, title, server, image)                                                       \
  { nm, title, BENCH_CFG_QCOW2, server, BENCH_TRANSPORT_UNIX,                                 \
    (server) == BENCH_SERVER_DISKGATE ? "full" : NULL,                                         \
    (server) == BENCH_SERVER_DISKGATE ? "direct" : NULL, 0, BENCH_GUEST_FILE, false, NULL, image }

static const struct bench_config configs[] = {
  { "host", "fio io_uring on the test file, direct=1 (the 100% line)", BENCH_CFG_HOST,
    BENCH_SERVER_NONE, BENCH_TRANSPORT_UNIX, NULL, NULL, 0, BENCH_GUEST_FILE, false, NULL,
    BENCH_IMAGE_NONE },
  { "host-batched",
    "fio io_uring on the test file, direct=1, the whole queue submitted at once and at least "
    "half of it reaped at a time (the kernel's cheapest way)",
    BENCH_CFG_HOST, BENCH_SERVER_NONE, BENCH_TRANSPORT_UNIX, NULL, "batched", 0, BENCH_GUEST_FILE,
    false, NULL, BENCH_IMAGE_NONE },
  { "host-buffered", "fio io_uring on the test file through the page cache, direct=0",
    BENCH_CFG_HOST, BENCH_SERVER_NONE, BENCH_TRANSPORT_UNIX, NULL, "writeback", 0,
    BENCH_GUEST_FILE, false, NULL, BENCH_IMAGE_NONE },
  { "host-dev-512", "fio io_uring on a loop device over the file, 512-byte sectors, direct-io",
    BENCH_CFG_HOST_DEV, BENCH_SERVER_NONE, BENCH_TRANSPORT_UNIX, NULL, NULL, 512,
    BENCH_GUEST_FILE, false, NULL, BENCH_IMAGE_NONE },
  { "host-dev-4k", "fio io_uring on a loop device over the file, 4096-byte sectors, direct-io",
    BENCH_CFG_HOST_DEV, BENCH_SERVER_NONE, BENCH_TRANSPORT_UNIX, NULL, NULL, 4096,
    BENCH_GUEST_FILE, false, NULL, BENCH_IMAGE_NONE },
  DG(BENCH_TRANSPORT_UNIX, "unix", "direct", "full"),
  /* the same with --metrics on, scraped once a second (bench_server.c): what counting costs */
  { BENCH_METRICS_PREFIX "unix-direct-full",
    "diskgate serve --sync full --cache direct --metrics 127.0.0.1:PORT, GET /metrics once a "
    "second during the run, fio nbd engine over unix",
    BENCH_CFG_NBD, BENCH_SERVER_DISKGATE, BENCH_TRANSPORT_UNIX, "full", "direct", 0,
    BENCH_GUEST_FILE, false, NULL, BENCH_IMAGE_NONE },
  DG(BENCH_TRANSPORT_UNIX, "unix", "direct", "fsync"),
  DG(BENCH_TRANSPORT_UNIX, "unix", "direct", "none"),
  DG(BENCH_TRANSPORT_UNIX, "unix", "writeback", "full"),
  DG(BENCH_TRANSPORT_UNIX, "unix", "writeback", "fsync"),
  DG(BENCH_TRANSPORT_UNIX, "unix", "writeback", "none"),
  DG(BENCH_TRANSPORT_UNIX, "unix", "writethrough", "full"),
  DG(BENCH_TRANSPORT_UNIX, "unix", "directsync", "full"),
  DG(BENCH_TRANSPORT_TCP, "tcp", "direct", "full"),
  DG(BENCH_TRANSPORT_TCP, "tcp", "direct", "fsync"),
  DG(BENCH_TRANSPORT_TCP, "tcp", "direct", "none"),
  DG(BENCH_TRANSPORT_TCP, "tcp", "writeback", "full"),
  DG(BENCH_TRANSPORT_TCP, "tcp", "writeback", "fsync"),
  DG(BENCH_TRANSPORT_TCP, "tcp", "writeback", "none"),
  { "diskgate-dev-unix-writeback-full",
    "diskgate serve --sync full --cache writeback on a loop device over the file (4096-byte "
    "sectors, direct-io), fio nbd engine over unix",
    BENCH_CFG_NBD, BENCH_SERVER_DISKGATE, BENCH_TRANSPORT_UNIX, "full", "writeback", 4096,
    BENCH_GUEST_FILE, false, NULL, BENCH_IMAGE_NONE },
  { "qemu-nbd-unix", "qemu-nbd --cache=none --aio=io_uring, fio nbd engine over unix",
    BENCH_CFG_NBD, BENCH_SERVER_QEMU_NBD, BENCH_TRANSPORT_UNIX, NULL, NULL, 0, BENCH_GUEST_FILE,
    false, NULL, BENCH_IMAGE_NONE },
  { "qemu-nbd-tcp", "qemu-nbd --cache=none --aio=io_uring, fio nbd engine over tcp",
    BENCH_CFG_NBD, BENCH_SERVER_QEMU_NBD, BENCH_TRANSPORT_TCP, NULL, NULL, 0, BENCH_GUEST_FILE,
    false, NULL, BENCH_IMAGE_NONE },
  { "qemu-nbd-unix-writethrough",
    "qemu-nbd --cache=writethrough --aio=io_uring, fio nbd engine over unix", BENCH_CFG_NBD,
    BENCH_SERVER_QEMU_NBD, BENCH_TRANSPORT_UNIX, NULL, "writethrough", 0, BENCH_GUEST_FILE,
    false, NULL, BENCH_IMAGE_NONE },
  { "qemu-nbd-unix-directsync",
    "qemu-nbd --cache=directsync --aio=io_uring, fio nbd engine over unix", BENCH_CFG_NBD,
    BENCH_SERVER_QEMU_NBD, BENCH_TRANSPORT_UNIX, NULL, "directsync", 0, BENCH_GUEST_FILE,
    false, NULL, BENCH_IMAGE_NONE },
  { "nbdkit-unix", "nbdkit file plugin (page cache), fio nbd engine over unix", BENCH_CFG_NBD,
    BENCH_SERVER_NBDKIT, BENCH_TRANSPORT_UNIX, NULL, NULL, 0, BENCH_GUEST_FILE, false, NULL,
    BENCH_IMAGE_NONE },
  { "nbdkit-tcp", "nbdkit file plugin (page cache), fio nbd engine over tcp", BENCH_CFG_NBD,
    BENCH_SERVER_NBDKIT, BENCH_TRANSPORT_TCP, NULL, NULL, 0, BENCH_GUEST_FILE, false, NULL,
    BENCH_IMAGE_NONE },
  { "diskgate-rbd",
    "diskgate serve --sync full rbd:POOL/IMAGE (librbd defaults), fio nbd engine over unix",
    BENCH_CFG_RBD, BENCH_SERVER_DISKGATE, BENCH_TRANSPORT_UNIX, "full", NULL, 0,
    BENCH_GUEST_FILE, false, NULL, BENCH_IMAGE_NONE },
  { "qemu-nbd-rbd",
    "qemu-nbd --cache=none rbd:POOL/IMAGE:conf=CONF (QEMU's rbd driver), fio nbd engine over "
    "unix (the RBD 100% line)",
    BENCH_CFG_RBD, BENCH_SERVER_QEMU_NBD, BENCH_TRANSPORT_UNIX, NULL, NULL, 0, BENCH_GUEST_FILE,
    false, NULL, BENCH_IMAGE_NONE },
  QCOW2("diskgate-qcow2",
        "diskgate serve --format qcow2 --cache direct --sync full on the test file's data as a "
        "fully allocated qcow2 image, fio nbd engine over unix",
        BENCH_SERVER_DISKGATE, BENCH_IMAGE_QCOW2_FULL),
  QCOW2("qemu-nbd-qcow2",
        "qemu-nbd -f qcow2 --cache=none --aio=io_uring on a copy of diskgate-qcow2's image, fio "
        "nbd engine over unix (the qcow2 100% line)",
        BENCH_SERVER_QEMU_NBD, BENCH_IMAGE_QCOW2_FULL),
  QCOW2("diskgate-qcow2-fresh",
        "diskgate serve --format qcow2 --cache direct --sync full on an empty 64 GiB qcow2 image "
        "made for each run (allocating writes), fio nbd engine over unix",
        BENCH_SERVER_DISKGATE, BENCH_IMAGE_QCOW2_FRESH),
  QCOW2("qemu-nbd-qcow2-fresh",
        "qemu-nbd -f qcow2 --cache=none --aio=io_uring on an empty 64 GiB qcow2 image made for "
        "each run (allocating writes), fio nbd engine over unix",
        BENCH_SERVER_QEMU_NBD, BENCH_IMAGE_QCOW2_FRESH),
  QCOW2("diskgate-qcow2-1t",
        "diskgate serve --format qcow2 --cache direct --sync full on a 1 TiB qcow2 image with "
        "every L2 table allocated, fio nbd engine over unix",
        BENCH_SERVER_DISKGATE, BENCH_IMAGE_QCOW2_1T),
  QCOW2("qemu-nbd-qcow2-1t",
        "qemu-nbd -f qcow2 --cache=none --aio=io_uring on the same 1 TiB qcow2 image, fio nbd "
        "engine over unix",
        BENCH_SERVER_QEMU_NBD, BENCH_IMAGE_QCOW2_1T),
  { "diskgate-asif",
    "diskgate serve --format asif --cache direct --sync full on the test file's data as a "
    "fully written ASIF image (1 MiB chunks in a shuffled order), fio nbd engine over unix",
    BENCH_CFG_ASIF, BENCH_SERVER_DISKGATE, BENCH_TRANSPORT_UNIX, "full", "direct", 0,
    BENCH_GUEST_FILE, false, NULL, BENCH_IMAGE_ASIF_FULL },
  /* gateway rows (bench_gateway.h): 100 exports, each a 64 MiB copy of the test file's head */
  { "diskgate-gateway",
    "one diskgate serve --config with 100 exports (--cache direct --sync full) on one Unix "
    "socket, fio nbd engine",
    BENCH_CFG_GATEWAY, BENCH_SERVER_DISKGATE, BENCH_TRANSPORT_UNIX, "full", "direct", 0,
    BENCH_GUEST_FILE, false, NULL, BENCH_IMAGE_NONE },
  { "qemu-nbd-gateway",
    "100 qemu-nbd --cache=none --aio=io_uring, one per export, each on its own Unix socket, "
    "fio nbd engine",
    BENCH_CFG_GATEWAY, BENCH_SERVER_QEMU_NBD, BENCH_TRANSPORT_UNIX, NULL, NULL, 0,
    BENCH_GUEST_FILE, false, NULL, BENCH_IMAGE_NONE },
  GUEST("guest-virtio-file", "guest: virtio-blk on the raw file, cache=none (the guest 100% line)",
        BENCH_GUEST_FILE, BENCH_SERVER_NONE, false, "cache=none"),
  GUEST("guest-virtio-loop", "guest: virtio-blk on the loop device (4096-byte sectors), cache=none",
        BENCH_GUEST_LOOP, BENCH_SERVER_NONE, false, "cache=none"),
  GUEST("guest-virtio-diskgate", "guest: virtio-blk on diskgate's export (direct, full), unix",
        BENCH_GUEST_NBD, BENCH_SERVER_DISKGATE, false, NULL),
  GUEST("guest-virtio-qemu-nbd", "guest: virtio-blk on qemu-nbd's export (cache=none), unix",
        BENCH_GUEST_NBD, BENCH_SERVER_QEMU_NBD, false, NULL),
  GUEST("guest-nvme-file", "guest: emulated NVMe on the raw file, cache=none", BENCH_GUEST_FILE,
        BENCH_SERVER_NONE, true, "cache=none"),
  GUEST("guest-nvme-loop", "guest: emulated NVMe on the loop device, cache=none",
        BENCH_GUEST_LOOP, BENCH_SERVER_NONE, true, "cache=none"),
  GUEST("guest-nvme-diskgate", "guest: emulated NVMe on diskgate's export (direct, full)",
        BENCH_GUEST_NBD, BENCH_SERVER_DISKGATE, true, NULL),
  GUEST("guest-nvme-qemu-nbd", "guest: emulated NVMe on qemu-nbd's export (cache=none)",
        BENCH_GUEST_NBD, BENCH_SERVER_QEMU_NBD, true, NULL),
  GUEST("guest-virtio-file-writeback",
        "guest: virtio-blk on the file, cache=writeback (flushes reach the disk: like --sync full)",
        BENCH_GUEST_FILE, BENCH_SERVER_NONE, false, "cache=writeback"),
  GUEST("guest-virtio-file-noflush",
        "guest: virtio-blk on the file, cache=writeback,cache.no-flush=on (flushes dropped: like "
        "--sync none)",
        BENCH_GUEST_FILE, BENCH_SERVER_NONE, false, "cache=writeback,cache.no-flush=on"),
  GUEST("guest-9p", "guest: a file on a virtio-9p shared folder (the test file's directory)",
        BENCH_GUEST_9P, BENCH_SERVER_NONE, false, NULL),
};

size_t bench_configs_all(const struct bench_config **out)
{
  *out = configs;
  return sizeof(configs) / sizeof(configs[0]);
}

const struct bench_config *bench_configs_find(const char *name)
{
  for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
    if (strcmp(configs[i].name, name) == 0) {
      return &configs[i];
    }
  }
  return NULL;
}

bool bench_configs_applies(const struct bench_config *cfg, const struct bench_workload *wl,
                           const char **why)
{
  const char *reason = NULL;

  if (cfg->kind == BENCH_CFG_GUEST && wl->kind == BENCH_WL_COPY) {
    reason = "the copy test runs on host-side rows only";
  } else if ((cfg->kind == BENCH_CFG_RBD || cfg->kind == BENCH_CFG_QCOW2) &&
             wl->kind == BENCH_WL_COPY) {
    reason = "the copy test runs on raw file-backed rows only";
  } else if (cfg->kind == BENCH_CFG_ASIF &&
             (wl->kind == BENCH_WL_COPY || wl->fsync ||
              (wl->rw != NULL && (strstr(wl->rw, "write") != NULL || strstr(wl->rw, "rw") != NULL)))) {
    reason = "an ASIF image is served read-only";
  } else if ((cfg->kind == BENCH_CFG_GATEWAY) != (wl->exports > 0)) {
    reason = cfg->kind == BENCH_CFG_GATEWAY ? "a gateway row runs the gateway jobs only"
                                            : "a gateway job runs on the gateway rows only";
  } else if (cfg->kind == BENCH_CFG_GUEST && cfg->backing == BENCH_GUEST_9P && !wl->large_seq) {
    reason = "the shared-folder row runs the large sequential jobs only";
  }
  if (why != NULL) {
    *why = reason;
  }
  return reason == NULL;
}

bool bench_configs_is_guest(const struct bench_config *cfg)
{
  return cfg->kind == BENCH_CFG_GUEST;
}

enum bench_group bench_configs_group(const struct bench_config *cfg)
{
  switch (cfg->kind) {
  case BENCH_CFG_GUEST:
    return BENCH_GROUP_GUEST;
  case BENCH_CFG_RBD:
    return BENCH_GROUP_RBD;
  case BENCH_CFG_QCOW2:
    return BENCH_GROUP_QCOW2;
  case BENCH_CFG_HOST:
  case BENCH_CFG_HOST_DEV:
  case BENCH_CFG_NBD:
  case BENCH_CFG_ASIF: /* the test file's bytes: a share of `host` means what it does for raw */
  case BENCH_CFG_GATEWAY:
    break;
  }
  return BENCH_GROUP_HOST;
}

const char *bench_configs_group_baseline(enum bench_group group)
{
  switch (group) {
  case BENCH_GROUP_RBD:
    return "qemu-nbd-rbd";
  case BENCH_GROUP_GUEST:
    return "guest-virtio-file";
  case BENCH_GROUP_QCOW2:
    return "qemu-nbd-qcow2";
  case BENCH_GROUP_HOST:
  case BENCH_GROUP_COUNT:
    break;
  }
  return "host";
}

static const char *server_tool(enum bench_server_kind server)
{
  switch (server) {
  case BENCH_SERVER_QEMU_NBD:
    return "qemu-nbd";
  case BENCH_SERVER_NBDKIT:
    return "nbdkit";
  case BENCH_SERVER_NONE:
  case BENCH_SERVER_DISKGATE:
    break;
  }
  return NULL;
}

const char *bench_configs_tool(const struct bench_config *cfg)
{
  if (cfg->kind == BENCH_CFG_GUEST) {
    return "qemu-system-x86_64";
  }
  return server_tool(cfg->server);
}

const char *bench_configs_tool2(const struct bench_config *cfg)
{
  if (cfg->kind == BENCH_CFG_GUEST) {
    return server_tool(cfg->server);
  }
  if (cfg->kind == BENCH_CFG_QCOW2) {
    return "qemu-img"; /* makes the images */
  }
  return NULL;
}

bool bench_configs_on_loop(const struct bench_config *cfg)
{
  return cfg->kind == BENCH_CFG_HOST_DEV ||
         (cfg->kind == BENCH_CFG_NBD && cfg->sector != 0) ||
         (cfg->kind == BENCH_CFG_GUEST && cfg->backing == BENCH_GUEST_LOOP);
}

bool bench_configs_host_mode(const struct bench_config *cfg, const char *mode)
{
  return cfg->kind == BENCH_CFG_HOST && cfg->cache_mode != NULL &&
         strcmp(cfg->cache_mode, mode) == 0;
}


bool bench_configs_needs_root(const struct bench_config *cfg)
{
  return bench_configs_on_loop(cfg);
}

bool bench_configs_is_serve_default(const struct bench_config *cfg)
{
  return cfg->kind == BENCH_CFG_NBD && cfg->server == BENCH_SERVER_DISKGATE &&
         cfg->sync_mode != NULL && strcmp(cfg->sync_mode, BENCH_SERVE_DEFAULT_SYNC) == 0 &&
         cfg->cache_mode != NULL && strcmp(cfg->cache_mode, BENCH_SERVE_DEFAULT_CACHE) == 0;
}

bool bench_configs_metrics(const struct bench_config *cfg)
{
  return cfg->server == BENCH_SERVER_DISKGATE &&
         strncmp(cfg->name, BENCH_METRICS_PREFIX, strlen(BENCH_METRICS_PREFIX)) == 0;
}
