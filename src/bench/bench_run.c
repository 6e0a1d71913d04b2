/* SPDX-License-Identifier: MIT */
/* bench_run.c: rounds over configurations and workloads, targets set up and torn down. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_asif.h"
#include "bench/bench_blockdev.h"
#include "bench/bench_configs.h"
#include "bench/bench_copy.h"
#include "bench/bench_fio.h"
#include "bench/bench_gateway.h"
#include "bench/bench_guest.h"
#include "bench/bench_proc.h"
#include "bench/bench_qcow2.h"
#include "bench/bench_rbd.h"
#include "bench/bench_report.h"
#include "bench/bench_run.h"
#include "bench/bench_server.h"
#include "bench/bench_targets.h"
#include "bench/bench_targets_gateway.h"
#include "bench/bench_targets_qcow2.h"
#include "bench/bench_variants.h"
#include "bench/bench_util.h"

/* Progress accounting. */
struct progress {
  size_t total;     /* runs planned */
  size_t done;      /* runs finished */
  double t0;
  double per_run;   /* a priori seconds per run, until runs have been timed */
};

/* One configuration's target, live for the cells of one round. */
struct target {
  struct bench_server srv;
  char loop[64];           /* loop device, "" if none */
  char uri[256];
  char drive[PATH_MAX + 96];
  const char *filename;    /* what fio opens (io_uring) */
  char image[PATH_MAX];    /* qcow2 and ASIF rows: the image the server opens, "" for others */
  const struct bench_config *cfg;
  uint64_t size;           /* bytes fio addresses */
  struct bench_gateway *gw; /* gateway rows: the servers of the exports, else NULL */
};

/* False for a cell of the peers, qcow2 or gateway profile that none of the profile's targets
 * reads; true otherwise. */
static bool profile_runs(const char *profile, const char *config, const char *workload)
{
  if (strcmp(profile, "peers") == 0) {
    return bench_targets_uses(config, workload);
  }
  if (strcmp(profile, "qcow2") == 0) {
    return bench_targets_qcow2_uses(config, workload);
  }
  if (strcmp(profile, "gateway") == 0) {
    return bench_targets_gateway_uses(config, workload);
  }
  return true;
}

void bench_run_plan(struct bench_results *r)
{
  for (size_t c = 0; c < r->nconfigs; c++) {
    for (size_t w = 0; w < r->nworkloads; w++) {
      struct bench_cell *cell = bench_results_cell(r, c, w);
      const char *why = NULL;

      cell->cfg = r->configs[c];
      cell->wl = r->workloads[w];
      if (cell->wl->kind == BENCH_WL_COPY && geteuid() != 0) {
        cell->state = BENCH_CELL_NA;
        bench_fmt(cell->note, sizeof(cell->note), "the copy test needs root (mkfs, mount)");
      } else if (!profile_runs(r->opts.profile, bench_variants_base(cell->cfg)->name,
                               cell->wl->name)) {
        cell->state = BENCH_CELL_NA; /* peers, qcow2, gateway: the targets' cells only */
        bench_fmt(cell->note, sizeof(cell->note), "no target reads this cell");
      } else if (bench_configs_applies(cell->cfg, cell->wl, &why)) {
        cell->state = BENCH_CELL_PENDING;
      } else {
        cell->state = BENCH_CELL_NA;
        bench_fmt(cell->note, sizeof(cell->note), "%s", why);
      }
    }
  }
}

static void progress_print(struct progress *p, const char *cfg, const char *wl, unsigned round,
                           unsigned runs)
{
  double elapsed = bench_proc_now() - p->t0;
  double per = p->done > 0 ? elapsed / (double)p->done : p->per_run;
  char el[32], rem[32];

  bench_report_fmt_duration(elapsed, el, sizeof(el));
  bench_report_fmt_duration(per * (double)(p->total - p->done), rem, sizeof(rem));
  fprintf(stderr, "[%zu/%zu] %s / %s, run %u/%u | elapsed %s, remaining ~%s\n", p->done + 1,
          p->total, cfg, wl, round + 1, runs, el, rem);
}

/* Records a failed run in the cell. */
static void run_failed(struct bench_cell *cell, unsigned round, const char *why)
{
  memset(&cell->runs[round], 0, sizeof(cell->runs[round]));
  if (cell->note[0] == '\0' && why != NULL) {
    bench_fmt(cell->note, sizeof(cell->note), "%s", why);
  }
}

