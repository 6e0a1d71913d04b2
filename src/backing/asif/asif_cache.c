/* SPDX-License-Identifier: MIT */
/* asif_cache.c: the bounded cache of table groups and chunk bitmaps of an ASIF image
 * (docs/asif.md "Tables, chunk groups, entries", "Bitmap chunk"): an LRU list for eviction
 * and a hash of (kind, host offset) for lookups in constant time, so an event loop's fast
 * path can map a read under a trylock. Items are read outside the lock and inserted under
 * it; nothing is ever written back (the node is read-only). */
#include "backing/asif/asif_impl.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backing/format.h"

#define CACHE_BUCKETS_MIN 64u
#define CACHE_BUCKETS_MAX (1u << 20)
#define CACHE_ITEM_GUESS 16384u /* bytes of a typical item (a group at bs 512), for sizing */

static uint32_t bucket_of(const struct asif_cache *c, enum asif_item_kind kind, uint64_t host)
{
  uint64_t k = (host ^ (uint64_t)kind) * 0x9e3779b97f4a7c15ull;
  return (uint32_t)(k >> 32) & (c->nbuckets - 1);
}

int asif_cache_init(struct asif_cache *c, uint64_t bytes)
{
  memset(c, 0, sizeof *c);
  c->max_bytes = bytes != 0 ? bytes : ASIF_CACHE_DEFAULT;
  c->nbuckets = CACHE_BUCKETS_MIN;
  while (c->nbuckets < CACHE_BUCKETS_MAX && c->nbuckets < c->max_bytes / CACHE_ITEM_GUESS) {
    c->nbuckets <<= 1;
  }
  c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
  return c->buckets == NULL ? -ENOMEM : 0;
}

void asif_cache_destroy(struct asif_cache *c)
{
  struct asif_item *it = c->head;

  while (it != NULL) {
    struct asif_item *next = it->next;
    free(it);
    it = next;
  }
  free(c->buckets);
  memset(c, 0, sizeof *c);
}

static void lru_unlink(struct asif_cache *c, struct asif_item *it)
{
  if (it->prev != NULL) {
    it->prev->next = it->next;
  } else {
    c->head = it->next;
  }
  if (it->next != NULL) {
    it->next->prev = it->prev;
  } else {
    c->tail = it->prev;
  }
  it->prev = it->next = NULL;
}

static void lru_push_front(struct asif_cache *c, struct asif_item *it)
{
  it->prev = NULL;
  it->next = c->head;
  if (c->head != NULL) {
    c->head->prev = it;
  } else {
    c->tail = it;
  }
  c->head = it;
}

static void hash_remove(struct asif_cache *c, struct asif_item *it)
{
  struct asif_item **pp = &c->buckets[bucket_of(c, it->kind, it->host)];

  while (*pp != NULL && *pp != it) {
    pp = &(*pp)->hnext;
  }
  assert(*pp == it);
  *pp = it->hnext;
  it->hnext = NULL;
}

static struct asif_item *lookup(const struct asif_cache *c, enum asif_item_kind kind,
                                uint64_t host)
{
  struct asif_item *it = c->buckets[bucket_of(c, kind, host)];

  while (it != NULL && (it->kind != kind || it->host != host)) {
    it = it->hnext;
  }
  return it;
}

const struct asif_item *asif_cache_find(struct asif_cache *c, enum asif_item_kind kind,
                                        uint64_t host)
{
  struct asif_item *it = lookup(c, kind, host);

  if (it == NULL) {
    return NULL;
  }
  if (c->head != it) {
    lru_unlink(c, it);
    lru_push_front(c, it);
  }
  return it;
}

int asif_cache_read(struct backing *file, enum asif_item_kind kind, uint64_t host,
                    uint32_t len, struct asif_item **out)
{
  struct asif_item *it;
  int rc;

  assert(len > 0);
  *out = NULL;
  it = malloc(sizeof *it + len);
  if (it == NULL) {
    return -ENOMEM;
  }
  memset(it, 0, sizeof *it);
  it->kind = kind;
  it->host = host;
  it->len = len;
  rc = format_pread(file, it->data, len, host);
  if (rc < 0) {
    free(it);
    return rc;
  }
  *out = it;
  return 0;
}

void asif_cache_insert(struct asif_cache *c, struct asif_item *item)
{
  assert(item != NULL && item->len > 0);
  if (lookup(c, item->kind, item->host) != NULL) {
    free(item); /* another worker read it first: the bytes are the same (never written) */
    return;
  }
  uint32_t b = bucket_of(c, item->kind, item->host);
  item->hnext = c->buckets[b];
  c->buckets[b] = item;
  lru_push_front(c, item);
  c->bytes += item->len;
  while (c->bytes > c->max_bytes && c->tail != item) {
    struct asif_item *old = c->tail;
    lru_unlink(c, old);
    hash_remove(c, old);
    assert(c->bytes >= old->len);
    c->bytes -= old->len;
    free(old);
  }
}
