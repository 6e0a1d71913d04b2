/* SPDX-License-Identifier: MIT */
/* bench_load.c: bench.json back into a bench_results. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_configs.h"
#include "bench/bench_load.h"
#include "bench/bench_stats.h"
#include "bench/bench_util.h"
#include "bench/bench_variants.h"
#include "bench/bench_workloads.h"
#include "util/log.h"

/* Storage for the strings opts points at. */
static char loaded_profile[16];
static char loaded_dir[PATH_MAX];
static char *loaded_configs;   /* heap copies (the values are not bounded), replaced */
static char *loaded_workloads; /* at each load */

static double num(const cJSON *o, const char *name)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

  return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static void str(const cJSON *o, const char *name, char *buf, size_t len)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

  bench_fmt(buf, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

/* The whole regular file at `path`, NUL-terminated (free() it), or NULL with *err: -errno,
 * or -EINVAL for anything but a regular file (a line on stderr says so): a FIFO would block
 * the open and the reads, a directory or a device gives no report. */
static char *slurp(const char *path, int *err)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: no wait for a writer */
  struct stat st;
  FILE *f;
  char *buf = NULL;
  size_t len = 0, cap = 0;

  if (fd < 0) {
    *err = -errno;
    return NULL;
  }
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    char shown[LOG_SHOWN_MAX];
    fprintf(stderr, "diskgate bench: %s is not a regular file (--render takes a bench.json)\n",
            log_escape_str(shown, sizeof shown, path));
    close(fd);
    *err = -EINVAL;
    return NULL;
  }
  f = fdopen(fd, "rb"); /* O_NONBLOCK does not matter for a regular file */
  if (f == NULL) {
    *err = -errno;
    close(fd);
    return NULL;
  }
  for (;;) {
    size_t got;

    if (cap - len < 4096) {
      char *nb = realloc(buf, cap + 262144);

      if (nb == NULL) {
        free(buf);
        fclose(f);
        *err = -ENOMEM;
        return NULL;
      }
      buf = nb;
      cap += 262144;
    }
    got = fread(buf + len, 1, cap - len - 1, f);
    len += got;
    if (got == 0) {
      break;
    }
  }
  fclose(f);
  buf[len] = '\0';
  return buf;
}

static int load_machine(const cJSON *m, struct bench_machine *out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "versions");

  if (!cJSON_IsObject(m)) {
    return -EINVAL;
  }
  str(m, "cpu_model", out->cpu_model, sizeof(out->cpu_model));
  out->cores = (unsigned)num(m, "cores");
  out->mem_bytes = (uint64_t)num(m, "mem_bytes");
  str(m, "kernel", out->kernel, sizeof(out->kernel));
  str(m, "dir_fs", out->dir_fs, sizeof(out->dir_fs));
  str(m, "dir_device", out->dir_dev, sizeof(out->dir_dev));
  str(m, "guest_accel", out->accel, sizeof(out->accel));
  str(v, "fio", out->fio_version, sizeof(out->fio_version));
  str(v, "qemu", out->qemu_version, sizeof(out->qemu_version));
  str(v, "qemu-nbd", out->qemu_nbd_version, sizeof(out->qemu_nbd_version));
  str(v, "nbdkit", out->nbdkit_version, sizeof(out->nbdkit_version));
  str(v, "diskgate", out->diskgate_version, sizeof(out->diskgate_version));
  return 0;
}

/* *out becomes a heap copy of the string `name` of o, or NULL when it is not a string (the
 * previous copy is freed). Returns 0, or -ENOMEM. */
static int option_copy(const cJSON *o, const char *name, char **out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

  free(*out);
  *out = NULL;
  if (cJSON_IsString(v) && (*out = strdup(v->valuestring)) == NULL) {
    return -ENOMEM;
  }
  return 0;
}

/* The title of the row called `name` in the report's "configs" array, or NULL. */
static const char *config_title(const cJSON *configs, const char *name)
{
  const cJSON *c;

  cJSON_ArrayForEach(c, configs) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "name");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "title");

    if (cJSON_IsString(n) && cJSON_IsString(t) && strcmp(n->valuestring, name) == 0) {
      return t->valuestring;
    }
  }
  return NULL;
}

