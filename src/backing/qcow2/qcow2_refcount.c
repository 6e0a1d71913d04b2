/* SPDX-License-Identifier: MIT */
/* qcow2_refcount.c: the refcount table and refcount blocks of every width, cluster
 * allocation and deferred frees (QEMU's docs/interop/qcow2.txt, "Host cluster management").
 *
 * A few refcount blocks are cached whole (RC_CACHE_BLOCKS); changes stay in the cache,
 * with the range of bytes changed, until qcow2_refcount_write_dirty (before the sync the
 * L2 changes relying on them wait for) or the block's eviction. Allocation only appends at
 * q->alloc_end, past every cluster the file holds or a refcount marks used, so every
 * refcount at or past alloc_end is 0 and a freed cluster is never handed out again while
 * the node is open. The new refcount blocks and refcount table one allocation needs are
 * laid out in front of its data clusters and count themselves. */
#include "backing/qcow2/qcow2_impl.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backing/format.h"
#include "util/bytes.h"
#include "util/log.h"

/* Header fields rewritten when the refcount table moves: refcount_table_offset (be64 at 48)
 * and refcount_table_clusters (be32 at 56). */
#define HDR_REFTABLE_AT 48u
#define HDR_REFTABLE_LEN 12u
/* Highest host offset an L1/L2 entry can hold is below 2^56. */
#define HOST_OFFSET_LIMIT (1ull << 56)
/* Rounds of the allocation layout fixpoint before giving up (converges in 2 or 3). */
#define LAYOUT_ROUNDS 64
/* Refcount blocks held in memory (each one cluster). */
#define RC_CACHE_BLOCKS 4

struct rc_slot {
  uint64_t ri;     /* refcount table index of the block */
  uint64_t lo, hi; /* bytes of buf changed since written: [lo, hi); lo == hi: clean */
  uint64_t used;   /* tick of the last use (LRU) */
  uint8_t *buf;    /* the block, cluster_size bytes */
  bool valid;
};

struct qcow2_refblock_cache {
  struct rc_slot slot[RC_CACHE_BLOCKS];
  uint64_t tick;
};

static int rc_sync(struct qcow2 *q)
{
  if (q->base.opts.sync == SYNC_NONE) {
    return 0;
  }
  return format_flush(q->file);
}

static uint64_t rc_max(const struct qcow2 *q)
{
  return q->refcount_bits == 64 ? UINT64_MAX : (1ull << q->refcount_bits) - 1;
}

/* The refcount at bit offset `bit` of buf (the spec's packing: entries of fewer than 8 bits
 * fill each byte from its least significant bit; wider ones are big-endian). */
static uint64_t rc_entry_get(const struct qcow2 *q, const uint8_t *buf, uint64_t bit)
{
  uint32_t bits = q->refcount_bits;
  uint64_t v = 0;

  if (bits < 8) {
    return (uint64_t)(buf[bit / 8] >> (bit % 8)) & ((1u << bits) - 1);
  }
  for (uint32_t i = 0; i < bits / 8; i++) {
    v = (v << 8) | buf[bit / 8 + i];
  }
  return v;
}

static void rc_entry_set(const struct qcow2 *q, uint8_t *buf, uint64_t bit, uint64_t v)
{
  uint32_t bits = q->refcount_bits;

  if (bits < 8) {
    uint8_t mask = (uint8_t)(((1u << bits) - 1) << (bit % 8));
    buf[bit / 8] = (uint8_t)((buf[bit / 8] & ~mask) | ((v << (bit % 8)) & mask));
    return;
  }
  for (uint32_t i = bits / 8; i > 0; i--) {
    buf[bit / 8 + i - 1] = (uint8_t)v;
    v >>= 8;
  }
}

/* Byte span [*at, *at + *len) inside a refcount block holding entries [i0, i1). */
static void rc_span(const struct qcow2 *q, uint64_t i0, uint64_t i1, uint64_t *at,
                    uint64_t *len)
{
  uint64_t b0 = i0 * q->refcount_bits, b1 = i1 * q->refcount_bits;
  *at = b0 / 8;
  *len = (b1 + 7) / 8 - *at;
}

static bool rc_block_missing(const struct qcow2 *q, uint64_t ri)
{
  return ri >= q->reftable_entries || q->reftable[ri] == 0;
}