static int target_up(struct bench_env *env, const struct bench_config *cfg, unsigned round,
                     struct target *t)
{
  char log[PATH_MAX], tag[96];
  int rc;

  memset(t, 0, sizeof(*t));
  t->filename = env->file;
  t->cfg = cfg;
  t->size = env->opts->size;
  bench_env_out_path(env, "logs", "blockdev.log", log, sizeof(log));
  bench_fmt(tag, sizeof(tag), "r%u-%s", round + 1, cfg->name);
  if (bench_configs_on_loop(cfg)) {
    rc = bench_blockdev_loop_attach(env->file, cfg->sector != 0 ? cfg->sector : 4096, true, log,
                                    t->loop, sizeof(t->loop));
    if (rc < 0) {
      fprintf(stderr, "diskgate bench: %s: cannot attach a loop device (see %s)\n", cfg->name,
              log);
      return rc;
    }
    t->filename = t->loop; /* what fio (host-dev) or QEMU (guest loop) opens */
  }
  if (bench_rbd_is_row(cfg) && !bench_rbd_ready(env)) {
    return -ENODEV;
  }
  if (cfg->kind == BENCH_CFG_QCOW2) {
    rc = bench_qcow2_image(env, cfg, t->image, sizeof(t->image));
    if (rc < 0) {
      t->image[0] = '\0';
      return rc;
    }
    t->size = bench_qcow2_size(cfg, env->opts->size);
  }
  if (cfg->kind == BENCH_CFG_ASIF) {
    rc = bench_asif_image(env, cfg, t->image, sizeof(t->image));
    if (rc < 0) {
      t->image[0] = '\0';
      return rc;
    }
  }
  if (cfg->kind == BENCH_CFG_GATEWAY) {
    t->size = bench_gateway_file_size(env->opts);
    return bench_gateway_up(env, cfg, tag, &t->gw);
  }
  if (cfg->server != BENCH_SERVER_NONE) {
    /* a diskgate row over a loop device exports the device, fio still talks NBD */
    rc = bench_server_start(env, cfg,
                            t->image[0] != '\0' ? t->image
                            : cfg->kind == BENCH_CFG_NBD && t->loop[0] != '\0' ? t->loop
                                                                               : env->file,
                            tag, &t->srv);
    if (rc < 0) {
      return rc;
    }
    bench_fmt(t->uri, sizeof(t->uri), "%s", t->srv.uri);
  }
  if (bench_rbd_is_row(cfg)) {
    /* diskgate opens the image at the first NBD_OPT_GO: not inside a measured run */
    rc = bench_rbd_warm(env, t->uri);
    if (rc < 0) {
      return rc;
    }
  }
  if (cfg->kind == BENCH_CFG_GUEST && cfg->backing != BENCH_GUEST_NBD &&
      cfg->backing != BENCH_GUEST_9P) {
    bench_fmt(t->drive, sizeof(t->drive), "file=%s,format=raw,aio=io_uring,%s", t->filename,
             cfg->qemu_cache != NULL ? cfg->qemu_cache : "cache=none");
  }
  return 0;
}

static int target_down(struct bench_env *env, struct target *t)
{
  char log[PATH_MAX];
  int rc = 0;

  bench_env_out_path(env, "logs", "blockdev.log", log, sizeof(log));
  if (bench_server_stop(&t->srv) < 0 || bench_gateway_down(t->gw) < 0) {
    rc = -EIO;
  }
  t->gw = NULL;
  if (t->loop[0] != '\0' && bench_blockdev_loop_detach(t->loop, log) < 0) {
    fprintf(stderr, "diskgate bench: cannot detach %s\n", t->loop);
    rc = -EIO;
  }
  t->loop[0] = '\0';
  if (t->cfg != NULL && t->image[0] != '\0') {
    bench_qcow2_release(t->cfg, t->image); /* after the server let go of it */
    t->image[0] = '\0';
  }
  return rc;
}

