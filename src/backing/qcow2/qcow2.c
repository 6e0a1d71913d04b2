/* SPDX-License-Identifier: MIT */
/* qcow2.c: opening and closing the qcow2 format node (QEMU's docs/interop/qcow2.txt,
 * "Header", "Host cluster management"): the header cluster is validated, the backing chain
 * opened (only with a recorded backing format; loops and chains deeper than
 * FORMAT_CHAIN_MAX refused before any file of the next level is opened), the L1 table read
 * whole, and the geometry the server serves declared. The ops go to qcow2_submit.c. */
#include "backing/qcow2/qcow2.h"

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backing/format.h"
#include "backing/qcow2/qcow2_impl.h"
#include "util/log.h"

#define HEAD_PROBE_BYTES 4096u
#define IO_ALIGN 4096u
#define PHYSICAL_BLOCK_MAX 65536u
#define AUTOCLEAR_OFFSET 88u
#define WHY_INNER_MAX 512u

/* The files of the chain being opened on this thread, by depth: a backing file naming one
 * of them is a loop. Opens of a chain nest on one thread (format_open). */
struct chain_id {
  dev_t dev;
  ino_t ino;
  bool set;
};
static _Thread_local struct chain_id chain_ids[FORMAT_CHAIN_MAX];

static const struct backing_vtable qcow2_vtable;