/* ---- punching freed clusters ------------------------------------------------------------ */

int qcow2_file_op(struct qcow2 *q, enum backing_op_type type, uint64_t offset, uint64_t len)
{
  struct backing_op op;

  memset(&op, 0, sizeof op);
  op.type = type;
  op.offset = offset;
  op.length = len;
  return format_submit_wait(q->file, &op);
}

/* Discards host bytes [offset, +len) of the image file (clusters whose refcount reached 0).
 * Advisory: errors are ignored. Worker thread. */
static void rc_punch(struct qcow2 *q, uint64_t offset, uint64_t len)
{
  if (!q->file->geo.can_trim || len == 0 || offset >= q->file->geo.size) {
    return;
  }
  if (len > q->file->geo.size - offset) {
    len = q->file->geo.size - offset;
  }
  (void)qcow2_file_op(q, BACKING_OP_TRIM, offset, len);
}

/* ---- the refcount block cache ----------------------------------------------------------- */

static int rc_slot_write(struct qcow2 *q, struct rc_slot *sl)
{
  int rc = 0;

  if (sl->valid && sl->hi > sl->lo) {
    rc = format_pwrite(q->file, sl->buf + sl->lo, sl->hi - sl->lo, q->reftable[sl->ri] + sl->lo);
  }
  if (rc == 0) {
    sl->lo = sl->hi = 0;
  }
  return rc;
}

int qcow2_refcount_write_dirty(struct qcow2 *q)
{
  int rc = 0;

  for (int i = 0; q->refblocks != NULL && i < RC_CACHE_BLOCKS; i++) {
    int r = rc_slot_write(q, &q->refblocks->slot[i]);
    rc = rc == 0 ? r : rc;
  }
  return rc;
}

bool qcow2_refcount_dirty(const struct qcow2 *q)
{
  for (int i = 0; q->refblocks != NULL && i < RC_CACHE_BLOCKS; i++) {
    const struct rc_slot *sl = &q->refblocks->slot[i];
    if (sl->valid && sl->hi > sl->lo) {
      return true;
    }
  }
  return false;
}

/* The cached slot of existing block ri, or NULL. */
static struct rc_slot *rc_cache_find(struct qcow2 *q, uint64_t ri)
{
  for (int i = 0; q->refblocks != NULL && i < RC_CACHE_BLOCKS; i++) {
    struct rc_slot *sl = &q->refblocks->slot[i];
    if (sl->valid && sl->ri == ri) {
      sl->used = ++q->refblocks->tick;
      return sl;
    }
  }
  return NULL;
}

/* The slot holding existing block ri, read on a miss into the least recently used slot
 * (its changes written first). Returns 0 and *out or -errno. */
static int rc_cache_get(struct qcow2 *q, uint64_t ri, struct rc_slot **out)
{
  struct rc_slot *sl = rc_cache_find(q, ri), *victim;
  int rc;

  if (sl != NULL) {
    *out = sl;
    return 0;
  }
  if (q->refblocks == NULL && (q->refblocks = calloc(1, sizeof *q->refblocks)) == NULL) {
    return -ENOMEM;
  }
  victim = &q->refblocks->slot[0];
  for (int i = 1; i < RC_CACHE_BLOCKS; i++) {
    sl = &q->refblocks->slot[i];
    if (!sl->valid || (victim->valid && sl->used < victim->used)) {
      victim = sl;
    }
  }
  rc = rc_slot_write(q, victim);
  if (rc < 0) {
    return rc;
  }
  victim->valid = false;
  if (victim->buf == NULL && (victim->buf = malloc(q->cluster_size)) == NULL) {
    return -ENOMEM;
  }
  rc = format_pread(q->file, victim->buf, q->cluster_size, q->reftable[ri]);
  if (rc < 0) {
    return rc;
  }
  victim->ri = ri;
  victim->valid = true;
  victim->lo = victim->hi = 0;
  victim->used = ++q->refblocks->tick;
  *out = victim;
  return 0;
}

/* ---- open and close --------------------------------------------------------------------- */

/* The highest cluster index + 1 the refcount block at `block` (for refcount block index ri)
 * marks used, or 0. Returns 0 or -errno. */
