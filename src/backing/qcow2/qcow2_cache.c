/* SPDX-License-Identifier: MIT */
/* qcow2_cache.c: the bounded cache of L2 tables (QEMU's docs/interop/qcow2.txt, "Cluster
 * mapping"): an LRU list for eviction and a hash of host offsets for lookups, so the fast
 * path finds a table in constant time. Tables are held in host byte order; dirty ones are
 * written back (big-endian) before they are dropped. */
#include "backing/qcow2/qcow2_impl.h"

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "backing/format.h"

#define TABLE_ALIGN 4096u
#define CACHE_MIN_TABLES 2u
#define CACHE_MAX_TABLES (1u << 24)

/* Bytes of one table's entries: one cluster. */
static size_t table_bytes(const struct qcow2 *q)
{
  return (size_t)q->cluster_size;
}

static uint32_t bucket_of(const struct qcow2 *q, uint64_t l2_offset)
{
  uint64_t k = (l2_offset >> q->cluster_bits) * 0x9e3779b97f4a7c15ull;
  return (uint32_t)(k >> 32) & (q->cache.nbuckets - 1);
}

int qcow2_cache_init(struct qcow2 *q, uint64_t bytes)
{
  struct qcow2_l2_cache *c = &q->cache;
  uint64_t max;

  if (bytes == 0) {
    bytes = QCOW2_L2_CACHE_DEFAULT;
  }
  max = bytes / table_bytes(q);
  if (max < CACHE_MIN_TABLES) {
    max = CACHE_MIN_TABLES;
  }
  if (max > CACHE_MAX_TABLES) {
    max = CACHE_MAX_TABLES;
  }
  memset(c, 0, sizeof *c);
  c->max = (uint32_t)max;
  c->nbuckets = 1;
  while (c->nbuckets < c->max) {
    c->nbuckets <<= 1;
  }
  c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
  return c->buckets == NULL ? -ENOMEM : 0;
}

static void table_free(struct qcow2_l2_table *t)
{
  free(t->bad);
  free(t->entries);
  free(t);
}

void qcow2_cache_destroy(struct qcow2 *q)
{
  struct qcow2_l2_cache *c = &q->cache;
  struct qcow2_l2_table *t = c->head;

  assert(c->dirty == 0);
  while (t != NULL) {
    struct qcow2_l2_table *next = t->next;
    assert(!t->dirty && t->pins == 0);
    table_free(t);
    t = next;
  }
  free(c->buckets);
  memset(c, 0, sizeof *c);
}

static void lru_unlink(struct qcow2_l2_cache *c, struct qcow2_l2_table *t)
{
  if (t->prev != NULL) {
    t->prev->next = t->next;
  } else {
    c->head = t->next;
  }
  if (t->next != NULL) {
    t->next->prev = t->prev;
  } else {
    c->tail = t->prev;
  }
  t->prev = t->next = NULL;
}

static void lru_push_front(struct qcow2_l2_cache *c, struct qcow2_l2_table *t)
{
  t->prev = NULL;
  t->next = c->head;
  if (c->head != NULL) {
    c->head->prev = t;
  } else {
    c->tail = t;
  }
  c->head = t;
}

static void hash_remove(struct qcow2 *q, struct qcow2_l2_table *t)
{
  struct qcow2_l2_table **pp = &q->cache.buckets[bucket_of(q, t->host_offset)];

  while (*pp != NULL && *pp != t) {
    pp = &(*pp)->hnext;
  }
  assert(*pp == t);
  *pp = t->hnext;
  t->hnext = NULL;
}

static void table_insert(struct qcow2 *q, struct qcow2_l2_table *t)
{
  uint32_t b = bucket_of(q, t->host_offset);

  t->hnext = q->cache.buckets[b];
  q->cache.buckets[b] = t;
  lru_push_front(&q->cache, t);
  q->cache.count++;
}

struct qcow2_l2_table *qcow2_cache_find(struct qcow2 *q, uint64_t l2_offset)
{
  struct qcow2_l2_table *t = q->cache.buckets[bucket_of(q, l2_offset)];

  while (t != NULL && t->host_offset != l2_offset) {
    t = t->hnext;
  }
  if (t != NULL && q->cache.head != t) {
    lru_unlink(&q->cache, t);
    lru_push_front(&q->cache, t);
  }
  return t;
}

/* A table for a new entry: the least recently used unpinned one taken out of the cache
 * (written back first when dirty) when the cache is full, else a new allocation.
 * Returns 0 and *out (not in the cache), or -errno. */
