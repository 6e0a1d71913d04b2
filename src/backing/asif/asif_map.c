/* SPDX-License-Identifier: MIT */
/* asif_map.c: an ASIF image's logical bytes -> runs of host bytes or zeroes, through the
 * directory, the cached table groups and the cached chunk bitmaps (docs/asif.md "Tables,
 * chunk groups, entries", "Bitmap chunk", "What a reader must validate" points 6-8 and 10):
 * the reads an engine worker does, and BLOCK_STATUS. A partly written chunk is read per
 * block from its bitmap, so stale bytes in a chunk never reach a client. */
#include "backing/asif/asif_impl.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backing/format.h"
#include "util/bytes.h"
#include "util/log.h"

static uint64_t min_u64(uint64_t a, uint64_t b)
{
  return a < b ? a : b;
}

/* The zero run of [offset, + len) up to `limit` bytes. */
static int seg_zero(struct asif_seg *seg, uint64_t len, uint64_t limit)
{
  seg->data = false;
  seg->len = min_u64(len, limit);
  seg->host = 0;
  assert(seg->len > 0);
  return 0;
}

/* Where the bitmap bytes of data index `index`'s chunk lie in its group's bitmap chunk:
 * [*first, *first + *len). */
static void chunk_bitmap_span(const struct asif_header *h, uint32_t index, uint64_t *first,
                              uint32_t *len)
{
  uint64_t per_chunk = h->chunk_size / h->block_size;
  uint64_t k0 = (uint64_t)index * per_chunk;

  *first = k0 / 4u;
  *len = (uint32_t)((k0 + per_chunk + 3u) / 4u - *first);
}

/* True when every block of data index `index`'s chunk has state 00 or 01 in `item` (its
 * chunk bitmap bytes, the first at `first` in the bitmap chunk). */
static bool chunk_bitmap_valid(const struct asif_header *h, const struct asif_item *item,
                               uint32_t index, uint64_t first)
{
  uint64_t per_chunk = h->chunk_size / h->block_size;

  for (uint64_t b = 0; b < per_chunk; b++) {
    if (asif_bitmap_state(h, item->data, first, index, b) < 0) {
      return false;
    }
  }
  return true;
}

/* Maps the blocks of a partly written chunk from its bitmap: the run of blocks with the
 * state of the block holding loc->in_chunk, within the chunk and len. */
static int map_partial(struct asif *a, const struct asif_loc *loc, uint64_t raw_bitmap,
                       uint64_t chunk_host, uint64_t len, struct asif_seg *seg,
                       struct asif_need *need, char *why, size_t why_len)
{
  const struct asif_header *h = &a->h;
  uint64_t bm_host, first;
  uint32_t span;
  int rc = asif_bitmap_entry_decode(h, raw_bitmap, a->file_size, &bm_host, why, why_len);

  if (rc < 0) {
    return -EIO;
  }
  chunk_bitmap_span(h, loc->index, &first, &span);
  /* The bitmap chunk lies in the file (asif_bitmap_entry_decode), first + span <= cs. */
  const struct asif_item *item = asif_cache_find(&a->cache, ASIF_ITEM_BITMAP, bm_host + first);
  if (item == NULL) {
    *need = (struct asif_need){.kind = ASIF_ITEM_BITMAP, .host = bm_host + first, .len = span,
                               .index = loc->index, .first = first};
    return -EAGAIN;
  }
  if (item->bad) {
    snprintf(why, why_len, "bitmap chunk %llu: data entry %u's chunk has a block in state 10 "
             "or 11 (unseen)", (unsigned long long)(bm_host / h->chunk_size), loc->index);
    return -EIO;
  }
  uint64_t per_chunk = h->chunk_size / h->block_size;
  uint64_t block = loc->in_chunk / h->block_size;
  uint64_t want_end = loc->in_chunk + len; /* <= cs: the caller bounds len to the chunk */
  int state = asif_bitmap_state(h, item->data, first, loc->index, block);
  uint64_t b = block + 1;

  assert(state == 0 || state == 1);
  while (b < per_chunk && b * h->block_size < want_end &&
         asif_bitmap_state(h, item->data, first, loc->index, b) == state) {
    b++;
  }
  uint64_t run = min_u64(b * h->block_size, want_end) - loc->in_chunk;
  if (state == 0) {
    return seg_zero(seg, run, run);
  }
  seg->data = true;
  seg->len = run;
  seg->host = chunk_host + loc->in_chunk;
  return 0;
}

int asif_map_at(struct asif *a, uint64_t offset, uint64_t len, struct asif_seg *seg,
                struct asif_need *need, char *why, size_t why_len)
{
  const struct asif_header *h = &a->h;
  struct asif_loc loc;
  struct asif_entry e;

  assert(len > 0);
  asif_locate(h, offset, &loc);
  assert(loc.table < h->dir_entries);
  uint64_t table = a->dir[loc.table];
  uint64_t chunk_left = h->chunk_size - loc.in_chunk;

