/* SPDX-License-Identifier: MIT */
/* bench_json.h: reading fio's --output-format=json with cJSON. Pure functions; any thread. */
#ifndef DISKGATE_BENCH_JSON_H
#define DISKGATE_BENCH_JSON_H

#include <stddef.h>

#include "bench/bench_types.h"

/* The figures of one fio job. Rates per second over the job's runtime (after the ramp),
 * latencies in nanoseconds, 0 when fio reported none. */
struct bench_fio_result {
  char jobname[64];
  int error;            /* the job's "error" field (an errno value; 0 = fine) */
  double runtime_ms;    /* "job_runtime" */
  double read_iops, write_iops;
  double read_bw, write_bw;       /* bytes per second */
  double read_ios, write_ios;     /* I/Os completed */
  double read_p99_ns, write_p99_ns; /* completion latency (clat) p99 */
  double read_p50_ns, write_p50_ns; /* and p50 */
  double sys_cpu_pct;             /* "sys_cpu": fio's kernel CPU, % of job_runtime */
  double sync_ios;                /* fsyncs (NBD flushes) completed */
  double sync_p99_ns;             /* their latency p99 */
};

/* Parses fio's JSON output in text[0..len) and fills *out with the job called `jobname`
 * (NULL = the first job). Lines before the JSON object (fio's engines print messages such as
 * "fio: connected to NBD server" into the output file) and anything after it are ignored.
 * Returns 0, -EINVAL when the text holds no fio JSON object, -ENOENT when there is no such job. */
int bench_json_parse_fio(const char *text, size_t len, const char *jobname,
                         struct bench_fio_result *out);

/* The most jobs bench_json_parse_fio_jobs() is given room for by the lab (the exports of a
 * gateway row, bench_gateway.h, with room to spare). */
#define BENCH_JSON_MAX_JOBS 256

/* Parses fio's JSON output in text[0..len) as bench_json_parse_fio() does and fills
 * out[0..max) with every job in fio's order (with group_reporting, one per group); *n is
 * their number. Returns 0, -EINVAL when the text holds no fio JSON object or no job, -E2BIG
 * when it holds more than max (the first max are filled). */
int bench_json_parse_fio_jobs(const char *text, size_t len, struct bench_fio_result *out,
                              size_t max, size_t *n);

/* Reads the file at `path` and parses it as bench_json_parse_fio_jobs() does. Returns 0,
 * -errno when the file cannot be read, or the parser's error. */
int bench_json_parse_fio_jobs_file(const char *path, struct bench_fio_result *out, size_t max,
                                   size_t *n);

/* Reads the file at `path` and parses it as bench_json_parse_fio() does. Returns 0, -errno
 * when the file cannot be read, or the parser's error. */
int bench_json_parse_fio_file(const char *path, const char *jobname, struct bench_fio_result *out);

/* Fills the figures of sample *s (value in wl's unit, IOPS, MB/s, I/O count, p50, p99 and
 * fsync p99 in µs, fio's kernel CPU per I/O in µs) from fio's result. CPU figures and the
 * wall time are left alone. */
void bench_json_fill_sample(const struct bench_fio_result *f, const struct bench_workload *wl,
                            struct bench_sample *s);

/* Fills sample *s from the n jobs of a gateway run (at most BENCH_JSON_MAX_JOBS are read),
 * each the group of one export's connections: IOPS, MB/s and I/Os summed over them, fio's
 * kernel CPU per I/O over them all, p50 and p99 the worst export's, the value in wl's unit;
 * and the least, the median and the most IOPS of one export (export_*_iops). CPU figures
 * and the wall time are left alone. */
void bench_json_fill_sample_exports(const struct bench_fio_result *jobs, size_t n,
                                    const struct bench_workload *wl, struct bench_sample *s);

/* The prefix of the marker lines the guest's task prints around and after its fio runs. */
#define BENCH_GUEST_MARK "@@DGB-"

/* Parses the output of the guest's task (as tests/guest/run-guest.sh prints it): for each of
 * the n workloads, the line "@@DGB-END <name> <status>" and the fio JSON between
 * "@@DGB-JSON <name>" and "@@DGB-JSON-END <name>". Fills the figures of out[i] (not the CPU
 * ones) and sets out[i].ok for each workload whose fio exited 0 with a usable result. Returns
 * the number of usable results. Pure; any thread. */
int bench_json_parse_guest_output(const char *text, const struct bench_workload *const *wls,
                                  size_t n, struct bench_sample *out);

#endif
