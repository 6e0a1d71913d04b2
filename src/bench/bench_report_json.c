/* SPDX-License-Identifier: MIT */
/* bench_report_json.c: the JSON report, built with cJSON. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench_configs.h"
#include "bench/bench_report.h"
#include "bench/bench_report_targets.h"
#include "bench/bench_stats.h"
#include "bench/bench_workloads.h"

static const char *state_name(enum bench_cell_state s)
{
  switch (s) {
  case BENCH_CELL_PENDING:
    return "not-run";
  case BENCH_CELL_DONE:
    return "done";
  case BENCH_CELL_FAILED:
    return "failed";
  case BENCH_CELL_NA:
    return "n/a";
  }
  return "";
}

static const char *kind_name(enum bench_cfg_kind k)
{
  switch (k) {
  case BENCH_CFG_HOST:
    return "host";
  case BENCH_CFG_HOST_DEV:
    return "host-dev";
  case BENCH_CFG_NBD:
    return "nbd";
  case BENCH_CFG_GUEST:
    return "guest";
  case BENCH_CFG_RBD:
    return "rbd";
  case BENCH_CFG_QCOW2:
    return "qcow2";
  case BENCH_CFG_ASIF:
    return "asif";
  case BENCH_CFG_GATEWAY:
    return "gateway";
  }
  return "";
}

static cJSON *machine_json(const struct bench_machine *m)
{
  cJSON *o = cJSON_CreateObject();
  cJSON *v = cJSON_CreateObject();

  cJSON_AddStringToObject(o, "cpu_model", m->cpu_model);
  cJSON_AddNumberToObject(o, "cores", m->cores);
  cJSON_AddNumberToObject(o, "mem_bytes", (double)m->mem_bytes);
  cJSON_AddStringToObject(o, "kernel", m->kernel);
  cJSON_AddStringToObject(o, "dir_fs", m->dir_fs);
  cJSON_AddStringToObject(o, "dir_device", m->dir_dev);
  cJSON_AddStringToObject(o, "guest_accel", m->accel);
  cJSON_AddStringToObject(v, "fio", m->fio_version);
  cJSON_AddStringToObject(v, "qemu", m->qemu_version);
  cJSON_AddStringToObject(v, "qemu-nbd", m->qemu_nbd_version);
  cJSON_AddStringToObject(v, "nbdkit", m->nbdkit_version);
  cJSON_AddStringToObject(v, "diskgate", m->diskgate_version);
  cJSON_AddItemToObject(o, "versions", v);
  return o;
}

static cJSON *options_json(const struct bench_results *r)
{
  const struct bench_opts *op = &r->opts;
  cJSON *o = cJSON_CreateObject();
  cJSON *cfgs = cJSON_AddArrayToObject(o, "configs");
  cJSON *wls = cJSON_AddArrayToObject(o, "workloads");

  cJSON_AddStringToObject(o, "profile", op->profile);
  /* the --configs and --workloads values, null when the profile chose */
  cJSON_AddItemToObject(o, "configs_option",
                        op->configs != NULL ? cJSON_CreateString(op->configs) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "workloads_option", op->workloads != NULL
                                                 ? cJSON_CreateString(op->workloads)
                                                 : cJSON_CreateNull());
  cJSON_AddNumberToObject(o, "runs", op->runs);
  cJSON_AddNumberToObject(o, "runtime_s", op->runtime_s);
  cJSON_AddNumberToObject(o, "ramp_s", op->ramp_s);
  cJSON_AddNumberToObject(o, "size_bytes", (double)op->size);
  cJSON_AddNumberToObject(o, "copy_size_bytes", (double)op->copy_size);
  cJSON_AddStringToObject(o, "dir", op->dir);
  for (size_t c = 0; c < r->nconfigs; c++) {
    cJSON_AddItemToArray(cfgs, cJSON_CreateString(r->configs[c]->name));
  }
  for (size_t w = 0; w < r->nworkloads; w++) {
    cJSON_AddItemToArray(wls, cJSON_CreateString(r->workloads[w]->name));
  }
  return o;
}

static cJSON *config_json(const struct bench_config *c)
{
  cJSON *o = cJSON_CreateObject();

  cJSON_AddStringToObject(o, "name", c->name);
  cJSON_AddStringToObject(o, "title", c->title);
  cJSON_AddStringToObject(o, "kind", kind_name(c->kind));
  return o;
}

static cJSON *workload_json(const struct bench_workload *w)
{
  cJSON *o = cJSON_CreateObject();

  cJSON_AddStringToObject(o, "name", w->name);
  cJSON_AddStringToObject(o, "title", w->title);
  cJSON_AddStringToObject(o, "suite", w->suite);
  cJSON_AddStringToObject(o, "unit", bench_workloads_unit_label(w->unit));
  if (w->kind == BENCH_WL_FIO) {
    cJSON_AddStringToObject(o, "rw", w->rw);
    cJSON_AddNumberToObject(o, "bs", w->bs);
    cJSON_AddNumberToObject(o, "iodepth", w->iodepth);
    cJSON_AddNumberToObject(o, "rwmixread", w->rwmixread);
    cJSON_AddBoolToObject(o, "fsync", w->fsync);
  }
  return o;
}

