/* SPDX-License-Identifier: MIT */
/* bench_targets.c: the targets T1-T6 judged on a peers run's cells (see bench_targets.h). */
#include <assert.h>
#include <string.h>

#include "bench/bench_stats.h"
#include "bench/bench_targets.h"
#include "bench/bench_util.h"

/* Every cell some target reads: per configuration, its workloads, separated by spaces. T1
 * reads 4K random QD32 over one connection (Unix and TCP, with the host path submitting one
 * I/O at a time and in batches), T2 the same over four, T3 1M sequential, T4 fsynced 4K
 * writes, T5 QD1 reads, T6 16 x 64 in flight. */
static const struct {
  const char *config, *workloads;
} used[] = {
  { "host", "randread-4k randwrite-4k randread-4k-4j randwrite-4k-4j read-1m write-1m "
            "randwrite-4k-qd8-fsync-4j randread-4k-qd1" },
  { "host-batched", "randread-4k randwrite-4k" },
  { "host-buffered", "randwrite-4k-qd8-fsync-4j" },
  { "diskgate-unix-direct-full", "randread-4k randwrite-4k randread-4k-4j randwrite-4k-4j "
                                 "read-1m write-1m randread-4k-qd1 randrw-4k-16x64" },
  { "diskgate-unix-writeback-full", "randread-4k-4j randwrite-4k-4j randwrite-4k-qd8-fsync-4j" },
  { "diskgate-tcp-direct-full", "randread-4k randwrite-4k" },
  { "qemu-nbd-unix", "randread-4k randwrite-4k randread-4k-4j randwrite-4k-4j randread-4k-qd1" },
  { "qemu-nbd-tcp", "randread-4k randwrite-4k" },
  { "nbdkit-unix", "randread-4k-4j randwrite-4k-4j randwrite-4k-qd8-fsync-4j" },
};

static const char *const verdict_names[] = {
  [BENCH_VERDICT_PASS] = "PASS",
  [BENCH_VERDICT_FAIL] = "FAIL",
  [BENCH_VERDICT_LIMIT] = "FAIL (limit)",
  [BENCH_VERDICT_MISSING] = "not measured",
};

const char *bench_targets_verdict_name(enum bench_verdict v)
{
  assert((size_t)v < sizeof(verdict_names) / sizeof(verdict_names[0]));
  return verdict_names[v];
}

enum bench_verdict bench_targets_verdict(bool ok, bool reachable)
{
  if (ok) {
    return BENCH_VERDICT_PASS;
  }
  return reachable ? BENCH_VERDICT_FAIL : BENCH_VERDICT_LIMIT;
}

bool bench_targets_uses(const char *config, const char *workload)
{
  size_t len = strlen(workload);

  for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++) {
    if (strcmp(used[i].config, config) != 0) {
      continue;
    }
    for (const char *p = strstr(used[i].workloads, workload); p != NULL && len > 0;
         p = strstr(p + 1, workload)) {
      bool starts = p == used[i].workloads || p[-1] == ' ';

      if (starts && (p[len] == ' ' || p[len] == '\0')) {
        return true;
      }
    }
  }
  return false;
}

bool bench_targets_cell_figures(const struct bench_results *r, const char *config,
                                const char *workload, struct bench_figures *f)
{
  memset(f, 0, sizeof(*f));
  for (size_t c = 0; c < r->nconfigs; c++) {
    for (size_t w = 0; w < r->nworkloads; w++) {
      if (strcmp(r->configs[c]->name, config) == 0 &&
          strcmp(r->workloads[w]->name, workload) == 0) {
        bench_targets_figures(&r->cells[c * r->nworkloads + w], f);
        return f->ok;
      }
    }
  }
  return false;
}

void bench_targets_figures(const struct bench_cell *cell, struct bench_figures *f)
{
  double v[11][BENCH_MAX_RUNS];
  size_t n = 0;

  memset(f, 0, sizeof(*f));
  for (size_t i = 0; i < cell->nruns && i < BENCH_MAX_RUNS; i++) {
    const struct bench_sample *s = &cell->runs[i];

    if (!s->ok) {
      continue;
    }
    v[0][n] = s->iops;
    v[1][n] = s->mbps;
    v[2][n] = s->p50_us;
    v[3][n] = s->ios > 0 ? s->cpu_server_s * 1e6 / s->ios : 0.0;
    v[4][n] = s->client_sys_us;
    v[5][n] = s->rss_max_kib / 1024.0;
    v[6][n] = s->rss_growth_kib / 1024.0;
    v[7][n] = s->hwm_kib / 1024.0;
    v[8][n] = s->export_min_iops;
    v[9][n] = s->export_median_iops;
    v[10][n] = s->export_max_iops;
    n++;
  }
  f->ok = n > 0;
  f->iops = bench_stats_median(v[0], n);
  f->mbps = bench_stats_median(v[1], n);
  f->p50_us = bench_stats_median(v[2], n);
  f->cpu_us = bench_stats_median(v[3], n);
  f->sys_us = bench_stats_median(v[4], n);
  f->rss_mib = bench_stats_median(v[5], n);
  f->growth_mib = bench_stats_median(v[6], n);
  f->hwm_mib = bench_stats_median(v[7], n);
  f->export_min = bench_stats_median(v[8], n);
  f->export_median = bench_stats_median(v[9], n);
  f->export_max = bench_stats_median(v[10], n);
}

