/* SPDX-License-Identifier: MIT */
/* metrics.c: see metrics.h. The text follows Prometheus' "Exposition formats" (text
 * format 0.0.4): a HELP and a TYPE line per family, label values with \\, \" and \n
 * escaped, histograms as cumulative _bucket{le} series plus _sum and _count. */
#include "server/metrics.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nbd/proto.h"
#include "server/conn.h"
#include "server/metrics_process.h"
#include "server/server.h"

/* Upper bounds of the buckets, in nanoseconds, and as the le label shows them */
static const uint64_t bucket_ns[METRICS_BUCKETS] = {
  10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
  25000000, 50000000, 100000000, 250000000, 500000000, 1000000000, 2500000000,
  5000000000, 10000000000,
};
static const char *const bucket_le[METRICS_BUCKETS + 1] = {
  "1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
  "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf",
};
static const char *const op_names[METRICS_OPS] = {
  "read", "write", "flush", "trim", "zero", "block_status",
};

uint64_t metrics_now_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum metrics_op metrics_op_of(uint16_t type)
{
  switch (type) {
  case NBD_CMD_READ:
    return METRICS_OP_READ;
  case NBD_CMD_WRITE:
    return METRICS_OP_WRITE;
  case NBD_CMD_FLUSH:
    return METRICS_OP_FLUSH;
  case NBD_CMD_TRIM:
    return METRICS_OP_TRIM;
  case NBD_CMD_WRITE_ZEROES:
    return METRICS_OP_ZERO;
  case NBD_CMD_BLOCK_STATUS:
    return METRICS_OP_BLOCK_STATUS;
  default:
    return METRICS_OPS;
  }
}

/* Single writer: a relaxed load and store, not an atomic read-modify-write (no locked
 * instruction on the hot path); readers see each store whole. */
static inline void add_relaxed(_Atomic uint64_t *v, uint64_t n)
{
  atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + n,
                        memory_order_relaxed);
}

static inline uint64_t get(const _Atomic uint64_t *v)
{
  return atomic_load_explicit((_Atomic uint64_t *)v, memory_order_relaxed);
}

void metrics_hist_observe(struct metrics_hist *h, uint64_t ns)
{
  unsigned i = 0;

  while (i < METRICS_BUCKETS && ns > bucket_ns[i]) {
    i++;
  }
  add_relaxed(&h->bucket[i], 1);
  add_relaxed(&h->sum_ns, ns);
}

void metrics_count(struct metrics_counts *counts, enum metrics_op op, uint64_t bytes,
                   bool error, uint64_t ns)
{
  assert(op < METRICS_OPS);
  struct metrics_op_counts *o = &counts->op[op];

  add_relaxed(&o->requests, 1);
  if (error) {
    add_relaxed(&o->errors, 1);
  } else {
    add_relaxed(&o->bytes, bytes);
  }
  metrics_hist_observe(&o->duration, ns);
}

static void hist_fold(struct metrics_hist *into, const struct metrics_hist *from)
{
  for (unsigned b = 0; b <= METRICS_BUCKETS; b++) {
    add_relaxed(&into->bucket[b], get(&from->bucket[b]));
  }
  add_relaxed(&into->sum_ns, get(&from->sum_ns));
}

void metrics_counts_fold(struct metrics_counts *into, const struct metrics_counts *from)
{
  for (unsigned i = 0; i < METRICS_OPS; i++) {
    add_relaxed(&into->op[i].requests, get(&from->op[i].requests));
    add_relaxed(&into->op[i].bytes, get(&from->op[i].bytes));
    add_relaxed(&into->op[i].errors, get(&from->op[i].errors));
    hist_fold(&into->op[i].duration, &from->op[i].duration);
  }
}

/* What a scrape saw of one export: plain numbers, taken under server->lock. */
struct snap_hist {
  uint64_t bucket[METRICS_BUCKETS + 1];
  uint64_t sum_ns;
};
struct snap_export {
  char *name;  /* the export's name */
  char *label; /* the name escaped as a label value */
  unsigned connections;
  uint64_t requests[METRICS_OPS], bytes[METRICS_OPS], errors[METRICS_OPS];
  struct snap_hist duration[METRICS_OPS];
  struct snap_hist sync;
};