static int table_obtain(struct qcow2 *q, struct qcow2_l2_table **out)
{
  struct qcow2_l2_cache *c = &q->cache;
  struct qcow2_l2_table *t = NULL;

  if (c->count >= c->max) {
    for (t = c->tail; t != NULL && t->pins > 0; t = t->prev) {
    }
  }
  if (t != NULL && t->dirty) {
    int rc = qcow2_meta_writeback(q);
    if (rc < 0) {
      return rc;
    }
    if (t->dirty) {
      return -EIO; /* the write-back left it dirty: keep it rather than lose it */
    }
  }
  if (t != NULL) {
    hash_remove(q, t);
    lru_unlink(c, t);
    c->count--;
    free(t->bad);
    t->bad = NULL;
    *out = t;
    return 0;
  }
  t = calloc(1, sizeof *t);
  if (t == NULL) {
    return -ENOMEM;
  }
  t->entries = aligned_alloc(TABLE_ALIGN, (table_bytes(q) + TABLE_ALIGN - 1) / TABLE_ALIGN *
                                              TABLE_ALIGN);
  if (t->entries == NULL) {
    free(t);
    return -ENOMEM;
  }
  *out = t;
  return 0;
}

/* The table at l2_offset, read and checked against the metadata on a miss. */
static int cache_get(struct qcow2 *q, uint64_t l2_offset, struct qcow2_l2_table **out)
{
  struct qcow2_l2_table *t = qcow2_cache_find(q, l2_offset);
  size_t n = table_bytes(q) / sizeof(uint64_t);
  const char *what;
  int rc;

  if (t != NULL) {
    *out = t;
    return 0;
  }
  if (l2_offset == 0 || l2_offset % q->cluster_size != 0 || l2_offset > q->file->geo.size ||
      q->cluster_size > q->file->geo.size - l2_offset) {
    return -EIO;
  }
  what = qcow2_overlap_l2_table(q, l2_offset);
  if (what != NULL) {
    return qcow2_corrupt(q, "L2 table %#" PRIx64 " overlaps the image's %s", l2_offset, what);
  }
  rc = table_obtain(q, &t);
  if (rc < 0) {
    return rc;
  }
  rc = format_pread(q->file, t->entries, table_bytes(q), l2_offset);
  if (rc < 0) {
    table_free(t);
    return rc;
  }
  for (size_t i = 0; i < n; i++) {
    t->entries[i] = be64toh(t->entries[i]);
  }
  t->host_offset = l2_offset;
  t->dirty = false;
  t->pins = 0;
  rc = qcow2_overlap_check_table(q, t);
  if (rc < 0) {
    table_free(t);
    return rc;
  }
  table_insert(q, t);
  *out = t;
  return 0;
}

int qcow2_cache_load_read(struct qcow2 *q, uint64_t l2_offset, struct qcow2_l2_table **out)
{
  return cache_get(q, l2_offset, out);
}

int qcow2_cache_load(struct qcow2 *q, uint64_t l2_offset, struct qcow2_l2_table **out)
{
  int rc = cache_get(q, l2_offset, out);

  if (rc == 0 && (*out)->bad != NULL) {
    *out = NULL;
    return -EIO; /* its bad entries were logged when it was read */
  }
  return rc;
}

int qcow2_cache_new(struct qcow2 *q, uint64_t l2_offset, struct qcow2_l2_table **out)
{
  struct qcow2_l2_table *t = qcow2_cache_find(q, l2_offset);
  int rc;

  assert(l2_offset % q->cluster_size == 0);
  if (t == NULL) {
    rc = table_obtain(q, &t);
    if (rc < 0) {
      return rc;
    }
    t->host_offset = l2_offset;
    t->dirty = false;
    t->pins = 0;
    table_insert(q, t);
  }
  free(t->bad);
  t->bad = NULL;
  memset(t->entries, 0, table_bytes(q));
  qcow2_cache_mark_dirty(q, t);
  *out = t;
  return 0;
}

void qcow2_cache_mark_dirty(struct qcow2 *q, struct qcow2_l2_table *t)
{
  if (!t->dirty) {
    t->dirty = true;
    q->cache.dirty++;
  }
}

int qcow2_cache_write_dirty(struct qcow2 *q)
{
  size_t n = table_bytes(q) / sizeof(uint64_t);
  uint64_t *be;
  int rc = 0;

  if (q->cache.dirty == 0) {
    return 0;
  }
  be = aligned_alloc(TABLE_ALIGN, (table_bytes(q) + TABLE_ALIGN - 1) / TABLE_ALIGN * TABLE_ALIGN);
  if (be == NULL) {
    return -ENOMEM;
  }
  for (struct qcow2_l2_table *t = q->cache.head; t != NULL && rc == 0; t = t->next) {
    if (!t->dirty) {
      continue;
    }
    for (size_t i = 0; i < n; i++) {
      be[i] = htobe64(t->entries[i]);
    }
    rc = format_pwrite(q->file, be, table_bytes(q), t->host_offset);
    if (rc == 0) {
      t->dirty = false;
      q->cache.dirty--;
    }
  }
  free(be);
  return rc;
}

/* Marks every table clean without writing it: the close of a node whose write-back failed
 * (what was not written is lost, as after a crash). Close only. */
void qcow2_cache_drop_dirty(struct qcow2 *q)
{
  for (struct qcow2_l2_table *t = q->cache.head; t != NULL; t = t->next) {
    t->dirty = false;
  }
  q->cache.dirty = 0;
}