/* configs: the report's "configs" array (the titles of an A/B's NAME@K rows). */
static int load_options(const cJSON *o, const cJSON *configs, struct bench_results *r)
{
  const cJSON *item;

  if (!cJSON_IsObject(o)) {
    return -EINVAL;
  }
  str(o, "profile", loaded_profile, sizeof(loaded_profile));
  str(o, "dir", loaded_dir, sizeof(loaded_dir));
  r->opts.profile = loaded_profile;
  r->opts.dir = loaded_dir;
  /* a string: --configs or --workloads was given; null or absent (older reports): not */
  if (option_copy(o, "configs_option", &loaded_configs) < 0 ||
      option_copy(o, "workloads_option", &loaded_workloads) < 0) {
    return -ENOMEM;
  }
  r->opts.configs = loaded_configs;
  r->opts.workloads = loaded_workloads;
  r->opts.runs = (unsigned)num(o, "runs");
  r->opts.runtime_s = (unsigned)num(o, "runtime_s");
  r->opts.ramp_s = num(o, "ramp_s");
  r->opts.size = (uint64_t)num(o, "size_bytes");
  r->opts.copy_size = (uint64_t)num(o, "copy_size_bytes");
  cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(o, "configs")) {
    const struct bench_config *c =
      cJSON_IsString(item) ? bench_configs_find(item->valuestring) : NULL;
    const char *title = cJSON_IsString(item) ? config_title(configs, item->valuestring) : NULL;

    if (cJSON_IsString(item) && (c == NULL || (title != NULL && strcmp(title, c->title) != 0))) {
      /* a row of another binary (--diskgate): NAME@K, or NAME with the binary in its title */
      const struct bench_config *v = bench_variants_named(item->valuestring, title);

      c = v != NULL ? v : c;
    }
    if (c == NULL || r->nconfigs >= BENCH_MAX_CONFIGS) {
      fprintf(stderr, "diskgate bench: unknown configuration '%s' in the report\n",
              cJSON_IsString(item) ? item->valuestring : "?");
      return -EINVAL;
    }
    r->configs[r->nconfigs++] = c;
  }
  cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(o, "workloads")) {
    const struct bench_workload *w =
      cJSON_IsString(item) ? bench_workloads_find(item->valuestring) : NULL;

    if (w == NULL || r->nworkloads >= BENCH_MAX_WORKLOADS) {
      fprintf(stderr, "diskgate bench: unknown workload '%s' in the report\n",
              cJSON_IsString(item) ? item->valuestring : "?");
      return -EINVAL;
    }
    r->workloads[r->nworkloads++] = w;
  }
  return r->nconfigs > 0 && r->nworkloads > 0 ? 0 : -EINVAL;
}

static long index_of_config(const struct bench_results *r, const char *name)
{
  for (size_t c = 0; c < r->nconfigs; c++) {
    if (strcmp(r->configs[c]->name, name) == 0) {
      return (long)c;
    }
  }
  return -1;
}

static long index_of_workload(const struct bench_results *r, const char *name)
{
  for (size_t w = 0; w < r->nworkloads; w++) {
    if (strcmp(r->workloads[w]->name, name) == 0) {
      return (long)w;
    }
  }
  return -1;
}

static void load_run(const cJSON *o, struct bench_sample *s)
{
  const cJSON *ok = cJSON_GetObjectItemCaseSensitive(o, "ok");

  memset(s, 0, sizeof(*s));
  s->ok = cJSON_IsTrue(ok);
  s->value = num(o, "value");
  s->iops = num(o, "iops");
  s->mbps = num(o, "mbps");
  s->ios = num(o, "ios");
  s->p99_us = num(o, "p99_us");
  s->fsync_p99_us = num(o, "fsync_p99_us");
  s->p50_us = num(o, "p50_us");
  s->client_sys_us = num(o, "client_sys_us_per_io");
  s->rss_max_kib = num(o, "rss_max_kib");
  s->rss_growth_kib = num(o, "rss_growth_kib");
  s->hwm_kib = num(o, "hwm_kib");
  s->cpu_server_s = num(o, "cpu_server_s");
  s->cpu_client_s = num(o, "cpu_client_s");
  s->cpu_per_kio = num(o, "cpu_per_unit");
  s->seconds = num(o, "seconds");
  s->export_min_iops = num(o, "export_min_iops"); /* 0 when absent: not a gateway run */
  s->export_median_iops = num(o, "export_median_iops");
  s->export_max_iops = num(o, "export_max_iops");
  str(o, "raw", s->raw, sizeof(s->raw));
}

