/* SPDX-License-Identifier: MIT */
/* qcow2_map.c: guest offset -> cluster kind and host offset, through the L1 table and the
 * cached L2 tables (QEMU's docs/interop/qcow2.txt, "Cluster mapping", "Extended L2
 * Entries", "Compressed Clusters Descriptor"). Every host offset an entry names is checked
 * against the file before anyone reads or writes through it. */
#include "backing/qcow2/qcow2_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

#define SECTOR 512ull

/* What one unit (a cluster, or a subcluster with extended L2 entries) maps to. */
struct unit {
  enum qcow2_kind kind;
  uint64_t host;   /* NORMAL: host byte of the unit's start */
  bool copied;
  uint64_t entry;
};

int qcow2_corrupt(struct qcow2 *q, const char *fmt, ...)
{
  char text[256];
  va_list ap;

  if (!q->meta_corrupt) {
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    log_msg(LOG_ERROR, "qcow2 image %s: %s: reads of it fail with EIO, writes are refused "
            "(check it with `qemu-img check`)",
            q->name != NULL ? q->name : "", text);
    q->meta_corrupt = true;
  }
  return -EIO;
}

int qcow2_compressed_extent(const struct qcow2 *q, uint64_t l2_entry, uint64_t *host_offset,
                            uint64_t *host_len)
{
  uint32_t x = 62 - (q->cluster_bits - 8);
  uint64_t off = l2_entry & ((1ull << x) - 1);
  uint64_t sectors = ((l2_entry >> x) & ((1ull << (q->cluster_bits - 8)) - 1)) + 1;
  uint64_t len = sectors * SECTOR - (off & (SECTOR - 1));
  uint64_t file_size = q->file->geo.size;

  if (off < q->cluster_size || off >= file_size) {
    return -EIO;
  }
  if (len > q->cluster_size + SECTOR) {
    len = q->cluster_size + SECTOR; /* a stream never needs more: the rest is padding */
  }
  if (len > file_size - off) {
    len = file_size - off; /* the image's last compressed cluster may end mid-sector */
  }
  *host_offset = off;
  *host_len = len;
  return 0;
}

/* Classifies unit `sub` (0 without extended L2) of entry `idx` of table t. */
static int unit_classify(struct qcow2 *q, const struct qcow2_l2_table *t, uint32_t idx,
                         uint32_t sub, struct unit *u)
{
  uint64_t e = q->extended_l2 ? t->entries[2 * (size_t)idx] : t->entries[idx];
  uint64_t bm = q->extended_l2 ? t->entries[2 * (size_t)idx + 1] : 0;
  uint64_t host = e & QCOW2_L2E_OFFSET_MASK;
  uint64_t h_off, h_len;

  memset(u, 0, sizeof *u);
  if (t->bad != NULL && (t->bad[idx / 64] >> (idx % 64)) & 1) {
    return qcow2_corrupt(q, "L2 table %#" PRIx64 " entry %u: its host cluster overlaps the "
                         "image's metadata", t->host_offset, idx);
  }
  u->entry = e;
  u->copied = (e & QCOW2_OFLAG_COPIED) != 0;
  if (e & QCOW2_OFLAG_COMPRESSED) {
    if (bm != 0 || qcow2_compressed_extent(q, e, &h_off, &h_len) < 0) {
      return qcow2_corrupt(q, "L2 table %#" PRIx64 " entry %u: bad compressed cluster descriptor",
                     t->host_offset, idx);
    }
    u->kind = QCOW2_COMPRESSED;
    u->copied = false;
    return 0;
  }
  if (host != 0 && (host % q->cluster_size != 0 || host >= q->file->geo.size)) {
    return qcow2_corrupt(q, "L2 table %#" PRIx64 " entry %u: cluster offset %#" PRIx64
                   " unaligned or past the end of the file", t->host_offset, idx, host);
  }
  if (q->extended_l2) {
    bool alloc = (bm >> sub) & 1, zero = (bm >> (32 + sub)) & 1;
    if ((e & QCOW2_OFLAG_ZERO) || (alloc && zero) || (host == 0 && (uint32_t)bm != 0)) {
      return qcow2_corrupt(q, "L2 table %#" PRIx64 " entry %u: bad extended entry (zero flag, or "
                     "subcluster bitmap %#" PRIx64 ")", t->host_offset, idx, bm);
    }
    u->kind = alloc ? QCOW2_NORMAL : zero ? QCOW2_ZERO : QCOW2_UNALLOC;
  } else if ((e & QCOW2_OFLAG_ZERO) && q->h.version >= 3) {
    u->kind = QCOW2_ZERO; /* bit 0 is reserved (always 0) in version 2 */
  } else {
    u->kind = host != 0 ? QCOW2_NORMAL : QCOW2_UNALLOC;
  }
  u->host = host + (uint64_t)sub * q->subcluster_size;
  return 0;
}