static void snap_hist_add(struct snap_hist *into, const struct metrics_hist *h)
{
  for (unsigned b = 0; b <= METRICS_BUCKETS; b++) {
    into->bucket[b] += get(&h->bucket[b]);
  }
  into->sum_ns += get(&h->sum_ns);
}

static void snap_add(struct snap_export *into, const struct metrics_counts *c)
{
  for (unsigned i = 0; i < METRICS_OPS; i++) {
    into->requests[i] += get(&c->op[i].requests);
    into->bytes[i] += get(&c->op[i].bytes);
    into->errors[i] += get(&c->op[i].errors);
    snap_hist_add(&into->duration[i], &c->op[i].duration);
  }
}

/* The export name as a label value: backslash, double quote and line feed escaped (the
 * text format's rule); other bytes as they are (names are UTF-8: serve_args.c). */
static char *label_escape(const char *name)
{
  size_t n = strlen(name);
  char *out = malloc(2 * n + 1), *p = out;

  if (out == NULL) {
    return NULL;
  }
  for (const char *q = name; *q != '\0'; q++) {
    if (*q == '\\' || *q == '"') {
      *p++ = '\\';
      *p++ = *q;
    } else if (*q == '\n') {
      *p++ = '\\';
      *p++ = 'n';
    } else {
      *p++ = *q;
    }
  }
  *p = '\0';
  return out;
}

static void snap_free(struct snap_export *snap, size_t n)
{
  for (size_t i = 0; snap != NULL && i < n; i++) {
    free(snap[i].name);
    free(snap[i].label);
  }
  free(snap);
}

/* Sums every export's counts under server->lock. Returns the array (*n entries) or NULL
 * when out of memory (or with no export: *n 0). */
static struct snap_export *snap_take(struct server *s, size_t *n)
{
  struct snap_export *snap;

  pthread_mutex_lock(&s->lock);
  *n = s->nexports;
  snap = calloc(*n > 0 ? *n : 1, sizeof *snap);
  if (snap == NULL) {
    pthread_mutex_unlock(&s->lock);
    return NULL;
  }
  for (size_t i = 0; i < *n; i++) {
    struct export *e = s->exports[i];
    snap[i].name = strdup(e->name);
    snap[i].label = label_escape(e->name);
    if (snap[i].name == NULL || snap[i].label == NULL) {
      pthread_mutex_unlock(&s->lock);
      snap_free(snap, *n);
      return NULL;
    }
    snap_add(&snap[i], &e->metrics.closed);
    snap_hist_add(&snap[i].sync, &e->metrics.sync);
  }
  for (struct conn *c = s->conns; c != NULL; c = c->next) {
    for (size_t i = 0; c->metrics_export != NULL && i < *n; i++) {
      if (s->exports[i] == c->metrics_export) {
        snap[i].connections++;
        snap_add(&snap[i], &c->metrics);
        break;
      }
    }
  }
  pthread_mutex_unlock(&s->lock);
  return snap;
}

static void family_head(FILE *f, const char *name, const char *type, const char *help)
{
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void hist_print(FILE *f, const char *name, const char *labels, const struct snap_hist *h)
{
  uint64_t total = 0;

  for (unsigned b = 0; b <= METRICS_BUCKETS; b++) {
    total += h->bucket[b];
    fprintf(f, "%s_bucket{%s,le=\"%s\"} %llu\n", name, labels, bucket_le[b],
            (unsigned long long)total);
  }
  fprintf(f, "%s_sum{%s} %.9f\n", name, labels, (double)h->sum_ns / 1e9);
  fprintf(f, "%s_count{%s} %llu\n", name, labels, (unsigned long long)total);
}

/* One counter family: `which` picks requests, bytes or errors. */
static void counter_print(FILE *f, const char *name, const char *help,
                          const struct snap_export *snap, size_t n, int which)
{
  family_head(f, name, "counter", help);
  for (size_t i = 0; i < n; i++) {
    for (unsigned op = 0; op < METRICS_OPS; op++) {
      uint64_t v = which == 0 ? snap[i].requests[op]
                   : which == 1 ? snap[i].bytes[op] : snap[i].errors[op];
      fprintf(f, "%s{export=\"%s\",op=\"%s\"} %llu\n", name, snap[i].label, op_names[op],
              (unsigned long long)v);
    }
  }
}

static void render_exports(FILE *f, const struct snap_export *snap, size_t n)
{
  char labels[64 + 2 * 4096 + 64];

  counter_print(f, "diskgate_requests_total", "Requests answered, by export and command.",
                snap, n, 0);
  counter_print(f, "diskgate_bytes_total",
                "Bytes of the requests answered without error (the length each asked for).",
                snap, n, 1);
  counter_print(f, "diskgate_errors_total", "Requests answered with an NBD error.", snap,
                n, 2);
  family_head(f, "diskgate_request_duration_seconds", "histogram",
              "Seconds from a request being read to its reply being sent.");
  for (size_t i = 0; i < n; i++) {
    for (unsigned op = 0; op < METRICS_OPS; op++) {
      snprintf(labels, sizeof labels, "export=\"%s\",op=\"%s\"", snap[i].label, op_names[op]);
      hist_print(f, "diskgate_request_duration_seconds", labels, &snap[i].duration[op]);
    }
  }
  family_head(f, "diskgate_connections", "gauge", "Connections in transmission, by export.");
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "diskgate_connections{export=\"%s\"} %u\n", snap[i].label,
            snap[i].connections);
  }
  family_head(f, "diskgate_sync_duration_seconds", "histogram",
              "Seconds each backing sync issued by group commit took.");
  for (size_t i = 0; i < n; i++) {
    snprintf(labels, sizeof labels, "export=\"%s\"", snap[i].label);
    hist_print(f, "diskgate_sync_duration_seconds", labels, &snap[i].sync);
  }
}