/* Writes the refusal line to args->why and returns rc. */
static int open_refuse(const struct qcow2_open_args *args, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int open_refuse(const struct qcow2_open_args *args, int rc, const char *fmt, ...)
{
  va_list ap;

  if (args->why != NULL && args->why_size > 0) {
    va_start(ap, fmt);
    vsnprintf(args->why, args->why_size, fmt, ap);
    va_end(ap);
  }
  return rc;
}

/* The file a spec names (a path, or faulty:PATH), if it is one. */
static bool spec_identity(const char *spec, struct chain_id *id)
{
  struct stat st;

  if (spec == NULL || strncmp(spec, "rbd:", 4) == 0) {
    return false;
  }
  if (strncmp(spec, "faulty:", 7) == 0) {
    spec += 7;
  }
  if (stat(spec, &st) != 0) {
    return false;
  }
  id->dev = st.st_dev;
  id->ino = st.st_ino;
  id->set = true;
  return true;
}

/* Reads and validates the header cluster into q->h: a first page, then the rest of the
 * cluster when the header names a larger one. */
static int header_read(struct qcow2 *q, const struct qcow2_open_args *args)
{
  uint64_t file_size = q->file->geo.size;
  uint64_t want = file_size < HEAD_PROBE_BYTES ? file_size : HEAD_PROBE_BYTES;
  uint8_t *buf;
  uint32_t bits;
  int rc;

  if (file_size < 72) {
    return open_refuse(args, -EINVAL, "file of %llu bytes, shorter than a qcow2 header",
                       (unsigned long long)file_size);
  }
  buf = aligned_alloc(IO_ALIGN, HEAD_PROBE_BYTES);
  if (buf == NULL) {
    return -ENOMEM;
  }
  rc = format_pread(q->file, buf, want, 0);
  bits = (uint32_t)buf[20] << 24 | (uint32_t)buf[21] << 16 | (uint32_t)buf[22] << 8 | buf[23];
  if (rc == 0 && bits >= QCOW2_MIN_CLUSTER_BITS && bits <= QCOW2_MAX_CLUSTER_BITS &&
      (1ull << bits) > want && file_size > want) {
    want = file_size < (1ull << bits) ? file_size : (1ull << bits);
    free(buf);
    buf = aligned_alloc(IO_ALIGN, (want + IO_ALIGN - 1) / IO_ALIGN * IO_ALIGN);
    if (buf == NULL) {
      return -ENOMEM;
    }
    rc = format_pread(q->file, buf, want, 0);
  }
  if (rc < 0) {
    free(buf);
    return open_refuse(args, rc, "reading the header");
  }
  rc = qcow2_header_parse(buf, want, file_size, &q->h, args->why, args->why_size);
  free(buf);
  return rc;
}

static void fields_derive(struct qcow2 *q)
{
  q->cluster_bits = q->h.cluster_bits;
  q->cluster_size = 1ull << q->cluster_bits;
  q->extended_l2 = (q->h.incompatible_features & QCOW2_INCOMPAT_EXTL2) != 0;
  q->l2_bits = q->cluster_bits - (q->extended_l2 ? 4 : 3);
  q->l2_entries = 1u << q->l2_bits;
  q->subcluster_size = q->extended_l2 ? q->cluster_size / QCOW2_SUBCLUSTERS : q->cluster_size;
  q->refcount_bits = 1u << q->h.refcount_order;
  q->refblock_entries = q->cluster_size * 8 / q->refcount_bits;
}

/* The backing file's spec: its name relative to the folder of `path`. */
static void backing_resolve(const char *path, const char *name, char *out, size_t size)
{
  const char *slash = path != NULL ? strrchr(path, '/') : NULL;

  if (name[0] == '/' || strncmp(name, "rbd:", 4) == 0 || slash == NULL) {
    snprintf(out, size, "%s", name);
  } else {
    snprintf(out, size, "%.*s/%s", (int)(slash - path), path, name);
  }
}

/* Opens the backing file the header names into *node (NULL without one). */
static int backing_chain_open(struct qcow2 *q, const struct qcow2_open_args *args,
                              struct backing **node)
{
  char spec[4096], shown[LOG_SHOWN_MAX], inner[WHY_INNER_MAX];
  struct backing_options bopts = *args->opts;
  struct chain_id id = {0};
  enum image_format fmt;
  bool probed_raw;
  int rc;

  *node = NULL;
  if (!q->h.has_backing) {
    return 0;
  }
  log_escape_str(shown, sizeof shown, q->h.backing_file);
  if (!q->h.has_backing_format) {
    return open_refuse(args, -ENOTSUP, "the backing file %s has no recorded format (record it "
                       "with `qemu-img rebase -u -F FORMAT -b NAME IMAGE`, or create the image "
                       "with -F)", shown);
  }
  if (image_format_parse(q->h.backing_format, &fmt) < 0 || fmt == IMAGE_FORMAT_AUTO) {
    char f[64];
    return open_refuse(args, -ENOTSUP, "backing file %s of format \"%s\" (raw, qcow2 and "
                       "asif are served)", shown, log_escape_str(f, sizeof f, q->h.backing_format));
  }
  if (args->depth + 1 >= FORMAT_CHAIN_MAX) {
    return open_refuse(args, -ELOOP, "backing file %s: the chain is deeper than %u images",
                       shown, FORMAT_CHAIN_MAX);
  }
  backing_resolve(args->path, q->h.backing_file, spec, sizeof spec);
  if (spec_identity(spec, &id)) {
    for (unsigned i = 0; i <= args->depth; i++) {
      if (chain_ids[i].set && chain_ids[i].dev == id.dev && chain_ids[i].ino == id.ino) {
        return open_refuse(args, -ELOOP, "backing file %s is already in the chain (a loop)",
                           shown);
      }
    }
  }
  bopts.read_only = true;
  inner[0] = '\0';
  rc = format_open(spec, fmt, &bopts, args->depth + 1, node, &probed_raw, inner, sizeof inner);
  if (rc < 0) {
    if (strncmp(inner, "backing file ", 13) == 0) {
      return open_refuse(args, rc, "%s", inner);
    }
    return open_refuse(args, rc, "backing file %s%s%s", shown, inner[0] != '\0' ? ": " : "",
                       inner);
  }
  return 0;
}

/* Reads the L1 table into q->l1 (host byte order). */
static int l1_read(struct qcow2 *q, const struct qcow2_open_args *args)
{
  size_t bytes = (size_t)q->h.l1_size * sizeof(uint64_t);
  int rc;

  q->l1 = aligned_alloc(IO_ALIGN, (bytes + IO_ALIGN - 1) / IO_ALIGN * IO_ALIGN + IO_ALIGN);
  if (q->l1 == NULL) {
    return -ENOMEM;
  }
  if (bytes == 0) {
    return 0;
  }
  rc = format_pread(q->file, q->l1, bytes, q->h.l1_table_offset);
  if (rc < 0) {
    return open_refuse(args, rc, "reading the L1 table");
  }
  for (uint32_t i = 0; i < q->h.l1_size; i++) {
    q->l1[i] = be64toh(q->l1[i]);
  }
  return 0;
}

/* Clears the autoclear bits: this node keeps none of what they describe up to date. */
static int autoclear_reset(struct qcow2 *q, const struct qcow2_open_args *args)
{
  uint64_t zero = 0;
  int rc;

  if (!q->writable || q->h.version < 3 || q->h.autoclear_features == 0) {
    return 0;
  }
  rc = format_pwrite(q->file, &zero, sizeof zero, AUTOCLEAR_OFFSET);
  if (rc == 0) {
    rc = format_flush(q->file);
  }
  if (rc < 0) {
    return open_refuse(args, rc, "clearing the autoclear feature bits");
  }
  q->h.autoclear_features = 0;
  return 0;
}

static void geometry_set(struct qcow2 *q)
{
  struct backing_geometry *g = &q->base.geo;
  const struct backing_geometry *fg = &q->file->geo;

  memset(g, 0, sizeof *g);
  g->size = q->h.size;
  g->logical_block_size = 512;
  /* Over a backing of larger blocks (a 4Kn device, an ASIF image of 4096-byte blocks) the
   * guest's partition table and file systems are laid out in its blocks: keep them. */
  if (q->backing_node != NULL) {
    uint32_t lbs = q->backing_node->geo.logical_block_size;

    if (lbs > 512 && lbs <= PHYSICAL_BLOCK_MAX && g->size % lbs == 0) {
      g->logical_block_size = lbs;
    }
  }
  g->physical_block_size = q->cluster_size < PHYSICAL_BLOCK_MAX ? (uint32_t)q->cluster_size
                                                                  : PHYSICAL_BLOCK_MAX;
  if (g->physical_block_size < g->logical_block_size) {
    g->physical_block_size = g->logical_block_size;
  }
  g->direct_alignment = 1;
  g->rotational = fg->rotational;
  g->can_trim = q->writable;
  g->can_zero = q->writable;
  g->can_fua = q->writable;
  g->can_multi_conn = true;
  g->can_extents = true;
  g->can_cache = true;
  g->can_fast_zero = q->writable && q->h.version >= 3; /* zero flags: metadata only */
  g->can_depth = true;
  g->sync_channels = 1;
}

/* The start-up remarks: the file's, and the corrupt bit's. */
static void note_set(struct qcow2 *q, const struct qcow2_open_args *args)
{
  const char *fnote = q->file->start_note;

  if ((q->h.incompatible_features & QCOW2_INCOMPAT_CORRUPT) && !args->opts->read_only) {
    snprintf(q->base.start_note, sizeof q->base.start_note,
             "warning: the qcow2 image's corrupt bit is set: served read-only (check it with "
             "`qemu-img check`)%s%.64s", fnote[0] != '\0' ? "; " : "", fnote);
  } else {
    snprintf(q->base.start_note, sizeof q->base.start_note, "%s", fnote);
  }
}

static void node_free(struct qcow2 *q)
{
  qcow2_refcount_close(q);
  qcow2_overlap_close(q);
  if (q->cache.buckets != NULL) {
    qcow2_cache_destroy(q);
  }
  free(q->l1);
  free(q->base.description);
  free(q->name);
  pthread_mutex_destroy(&q->lock);
  free(q);
}

/* The steps after the header: backing chain, L1, refcounts, the metadata map, cache. */
static int node_open_tables(struct qcow2 *q, const struct qcow2_open_args *args)
{
  int rc;

  if (q->h.incompatible_features & QCOW2_INCOMPAT_DIRTY) {
    return open_refuse(args, -EUCLEAN, "the dirty bit is set");
  }
  if (args->backing_node != NULL) {
    q->backing_node = args->backing_node;
  } else {
    rc = backing_chain_open(q, args, &q->backing_node);
    if (rc < 0) {
      return rc;
    }
  }
  rc = l1_read(q, args);
  if (rc == 0) {
    rc = qcow2_refcount_open(q, args->why, args->why_size);
    if (rc < 0 && rc != -ENOMEM && rc != -EINVAL) {
      open_refuse(args, rc, "reading the refcount table");
    }
  }
  if (rc == 0) {
    rc = qcow2_overlap_open(q, args->why, args->why_size);
    if (rc < 0 && rc != -ENOMEM && rc != -EINVAL) {
      open_refuse(args, rc, "reading the snapshot table");
    }
  }
  if (rc == 0) {
    rc = qcow2_cache_init(q, args->l2_cache_size);
  }
  if (rc == 0) {
    rc = autoclear_reset(q, args);
  }
  return rc;
}

int backing_qcow2_open(const struct qcow2_open_args *args, struct backing **out)
{
  char shown[LOG_SHOWN_MAX];
  struct qcow2 *q;
  int rc;

  *out = NULL;
  if (args->why != NULL && args->why_size > 0) {
    args->why[0] = '\0';
  }
  if (args->depth >= FORMAT_CHAIN_MAX) {
    return open_refuse(args, -ELOOP, "the chain is deeper than %u images", FORMAT_CHAIN_MAX);
  }
  q = calloc(1, sizeof *q);
  if (q == NULL) {
    return -ENOMEM;
  }
  pthread_mutex_init(&q->lock, NULL);
  q->file = args->file;
  q->engine = args->opts->engine;
  q->base.vt = &qcow2_vtable;
  q->base.opts = *args->opts;
  q->name = strdup(log_escape_str(shown, sizeof shown, args->path != NULL ? args->path : "?"));
  q->base.description = strdup("qcow2 image");
  chain_ids[args->depth].set = false;
  spec_identity(args->path, &chain_ids[args->depth]);
  rc = q->name == NULL || q->base.description == NULL ? -ENOMEM : header_read(q, args);
  if (rc == 0) {
    fields_derive(q);
    q->writable = !args->opts->read_only &&
                  !(q->h.incompatible_features & QCOW2_INCOMPAT_CORRUPT);
    q->base.opts.read_only = !q->writable;
    rc = node_open_tables(q, args);
  }
  if (rc < 0) {
    if (q->backing_node != NULL && q->backing_node != args->backing_node) {
      backing_close(q->backing_node);
    }
    q->file = NULL;
    node_free(q);
    return rc;
  }
  geometry_set(q);
  note_set(q, args);
  *out = &q->base;
  return 0;
}

static int qcow2_refresh_size(struct backing *b, uint64_t *size)
{
  struct qcow2 *q = (struct qcow2 *)b;

  *size = q->h.size;
  return 0;
}

static void qcow2_close(struct backing *b)
{
  struct qcow2 *q = (struct qcow2 *)b;

  if (q->writable) {
    int rc = qcow2_flush(q);
    if (rc < 0) {
      log_msg(LOG_ERROR, "qcow2 image %s: writing its metadata at close failed: %s", q->name,
              strerror(-rc));
      pthread_mutex_lock(&q->lock);
      qcow2_cache_drop_dirty(q);
      pthread_mutex_unlock(&q->lock);
    }
  }
  backing_close(q->file);
  if (q->backing_node != NULL) {
    backing_close(q->backing_node);
  }
  node_free(q);
}

static const struct backing_vtable qcow2_vtable = {
    .kind = "qcow2",
    .submit = qcow2_submit,
    .refresh_size = qcow2_refresh_size,
    .close = qcow2_close,
};
