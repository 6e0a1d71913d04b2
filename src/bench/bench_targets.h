/* SPDX-License-Identifier: MIT */
/* bench_targets.h: the performance targets T1-T6 of docs/performance.md, judged on the cells
 * of a `diskgate bench --profile peers` run. Each target compares medians of cells measured
 * in the same interleaved rounds (diskgate against qemu-nbd, nbdkit or the host path) and
 * says PASS, FAIL, or FAIL (limit) when even the host path (fio on the file, no server)
 * misses the goal, so no server could meet it on this machine. Pure functions of the
 * results; any thread, as long as the results are not being changed. */
#ifndef DISKGATE_BENCH_TARGETS_H
#define DISKGATE_BENCH_TARGETS_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/bench_types.h"

#define BENCH_TARGETS_MAX_ROWS 24

enum bench_verdict {
  BENCH_VERDICT_PASS,
  BENCH_VERDICT_FAIL,
  BENCH_VERDICT_LIMIT,   /* FAIL, and the host path itself misses the goal */
  BENCH_VERDICT_MISSING, /* a cell the target needs was not selected or every run failed */
};

/* The medians of one cell over its successful runs. ok is false when there is none. */
struct bench_figures {
  bool ok;
  double iops;       /* read + write I/Os per second */
  double mbps;       /* 10^6 bytes per second */
  double p50_us;     /* p50 completion latency */
  double cpu_us;     /* server CPU (user + system) per I/O, µs; 0 for rows without a server */
  double sys_us;     /* fio's own kernel CPU per I/O, µs (the host path's disk cost) */
  double rss_mib;    /* the server's largest resident set, MiB */
  double growth_mib; /* its growth from a quarter into the measured window to the end, MiB */
  double hwm_mib;    /* the server's VmHWM (peak resident set) at the end of the run, MiB */
  double export_min;    /* gateway workloads: the least IOPS of one export */
  double export_median; /* the median export's IOPS */
  double export_max;    /* the most IOPS of one export */
};

/* One line of the targets table. */
struct bench_target_row {
  const char *target; /* "T1" ... "T6" (static) */
  char what[128];     /* the job, the measure and the goal */
  char value[24];     /* the measured ratio or figure */
  char limit[16];     /* the goal, as value is written */
  enum bench_verdict verdict;
  char detail[224];   /* the figures behind the ratio, and the host path's bound */
};

/* Returns "PASS", "FAIL", "FAIL (limit)" or "not measured". */
const char *bench_targets_verdict_name(enum bench_verdict v);

/* PASS when ok; else FAIL, or LIMIT when the goal is not reachable on this machine. */
enum bench_verdict bench_targets_verdict(bool ok, bool reachable);

/* Fills *f with the medians of the cell's successful runs (f->ok false when none). */
void bench_targets_figures(const struct bench_cell *cell, struct bench_figures *f);

/* The figures (bench_targets_figures) of the cell (config, workload) of r, found by their
 * names; false (and *f zeroed) when that cell was not selected or has no successful run.
 * Main thread. */
bool bench_targets_cell_figures(const struct bench_results *r, const char *config,
                                const char *workload, struct bench_figures *f);

/* Returns true when some target reads the cell of configuration `config` (a name of
 * bench_configs.c) and workload `workload`: the peers profile runs only those. */
bool bench_targets_uses(const char *config, const char *workload);

/* T1's IOPS row from diskgate (d), qemu-nbd (q) and the host path submitting one I/O at a time
 * (hst) and in batches (hstb): at least 2x qemu-nbd; LIMIT when the better host figure is
 * under 2x qemu-nbd's. `what` names the job. */
void bench_targets_t1_iops(const char *what, const struct bench_figures *d,
                           const struct bench_figures *q, const struct bench_figures *hst,
                           const struct bench_figures *hstb, struct bench_target_row *row);

/* T1's CPU row: server CPU per I/O at most a third of qemu-nbd's; LIMIT when the goal is
 * under the lower of the host path's two kernel CPU figures (the disk's own cost). */
void bench_targets_t1_cpu(const char *what, const struct bench_figures *d,
                          const struct bench_figures *q, const struct bench_figures *hst,
                          const struct bench_figures *hstb, struct bench_target_row *row);

/* T4's row from diskgate --cache writeback (d), nbdkit (k) and the host path with an
 * fdatasync after every write through the page cache (hst) and O_DIRECT (hstd): at least 2x
 * nbdkit. Never LIMIT: group commit may beat the host figures, which go in the detail. */
void bench_targets_t4(const struct bench_figures *d, const struct bench_figures *k,
                      const struct bench_figures *hst, const struct bench_figures *hstd,
                      struct bench_target_row *row);

/* T5's row: p50 latency at QD1 at most 0.6x qemu-nbd's; LIMIT when the host path's p50 is
 * above 0.6x qemu-nbd's. */
void bench_targets_t5(const struct bench_figures *d, const struct bench_figures *q,
                      const struct bench_figures *hst, struct bench_target_row *row);

/* Fills rows (at most max) with every target's lines, in the order of docs/performance.md,
 * from the cells of r (medians; r's cells finished by bench_stats_results_finish). A line
 * whose cells are missing says so (BENCH_VERDICT_MISSING). Returns the number of rows. */
size_t bench_targets_eval(const struct bench_results *r, struct bench_target_row *rows,
                          size_t max);

#endif