/* One copy run on a host-side configuration: find or make a block device for the target. */
static int copy_once(struct bench_env *env, const struct bench_config *cfg, struct target *t,
                     const char *tag, struct bench_sample *s)
{
  char log[PATH_MAX], mnt[PATH_MAX], dev[64];
  struct bench_fuse fuse;
  pid_t server = t->srv.pid;
  int rc, rc2;

  memset(&fuse, 0, sizeof(fuse));
  bench_env_out_path(env, "logs", "blockdev.log", log, sizeof(log));
  if (cfg->kind == BENCH_CFG_HOST_DEV) {
    return bench_copy_run(env, t->loop, 0, 0, tag, s);
  }
  if (cfg->kind == BENCH_CFG_NBD) {
    bench_fmt(mnt, sizeof(mnt), "%s/fuse-%s", env->work, tag);
    rc = bench_blockdev_fuse_start(t->uri, mnt, log, &fuse);
    if (rc < 0) {
      fprintf(stderr, "diskgate bench: nbdfuse on %s failed (see %s)\n", t->uri, log);
      return rc;
    }
    rc = bench_blockdev_loop_attach(fuse.file, 512, false, log, dev, sizeof(dev));
  } else {
    rc = bench_blockdev_loop_attach(env->file, 512, true, log, dev, sizeof(dev));
  }
  if (rc == 0) {
    rc = bench_copy_run(env, dev, server, fuse.pid, tag, s);
    rc2 = bench_blockdev_loop_detach(dev, log);
    rc = rc < 0 ? rc : rc2;
  }
  if (fuse.pid > 0) {
    rc2 = bench_blockdev_fuse_stop(&fuse, log);
    rc = rc < 0 ? rc : rc2;
  }
  return rc;
}

/* Host-side configuration: each workload of the round in turn. */
static int run_host_cells(struct bench_env *env, struct bench_results *r, size_t c,
                          unsigned round, struct target *t, struct progress *p)
{
  const struct bench_config *cfg = r->configs[c];
  int result = 0;

  for (size_t w = 0; w < r->nworkloads && !bench_proc_interrupted(); w++) {
    struct bench_cell *cell = bench_results_cell(r, c, w);
    struct bench_sample *s = &cell->runs[round];
    char tag[160];
    int rc;

    if (cell->state == BENCH_CELL_NA) {
      continue;
    }
    bench_fmt(tag, sizeof(tag), "r%u-%s-%s", round + 1, cfg->name, cell->wl->name);
    progress_print(p, cfg->name, cell->wl->name, round, env->opts->runs);
    bench_proc_drop_caches();
    if (cell->wl->kind == BENCH_WL_COPY) {
      rc = copy_once(env, cfg, t, tag, s);
    } else {
      struct bench_fio_target ft = {
        .ioengine = "io_uring",
        .filename = t->filename,
        .size = t->size,
        .buffered = cfg->kind == BENCH_CFG_HOST && bench_configs_host_mode(cfg, "writeback"),
        .batched = cfg->kind == BENCH_CFG_HOST && bench_configs_host_mode(cfg, "batched"),
      };
      const pid_t *servers = &t->srv.pid;
      size_t nservers = t->srv.pid > 0 ? 1 : 0;

      if (cfg->kind == BENCH_CFG_NBD || cfg->kind == BENCH_CFG_RBD ||
          cfg->kind == BENCH_CFG_QCOW2 || cfg->kind == BENCH_CFG_ASIF) {
        ft.ioengine = "nbd";
        ft.filename = NULL;
        ft.uri = t->uri;
      }
      if (t->gw != NULL) {
        ft.ioengine = "nbd";
        ft.filename = NULL;
        ft.uris = t->gw->uris;
        ft.nuris = BENCH_GATEWAY_EXPORTS;
        servers = t->gw->pids;
        nservers = t->gw->nsrv;
      }
      rc = bench_fio_run(env, cell->wl, &ft, servers, nservers, tag, s);
    }
    cell->nruns = round + 1;
    p->done++;
    if (rc < 0) {
      run_failed(cell, round, rc == -EINTR ? "interrupted" : "a run failed (see logs/)");
      result = rc == -EINTR ? rc : -EIO;
    }
  }
  return result;
}

struct guest_progress {
  struct progress *p;
  struct bench_results *r;
  const struct bench_config *cfg;
  const struct bench_workload *const *wls;
  unsigned round;
  size_t started;
};

static void guest_progress(void *arg, size_t index)
{
  struct guest_progress *gp = arg;

  gp->p->done += gp->started > 0 ? 1 : 0;
  gp->started++;
  progress_print(gp->p, gp->cfg->name, gp->wls[index]->name, gp->round, gp->r->opts.runs);
}

