/* SPDX-License-Identifier: MIT */
/* bench_fio.c: fio job generation and fio runs. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_fio.h"
#include "bench/bench_json.h"
#include "bench/bench_proc.h"
#include "bench/bench_util.h"

/* Writes the job's shape: what it does (rw, bs, iodepth, mix), how it submits, its syncs. */
static void write_job_shape(FILE *f, const struct bench_workload *wl,
                            const struct bench_fio_target *t)
{
  fprintf(f, "rw=%s\n", wl->rw);
  fprintf(f, "bs=%u\n", wl->bs);
  fprintf(f, "iodepth=%u\n", wl->iodepth);
  if (wl->rwmixread > 0) {
    fprintf(f, "rwmixread=%u\n", wl->rwmixread);
  }
  if (t->batched) {
    fprintf(f, "iodepth_batch_submit=%u\n", wl->iodepth);
    fprintf(f, "iodepth_batch_complete_min=%u\n", wl->iodepth > 1 ? wl->iodepth / 2 : 1);
    fprintf(f, "iodepth_batch_complete_max=%u\n", wl->iodepth);
  }
  if (wl->fsync) {
    /* fsync=1 on a file is a full fsync(2); a server answers a FLUSH with fdatasync */
    fprintf(f, "%s=1\n", strcmp(t->ioengine, "nbd") == 0 ? "fsync" : "fdatasync");
  }
}

int bench_fio_write_job(FILE *f, const struct bench_workload *wl, const struct bench_fio_target *t,
                        unsigned runtime_s, double ramp_s)
{
  if (wl->kind != BENCH_WL_FIO) {
    return -EINVAL;
  }
  fprintf(f, "# diskgate bench: %s (%s)\n", wl->name, wl->title);
  fprintf(f, "[global]\n");
  fprintf(f, "ioengine=%s\n", t->ioengine);
  if (t->uri != NULL && t->nuris == 0) {
    fprintf(f, "uri=%s\n", t->uri);
  }
  if (t->filename != NULL) {
    /* fio splits filename= at ':' (several files); "\\:" is a colon in the name */
    fputs("filename=", f);
    for (const char *c = t->filename; *c != '\0'; c++) {
      if (*c == ':') {
        fputc('\\', f);
      }
      fputc(*c, f);
    }
    fputc('\n', f);
  }
  fprintf(f, "size=%llu\n", (unsigned long long)t->size);
  fprintf(f, "direct=%d\n", t->buffered ? 0 : 1);
  fprintf(f, "thread=1\n");
  fprintf(f, "time_based=1\n");
  fprintf(f, "runtime=%u\n", runtime_s);
  fprintf(f, "ramp_time=%ums\n", (unsigned)(ramp_s * 1000.0 + 0.5));
  fprintf(f, "group_reporting=1\n");
  fprintf(f, "randrepeat=0\n");
  fprintf(f, "norandommap=1\n");
  fprintf(f, "random_generator=tausworthe64\n");
  fprintf(f, "percentile_list=50:90:99:99.9\n");
  if (t->nuris > 0) {
    /* one section and one group per export: fio reports each export's connections as one */
    write_job_shape(f, wl, t);
    for (size_t i = 0; i < t->nuris; i++) {
      fprintf(f, "\n[%s-%03zu]\n", wl->name, i);
      fprintf(f, "new_group=1\n");
      fprintf(f, "uri=%s\n", t->uris[i]);
      if (wl->numjobs > 1) {
        fprintf(f, "numjobs=%u\n", wl->numjobs);
      }
    }
    return ferror(f) ? -EIO : 0;
  }
  fprintf(f, "\n[%s]\n", wl->name);
  if (wl->numjobs > 1) {
    fprintf(f, "numjobs=%u\n", wl->numjobs);
  }
  write_job_shape(f, wl, t);
  return ferror(f) ? -EIO : 0;
}

/* Appends a header line to fio's log before a run. */
static void log_header(const char *log, const char *tag)
{
  FILE *f = fopen(log, "a");

  if (f != NULL) {
    fprintf(f, "=== %s\n", tag);
    fclose(f);
  }
}

/* The servers' summed VmRSS over a run, in KiB: sampled every 0.25 s. */
struct rss_watch {
  double next;    /* when the next sample is due (bench_proc_now) */
  double at;      /* when the growth's first sample is due */
  double max, quarter, last;
};

/* Sets *kib to the sum over the n servers of get(pid) (KiB). Returns 0, or the first
 * failure's -errno (a sum missing a server is no sample). */
static int servers_kib(const pid_t *servers, size_t n, int (*get)(pid_t, double *),
                       double *kib)
{
  *kib = 0;
  for (size_t i = 0; i < n; i++) {
    double one;
    int rc = get(servers[i], &one);

    if (rc < 0) {
      return rc;
    }
    *kib += one;
  }
  return 0;
}

/* The servers' summed CPU time (bench_proc_cpu), seconds; an unreadable one counts 0. */
static double servers_cpu(const pid_t *servers, size_t n)
{
  double sum = 0;

  for (size_t i = 0; i < n; i++) {
    double one = 0;

    bench_proc_cpu(servers[i], &one);
    sum += one;
  }
  return sum;
}

/* Starts the watch (quarter_at > 0: when its growth's first sample is due) or samples when
 * a sample is due. Nothing without a server. */
