/* SPDX-License-Identifier: MIT */
/* asif.c: opening and closing the ASIF format node (docs/asif.md "Header", "Directories",
 * "Metadata", "What a reader must validate"): the header is validated, both directories
 * read and validated (the newer generation is served), the metadata's stable uuid read
 * when it can be, and the geometry the server serves declared: read-only, the image's
 * block size as the logical block. The ops go to asif_submit.c. */
#include "backing/asif/asif.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backing/asif/asif_impl.h"
#include "backing/format.h"
#include "util/bytes.h"
#include "util/log.h"

#define IO_ALIGN 4096u
#define META_MAGIC 0x6D657461u  /* "meta" */
#define META_HEADER_SIZE_OFF 8u
#define META_READ_MAX (64u << 10) /* bytes of the metadata chunk searched for the plist */
#define UUID_KEY "<key>stable uuid</key>"
#define NOTE_WHY_MAX 96u

static const struct backing_vtable asif_vtable;

/* Writes the refusal line to args->why and returns rc. */
static int open_refuse(const struct asif_open_args *args, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int open_refuse(const struct asif_open_args *args, int rc, const char *fmt, ...)
{
  va_list ap;

  if (args->why != NULL && args->why_size > 0) {
    va_start(ap, fmt);
    vsnprintf(args->why, args->why_size, fmt, ap);
    va_end(ap);
  }
  return rc;
}

/* Reads and validates the header into a->h. */
static int header_read(struct asif *a, const struct asif_open_args *args)
{
  uint64_t want = a->file_size < ASIF_HEADER_READ ? a->file_size : ASIF_HEADER_READ;
  uint8_t *buf;
  int rc;

  if (a->file_size < ASIF_HEADER_MIN) {
    return open_refuse(args, -EINVAL, "file of %llu bytes, shorter than an ASIF header",
                       (unsigned long long)a->file_size);
  }
  buf = aligned_alloc(IO_ALIGN, IO_ALIGN);
  if (buf == NULL) {
    return -ENOMEM;
  }
  rc = format_pread(a->file, buf, want, 0);
  if (rc < 0) {
    free(buf);
    return open_refuse(args, rc, "reading the header");
  }
  rc = asif_header_parse(buf, want, a->file_size, &a->h, args->why, args->why_size);
  free(buf);
  return rc;
}

/* Reads and validates directory k (0: A, 1: B) into entries[] and *sequence. */
static int directory_read(struct asif *a, const struct asif_open_args *args, unsigned k,
                          uint64_t *entries, uint64_t *sequence)
{
  char line[192];
  uint8_t *raw = malloc(a->h.dir_bytes);
  int rc;

  if (raw == NULL) {
    return -ENOMEM;
  }
  rc = format_pread(a->file, raw, a->h.dir_bytes, a->h.dir_offset[k]);
  if (rc < 0) {
    free(raw);
    return open_refuse(args, rc, "reading directory %s", k == 0 ? "A" : "B");
  }
  line[0] = '\0';
  rc = asif_directory_parse(&a->h, raw, a->file_size, sequence, entries, line, sizeof line);
  free(raw);
  if (rc < 0) {
    return open_refuse(args, rc, "directory %s: %s", k == 0 ? "A" : "B", line);
  }
  return 0;
}

/* Reads both directories and keeps the newer one (a tie keeps A) in a->dir. */
static int directories_read(struct asif *a, const struct asif_open_args *args)
{
  uint64_t *entries[2] = {NULL, NULL};
  uint64_t sequence[2] = {0, 0};
  int rc = 0;

  for (unsigned k = 0; k < 2 && rc == 0; k++) {
    entries[k] = malloc(a->h.dir_entries * sizeof(uint64_t));
    rc = entries[k] == NULL ? -ENOMEM : directory_read(a, args, k, entries[k], &sequence[k]);
  }
  if (rc == 0) {
    a->active = asif_directory_pick(sequence[0], sequence[1]);
    a->sequence = sequence[a->active];
    a->dir = entries[a->active];
    entries[a->active] = NULL;
  }
  free(entries[0]);
  free(entries[1]);
  return rc;
}

/* Copies the string value after the "stable uuid" key of the plist text [p, p + len) into
 * a->stable_uuid when it looks like a uuid. */
static void uuid_find(struct asif *a, const char *p, size_t len)
{
  const char *key = memmem(p, len, UUID_KEY, strlen(UUID_KEY));

  if (key == NULL) {
    return;
  }
  const char *rest = key + strlen(UUID_KEY);
  size_t left = len - (size_t)(rest - p);
  const char *open = memmem(rest, left, "<string>", 8);
  if (open == NULL) {
    return;
  }
  const char *v = open + 8;
  size_t n = 0;
  while (v + n < p + len && n + 1 < sizeof a->stable_uuid &&
         (v[n] == '-' || (v[n] >= '0' && v[n] <= '9') || (v[n] >= 'a' && v[n] <= 'f') ||
          (v[n] >= 'A' && v[n] <= 'F'))) {
    n++;
  }
  if (n > 0 && v + n < p + len && v[n] == '<') {
    memcpy(a->stable_uuid, v, n);
    a->stable_uuid[n] = '\0';
  }
}

/* Reads the metadata chunk (docs/asif.md "Metadata": the plist starts at its header_size
 * and ends at the first NUL) and pulls out the stable uuid. Returns "" or the reason the
 * metadata cannot be read, in note[]; the guest range is served either way. */
static void metadata_read(struct asif *a, char *note, size_t size)
{
  const struct asif_header *h = &a->h;
  uint64_t off;
  char why[NOTE_WHY_MAX] = "";

  note[0] = '\0';
  if (h->metadata_chunk == 0) {
    return;
  }
  if (__builtin_mul_overflow(h->metadata_chunk, (uint64_t)h->chunk_size, &off) ||
      off / h->table_span >= h->dir_entries) {
    snprintf(note, size, "metadata_chunk %llu lies past what the directory maps",
             (unsigned long long)h->metadata_chunk);
    return;
  }
  uint32_t len = h->chunk_size < META_READ_MAX ? h->chunk_size : META_READ_MAX;
  char *buf = malloc(len + 1u);
  if (buf == NULL) {
    snprintf(note, size, "%s", strerror(ENOMEM));
    return;
  }
  /* The chunk lies inside table t's span (D is a multiple of cs). */
  int rc = asif_read_logical(a, buf, off, len, why, sizeof why);
  if (rc < 0) {
    snprintf(note, size, "%s", why[0] != '\0' ? why : strerror(-rc));
  } else if (bytes_get_be32(buf) != META_MAGIC) {
    snprintf(note, size, "the metadata chunk has no \"meta\" magic");
  } else {
    uint32_t start = bytes_get_be32(buf + META_HEADER_SIZE_OFF);
    if (start >= len) {
      snprintf(note, size, "the metadata header_size %u runs past the chunk", start);
    } else {
      uuid_find(a, buf + start, strnlen(buf + start, len - start));
    }
  }
  free(buf);
}

static void geometry_set(struct asif *a)
{
  struct backing_geometry *g = &a->base.geo;
  const struct backing_geometry *fg = &a->file->geo;

  memset(g, 0, sizeof *g);
  g->size = a->h.size;
  g->logical_block_size = a->h.block_size;
  g->physical_block_size = a->h.block_size;
  g->direct_alignment = fg->direct_alignment > 1 ? fg->direct_alignment : 1;
  g->rotational = fg->rotational;
  g->can_multi_conn = true;
  g->can_extents = true;
  g->can_cache = true;
  g->can_depth = true; /* no backing file: data is depth 1, a hole is 0 (unallocated) */
  g->sync_channels = 1;
}

/* The start-up remark, one line: the header GUID, the stable uuid (or why the metadata
 * cannot be read), the active directory, why the image is read-only, and the file's own
 * note. */
static void note_set(struct asif *a, const char *meta)
{
  const uint8_t *g = a->h.guid;
  char guid[40];

  snprintf(guid, sizeof guid,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", g[0], g[1],
           g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14],
           g[15]);
  /* A note longer than start_note is cut short (the typical one is about 230 bytes). */
  int n = snprintf(a->base.start_note, sizeof a->base.start_note,
           "asif image %s, directory %s (sequence %llu)%s%s%s%.*s%s; served read-only: "
           "diskgate does not write ASIF images; --snapshot gives a writable throw-away "
           "overlay%s%.64s",
           guid, a->active == 0 ? "A" : "B", (unsigned long long)a->sequence,
           a->stable_uuid[0] != '\0' ? ", stable uuid " : "", a->stable_uuid,
           meta[0] != '\0' ? ", warning: its metadata cannot be read (" : "",
           (int)NOTE_WHY_MAX, meta, meta[0] != '\0' ? ")" : "",
           a->file->start_note[0] != '\0' ? "; " : "", a->file->start_note);
  if (n < 0) {
    a->base.start_note[0] = '\0';
  }
}