/* a / b, where a peer's or the host's figure of 0 (it completed nothing) fails no division */
static double per(double a, double b)
{
  return a / (b > 1e-9 ? b : 1e-9);
}

static void row_set(struct bench_target_row *row, const char *target, const char *what,
                    double ratio, const char *limit, enum bench_verdict verdict)
{
  memset(row, 0, sizeof(*row));
  row->target = target;
  bench_fmt(row->what, sizeof(row->what), "%s", what);
  bench_fmt(row->value, sizeof(row->value), "%.2fx", ratio);
  bench_fmt(row->limit, sizeof(row->limit), "%s", limit);
  row->verdict = verdict;
}

void bench_targets_t1_iops(const char *what, const struct bench_figures *d,
                           const struct bench_figures *q, const struct bench_figures *hst,
                           const struct bench_figures *hstb, struct bench_target_row *row)
{
  double ratio = per(d->iops, q->iops);
  double best = hst->iops > hstb->iops ? hst->iops : hstb->iops;
  double bound = per(best, q->iops);
  char text[128];

  bench_fmt(text, sizeof(text), "%s: IOPS vs qemu-nbd >= 2x", what);
  row_set(row, "T1", text, ratio, ">= 2x", bench_targets_verdict(ratio >= 2.0, bound >= 2.0));
  bench_fmt(row->detail, sizeof(row->detail), "%.0f vs %.0f (host direct %.0f: at most %.2fx)",
            d->iops, q->iops, best, bound);
}

void bench_targets_t1_cpu(const char *what, const struct bench_figures *d,
                          const struct bench_figures *q, const struct bench_figures *hst,
                          const struct bench_figures *hstb, struct bench_target_row *row)
{
  double ratio = per(d->cpu_us, q->cpu_us);
  double goal = q->cpu_us / 3.0;
  double floor = hst->sys_us < hstb->sys_us ? hst->sys_us : hstb->sys_us;
  char text[128];

  bench_fmt(text, sizeof(text), "%s: CPU/IO vs qemu-nbd <= 1/3", what);
  /* d <= q / 3 written as 3d <= q: a ratio of exactly a third passes */
  row_set(row, "T1", text, ratio, "<= 0.33x",
          bench_targets_verdict(3.0 * d->cpu_us <= q->cpu_us, floor <= goal));
  bench_fmt(row->detail, sizeof(row->detail),
            "%.1f vs %.1f us (goal %.1f; host direct: %.1f us kernel CPU per I/O for the disk "
            "alone, %.1f us when submitted in batches)",
            d->cpu_us, q->cpu_us, goal, hst->sys_us, hstb->sys_us);
}

void bench_targets_t4(const struct bench_figures *d, const struct bench_figures *k,
                      const struct bench_figures *hst, const struct bench_figures *hstd,
                      struct bench_target_row *row)
{
  double ratio = per(d->iops, k->iops);

  row_set(row, "T4", "4K randwrite QD8 fsync=1 4 jobs --sync full, page cache: IOPS vs nbdkit "
          ">= 2x", ratio, ">= 2x", bench_targets_verdict(d->iops >= 2.0 * k->iops, true));
  bench_fmt(row->detail, sizeof(row->detail),
            "%.0f vs %.0f (host, fdatasync per write: %.0f page cache, %.0f direct = %.2fx "
            "nbdkit)", d->iops, k->iops, hst->iops, hstd->iops, per(hstd->iops, k->iops));
}

void bench_targets_t5(const struct bench_figures *d, const struct bench_figures *q,
                      const struct bench_figures *hst, struct bench_target_row *row)
{
  double best = per(hst->p50_us, q->p50_us);

  row_set(row, "T5", "4K randread QD1: p50 latency vs qemu-nbd <= 0.6x", per(d->p50_us, q->p50_us),
          "<= 0.6x", bench_targets_verdict(d->p50_us <= 0.6 * q->p50_us, best <= 0.6));
  bench_fmt(row->detail, sizeof(row->detail),
            "%.0f vs %.0f us (host direct %.0f us: at best %.2fx)", d->p50_us, q->p50_us,
            hst->p50_us, best);
}

