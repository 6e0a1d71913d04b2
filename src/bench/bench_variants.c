/* SPDX-License-Identifier: MIT */
/* bench_variants.c: --diskgate PATH[:ARGS] rows (see bench_variants.h). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wordexp.h>

#include "bench/bench_configs.h"
#include "bench/bench_proc.h"
#include "bench/bench_util.h"
#include "bench/bench_variants.h"
#include "util/log.h"

struct variant {
  char path[PATH_MAX]; /* absolute */
  char version[64];    /* the first line of its --version, "" when it printed none */
  wordexp_t words;     /* ARGS, we_wordc == 0 without */
  bool have_words;
};

/* A row that runs a variant: the static table's entry it replaces (or is), and which. */
struct variant_row {
  const struct bench_config *row;  /* what r->configs points at */
  const struct bench_config *base; /* the table's entry */
  size_t variant;
};

static struct variant variants[BENCH_MAX_VARIANTS];
static struct bench_config copies[BENCH_MAX_CONFIGS];
static char names[BENCH_MAX_CONFIGS][96];
static char titles[BENCH_MAX_CONFIGS][PATH_MAX + 256];
static struct variant_row rows[BENCH_MAX_CONFIGS];
static size_t nrows;

/* Parses one PATH[:ARGS] into *v; one line on err and -EINVAL when it is unusable. */
static int variant_parse(const char *spec, struct variant *v, FILE *err)
{
  char path[PATH_MAX], shown[LOG_SHOWN_MAX];
  const char *colon = strchr(spec, ':');
  size_t len = colon != NULL ? (size_t)(colon - spec) : strlen(spec);
  struct stat st;

  if (v->have_words) {
    wordfree(&v->words);
  }
  memset(v, 0, sizeof(*v));
  if (len == 0 || len >= sizeof(path)) {
    fprintf(err, "diskgate bench: --diskgate wants PATH or PATH:ARGS, not '%s'\n",
            log_escape_str(shown, sizeof shown, spec));
    return -EINVAL;
  }
  memcpy(path, spec, len);
  path[len] = '\0';
  if (realpath(path, v->path) == NULL || stat(v->path, &st) < 0 || !S_ISREG(st.st_mode) ||
      access(v->path, X_OK) < 0) {
    fprintf(err, "diskgate bench: --diskgate: %s is not an executable file\n",
            log_escape_str(shown, sizeof shown, path));
    return -EINVAL;
  }
  {
    char *argv[] = { v->path, "--version", NULL };

    bench_proc_capture(argv, v->version, sizeof(v->version), 10.0);
    v->version[strcspn(v->version, "\n")] = '\0';
  }
  if (colon != NULL && colon[1] != '\0') {
    if (wordexp(colon + 1, &v->words, WRDE_NOCMD | WRDE_UNDEF) != 0) {
      fprintf(err, "diskgate bench: --diskgate %s: cannot split its ARGS as a shell would\n",
              log_escape_str(shown, sizeof shown, path));
      return -EINVAL;
    }
    v->have_words = true;
    if (v->words.we_wordc > BENCH_VARIANT_MAX_ARGS) {
      fprintf(err, "diskgate bench: --diskgate %s: more than %d ARGS\n",
              log_escape_str(shown, sizeof shown, path), BENCH_VARIANT_MAX_ARGS);
      return -EINVAL;
    }
  }
  return 0;
}

/* Returns the ARGS of variant k as one line, for a row's title. */
static void variant_describe(size_t k, char *buf, size_t len)
{
  const struct variant *v = &variants[k];

  bench_fmt(buf, len, "%s", v->path);
  for (size_t i = 0; v->have_words && i < v->words.we_wordc; i++) {
    size_t used = strlen(buf);

    bench_fmt(buf + used, len - used, " %s", v->words.we_wordv[i]);
  }
  if (v->version[0] != '\0') {
    size_t used = strlen(buf);

    bench_fmt(buf + used, len - used, " (%s)", v->version);
  }
}

/* Puts variant k's copy of row `base` at r->configs[at]: named NAME@K in an A/B, NAME
 * otherwise, its title naming the binary. */