static cJSON *run_json(const struct bench_sample *s)
{
  cJSON *o = cJSON_CreateObject();

  cJSON_AddBoolToObject(o, "ok", s->ok);
  cJSON_AddNumberToObject(o, "value", s->value);
  cJSON_AddNumberToObject(o, "iops", s->iops);
  cJSON_AddNumberToObject(o, "mbps", s->mbps);
  cJSON_AddNumberToObject(o, "ios", s->ios);
  cJSON_AddNumberToObject(o, "p99_us", s->p99_us);
  cJSON_AddNumberToObject(o, "fsync_p99_us", s->fsync_p99_us);
  cJSON_AddNumberToObject(o, "p50_us", s->p50_us);
  cJSON_AddNumberToObject(o, "client_sys_us_per_io", s->client_sys_us);
  cJSON_AddNumberToObject(o, "rss_max_kib", s->rss_max_kib);
  cJSON_AddNumberToObject(o, "rss_growth_kib", s->rss_growth_kib);
  cJSON_AddNumberToObject(o, "hwm_kib", s->hwm_kib);
  cJSON_AddNumberToObject(o, "cpu_server_s", s->cpu_server_s);
  cJSON_AddNumberToObject(o, "cpu_client_s", s->cpu_client_s);
  cJSON_AddNumberToObject(o, "cpu_per_unit", s->cpu_per_kio);
  cJSON_AddNumberToObject(o, "seconds", s->seconds);
  if (s->export_median_iops > 0) { /* a gateway run's exports */
    cJSON_AddNumberToObject(o, "export_min_iops", s->export_min_iops);
    cJSON_AddNumberToObject(o, "export_median_iops", s->export_median_iops);
    cJSON_AddNumberToObject(o, "export_max_iops", s->export_max_iops);
  }
  cJSON_AddStringToObject(o, "raw", s->raw);
  return o;
}

static cJSON *cell_json(const struct bench_results *r, const struct bench_cell *cell, long base)
{
  cJSON *o = cJSON_CreateObject();
  cJSON *runs;

  cJSON_AddStringToObject(o, "config", cell->cfg->name);
  cJSON_AddStringToObject(o, "workload", cell->wl->name);
  cJSON_AddStringToObject(o, "state", state_name(cell->state));
  cJSON_AddStringToObject(o, "unit", bench_workloads_unit_label(cell->wl->unit));
  cJSON_AddStringToObject(o, "cpu_unit", cell->wl->kind == BENCH_WL_COPY
                                           ? "CPU-seconds per GiB"
                                           : "CPU-seconds per 1K I/Os");
  if (cell->note[0] != '\0') {
    cJSON_AddStringToObject(o, "note", cell->note);
  }
  if (cell->state == BENCH_CELL_DONE) {
    cJSON *m = cJSON_AddObjectToObject(o, "median");

    cJSON_AddNumberToObject(m, "value", cell->value);
    cJSON_AddNumberToObject(m, "p99_us", cell->p99_us);
    cJSON_AddNumberToObject(m, "fsync_p99_us", cell->fsync_p99_us);
    cJSON_AddNumberToObject(m, "cpu_per_unit", cell->cpu_per_kio);
    if (cell->have_pct) {
      cJSON_AddNumberToObject(m, "pct", cell->pct);
      cJSON_AddStringToObject(m, "pct_of", r->configs[base]->name);
    }
  }
  runs = cJSON_AddArrayToObject(o, "runs");
  for (size_t i = 0; i < cell->nruns && i < BENCH_MAX_RUNS; i++) {
    cJSON_AddItemToArray(runs, run_json(&cell->runs[i]));
  }
  return o;
}

int bench_report_json_write(FILE *f, const struct bench_results *r)
{
  long base[BENCH_GROUP_COUNT];
  cJSON *root = cJSON_CreateObject();
  cJSON *arr;
  char *text;
  int rc = 0;

  if (root == NULL) {
    return -ENOMEM;
  }
  for (int g = 0; g < BENCH_GROUP_COUNT; g++) {
    base[g] = bench_stats_baseline_row(r, (enum bench_group)g);
  }
  cJSON_AddStringToObject(root, "tool", "diskgate bench");
  cJSON_AddStringToObject(root, "command", r->command);
  cJSON_AddStringToObject(root, "started", r->started);
  cJSON_AddNumberToObject(root, "elapsed_s", r->elapsed_s);
  cJSON_AddBoolToObject(root, "caches_dropped", r->caches_dropped);
  if (r->tree_files > 0) {
    cJSON *tree = cJSON_AddObjectToObject(root, "copy_tree");

    cJSON_AddNumberToObject(tree, "files", r->tree_files);
    cJSON_AddNumberToObject(tree, "bytes", (double)r->tree_bytes);
  }
  if (r->rbd[0] != '\0') {
    cJSON_AddStringToObject(root, "rbd", r->rbd);
  }
  cJSON_AddItemToObject(root, "options", options_json(r));
  cJSON_AddItemToObject(root, "machine", machine_json(&r->machine));
  arr = cJSON_AddArrayToObject(root, "configs");
  for (size_t c = 0; c < r->nconfigs; c++) {
    cJSON_AddItemToArray(arr, config_json(r->configs[c]));
  }
  arr = cJSON_AddArrayToObject(root, "workloads");
  for (size_t w = 0; w < r->nworkloads; w++) {
    cJSON_AddItemToArray(arr, workload_json(r->workloads[w]));
  }
  arr = cJSON_AddArrayToObject(root, "cells");
  for (size_t c = 0; c < r->nconfigs; c++) {
    long b = base[bench_configs_group(r->configs[c])];

    for (size_t w = 0; w < r->nworkloads; w++) {
      cJSON_AddItemToArray(arr, cell_json(r, &r->cells[c * r->nworkloads + w], b));
    }
  }
  bench_report_targets_json_add(root, r);
  text = cJSON_Print(root);
  cJSON_Delete(root);
  if (text == NULL) {
    return -ENOMEM;
  }
  if (fputs(text, f) < 0 || fputc('\n', f) == EOF) {
    rc = -EIO;
  }
  free(text);
  return rc;
}