static int rc_block_used_end(struct qcow2 *q, uint64_t ri, uint64_t block, uint64_t *end)
{
  uint8_t *buf = malloc(q->cluster_size);
  int rc;

  *end = 0;
  if (buf == NULL) {
    return -ENOMEM;
  }
  rc = format_pread(q->file, buf, q->cluster_size, block);
  for (uint64_t i = q->refblock_entries; rc == 0 && i > 0; i--) {
    if (rc_entry_get(q, buf, (i - 1) * q->refcount_bits) != 0) {
      *end = ri * q->refblock_entries + i;
      break;
    }
  }
  free(buf);
  return rc;
}

/* Reads the table (entries big-endian on disk) and checks each entry: cluster aligned,
 * reserved bits clear, inside the file. */
static int rc_table_read(struct qcow2 *q, uint64_t file_size, char *why, size_t why_size)
{
  uint64_t bytes = (uint64_t)q->h.refcount_table_clusters * q->cluster_size;
  uint8_t *raw;
  int rc;

  q->reftable_entries = bytes / 8;
  q->reftable = calloc(q->reftable_entries ? q->reftable_entries : 1, sizeof(uint64_t));
  raw = malloc(bytes ? bytes : 1);
  if (q->reftable == NULL || raw == NULL) {
    free(raw);
    return -ENOMEM;
  }
  rc = bytes ? format_pread(q->file, raw, bytes, q->h.refcount_table_offset) : 0;
  for (uint64_t i = 0; rc == 0 && i < q->reftable_entries; i++) {
    uint64_t e = bytes_get_be64(raw + i * 8);
    if (e != 0 && ((e & (q->cluster_size - 1)) != 0 || e >= file_size ||
                   q->cluster_size > file_size - e)) {
      if (why != NULL && why_size > 0) {
        snprintf(why, why_size, "refcount table entry %llu (0x%llx) is not a cluster inside "
                 "the image", (unsigned long long)i, (unsigned long long)e);
      }
      rc = -EINVAL;
    }
    q->reftable[i] = e;
  }
  free(raw);
  return rc;
}

int qcow2_refcount_open(struct qcow2 *q, char *why, size_t why_size)
{
  uint64_t file_size = q->file->geo.size;
  uint64_t end_clusters;
  int rc;

  q->refcount_bits = 1u << q->h.refcount_order;
  q->refblock_entries = q->cluster_size * 8 / q->refcount_bits;
  rc = rc_table_read(q, file_size, why, why_size);
  if (rc < 0) {
    return rc;
  }
  end_clusters = bytes_align_up(file_size, q->cluster_size) / q->cluster_size;
  /* Only blocks counting clusters at or past the end of the file can raise alloc_end. */
  for (uint64_t ri = 0; ri < q->reftable_entries; ri++) {
    uint64_t used_end;
    if (q->reftable[ri] == 0 || (ri + 1) * q->refblock_entries <= end_clusters) {
      continue;
    }
    rc = rc_block_used_end(q, ri, q->reftable[ri], &used_end);
    if (rc < 0) {
      return rc;
    }
    if (used_end > end_clusters) {
      end_clusters = used_end;
    }
  }
  q->alloc_end = end_clusters * q->cluster_size;
  return 0;
}

void qcow2_refcount_close(struct qcow2 *q)
{
  qcow2_write_close(q); /* the node's close runs this file's close only */
  for (int i = 0; q->refblocks != NULL && i < RC_CACHE_BLOCKS; i++) {
    free(q->refblocks->slot[i].buf);
  }
  free(q->refblocks);
  q->refblocks = NULL;
  free(q->reftable);
  q->reftable = NULL;
  q->reftable_entries = 0;
  free(q->deferred_free);
  q->deferred_free = NULL;
  q->deferred_len = q->deferred_cap = 0;
}

/* ---- reading and changing refcounts ----------------------------------------------------- */

int qcow2_refcount_get(struct qcow2 *q, uint64_t host_offset, uint64_t *out)
{
  uint64_t c = host_offset / q->cluster_size;
  uint64_t ri = c / q->refblock_entries, i = c % q->refblock_entries;
  uint64_t at, len;
  uint8_t buf[8];
  int rc;

  *out = 0;
  if (rc_block_missing(q, ri)) {
    return 0;
  }
  struct rc_slot *sl = rc_cache_find(q, ri);
  if (sl != NULL) {
    *out = rc_entry_get(q, sl->buf, i * q->refcount_bits);
    return 0;
  }
  rc_span(q, i, i + 1, &at, &len);
  rc = format_pread(q->file, buf, len, q->reftable[ri] + at);
  if (rc == 0) {
    *out = rc_entry_get(q, buf, i * q->refcount_bits - at * 8);
  }
  return rc;
}