/* T2's two rows for one direction: diskgate direct (d) against qemu-nbd (q), bounded by the
 * host path (hst); diskgate writeback (dw) against nbdkit (k), both through the page cache. */
static void t2_rows(const char *rw, const struct bench_figures *d, const struct bench_figures *q,
                    const struct bench_figures *dw, const struct bench_figures *k,
                    const struct bench_figures *hst, struct bench_target_row *rows)
{
  double bound = per(hst->iops, q->iops);
  char text[128];

  bench_fmt(text, sizeof(text), "4K %s QD32 4 conns: IOPS vs qemu-nbd >= 2x", rw);
  row_set(&rows[0], "T2", text, per(d->iops, q->iops), ">= 2x",
          bench_targets_verdict(d->iops >= 2.0 * q->iops, bound >= 2.0));
  bench_fmt(rows[0].detail, sizeof(rows[0].detail),
            "%.0f vs %.0f (host direct 4 jobs %.0f: at most %.2fx)", d->iops, q->iops, hst->iops,
            bound);
  bench_fmt(text, sizeof(text), "4K %s QD32 4 conns, page cache: IOPS vs nbdkit >= 1.5x", rw);
  row_set(&rows[1], "T2", text, per(dw->iops, k->iops), ">= 1.5x",
          bench_targets_verdict(dw->iops >= 1.5 * k->iops, true));
  bench_fmt(rows[1].detail, sizeof(rows[1].detail), "%.0f vs %.0f", dw->iops, k->iops);
}

/* T3's row for one direction: MB/s at least 95% of the host path's. */
static void t3_row(const char *rw, const struct bench_figures *d, const struct bench_figures *hst,
                   struct bench_target_row *row)
{
  char text[128];

  bench_fmt(text, sizeof(text), "1M sequential %s QD4: MB/s vs host direct >= 95%%", rw);
  row_set(row, "T3", text, 0, ">= 95%", bench_targets_verdict(d->mbps >= 0.95 * hst->mbps, true));
  bench_fmt(row->value, sizeof(row->value), "%.1f%%", 100.0 * per(d->mbps, hst->mbps));
  bench_fmt(row->detail, sizeof(row->detail), "%.0f vs %.0f MB/s", d->mbps, hst->mbps);
}

/* T6's two rows: resident memory under 16 x 64 requests in flight, and its growth. */
static void t6_rows(const struct bench_figures *d, struct bench_target_row *rows)
{
  row_set(&rows[0], "T6", "RSS with 16 conns x 64 x 4K in flight <= 64 MiB", 0, "<= 64 MiB",
          bench_targets_verdict(d->rss_mib <= 64.0, true));
  bench_fmt(rows[0].value, sizeof(rows[0].value), "%.0f MiB", d->rss_mib);
  row_set(&rows[1], "T6", "no RSS growth under load (last 3/4 of the run)", 0, "<= +2 MiB",
          bench_targets_verdict(d->growth_mib <= 2.0, true));
  bench_fmt(rows[1].value, sizeof(rows[1].value), "%+.1f MiB", d->growth_mib);
  for (size_t i = 0; i < 2; i++) {
    bench_fmt(rows[i].detail, sizeof(rows[i].detail),
              "diskgate's VmRSS sampled 4 times a second during the run");
  }
}

/* The figures of cell (config, workload), which some target must use; false when the cell
 * was not selected or has no successful run. */
static bool fig(const struct bench_results *r, const char *config, const char *workload,
                struct bench_figures *f)
{
  assert(bench_targets_uses(config, workload));
  return bench_targets_cell_figures(r, config, workload, f);
}

/* Marks `n` rows of `target` as not measured, naming what they would have measured. */
static void missing(struct bench_target_row *rows, size_t n, const char *target, const char *what)
{
  for (size_t i = 0; i < n; i++) {
    memset(&rows[i], 0, sizeof(rows[i]));
    rows[i].target = target;
    bench_fmt(rows[i].what, sizeof(rows[i].what), "%s", what);
    bench_fmt(rows[i].value, sizeof(rows[i].value), "-");
    bench_fmt(rows[i].limit, sizeof(rows[i].limit), "-");
    rows[i].verdict = BENCH_VERDICT_MISSING;
    bench_fmt(rows[i].detail, sizeof(rows[i].detail), "a cell it needs was not run or failed");
  }
}