static void node_free(struct asif *a)
{
  if (a->cache.buckets != NULL) {
    asif_cache_destroy(&a->cache);
  }
  free(a->dir);
  free(a->base.description);
  free(a->name);
  pthread_mutex_destroy(&a->lock);
  free(a);
}

int backing_asif_open(const struct asif_open_args *args, struct backing **out)
{
  char shown[LOG_SHOWN_MAX], meta[NOTE_WHY_MAX];
  struct asif *a;
  int rc;

  assert(args != NULL && args->file != NULL && args->opts != NULL && out != NULL);
  *out = NULL;
  if (args->why != NULL && args->why_size > 0) {
    args->why[0] = '\0';
  }
  a = calloc(1, sizeof *a);
  if (a == NULL) {
    return -ENOMEM;
  }
  pthread_mutex_init(&a->lock, NULL);
  atomic_init(&a->reported, false);
  a->file = args->file;
  a->file_size = args->file->geo.size;
  a->engine = args->opts->engine;
  a->base.vt = &asif_vtable;
  a->base.opts = *args->opts;
  a->base.opts.read_only = true;
  a->name = strdup(log_escape_str(shown, sizeof shown, args->path != NULL ? args->path : "?"));
  rc = a->name == NULL ? -ENOMEM : header_read(a, args);
  if (rc == 0) {
    rc = directories_read(a, args);
  }
  if (rc == 0) {
    rc = asif_cache_init(&a->cache, 0);
  }
  if (rc == 0) {
    metadata_read(a, meta, sizeof meta);
    char d[96];
    snprintf(d, sizeof d, "ASIF image%s%s", a->stable_uuid[0] != '\0' ? ", stable uuid " : "",
             a->stable_uuid);
    a->base.description = strdup(d);
    rc = a->base.description == NULL ? -ENOMEM : 0;
  }
  if (rc < 0) {
    a->file = NULL;
    node_free(a);
    return rc;
  }
  geometry_set(a);
  note_set(a, meta);
  *out = &a->base;
  return 0;
}

static int asif_refresh_size(struct backing *b, uint64_t *size)
{
  struct asif *a = (struct asif *)b;

  *size = a->h.size;
  return 0;
}

static void asif_close(struct backing *b)
{
  struct asif *a = (struct asif *)b;

  backing_close(a->file);
  node_free(a);
}

static const struct backing_vtable asif_vtable = {
    .kind = "asif",
    .submit = asif_submit,
    .refresh_size = asif_refresh_size,
    .close = asif_close,
};
