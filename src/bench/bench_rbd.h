/* SPDX-License-Identifier: MIT */
/* bench_rbd.h: the Ceph side of the RBD rows (diskgate-rbd, qemu-nbd-rbd): a throw-away
 * single-node cluster started with scripts/ceph-cluster.sh, or an existing one (--ceph-conf);
 * the image (--rbd-image, --size bytes) created, filled and removed; the servers' image
 * argument; the warm-up connection before measuring. Main thread only. */
#ifndef DISKGATE_BENCH_RBD_H
#define DISKGATE_BENCH_RBD_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/bench_env.h"
#include "bench/bench_types.h"

/* Returns true for a row served from a Ceph RBD image. */
bool bench_rbd_is_row(const struct bench_config *cfg);

/* Checks that RBD row cfg can run here: diskgate built with librbd, the rbd CLI, and either
 * --ceph-conf readable or the Ceph daemons and scripts/ceph-cluster.sh present; for a
 * diskgate row, librados and librbd loadable (backing_spec_load: this loads them into the
 * bench process); for qemu-nbd-rbd, QEMU's rbd driver. Returns 0, or -ENOTSUP after writing the reason (one
 * short clause, no newline) into why (len bytes). Touches no file or cluster. */
int bench_rbd_check(const struct bench_env *env, const struct bench_config *cfg, char *why,
                    size_t len);

/* Makes the image ready: unless --ceph-conf, starts a throw-away cluster in <work>/ceph
 * (bluestore on a sparse file, up to a minute); creates --rbd-image with opts->size bytes
 * (refusing an image that exists: the lab writes over it), and fills it (`rbd bench`,
 * sequential 4 MiB writes) so that reads hit data. Everything is logged in
 * <out>/logs/ceph.log. Writes a one-line description of the image and the cluster for the
 * report into desc (len bytes). Returns 0, or -errno after printing one line on stderr;
 * bench_rbd_cleanup() undoes whatever part was done. */
int bench_rbd_setup(struct bench_env *env, char *desc, size_t len);

/* Returns true once bench_rbd_setup() succeeded. */
bool bench_rbd_ready(const struct bench_env *env);

/* Writes the image argument of server kind into buf (len bytes): "rbd:POOL/IMAGE" for
 * diskgate (with --ceph-conf env->ceph_conf), "rbd:POOL/IMAGE:conf=CONF" for qemu-nbd. */
void bench_rbd_spec(const struct bench_env *env, enum bench_server_kind kind, char *buf,
                    size_t len);

/* One unmeasured connection to the export at uri (fio reads 4 MiB through the nbd engine), so
 * that the lazy open of the image (diskgate opens it at the first NBD_OPT_GO) and the cold
 * caches are not paid inside a measured run. fio's output goes to <out>/logs/warmup.log.
 * Returns 0 or -errno (-EIO when fio failed). */
int bench_rbd_warm(const struct bench_env *env, const char *uri);

/* Removes the image when the lab created it, and stops the cluster when the lab started it
 * (only that: scripts/ceph-cluster.sh stop kills the PIDs it recorded). Safe to call when
 * nothing was set up, and more than once. */
void bench_rbd_cleanup(struct bench_env *env);

#endif