/* Adds delta to the refcounts of clusters [c0, c0 + n) counted by the one existing block
 * ri, in its cached copy; punches the runs that reach 0. -EIO on overflow or underflow
 * (nothing changed). */
static int rc_block_add(struct qcow2 *q, uint64_t ri, uint64_t c0, uint64_t n, int delta)
{
  uint64_t i0 = c0 - ri * q->refblock_entries, at, len, run = 0;
  uint32_t bits = q->refcount_bits;
  struct rc_slot *sl;
  int rc;

  assert(!rc_block_missing(q, ri) && i0 + n <= q->refblock_entries);
  rc = rc_cache_get(q, ri, &sl);
  if (rc < 0) {
    return rc;
  }
  for (uint64_t i = i0; i < i0 + n; i++) {
    uint64_t v = rc_entry_get(q, sl->buf, i * bits);
    if ((delta < 0 && v == 0) || (delta > 0 && v == rc_max(q))) {
      log_error("qcow2: refcount %s of host cluster 0x%llx: the image is corrupt",
                delta < 0 ? "underflow" : "overflow",
                (unsigned long long)((ri * q->refblock_entries + i) * q->cluster_size));
      q->meta_corrupt = true;
      return -EIO;
    }
  }
  for (uint64_t i = i0; i < i0 + n; i++) {
    uint64_t v = rc_entry_get(q, sl->buf, i * bits);
    rc_entry_set(q, sl->buf, i * bits, delta < 0 ? v - 1 : v + 1);
  }
  rc_span(q, i0, i0 + n, &at, &len);
  if (sl->hi > sl->lo) {
    sl->lo = sl->lo < at ? sl->lo : at;
    sl->hi = sl->hi > at + len ? sl->hi : at + len;
  } else {
    sl->lo = at;
    sl->hi = at + len;
  }
  /* Punch the runs of clusters whose refcount is now 0. */
  for (uint64_t i = i0; delta < 0 && i <= i0 + n; i++) {
    if (i < i0 + n && rc_entry_get(q, sl->buf, i * bits) == 0) {
      run++;
    } else if (run > 0) {
      rc_punch(q, (ri * q->refblock_entries + i - run) * q->cluster_size,
               run * q->cluster_size);
      run = 0;
    }
  }
  return 0;
}

int qcow2_refcount_update(struct qcow2 *q, uint64_t host_offset, uint64_t len, int delta)
{
  uint64_t c = host_offset / q->cluster_size;
  uint64_t end = bytes_align_up(host_offset + len, q->cluster_size) / q->cluster_size;

  assert(delta == 1 || delta == -1);
  while (c < end) {
    uint64_t ri = c / q->refblock_entries;
    uint64_t n = (ri + 1) * q->refblock_entries - c;
    int rc;
    if (n > end - c) {
      n = end - c;
    }
    if (rc_block_missing(q, ri)) {
      log_error("qcow2: host cluster 0x%llx has no refcount block: the image is corrupt",
                (unsigned long long)(c * q->cluster_size));
      q->meta_corrupt = true;
      return -EIO;
    }
    rc = rc_block_add(q, ri, c, n, delta);
    if (rc < 0) {
      return rc;
    }
    c += n;
  }
  return 0;
}

/* ---- allocation ------------------------------------------------------------------------- */

/* Where one allocation puts things, in clusters: k new refcount blocks at start, then t
 * clusters of a new refcount table (0: the table keeps its place), then n data clusters. */
struct rc_layout {
  uint64_t start, k, t, n;
  uint64_t table_entries; /* entries of the refcount table after the allocation */
};

static uint64_t rc_layout_total(const struct rc_layout *l)
{
  return l->k + l->t + l->n;
}

/* Solves the layout: the blocks and table must count every cluster of the whole run,
 * themselves included. Returns 0 or -EFBIG / -EIO. */