static int load_cells(const cJSON *cells, struct bench_results *r)
{
  const cJSON *cell;

  cJSON_ArrayForEach(cell, cells) {
    char cfg[96], wl[96], state[16];
    long c, w;
    struct bench_cell *out;
    const cJSON *run;

    str(cell, "config", cfg, sizeof(cfg));
    str(cell, "workload", wl, sizeof(wl));
    str(cell, "state", state, sizeof(state));
    c = index_of_config(r, cfg);
    w = index_of_workload(r, wl);
    if (c < 0 || w < 0) {
      fprintf(stderr, "diskgate bench: the report has a cell %s / %s outside its rows and "
                      "columns\n", cfg, wl);
      return -EINVAL;
    }
    out = bench_results_cell(r, (size_t)c, (size_t)w);
    out->state = strcmp(state, "n/a") == 0 ? BENCH_CELL_NA : BENCH_CELL_PENDING;
    str(cell, "note", out->note, sizeof(out->note));
    cJSON_ArrayForEach(run, cJSON_GetObjectItemCaseSensitive(cell, "runs")) {
      if (out->nruns < BENCH_MAX_RUNS) {
        load_run(run, &out->runs[out->nruns++]);
      }
    }
  }
  return 0;
}

int bench_load_json(const char *path, struct bench_results *r)
{
  const cJSON *tree;
  cJSON *root;
  char *text;
  int rc = 0;

  memset(r, 0, sizeof(*r));
  text = slurp(path, &rc);
  if (text == NULL) {
    return rc;
  }
  root = cJSON_Parse(text);
  free(text);
  if (root == NULL || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "cells"))) {
    fprintf(stderr, "diskgate bench: %s is not a bench.json\n", path);
    cJSON_Delete(root);
    return -EINVAL;
  }
  str(root, "command", r->command, sizeof(r->command));
  str(root, "started", r->started, sizeof(r->started));
  r->elapsed_s = num(root, "elapsed_s");
  r->caches_dropped = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "caches_dropped"));
  str(root, "rbd", r->rbd, sizeof(r->rbd));
  tree = cJSON_GetObjectItemCaseSensitive(root, "copy_tree");
  r->tree_files = (unsigned)num(tree, "files");
  r->tree_bytes = (uint64_t)num(tree, "bytes");
  rc = load_options(cJSON_GetObjectItemCaseSensitive(root, "options"),
                    cJSON_GetObjectItemCaseSensitive(root, "configs"), r);
  if (rc == 0) {
    rc = load_machine(cJSON_GetObjectItemCaseSensitive(root, "machine"), &r->machine);
  }
  if (rc == 0) {
    r->cells = calloc(r->nconfigs * r->nworkloads, sizeof(*r->cells));
    rc = r->cells != NULL ? 0 : -ENOMEM;
  }
  if (rc == 0) {
    for (size_t c = 0; c < r->nconfigs; c++) {
      for (size_t w = 0; w < r->nworkloads; w++) {
        struct bench_cell *cell = bench_results_cell(r, c, w);

        cell->cfg = r->configs[c];
        cell->wl = r->workloads[w];
        cell->state = BENCH_CELL_PENDING;
      }
    }
    rc = load_cells(cJSON_GetObjectItemCaseSensitive(root, "cells"), r);
  }
  cJSON_Delete(root);
  if (rc < 0) {
    if (rc == -EINVAL) {
      fprintf(stderr, "diskgate bench: %s is not a usable bench.json\n", path);
    }
    free(r->cells);
    r->cells = NULL;
    return rc;
  }
  bench_stats_results_finish(r);
  return 0;
}