char *metrics_render(struct server *s, size_t *len)
{
  size_t n;
  char *text = NULL;
  struct snap_export *snap = snap_take(s, &n);
  FILE *f;

  if (snap == NULL && n > 0) {
    return NULL;
  }
  f = open_memstream(&text, len);
  if (f == NULL) {
    snap_free(snap, n);
    return NULL;
  }
  render_exports(f, snap, n);
  metrics_process_render(f);
  snap_free(snap, n);
  if (fclose(f) != 0) {
    free(text);
    return NULL;
  }
  return text;
}

static cJSON *hist_json(const struct snap_hist *h, bool buckets)
{
  cJSON *o = cJSON_CreateObject(), *arr;
  uint64_t total = 0;

  if (o == NULL) {
    return NULL;
  }
  arr = buckets ? cJSON_AddArrayToObject(o, "buckets") : NULL;
  for (unsigned b = 0; b <= METRICS_BUCKETS; b++) {
    total += h->bucket[b];
    if (arr != NULL) {
      cJSON *pair = cJSON_CreateArray();
      cJSON_AddItemToArray(pair, b < METRICS_BUCKETS ? cJSON_CreateNumber((double)bucket_ns[b] / 1e9)
                                                    : cJSON_CreateString("+Inf"));
      cJSON_AddItemToArray(pair, cJSON_CreateNumber((double)total));
      cJSON_AddItemToArray(arr, pair);
    }
  }
  cJSON_AddNumberToObject(o, "count", (double)total);
  cJSON_AddNumberToObject(o, "sum_seconds", (double)h->sum_ns / 1e9);
  return o;
}

int metrics_stats_json(struct server *s, cJSON *out)
{
  size_t n;
  struct snap_export *snap = snap_take(s, &n);

  if (snap == NULL && n > 0) {
    return -ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    cJSON *e = cJSON_CreateObject(), *ops;
    if (e == NULL) {
      snap_free(snap, n);
      return -ENOMEM;
    }
    cJSON_AddItemToObject(out, snap[i].name, e);
    cJSON_AddNumberToObject(e, "connections", snap[i].connections);
    cJSON_AddItemToObject(e, "sync", hist_json(&snap[i].sync, false));
    ops = cJSON_AddObjectToObject(e, "ops");
    for (unsigned op = 0; ops != NULL && op < METRICS_OPS; op++) {
      cJSON *o = cJSON_AddObjectToObject(ops, op_names[op]);
      cJSON_AddNumberToObject(o, "requests", (double)snap[i].requests[op]);
      cJSON_AddNumberToObject(o, "bytes", (double)snap[i].bytes[op]);
      cJSON_AddNumberToObject(o, "errors", (double)snap[i].errors[op]);
      cJSON_AddItemToObject(o, "duration", hist_json(&snap[i].duration[op], true));
    }
  }
  snap_free(snap, n);
  return 0;
}