static void rss_watch(struct rss_watch *w, const pid_t *servers, size_t n, double quarter_at)
{
  double now = bench_proc_now(), kib;

  if (quarter_at > 0) {
    memset(w, 0, sizeof(*w));
    w->at = quarter_at;
  }
  if (n == 0 || now < w->next || servers_kib(servers, n, bench_proc_rss_kib, &kib) < 0) {
    return;
  }
  w->next = now + 0.25;
  w->max = kib > w->max ? kib : w->max;
  w->last = kib;
  if (w->quarter == 0 && now >= w->at) {
    w->quarter = kib;
  }
}

/* Fills *s from the fio output `json` of a run over many exports, one group each
 * (bench_json_fill_sample_exports). Returns 0, the parser's -errno, or a job's error as
 * -errno. */
static int read_exports(const char *json, const struct bench_workload *wl,
                        struct bench_sample *s)
{
  static struct bench_fio_result jobs[BENCH_JSON_MAX_JOBS];
  size_t n;
  int rc = bench_json_parse_fio_jobs_file(json, jobs, BENCH_JSON_MAX_JOBS, &n);

  if (rc < 0) {
    return rc;
  }
  for (size_t i = 0; i < n; i++) {
    if (jobs[i].error != 0) {
      return -jobs[i].error;
    }
  }
  bench_json_fill_sample_exports(jobs, n, wl, s);
  return 0;
}

/* Sleeps until `until` (CLOCK_MONOTONIC seconds) or until child pid exits. */
static void sleep_until(double until, pid_t pid)
{
  while (bench_proc_now() < until && !bench_proc_exited(pid)) {
    usleep(10000);
  }
}

int bench_fio_run(const struct bench_env *env, const struct bench_workload *wl,
                  const struct bench_fio_target *t, const pid_t *servers, size_t nservers,
                  const char *tag, struct bench_sample *s)
{
  const struct bench_opts *o = env->opts;
  char job[PATH_MAX], name[200], json[PATH_MAX], log[PATH_MAX], output[PATH_MAX + 16];
  char *argv[] = { "fio", "--output-format=json", output, job, NULL };
  double cpu_fio0 = 0, cpu_srv0 = 0, cpu_fio1 = 0, cpu_srv1 = 0, t0;
  struct bench_fio_result res;
  struct rss_watch rss;
  FILE *f;
  pid_t pid;
  int rc, st = 0;

  memset(s, 0, sizeof(*s));
  bench_fmt(name, sizeof(name), "%s.fio", tag);
  bench_env_work_path(env, name, job, sizeof(job));
  bench_fmt(name, sizeof(name), "%s.json", tag);
  bench_env_out_path(env, "raw", name, json, sizeof(json));
  bench_fmt(s->raw, sizeof(s->raw), "raw/%s", name);
  bench_env_out_path(env, "logs", "fio.log", log, sizeof(log));
  bench_fmt(output, sizeof(output), "--output=%s", json);
  f = fopen(job, "w");
  if (f == NULL) {
    return -errno;
  }
  rc = bench_fio_write_job(f, wl, t, o->runtime_s, o->ramp_s);
  if (fclose(f) != 0 && rc == 0) {
    rc = -EIO;
  }
  if (rc < 0) {
    return rc;
  }
  log_header(log, tag);
  t0 = bench_proc_now();
  rc = bench_proc_spawn(argv, log, -1, &pid);
  if (rc < 0) {
    return rc;
  }
  /* the measured window starts when the ramp ends */
  sleep_until(t0 + o->ramp_s + 0.05, pid);
  bench_proc_cpu(pid, &cpu_fio0);
  cpu_srv0 = servers_cpu(servers, nservers);
  /* fio stops by itself after the runtime; give it two minutes more, then kill it */
  rss_watch(&rss, servers, nservers, t0 + o->ramp_s + o->runtime_s / 4.0);
  while (!bench_proc_exited(pid) && !bench_proc_interrupted() &&
         bench_proc_now() < t0 + o->ramp_s + o->runtime_s + 120.0) {
    usleep(20000);
    rss_watch(&rss, servers, nservers, 0);
  }
  s->rss_max_kib = rss.max;
  s->rss_growth_kib = rss.quarter > 0 ? rss.last - rss.quarter : 0;
  if (servers_kib(servers, nservers, bench_proc_hwm_kib, &s->hwm_kib) < 0) {
    s->hwm_kib = 0; /* unreadable */
  }
  if (bench_proc_interrupted()) {
    kill(pid, SIGINT);
  }
  rc = bench_proc_wait(pid, 10.0, &st, &cpu_fio1);
  cpu_srv1 = servers_cpu(servers, nservers);
  s->seconds = bench_proc_now() - t0;
  if (rc < 0) {
    return rc;
  }
  if (bench_proc_interrupted()) {
    return -EINTR;
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "diskgate bench: fio failed for %s (see %s)\n", tag, log);
    return -EIO;
  }
  rc = t->nuris > 0 ? read_exports(json, wl, s) : bench_json_parse_fio_file(json, wl->name, &res);
  if (rc < 0 || (t->nuris == 0 && res.error != 0)) {
    fprintf(stderr, "diskgate bench: fio's output for %s is unusable (%s)\n", tag,
            strerror(rc < 0 ? -rc : res.error));
    return -EIO;
  }
  if (t->nuris == 0) {
    bench_json_fill_sample(&res, wl, s);
  }
  s->cpu_client_s = cpu_fio1 - cpu_fio0;
  s->cpu_server_s = cpu_srv1 - cpu_srv0;
  s->cpu_per_kio = s->ios > 0 ? (s->cpu_client_s + s->cpu_server_s) / (s->ios / 1000.0) : 0.0;
  s->ok = s->value > 0;
  return s->ok ? 0 : -EIO;
}