static void row_add(const struct bench_config *base, size_t k, bool ab, struct bench_results *r,
                    size_t at)
{
  char desc[PATH_MAX + 128];

  copies[nrows] = *base;
  variant_describe(k, desc, sizeof(desc));
  if (ab) {
    bench_fmt(names[nrows], sizeof(names[nrows]), "%s@%zu", base->name, k + 1);
    bench_fmt(titles[nrows], sizeof(titles[nrows]), "%s; binary %zu: %s", base->title, k + 1,
              desc);
  } else {
    bench_fmt(names[nrows], sizeof(names[nrows]), "%s", base->name);
    bench_fmt(titles[nrows], sizeof(titles[nrows]), "%s; binary: %s", base->title, desc);
  }
  copies[nrows].name = names[nrows];
  copies[nrows].title = titles[nrows];
  rows[nrows] = (struct variant_row){ &copies[nrows], base, k };
  r->configs[at] = &copies[nrows++];
}

int bench_variants_apply(const struct bench_opts *opts, struct bench_results *r, FILE *err)
{
  const struct bench_config *old[BENCH_MAX_CONFIGS];
  size_t nold = r->nconfigs, n = opts->nvariants, out = 0;

  nrows = 0;
  if (n == 0) {
    return 0;
  }
  for (size_t k = 0; k < n; k++) {
    if (variant_parse(opts->variants[k], &variants[k], err) < 0) {
      return -EINVAL;
    }
  }
  memcpy(old, r->configs, nold * sizeof(old[0]));
  for (size_t c = 0; c < nold; c++) {
    size_t copies_wanted = old[c]->server == BENCH_SERVER_DISKGATE ? n : 0;

    if (out + (copies_wanted > 0 ? copies_wanted : 1) > BENCH_MAX_CONFIGS) {
      fprintf(err, "diskgate bench: --diskgate x%zu makes more than %d rows: select fewer "
                   "with --configs\n", n, BENCH_MAX_CONFIGS);
      return -E2BIG;
    }
    if (copies_wanted == 0) {
      r->configs[out++] = old[c];
    }
    for (size_t k = 0; k < copies_wanted; k++) {
      row_add(old[c], k, n > 1, r, out++);
    }
  }
  r->nconfigs = out;
  return 0;
}

/* The variant row of cfg, or NULL. */
static const struct variant_row *row_find(const struct bench_config *cfg)
{
  for (size_t i = 0; i < nrows; i++) {
    if (rows[i].row == cfg) {
      return &rows[i];
    }
  }
  return NULL;
}

const char *bench_variants_binary(const struct bench_config *cfg, const char *self)
{
  const struct variant_row *vr = row_find(cfg);

  return vr != NULL && variants[vr->variant].path[0] != '\0' ? variants[vr->variant].path : self;
}

const struct bench_config *bench_variants_named(const char *name, const char *title)
{
  const char *at = strrchr(name, '@');
  const struct bench_config *base;
  char basename[96];
  unsigned long k;
  char *end;

  for (size_t i = 0; i < nrows; i++) {
    if (strcmp(rows[i].row->name, name) == 0) {
      return rows[i].row;
    }
  }
  if (at == NULL) { /* --diskgate given once: the row's own name */
    at = name + strlen(name);
    k = 1;
  } else {
    k = strtoul(at + 1, &end, 10);
    if (at[1] < '1' || at[1] > '9' || *end != '\0' || k > BENCH_MAX_VARIANTS) {
      return NULL;
    }
  }
  if (at == name || (size_t)(at - name) >= sizeof(basename) || nrows >= BENCH_MAX_CONFIGS) {
    return NULL;
  }
  memcpy(basename, name, (size_t)(at - name));
  basename[at - name] = '\0';
  base = bench_configs_find(basename);
  if (base == NULL || base->server != BENCH_SERVER_DISKGATE) {
    return NULL;
  }
  copies[nrows] = *base;
  bench_fmt(names[nrows], sizeof(names[nrows]), "%s", name);
  bench_fmt(titles[nrows], sizeof(titles[nrows]), "%s", title != NULL ? title : base->title);
  copies[nrows].name = names[nrows];
  copies[nrows].title = titles[nrows];
  rows[nrows] = (struct variant_row){ &copies[nrows], base, (size_t)k - 1 };
  return &copies[nrows++];
}

void bench_variants_add_args(const struct bench_config *cfg, char **argv, int *argc)
{
  const struct variant_row *vr = row_find(cfg);
  const struct variant *v;

  if (vr == NULL) {
    return;
  }
  v = &variants[vr->variant];
  for (size_t i = 0; v->have_words && i < v->words.we_wordc; i++) {
    argv[(*argc)++] = v->words.we_wordv[i];
  }
}

const struct bench_config *bench_variants_base(const struct bench_config *cfg)
{
  const struct variant_row *vr = row_find(cfg);

  return vr != NULL ? vr->base : cfg;
}