  if (table == 0) {
    return seg_zero(seg, len, h->table_span - offset % h->table_span);
  }
  if (table == ASIF_DIR_ENTRY_BAD) {
    snprintf(why, why_len, "directory entry %llu names no valid table",
             (unsigned long long)loc.table);
    return -EIO;
  }
  /* The table lies in the file (asif_directory_parse): no sum below overflows. */
  uint64_t group_host = table * h->chunk_size + (uint64_t)loc.group * h->group_bytes;
  const struct asif_item *item = asif_cache_find(&a->cache, ASIF_ITEM_GROUP, group_host);
  if (item == NULL) {
    *need = (struct asif_need){.kind = ASIF_ITEM_GROUP, .host = group_host,
                               .len = h->group_bytes};
    return -EAGAIN;
  }
  const uint8_t *group = item->data;
  uint64_t raw = bytes_get_be64(group + 8u * loc.index);
  if (asif_entry_decode(h, raw, a->file_size, &e, why, why_len) < 0) {
    return -EIO;
  }
  switch (e.status) {
  case ASIF_STATUS_NEVER:
  case ASIF_STATUS_UNMAPPED:
    return seg_zero(seg, len, chunk_left);
  case ASIF_STATUS_FULL:
    seg->data = true;
    seg->len = min_u64(len, chunk_left);
    seg->host = e.host + loc.in_chunk;
    return 0;
  case ASIF_STATUS_PARTIAL:
    return map_partial(a, &loc, bytes_get_be64(group + 8u * h->group_entries), e.host,
                       min_u64(len, chunk_left), seg, need, why, why_len);
  }
  assert(false);
  return -EIO;
}

/* Maps the first run of [offset, + len), loading what the cache misses. Returns as
 * asif_map_at (never -EAGAIN), or the file's -errno with why[] untouched. Lock not held. */
static int map_load(struct asif *a, uint64_t offset, uint64_t len, struct asif_seg *seg,
                    char *why, size_t why_len)
{
  for (;;) {
    struct asif_need need;
    struct asif_item *item;

    pthread_mutex_lock(&a->lock);
    int rc = asif_map_at(a, offset, len, seg, &need, why, why_len);
    pthread_mutex_unlock(&a->lock);
    if (rc != -EAGAIN) {
      return rc;
    }
    rc = asif_cache_read(a->file, need.kind, need.host, need.len, &item);
    if (rc < 0) {
      return rc; /* the file's own error: why[] stays as it was */
    }
    if (need.kind == ASIF_ITEM_BITMAP) {
      item->bad = !chunk_bitmap_valid(&a->h, item, need.index, need.first);
    }
    pthread_mutex_lock(&a->lock);
    asif_cache_insert(&a->cache, item);
    pthread_mutex_unlock(&a->lock);
  }
}

int asif_read_logical(struct asif *a, void *buf, uint64_t offset, uint64_t len, char *why,
                      size_t why_len)
{
  uint8_t *p = buf;
  uint64_t pend_host = 0, pend_len = 0; /* host bytes not yet read, for p - pend_len */

  while (len > 0) {
    struct asif_seg seg;
    int rc = map_load(a, offset, len, &seg, why, why_len);
    if (rc == 0 && pend_len > 0 && (!seg.data || pend_host + pend_len != seg.host)) {
      rc = format_pread(a->file, p - pend_len, pend_len, pend_host);
      pend_len = 0;
    }
    if (rc < 0) {
      return rc;
    }
    if (seg.data) {
      pend_host = pend_len == 0 ? seg.host : pend_host;
      pend_len += seg.len;
    } else {
      memset(p, 0, seg.len);
    }
    p += seg.len;
    offset += seg.len;
    len -= seg.len;
  }
  return pend_len > 0 ? format_pread(a->file, p - pend_len, pend_len, pend_host) : 0;
}

int asif_block_status(struct asif *a, struct backing_op *op)
{
  struct backing_extent *ext = op->buf;
  uint64_t offset = op->offset;
  uint64_t len = op->length;
  uint32_t n = 0;

  assert(op->extent_max >= 1 && len > 0);
  assert(offset <= a->h.size && len <= a->h.size - offset);
  while (len > 0) {
    struct asif_seg seg;
    char why[192] = "";
    int rc = map_load(a, offset, len, &seg, why, sizeof why);
    if (rc < 0 && n > 0) {
      break; /* the extents so far; the next request from here meets the error */
    }
    if (rc == -EIO && why[0] != '\0') {
      return asif_report(a, why);
    }
    if (rc < 0) {
      return rc;
    }
    uint32_t flags = seg.data ? 0 : BACKING_EXTENT_HOLE | BACKING_EXTENT_ZERO;
    if (n > 0 && ext[n - 1].flags == flags) {
      ext[n - 1].length += seg.len;
    } else if (n < op->extent_max) {
      ext[n++] = (struct backing_extent){.length = seg.len, .flags = flags,
                                         .depth = seg.data ? 1u : 0u};
    } else {
      break;
    }
    offset += seg.len;
    len -= seg.len;
  }
  op->extent_count = n;
  return 0;
}

int asif_report(struct asif *a, const char *why)
{
  if (!atomic_exchange(&a->reported, true)) {
    log_msg(LOG_ERROR, "asif image %s: %s; requests that reach it fail with EIO (further "
            "malformed entries are not logged)", a->name, why);
  }
  return -EIO;
}
