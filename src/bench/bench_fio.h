/* SPDX-License-Identifier: MIT */
/* bench_fio.h: fio job files and fio runs with their CPU accounting. Main thread only. */
#ifndef DISKGATE_BENCH_FIO_H
#define DISKGATE_BENCH_FIO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "bench/bench_env.h"
#include "bench/bench_types.h"

/* What fio runs against. */
struct bench_fio_target {
  const char *ioengine; /* "io_uring" or "nbd" */
  const char *filename; /* file or block device for io_uring ("${DISK}" in a guest), else NULL */
  const char *uri;      /* NBD URI for the nbd engine, else NULL */
  uint64_t size;        /* bytes of the target the job may touch */
  bool buffered;        /* through the page cache (direct=0) instead of O_DIRECT */
  bool batched;         /* submit the whole queue at once, reap at least half of it */
  const char *const *uris; /* nbd engine over many exports: one URI each (uri unused) */
  size_t nuris;            /* their number; 0 for one target */
};

/* Writes a fio job file for workload wl (a [global] section and one job named wl->name, or
 * for a target of nuris exports one job section WL-NNN per export, each its own group of
 * wl->numjobs connections):
 * direct=1 (0 for a buffered target), threads (so /proc/<fio>/stat holds every job's CPU
 * time), time_based with runtime_s seconds after a ramp of ramp_s seconds, percentiles
 * 50/90/99/99.9, wl->numjobs jobs reported as one. A workload with fsync asks for a sync
 * after every write: through the nbd engine an NBD FLUSH (fio's fsync=1), which the servers
 * answer with fdatasync; on a file or device the same call, fdatasync=1.
 * Returns 0, -EINVAL for a copy workload, -EIO on a write error. */
int bench_fio_write_job(FILE *f, const struct bench_workload *wl, const struct bench_fio_target *t,
                        unsigned runtime_s, double ramp_s);

/* Runs one fio run of wl against t: writes the job into the private directory, runs
 * `fio --output-format=json --output=<out>/raw/<tag>.json`, and reads the CPU time of fio and
 * of the nservers server processes (summed; none when 0) from /proc at the end of the ramp
 * and when fio exits, and the servers' summed VmRSS four times a second (s->rss_max_kib,
 * s->rss_growth_kib) and summed VmHWM when fio ends (s->hwm_kib). A target of many exports
 * fills the per-export figures too (bench_json_fill_sample_exports). Fills *s
 * (s->ok on success). fio's stderr is appended to <out>/logs/fio.log. Returns 0 or -errno
 * (-EIO when fio failed or its output did not parse; -EINTR when interrupted). */
int bench_fio_run(const struct bench_env *env, const struct bench_workload *wl,
                  const struct bench_fio_target *t, const pid_t *servers, size_t nservers,
                  const char *tag, struct bench_sample *s);

#endif
