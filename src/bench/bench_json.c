/* SPDX-License-Identifier: MIT */
/* bench_json.c: fio's JSON output, parsed with cJSON. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_json.h"
#include "bench/bench_stats.h"
#include "bench/bench_util.h"

#define MARK BENCH_GUEST_MARK

/* Returns the number `name` of object `obj`, or 0 when absent or not a number. */
static double json_number(const cJSON *obj, const char *name)
{
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);

  if (cJSON_IsNumber(item)) {
    return item->valuedouble;
  }
  return 0.0;
}

/* Returns percentile p of a fio latency object ({"percentile": {"99.000000": N}}), 0 when
 * fio did not report it. */
static double json_pct(const cJSON *lat, double p)
{
  const cJSON *pct = cJSON_GetObjectItemCaseSensitive(lat, "percentile");
  const cJSON *item;

  cJSON_ArrayForEach(item, pct) {
    if (item->string != NULL && strtod(item->string, NULL) == p && cJSON_IsNumber(item)) {
      return item->valuedouble;
    }
  }
  return 0.0;
}

static double json_p99(const cJSON *lat)
{
  return json_pct(lat, 99.0);
}

static void json_dir(const cJSON *job, const char *dir, double *iops, double *bw, double *ios,
                     double *p99, double *p50)
{
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(job, dir);

  *iops = json_number(d, "iops");
  *bw = json_number(d, "bw_bytes");
  *ios = json_number(d, "total_ios");
  *p99 = json_p99(cJSON_GetObjectItemCaseSensitive(d, "clat_ns"));
  *p50 = json_pct(cJSON_GetObjectItemCaseSensitive(d, "clat_ns"), 50.0);
}

/* Returns the start of the JSON object: the first '{' that begins a line. */
static const char *json_start(const char *text, size_t len)
{
  for (size_t i = 0; i < len; i++) {
    if (text[i] == '{' && (i == 0 || text[i - 1] == '\n')) {
      return text + i;
    }
  }
  return NULL;
}

/* Fills *out with the figures of fio job object `job`. */
static void job_fill(const cJSON *job, struct bench_fio_result *out)
{
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(job, "jobname");
  const cJSON *sync;

  memset(out, 0, sizeof(*out));
  if (cJSON_IsString(name)) {
    bench_fmt(out->jobname, sizeof(out->jobname), "%s", name->valuestring);
  }
  out->error = (int)json_number(job, "error");
  out->runtime_ms = json_number(job, "job_runtime");
  out->sys_cpu_pct = json_number(job, "sys_cpu");
  json_dir(job, "read", &out->read_iops, &out->read_bw, &out->read_ios, &out->read_p99_ns,
           &out->read_p50_ns);
  json_dir(job, "write", &out->write_iops, &out->write_bw, &out->write_ios,
           &out->write_p99_ns, &out->write_p50_ns);
  sync = cJSON_GetObjectItemCaseSensitive(job, "sync");
  out->sync_ios = json_number(sync, "total_ios");
  out->sync_p99_ns = json_p99(cJSON_GetObjectItemCaseSensitive(sync, "lat_ns"));
}

/* Parses the fio JSON object in text[0..len) (after any lines that precede it) and returns
 * it with *jobs set to its "jobs" array, or NULL when there is no such object. */
