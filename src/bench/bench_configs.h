/* SPDX-License-Identifier: MIT */
/* bench_configs.h: the configuration table (the table's rows). Static data, any thread. */
#ifndef DISKGATE_BENCH_CONFIGS_H
#define DISKGATE_BENCH_CONFIGS_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/bench_types.h"

/* Returns the number of known configurations and sets *out to the static table. */
size_t bench_configs_all(const struct bench_config **out);

/* Returns the configuration called `name`, or NULL. */
const struct bench_config *bench_configs_find(const char *name);

/* How the names of the diskgate rows served with --metrics (and scraped once a second)
 * begin; not "diskgate-unix-", so that the sync profile's diskgate-unix-* leaves them out. */
#define BENCH_METRICS_PREFIX "diskgate-metrics-"

/* True for a diskgate row whose server runs with --metrics (its name begins with
 * BENCH_METRICS_PREFIX): bench_server.c adds the option and scrapes it during the run. */
bool bench_configs_metrics(const struct bench_config *cfg);

/* Returns true when workload `wl` can run on configuration `cfg`; otherwise false, and when
 * `why` is not NULL sets *why to a short static reason. */
bool bench_configs_applies(const struct bench_config *cfg, const struct bench_workload *wl,
                           const char **why);

/* Returns true for rows measured inside a QEMU guest (compared with each other). */
bool bench_configs_is_guest(const struct bench_config *cfg);

/* Returns the group a row is reported in (host-side, RBD, guest). */
enum bench_group bench_configs_group(const struct bench_config *cfg);

/* Returns the name of a group's baseline row ("host", "qemu-nbd-rbd", "guest-virtio-file",
 * "qemu-nbd-qcow2"). */
const char *bench_configs_group_baseline(enum bench_group group);

/* Returns the name of the external program this configuration needs besides fio
 * ("qemu-nbd", "nbdkit", "qemu-system-x86_64"), or NULL. A guest row backed by an NBD
 * server needs two, and a qcow2 row needs qemu-img: the second is returned by
 * bench_configs_tool2(). */
const char *bench_configs_tool(const struct bench_config *cfg);

/* Returns the second external program a configuration needs, or NULL. */
const char *bench_configs_tool2(const struct bench_config *cfg);

/* Returns true when host row cfg submits in `mode` ("batched", "writeback": see
 * bench_config.cache_mode); false for any other row or mode. */
bool bench_configs_host_mode(const struct bench_config *cfg, const char *mode);

/* Returns true when the configuration needs root (loop devices). */
bool bench_configs_needs_root(const struct bench_config *cfg);

/* Returns true when the row's target is a loop device over the test file: host-dev rows,
 * diskgate rows with a sector size (the server exports the device), guest loop rows. */
bool bench_configs_on_loop(const struct bench_config *cfg);

/* What `diskgate serve` does with no --sync or --cache (src/server/serve.c's usage). */
#define BENCH_SERVE_DEFAULT_SYNC "full"
#define BENCH_SERVE_DEFAULT_CACHE "writeback"

/* Returns true for a diskgate NBD row run with serve's default --sync and --cache (the lab
 * passes no --engine, so the engine is the default too), whatever its transport or backing:
 * the reports flag these rows as "what you get with no options". */
bool bench_configs_is_serve_default(const struct bench_config *cfg);

#endif
