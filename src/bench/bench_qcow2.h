/* SPDX-License-Identifier: MIT */
/* bench_qcow2.h: the images of the qcow2 rows (bench_config.image), made with qemu-img in
 * --dir, and the check that a diskgate binary can serve qcow2 at all. Main thread only. */
#ifndef DISKGATE_BENCH_QCOW2_H
#define DISKGATE_BENCH_QCOW2_H

#include <stddef.h>
#include <stdint.h>

#include "bench/bench_env.h"
#include "bench/bench_types.h"

/* Virtual size of the fresh image, bytes: 1 Mi clusters of 64 KiB, so that a run's random
 * 4K writes (a few 10^4) nearly all land in a cluster not allocated yet. */
#define BENCH_QCOW2_FRESH_SIZE (64ull << 30)
/* Virtual size of the memory row's image, bytes: its L2 tables alone are 128 MiB. */
#define BENCH_QCOW2_1T_SIZE (1ull << 40)

/* The bytes fio addresses on row cfg's image: test_size (the test file's, which the full
 * image holds) for BENCH_IMAGE_QCOW2_FULL, the fixed sizes above for the others. */
uint64_t bench_qcow2_size(const struct bench_config *cfg, uint64_t test_size);

/* Writes the path of the image row cfg's server opens into buf (len bytes), making it first
 * when needed: the full image once per lab and server kind (`qemu-img convert` of the test
 * file, whose random data allocates every cluster; qemu-nbd's is a byte copy of diskgate's,
 * so each server writes only its own), the 1 TiB image once per lab (qemu-img create -o
 * preallocation=metadata), the fresh image anew for every call (qemu-img create). Returns 0,
 * or -errno after one line on stderr (qemu-img's output is in <out>/logs/qemu-img.log). */
int bench_qcow2_image(struct bench_env *env, const struct bench_config *cfg, char *buf,
                      size_t len);

/* Removes path when it is a fresh image (made for one run); other images stay until
 * bench_qcow2_cleanup. */
void bench_qcow2_release(const struct bench_config *cfg, const char *path);

/* Removes every image the lab made in --dir. */
void bench_qcow2_cleanup(struct bench_env *env);

/* For a diskgate qcow2 row: checks that its binary's `serve --help` offers --format. Returns
 * 0 (also for any other row), or -ENOTSUP with a one-line reason in why (len bytes). */
int bench_qcow2_check(const struct bench_env *env, const struct bench_config *cfg, char *why,
                      size_t len);

#endif