static cJSON *jobs_parse(const char *text, size_t len, const cJSON **jobs)
{
  const char *start = json_start(text, len);
  cJSON *root;

  if (start == NULL) {
    return NULL;
  }
  root = cJSON_ParseWithLengthOpts(start, len - (size_t)(start - text), NULL, false);
  if (root == NULL) {
    return NULL;
  }
  *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
  if (!cJSON_IsArray(*jobs)) {
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

int bench_json_parse_fio(const char *text, size_t len, const char *jobname,
                         struct bench_fio_result *out)
{
  const cJSON *jobs = NULL, *job;
  cJSON *root = jobs_parse(text, len, &jobs);

  memset(out, 0, sizeof(*out));
  if (root == NULL) {
    return -EINVAL;
  }
  cJSON_ArrayForEach(job, jobs) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(job, "jobname");

    if (jobname == NULL || (cJSON_IsString(name) && strcmp(name->valuestring, jobname) == 0)) {
      job_fill(job, out);
      cJSON_Delete(root);
      return 0;
    }
  }
  cJSON_Delete(root);
  return -ENOENT;
}

int bench_json_parse_fio_jobs(const char *text, size_t len, struct bench_fio_result *out,
                              size_t max, size_t *n)
{
  const cJSON *jobs = NULL, *job;
  cJSON *root = jobs_parse(text, len, &jobs);
  int rc = 0;

  *n = 0;
  if (root == NULL) {
    return -EINVAL;
  }
  cJSON_ArrayForEach(job, jobs) {
    if (*n == max) {
      rc = -E2BIG;
      break;
    }
    job_fill(job, &out[(*n)++]);
  }
  cJSON_Delete(root);
  return rc == 0 && *n == 0 ? -EINVAL : rc;
}

/* Reads the whole file at `path` into a malloc'ed *buf of *len bytes. Returns 0 or -errno. */
static int read_whole(const char *path, char **buf, size_t *len)
{
  FILE *f = fopen(path, "rb");
  size_t cap = 0;
  int rc;

  *buf = NULL;
  *len = 0;
  if (f == NULL) {
    return -errno;
  }
  for (;;) {
    size_t got;

    if (cap - *len < 4096) {
      size_t ncap = cap == 0 ? 65536 : cap * 2;
      char *nbuf = realloc(*buf, ncap);

      if (nbuf == NULL) {
        free(*buf);
        *buf = NULL;
        fclose(f);
        return -ENOMEM;
      }
      *buf = nbuf;
      cap = ncap;
    }
    got = fread(*buf + *len, 1, cap - *len, f);
    *len += got;
    if (got == 0) {
      break;
    }
  }
  rc = ferror(f) ? -EIO : 0;
  fclose(f);
  if (rc < 0) {
    free(*buf);
    *buf = NULL;
  }
  return rc;
}

int bench_json_parse_fio_file(const char *path, const char *jobname, struct bench_fio_result *out)
{
  char *buf;
  size_t len;
  int rc = read_whole(path, &buf, &len);

  memset(out, 0, sizeof(*out));
  if (rc == 0) {
    rc = bench_json_parse_fio(buf, len, jobname, out);
  }
  free(buf);
  return rc;
}

int bench_json_parse_fio_jobs_file(const char *path, struct bench_fio_result *out, size_t max,
                                   size_t *n)
{
  char *buf;
  size_t len;
  int rc = read_whole(path, &buf, &len);

  *n = 0;
  if (rc == 0) {
    rc = bench_json_parse_fio_jobs(buf, len, out, max, n);
  }
  free(buf);
  return rc;
}

void bench_json_fill_sample(const struct bench_fio_result *f, const struct bench_workload *wl,
                            struct bench_sample *s)
{
  s->iops = f->read_iops + f->write_iops;
  s->mbps = (f->read_bw + f->write_bw) / 1e6;
  s->ios = f->read_ios + f->write_ios;
  s->p99_us = (f->read_p99_ns > f->write_p99_ns ? f->read_p99_ns : f->write_p99_ns) / 1e3;
  s->fsync_p99_us = f->sync_p99_ns / 1e3;
  s->p50_us = (f->read_p50_ns > f->write_p50_ns ? f->read_p50_ns : f->write_p50_ns) / 1e3;
  /* sys_cpu is a percentage of job_runtime (ms): kernel CPU-µs, per I/O */
  s->client_sys_us = s->ios > 0 ? f->sys_cpu_pct / 100.0 * f->runtime_ms * 1e3 / s->ios : 0.0;
  switch (wl->unit) {
  case BENCH_UNIT_IOPS:
    s->value = s->iops;
    break;
  case BENCH_UNIT_MBPS:
    s->value = s->mbps;
    break;
  case BENCH_UNIT_MIBPS:
    s->value = (f->read_bw + f->write_bw) / (1024.0 * 1024.0);
    break;
  }
}

void bench_json_fill_sample_exports(const struct bench_fio_result *jobs, size_t n,
                                    const struct bench_workload *wl, struct bench_sample *s)
{
  struct bench_fio_result sum;
  double iops[BENCH_JSON_MAX_JOBS];
  double kernel_ms = 0; /* fio's kernel CPU over every job, ms */

  memset(&sum, 0, sizeof(sum));
  n = n < BENCH_JSON_MAX_JOBS ? n : BENCH_JSON_MAX_JOBS;
  for (size_t i = 0; i < n; i++) {
    const struct bench_fio_result *j = &jobs[i];

    sum.read_iops += j->read_iops;
    sum.write_iops += j->write_iops;
    sum.read_bw += j->read_bw;
    sum.write_bw += j->write_bw;
    sum.read_ios += j->read_ios;
    sum.write_ios += j->write_ios;
    sum.sync_ios += j->sync_ios;
    sum.runtime_ms = j->runtime_ms > sum.runtime_ms ? j->runtime_ms : sum.runtime_ms;
    sum.read_p99_ns = j->read_p99_ns > sum.read_p99_ns ? j->read_p99_ns : sum.read_p99_ns;
    sum.write_p99_ns = j->write_p99_ns > sum.write_p99_ns ? j->write_p99_ns : sum.write_p99_ns;
    sum.read_p50_ns = j->read_p50_ns > sum.read_p50_ns ? j->read_p50_ns : sum.read_p50_ns;
    sum.write_p50_ns = j->write_p50_ns > sum.write_p50_ns ? j->write_p50_ns : sum.write_p50_ns;
    sum.sync_p99_ns = j->sync_p99_ns > sum.sync_p99_ns ? j->sync_p99_ns : sum.sync_p99_ns;
    kernel_ms += j->sys_cpu_pct / 100.0 * j->runtime_ms;
    iops[i] = j->read_iops + j->write_iops;
  }
  /* fill_sample reads sys_cpu as a share of runtime_ms: the sum's share of the longest */
  sum.sys_cpu_pct = sum.runtime_ms > 0 ? 100.0 * kernel_ms / sum.runtime_ms : 0.0;
  bench_json_fill_sample(&sum, wl, s);
  s->export_min_iops = n > 0 ? iops[0] : 0.0;
  s->export_max_iops = n > 0 ? iops[0] : 0.0;
  for (size_t i = 1; i < n; i++) {
    s->export_min_iops = iops[i] < s->export_min_iops ? iops[i] : s->export_min_iops;
    s->export_max_iops = iops[i] > s->export_max_iops ? iops[i] : s->export_max_iops;
  }
  s->export_median_iops = bench_stats_median(iops, n);
}

int bench_json_parse_guest_output(const char *text, const struct bench_workload *const *wls,
                                  size_t n, struct bench_sample *out)
{
  int ok = 0;

  for (size_t i = 0; i < n; i++) {
    const struct bench_workload *wl = wls[i];
    char begin[96], end[96], status[96];
    const char *b, *e;
    struct bench_fio_result res;

    out[i].ok = false;
    bench_fmt(begin, sizeof(begin), MARK "JSON %s\n", wl->name);
    bench_fmt(end, sizeof(end), MARK "JSON-END %s\n", wl->name);
    bench_fmt(status, sizeof(status), MARK "END %s 0\n", wl->name);
    b = strstr(text, begin);
    e = b != NULL ? strstr(b, end) : NULL;
    if (strstr(text, status) == NULL || b == NULL || e == NULL) {
      continue;
    }
    b += strlen(begin);
    if (bench_json_parse_fio(b, (size_t)(e - b), wl->name, &res) < 0 || res.error != 0) {
      continue;
    }
    bench_json_fill_sample(&res, wl, &out[i]);
    out[i].ok = out[i].value > 0;
    ok += out[i].ok ? 1 : 0;
  }
  return ok;
}
