/* SPDX-License-Identifier: MIT */
/* bench_copy.h: the copy test: a generated tree of a few thousand files of mixed sizes,
 * copied with `cp -a` onto a fresh ext4 file system on the disk under test, then synced.
 * Main thread only. */
#ifndef DISKGATE_BENCH_COPY_H
#define DISKGATE_BENCH_COPY_H

#include <sys/types.h>

#include "bench/bench_env.h"
#include "bench/bench_types.h"

/* Creates the tree at env->tree (about opts->copy_size bytes: sizes log-uniform from 512 bytes
 * to 4 MiB, 100 files per directory, pseudo-random contents), unless one of that size is
 * already there. Sets env->tree_bytes and env->tree_files. Returns 0 or -errno. */
int bench_copy_make_tree(struct bench_env *env);

/* One copy run onto block device `dev`: mkfs.ext4, mount, read the tree once so it comes from
 * the page cache, then time `cp -a` plus syncfs(), then unmount. CPU time: cp, the server
 * (server_pid > 0) and a helper such as nbdfuse (helper_pid > 0), over the timed part. Fills
 * *s: value in MiB/s, cpu_per_kio in CPU-seconds per GiB copied. Returns 0 or -errno. */
int bench_copy_run(const struct bench_env *env, const char *dev, pid_t server_pid,
                   pid_t helper_pid, const char *tag, struct bench_sample *s);

#endif