static int rc_layout_solve(struct qcow2 *q, struct rc_layout *l)
{
  uint64_t per_cluster = q->cluster_size / 8;

  l->k = 0;
  l->t = 0;
  l->table_entries = q->reftable_entries;
  for (int round = 0; round < LAYOUT_ROUNDS; round++) {
    uint64_t end = l->start + rc_layout_total(l);
    uint64_t rmin = l->start / q->refblock_entries, rmax = (end - 1) / q->refblock_entries;
    uint64_t k = 0, t = l->t;
    if (end > HOST_OFFSET_LIMIT / q->cluster_size) {
      return -EFBIG;
    }
    if (rmax >= l->table_entries) {
      uint64_t want = l->table_entries * 2 > rmax + 1 ? l->table_entries * 2 : rmax + 1;
      l->table_entries = bytes_align_up(want, per_cluster);
      t = l->table_entries / per_cluster;
    }
    for (uint64_t ri = rmin; ri <= rmax; ri++) {
      k += rc_block_missing(q, ri);
    }
    if (k == l->k && t == l->t) {
      return 0;
    }
    l->k = k > l->k ? k : l->k;
    l->t = t;
  }
  return -EIO;
}

/* Writes the new blocks (refcounts of the run set in them) and the new table, if any, and
 * syncs; then points the header at the new table. Updates q->reftable. */
static int rc_layout_write(struct qcow2 *q, const struct rc_layout *l)
{
  uint64_t cs = q->cluster_size, end = l->start + rc_layout_total(l);
  uint64_t rmin = l->start / q->refblock_entries, j = 0;
  uint64_t *table = q->reftable;
  uint8_t *blocks = NULL, *tbuf = NULL;
  int rc = 0;

  if (l->k > 0 && (blocks = calloc(l->k, cs)) == NULL) {
    return -ENOMEM;
  }
  if (l->t > 0) {
    table = calloc(l->table_entries, sizeof *table);
    tbuf = calloc(l->t, cs);
    if (table == NULL || tbuf == NULL) {
      rc = -ENOMEM;
      goto out;
    }
    memcpy(table, q->reftable, q->reftable_entries * sizeof *table);
  }
  for (uint64_t ri = rmin; j < l->k; ri++) {
    uint64_t c0 = ri * q->refblock_entries, c1 = c0 + q->refblock_entries;
    if (!rc_block_missing(q, ri)) {
      continue;
    }
    c0 = c0 > l->start ? c0 : l->start;
    c1 = c1 < end ? c1 : end;
    for (uint64_t c = c0; c < c1; c++) {
      rc_entry_set(q, blocks + j * cs, (c % q->refblock_entries) * q->refcount_bits, 1);
    }
    table[ri] = (l->start + j) * cs;
    j++;
  }
  if (q->file->geo.size < end * cs) {
    q->file->geo.size = end * cs; /* the file grows with the writes below */
  }
  if (l->k > 0) {
    rc = format_pwrite(q->file, blocks, l->k * cs, l->start * cs);
  }
  if (rc == 0 && l->t > 0) {
    for (uint64_t i = 0; i < l->table_entries; i++) {
      bytes_put_be64(tbuf + i * 8, table[i]);
    }
    rc = format_pwrite(q->file, tbuf, l->t * cs, (l->start + l->k) * cs);
  }
  if (rc == 0 && (l->k > 0 || l->t > 0)) {
    rc = rc_sync(q);
  }
  if (rc == 0 && l->t > 0) {
    uint8_t hdr[HDR_REFTABLE_LEN];
    bytes_put_be64(hdr, (l->start + l->k) * cs);
    bytes_put_be32(hdr + 8, (uint32_t)l->t);
    rc = format_pwrite(q->file, hdr, sizeof hdr, HDR_REFTABLE_AT);
    if (rc == 0) {
      rc = rc_sync(q);
    }
  }
  if (rc == 0 && l->t > 0) {
    uint64_t old_at = q->h.refcount_table_offset, old_len = q->reftable_entries * 8;
    free(q->reftable);
    q->reftable = table;
    q->reftable_entries = l->table_entries;
    q->h.refcount_table_offset = (l->start + l->k) * cs;
    q->h.refcount_table_clusters = (uint32_t)l->t;
    table = NULL;
    if (old_at != 0 && old_len > 0) {
      rc = qcow2_refcount_free_deferred(q, old_at, old_len);
    }
  } else if (rc == 0 && l->k > 0) {
    /* The pointers to the new blocks, in the table in place (a contiguous run of it). */
    uint64_t r0 = (l->start) / q->refblock_entries, r1 = (end - 1) / q->refblock_entries;
    uint8_t *ebuf = malloc((r1 - r0 + 1) * 8);
    if (ebuf == NULL) {
      rc = -ENOMEM;
    } else {
      for (uint64_t ri = r0; ri <= r1; ri++) {
        bytes_put_be64(ebuf + (ri - r0) * 8, table[ri]);
      }
      rc = format_pwrite(q->file, ebuf, (r1 - r0 + 1) * 8, q->h.refcount_table_offset + r0 * 8);
      free(ebuf);
    }
  }
  if (rc < 0 && l->t == 0) {
    /* Forget the pointers to blocks that may not have reached the file. */
    for (uint64_t ri = rmin; ri < q->reftable_entries; ri++) {
      if (q->reftable[ri] >= l->start * cs && q->reftable[ri] < (l->start + l->k) * cs) {
        q->reftable[ri] = 0;
      }
    }
  }
out:
  if (table != q->reftable) {
    free(table);
  }
  free(tbuf);
  free(blocks);
  return rc;
}

