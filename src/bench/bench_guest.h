/* SPDX-License-Identifier: MIT */
/* bench_guest.h: the guest rows: fio inside a QEMU guest booted by tests/guest/run-guest.sh,
 * against a virtio-blk or NVMe disk backed by the test file, a loop device or an NBD export.
 * Main thread only. */
#ifndef DISKGATE_BENCH_GUEST_H
#define DISKGATE_BENCH_GUEST_H

#include <stddef.h>
#include <sys/types.h>

#include "bench/bench_env.h"
#include "bench/bench_types.h"

/* The guest's disk: exactly one of drive (a QEMU -drive spec) and nbd (an NBD URI). */
struct bench_guest_disk {
  const char *drive;
  const char *nbd;
};

/* Called when the guest starts workload wls[index] (for progress lines). */
typedef void (*bench_guest_progress_fn)(void *arg, size_t index);

/* Returns the path of a guest script of the source tree (rel = "tests/guest/run-guest.sh" or
 * "scripts/guest-image.sh") in buf, or -ENOENT when the source tree or the script is missing. */
int bench_guest_script(const struct bench_env *env, const char *rel, char *buf, size_t len);

/* Builds (or finds in the cache) the guest kernel and initramfs with fio, once per lab run,
 * into env->guest_image. Returns 0 or -errno (-EIO when guest-image.sh failed). */
int bench_guest_prepare(struct bench_env *env);

/* Boots one guest for configuration cfg and runs the n workloads wls[] in it, one fio run each,
 * in order. out[i] receives the sample of wls[i] (out[i].ok when it succeeded): figures from
 * the guest's fio, CPU from /proc of the QEMU process (client) and server_pid (when > 0),
 * sampled on the host when the guest announces each run's start (plus the ramp) and end.
 * Sets env->accel from run-guest.sh's report. Returns 0 when the guest ran (some runs may still
 * have failed), or -errno. */
int bench_guest_run(struct bench_env *env, const struct bench_config *cfg,
                    const struct bench_workload *const *wls, size_t n,
                    const struct bench_guest_disk *disk, pid_t server_pid, const char *tag,
                    bench_guest_progress_fn progress, void *arg, struct bench_sample *out);

#endif