/* True when unit b continues run a (which started at guest offset `start` with `first`). */
static bool unit_continues(const struct unit *first, const struct unit *b, uint64_t start,
                           uint64_t unit_off)
{
  if (b->kind != first->kind || first->kind == QCOW2_COMPRESSED) {
    return false;
  }
  if (first->kind != QCOW2_NORMAL) {
    return true;
  }
  return b->copied == first->copied && b->host == first->host + (unit_off - start);
}

/* The L2 table for `offset`, or *t = NULL with out filled for an unallocated L1 entry. */
static int table_for(struct qcow2 *q, uint64_t offset, uint64_t end, bool io,
                     struct qcow2_map *out, struct qcow2_l2_table **t)
{
  uint64_t l1_index = offset >> (q->cluster_bits + q->l2_bits);
  uint64_t l1e, l2_off;

  *t = NULL;
  if (l1_index >= q->h.l1_size) {
    return qcow2_corrupt(q, "guest offset %#" PRIx64 " beyond the L1 table", offset);
  }
  l1e = q->l1[l1_index];
  l2_off = l1e & QCOW2_L1E_OFFSET_MASK;
  if (l2_off == 0) {
    out->kind = QCOW2_UNALLOC;
    out->length = end - offset;
    out->l2_dirty = q->l1_dirty;
    return 0;
  }
  if (l2_off % q->cluster_size != 0 || l2_off > q->file->geo.size ||
      q->cluster_size > q->file->geo.size - l2_off) {
    return qcow2_corrupt(q, "L1 entry %" PRIu64 ": L2 table offset %#" PRIx64
                   " unaligned or past the end of the file", l1_index, l2_off);
  }
  *t = io ? NULL : qcow2_cache_find(q, l2_off);
  if (io) {
    int rc = qcow2_cache_load_read(q, l2_off, t);
    if (rc < 0) {
      return rc;
    }
  } else if (*t == NULL) {
    out->cached_only_miss = true;
    return 0;
  }
  return 0;
}

static int map_common(struct qcow2 *q, uint64_t offset, uint64_t len, bool io,
                      struct qcow2_map *out)
{
  uint32_t table_shift = q->cluster_bits + q->l2_bits;
  uint64_t table_end = ((offset >> table_shift) + 1) << table_shift;
  uint64_t end = len < table_end - offset ? offset + len : table_end;
  uint64_t us = q->subcluster_size;
  uint64_t unit_off = offset / us * us;
  struct qcow2_l2_table *t;
  struct unit first, u;
  int rc;

  memset(out, 0, sizeof *out);
  rc = table_for(q, offset, end, io, out, &t);
  if (rc < 0 || t == NULL) {
    return rc;
  }
  out->l2_dirty = t->dirty || q->l1_dirty;
  rc = unit_classify(q, t, (uint32_t)((unit_off >> q->cluster_bits) & (q->l2_entries - 1)),
                     q->extended_l2 ? (uint32_t)((unit_off & (q->cluster_size - 1)) / us) : 0,
                     &first);
  if (rc < 0) {
    return rc;
  }
  if (first.kind == QCOW2_COMPRESSED) {
    uint64_t cluster_end = (offset | (q->cluster_size - 1)) + 1;
    end = end < cluster_end ? end : cluster_end;
  }
  for (uint64_t pos = unit_off + us; pos < end && first.kind != QCOW2_COMPRESSED; pos += us) {
    uint32_t idx = (uint32_t)((pos >> q->cluster_bits) & (q->l2_entries - 1));
    uint32_t sub = q->extended_l2 ? (uint32_t)((pos & (q->cluster_size - 1)) / us) : 0;
    rc = unit_classify(q, t, idx, sub, &u);
    if (rc < 0) {
      return rc;
    }
    if (!unit_continues(&first, &u, unit_off, pos)) {
      end = pos;
      break;
    }
  }
  out->kind = first.kind;
  out->length = end - offset;
  out->host_offset = first.kind == QCOW2_NORMAL ? first.host + (offset - unit_off) : 0;
  out->copied = first.kind == QCOW2_NORMAL && first.copied;
  out->l2_entry = first.entry;
  return 0;
}

int qcow2_map_range(struct qcow2 *q, uint64_t offset, uint64_t len, struct qcow2_map *out)
{
  return map_common(q, offset, len, true, out);
}

int qcow2_map_cached(struct qcow2 *q, uint64_t offset, uint64_t len, struct qcow2_map *out)
{
  return map_common(q, offset, len, false, out);
}