/* Guest configuration: one boot runs the round's workloads. */
static int run_guest_cells(struct bench_env *env, struct bench_results *r, size_t c,
                           unsigned round, struct target *t, struct progress *p)
{
  const struct bench_config *cfg = r->configs[c];
  const struct bench_workload *wls[BENCH_MAX_WORKLOADS];
  struct bench_sample samples[BENCH_MAX_WORKLOADS];
  size_t idx[BENCH_MAX_WORKLOADS], n = 0;
  struct bench_guest_disk disk = { NULL, NULL };
  struct guest_progress gp = { p, r, cfg, wls, round, 0 };
  char tag[160];
  int rc, result = 0;

  for (size_t w = 0; w < r->nworkloads; w++) {
    if (bench_results_cell(r, c, w)->state != BENCH_CELL_NA) {
      idx[n] = w;
      wls[n++] = r->workloads[w];
    }
  }
  if (n == 0) {
    return 0;
  }
  if (cfg->backing == BENCH_GUEST_NBD) {
    disk.nbd = t->uri;
  } else if (cfg->backing != BENCH_GUEST_9P) {
    disk.drive = t->drive;
  }
  bench_fmt(tag, sizeof(tag), "r%u-%s", round + 1, cfg->name);
  fprintf(stderr, "diskgate bench: %s: booting the guest (run %u/%u)\n", cfg->name, round + 1,
          env->opts->runs);
  rc = bench_guest_prepare(env);
  if (rc == 0) {
    rc = bench_guest_run(env, cfg, wls, n, &disk, t->srv.pid, tag, guest_progress, &gp,
                         samples);
  }
  p->done += n - (gp.started > 0 ? gp.started - 1 : 0);
  for (size_t i = 0; i < n; i++) {
    struct bench_cell *cell = bench_results_cell(r, c, idx[i]);

    cell->nruns = round + 1;
    if (rc == 0 && samples[i].ok) {
      cell->runs[round] = samples[i];
    } else {
      run_failed(cell, round, rc == -EINTR ? "interrupted"
                              : rc < 0     ? "the guest did not run (see logs/)"
                                           : "the guest's fio run failed (see raw/guest-*.out)");
      result = -EIO;
    }
  }
  return result;
}

int bench_run_all(struct bench_env *env, struct bench_results *r)
{
  const struct bench_opts *o = env->opts;
  struct progress p = { 0, 0, bench_proc_now(), o->runtime_s + o->ramp_s + 1.5 };
  int result = 0;

  for (size_t i = 0; i < r->nconfigs * r->nworkloads; i++) {
    if (r->cells[i].state != BENCH_CELL_NA) {
      p.total += o->runs;
    }
  }
  for (unsigned round = 0; round < o->runs && !bench_proc_interrupted(); round++) {
    for (size_t c = 0; c < r->nconfigs && !bench_proc_interrupted(); c++) {
      const struct bench_config *cfg = r->configs[c];
      size_t pending = 0;
      struct target t;
      int rc;

      for (size_t w = 0; w < r->nworkloads; w++) {
        pending += bench_results_cell(r, c, w)->state != BENCH_CELL_NA;
      }
      if (pending == 0) {
        continue;
      }
      rc = target_up(env, cfg, round, &t);
      if (rc < 0) {
        for (size_t w = 0; w < r->nworkloads; w++) {
          struct bench_cell *cell = bench_results_cell(r, c, w);

          if (cell->state != BENCH_CELL_NA) {
            cell->nruns = round + 1;
            run_failed(cell, round, "the configuration did not start (see logs/)");
            p.done++;
          }
        }
        target_down(env, &t);
        result = -EIO;
        continue;
      }
      if (cfg->kind == BENCH_CFG_GUEST) {
        rc = run_guest_cells(env, r, c, round, &t, &p);
      } else {
        rc = run_host_cells(env, r, c, round, &t, &p);
      }
      if (rc < 0) {
        result = rc == -EINTR || result == -EINTR ? -EINTR : -EIO;
      }
      if (target_down(env, &t) < 0) {
        fprintf(stderr, "diskgate bench: %s did not stop cleanly (round %u)\n", cfg->name,
                round + 1);
        if (result == 0) {
          result = -EIO;
        }
      }
    }
  }
  if (bench_proc_interrupted()) {
    return -EINTR;
  }
  return result;
}