/* T1's four rows: IOPS and CPU per I/O, reads and writes, over one transport. */
static size_t t1_eval(const struct bench_results *r, const char *tr, struct bench_target_row *rows)
{
  static const char *const rws[] = { "randread", "randwrite" };
  size_t n = 0;

  for (size_t i = 0; i < 2; i++) {
    struct bench_figures d, q, hst, hstb;
    char dg[64], qn[64], wl[32], what[96];
    bool ok;

    bench_fmt(dg, sizeof(dg), "diskgate-%s-direct-full", tr);
    bench_fmt(qn, sizeof(qn), "qemu-nbd-%s", tr);
    bench_fmt(wl, sizeof(wl), "%s-4k", rws[i]);
    bench_fmt(what, sizeof(what), "4K %s QD32 1 conn %s", rws[i], tr);
    ok = fig(r, dg, wl, &d) & fig(r, qn, wl, &q) & fig(r, "host", wl, &hst) &
         fig(r, "host-batched", wl, &hstb);
    if (!ok) {
      missing(&rows[n], 2, "T1", what);
    } else {
      bench_targets_t1_iops(what, &d, &q, &hst, &hstb, &rows[n]);
      bench_targets_t1_cpu(what, &d, &q, &hst, &hstb, &rows[n + 1]);
    }
    n += 2;
  }
  return n;
}

/* T2 to T6's rows, after T1's. */
static size_t t2_t6_eval(const struct bench_results *r, struct bench_target_row *rows)
{
  static const char *const rws[] = { "randread", "randwrite" };
  static const char *const seq[] = { "read", "write" };
  struct bench_figures d, q, dw, k, hst, hstd;
  size_t n = 0;

  for (size_t i = 0; i < 2; i++, n += 2) {
    char wl[32];

    char what[64];

    bench_fmt(wl, sizeof(wl), "%s-4k-4j", rws[i]);
    bench_fmt(what, sizeof(what), "4K %s QD32 4 conns", rws[i]);
    if (fig(r, "diskgate-unix-direct-full", wl, &d) & fig(r, "qemu-nbd-unix", wl, &q) &
        fig(r, "diskgate-unix-writeback-full", wl, &dw) & fig(r, "nbdkit-unix", wl, &k) &
        fig(r, "host", wl, &hst)) {
      t2_rows(rws[i], &d, &q, &dw, &k, &hst, &rows[n]);
    } else {
      missing(&rows[n], 2, "T2", what);
    }
  }
  for (size_t i = 0; i < 2; i++, n++) {
    char wl[32];

    bench_fmt(wl, sizeof(wl), "%s-1m", seq[i]);
    if (fig(r, "diskgate-unix-direct-full", wl, &d) & fig(r, "host", wl, &hst)) {
      t3_row(seq[i], &d, &hst, &rows[n]);
    } else {
      missing(&rows[n], 1, "T3", i == 0 ? "1M sequential read QD4" : "1M sequential write QD4");
    }
  }
  if (fig(r, "diskgate-unix-writeback-full", "randwrite-4k-qd8-fsync-4j", &d) &
      fig(r, "nbdkit-unix", "randwrite-4k-qd8-fsync-4j", &k) &
      fig(r, "host-buffered", "randwrite-4k-qd8-fsync-4j", &hst) &
      fig(r, "host", "randwrite-4k-qd8-fsync-4j", &hstd)) {
    bench_targets_t4(&d, &k, &hst, &hstd, &rows[n++]);
  } else {
    missing(&rows[n++], 1, "T4", "4K randwrite QD8 fsync=1 4 jobs");
  }
  if (fig(r, "diskgate-unix-direct-full", "randread-4k-qd1", &d) &
      fig(r, "qemu-nbd-unix", "randread-4k-qd1", &q) & fig(r, "host", "randread-4k-qd1", &hst)) {
    bench_targets_t5(&d, &q, &hst, &rows[n++]);
  } else {
    missing(&rows[n++], 1, "T5", "4K randread QD1");
  }
  if (fig(r, "diskgate-unix-direct-full", "randrw-4k-16x64", &d)) {
    t6_rows(&d, &rows[n]);
  } else {
    missing(&rows[n], 2, "T6", "resident memory, 16 conns x 64 x 4K");
  }
  return n + 2;
}

size_t bench_targets_eval(const struct bench_results *r, struct bench_target_row *rows,
                          size_t max)
{
  size_t n = 0;

  assert(max >= 18);
  if (max < 18) {
    return 0;
  }
  n += t1_eval(r, "unix", &rows[n]);
  n += t1_eval(r, "tcp", &rows[n]);
  n += t2_t6_eval(r, &rows[n]);
  return n;
}