int qcow2_alloc_clusters(struct qcow2 *q, uint64_t n, uint64_t *host_offset)
{
  struct rc_layout l = {.start = q->alloc_end / q->cluster_size, .n = n};
  uint64_t end, rmin, rmax;
  int rc;

  assert(n > 0 && q->alloc_end % q->cluster_size == 0);
  rc = rc_layout_solve(q, &l);
  if (rc < 0) {
    return rc;
  }
  end = l.start + rc_layout_total(&l);
  rmin = l.start / q->refblock_entries;
  rmax = (end - 1) / q->refblock_entries;
  /* The run's counts in blocks that exist already (the new blocks carry their own). */
  for (uint64_t ri = rmin; rc == 0 && ri <= rmax; ri++) {
    uint64_t c0 = ri * q->refblock_entries, c1 = c0 + q->refblock_entries;
    if (rc_block_missing(q, ri)) {
      continue;
    }
    c0 = c0 > l.start ? c0 : l.start;
    c1 = c1 < end ? c1 : end;
    rc = rc_block_add(q, ri, c0, c1 - c0, +1);
  }
  /* A new block or table may be counted in an existing block: that count reaches the file
   * (and the sync after the new blocks) before any pointer to them. */
  if (rc == 0 && (l.k > 0 || l.t > 0)) {
    rc = qcow2_refcount_write_dirty(q);
  }
  if (rc == 0) {
    rc = rc_layout_write(q, &l);
  }
  /* Past the run even on failure: counts already added leak, and are never reused. */
  q->alloc_end = end * q->cluster_size;
  if (rc < 0) {
    return rc;
  }
  *host_offset = (l.start + l.k + l.t) * q->cluster_size;
  return 0;
}

/* ---- deferred frees --------------------------------------------------------------------- */

int qcow2_refcount_free_deferred(struct qcow2 *q, uint64_t host_offset, uint64_t len)
{
  if (len == 0) {
    return 0;
  }
  if (q->deferred_len > 0) {
    uint64_t *last = &q->deferred_free[q->deferred_len - 2];
    if (last[0] + last[1] == host_offset &&
        host_offset % q->cluster_size == 0 && last[1] % q->cluster_size == 0) {
      last[1] += len; /* extends the previous run */
      return 0;
    }
  }
  if (q->deferred_len + 2 > q->deferred_cap) {
    size_t cap = q->deferred_cap ? q->deferred_cap * 2 : 64;
    uint64_t *p = realloc(q->deferred_free, cap * sizeof *p);
    if (p == NULL) {
      return -ENOMEM;
    }
    q->deferred_free = p;
    q->deferred_cap = cap;
  }
  q->deferred_free[q->deferred_len++] = host_offset;
  q->deferred_free[q->deferred_len++] = len;
  return 0;
}

int qcow2_refcount_run_deferred(struct qcow2 *q)
{
  int rc = 0;

  /* Emptied first: a failed decrement leaks its clusters rather than repeating. */
  for (size_t i = 0; i < q->deferred_len; i += 2) {
    int r = qcow2_refcount_update(q, q->deferred_free[i], q->deferred_free[i + 1], -1);
    if (r < 0 && rc == 0) {
      rc = r;
    }
  }
  q->deferred_len = 0;
  return rc;
}
