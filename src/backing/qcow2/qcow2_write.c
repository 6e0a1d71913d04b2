/* SPDX-License-Identifier: MIT */
/* qcow2_write.c: writes with copy-on-write, TRIM and WRITE_ZEROES (QEMU's
 * docs/interop/qcow2.txt: "Cluster mapping", "Extended L2 Entries").
 *
 * Each guest cluster a request touches is handled under q->lock: a cluster whose L2 entry
 * is a normal cluster with COPIED (refcount 1) is written in place; any other (unallocated,
 * zero, compressed, or shared with an internal snapshot) gets a new host cluster holding
 * the old contents with the new bytes on top, then its L2 entry points there and the old
 * host cluster is freed once that entry is durable (deferred free). An L2 table shared with
 * a snapshot (L1 entry without COPIED) is copied to a new cluster first. The new clusters of
 * one request's run of allocating clusters are allocated together, contiguously.
 *
 * With extended L2 entries a cluster is 32 subclusters: only the subclusters a write
 * touches become allocated, and only a partly written one is filled from its old state. A
 * standard entry is handled as one subcluster the size of the cluster. */
#include "backing/qcow2/qcow2_impl.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backing/format.h"
#include "util/log.h"

#define WR_ALL_SUBS 0xffffffffull
/* Most guest bytes one batch covers (WRITE_ZEROES of a v2 image allocates their zeroes). */
#define WR_CHUNK_MAX (32ull << 20)

/* Old state of one cluster's L2 entry, decoded. Masks have one bit per subcluster. */
struct wr_old {
  uint64_t word;       /* the entry (standard part) */
  uint64_t bitmap;     /* extended L2: the subcluster bitmap; else 0 */
  uint64_t off;        /* host cluster offset, or 0 */
  bool compressed;
  bool copied;
  uint32_t alloc_mask; /* subclusters whose data is at off (compressed: all) */
  uint32_t zero_mask;  /* subclusters that read as zeroes */
};

/* One data write of a batch: len bytes from data (or owned, a buffer the batch frees) to
 * host offset host. */
struct wr_io {
  uint64_t host;
  const uint8_t *data;
  uint8_t *owned;
  uint64_t len;
};

/* One L2 entry a batch changes once its data is written. */
struct wr_item {
  uint64_t gcluster;
  uint64_t word, bitmap; /* the new entry */
  struct wr_old old;     /* the entry it replaces */
  bool free_old;         /* the old host cluster (or compressed extent) is dropped */
};

/* The writes to the clusters of one L2 table within one request, planned under q->lock,
 * written without it (the clusters are marked in flight, so no other op touches their
 * entries meanwhile), and committed to the table under the lock again. New clusters come
 * from [next, + left clusters), allocated ahead for a run of allocating clusters. */
struct wr_batch {
  uint64_t next, left;
  struct wr_io *io;
  size_t nio;
  struct wr_item *item;
  size_t nitem;
};

static uint32_t wr_nsub(const struct qcow2 *q)
{
  return q->extended_l2 ? QCOW2_SUBCLUSTERS : 1;
}

static uint64_t wr_ss(const struct qcow2 *q)
{
  return q->extended_l2 ? q->cluster_size / QCOW2_SUBCLUSTERS : q->cluster_size;
}

static uint64_t *wr_entry(const struct qcow2 *q, struct qcow2_l2_table *t, uint64_t guest)
{
  uint64_t i = (guest >> q->cluster_bits) & (q->l2_entries - 1);
  return &t->entries[q->extended_l2 ? 2 * i : i];
}

static int wr_corrupt(struct qcow2 *q, uint64_t guest, const char *what)
{
  q->meta_corrupt = true;
  log_error("qcow2: the L2 entry of guest offset 0x%llx %s: the image is corrupt",
            (unsigned long long)guest, what);
  return -EIO;
}

/* Decodes and checks the entry for the cluster at guest offset `guest`. Returns 0 or -EIO
 * (an offset outside the file or unaligned, flags the spec forbids). */
static int wr_decode(struct qcow2 *q, const uint64_t *e, uint64_t guest,
                     struct wr_old *o)
{
  memset(o, 0, sizeof *o);
  o->word = e[0];
  o->bitmap = q->extended_l2 ? e[1] : 0;
  o->compressed = (o->word & QCOW2_OFLAG_COMPRESSED) != 0;
  o->copied = (o->word & QCOW2_OFLAG_COPIED) != 0;
  if (o->compressed) {
    uint64_t at, len;
    if (qcow2_compressed_extent(q, o->word, &at, &len) < 0) {
      return wr_corrupt(q, guest, "points outside the image");
    }
    o->alloc_mask = (uint32_t)((1ull << wr_nsub(q)) - 1);
    return 0;
  }
  o->off = o->word & QCOW2_L2E_OFFSET_MASK;
  /* The image's last cluster may end past the end of the file (QEMU writes only the
   * subclusters, or the bytes, it needs): a cluster that starts inside the file is valid,
   * and a write into its tail grows the file by less than one cluster. */
  if (o->off % q->cluster_size != 0 || (o->off != 0 && o->off >= q->file->geo.size)) {
    return wr_corrupt(q, guest, "points outside the image");
  }
  if (q->extended_l2) {
    o->alloc_mask = (uint32_t)o->bitmap;
    o->zero_mask = (uint32_t)(o->bitmap >> 32);
    if ((o->alloc_mask & o->zero_mask) != 0 || (o->alloc_mask != 0 && o->off == 0) ||
        (o->word & QCOW2_OFLAG_ZERO) != 0) {
      return wr_corrupt(q, guest, "has a subcluster bitmap the spec forbids");
    }
  } else if ((o->word & QCOW2_OFLAG_ZERO) != 0) {
    if (q->h.version < 3) {
      return wr_corrupt(q, guest, "has the zero flag in a version 2 image");
    }
    o->zero_mask = 1;
  } else if (o->off != 0) {
    o->alloc_mask = 1;
  }
  return 0;
}

/* Mask of subclusters [s0, s1]. */
static uint32_t wr_mask(uint32_t s0, uint32_t s1)
{
  return (uint32_t)(((2ull << s1) - 1) & ~((1ull << s0) - 1));
}

/* Frees (deferred) the host clusters the old entry holds. */
static int wr_free_old(struct qcow2 *q, const struct wr_old *o)
{
  uint64_t at, len;

  if (o->compressed) {
    if (qcow2_compressed_extent(q, o->word, &at, &len) < 0) {
      return -EIO;
    }
    return qcow2_refcount_free_deferred(q, at, len);
  }
  if (o->off != 0) {
    return qcow2_refcount_free_deferred(q, o->off, q->cluster_size);
  }
  return 0;
}

/* ---- L2 tables -------------------------------------------------------------------------- */

/* The L2 table holding guest offset `guest`, writable (its L1 entry has COPIED) and pinned:
 * a table shared with a snapshot is copied first; a missing one is allocated when `create`,
 * else *out is NULL. Returns 0 or -errno. Lock held. */
static int wr_l2_get(struct qcow2 *q, uint64_t guest, bool create, struct qcow2_l2_table **out)
{
  uint64_t l1i = guest >> (q->cluster_bits + q->l2_bits);
  uint64_t l1e, old, fresh;
  struct qcow2_l2_table *src = NULL, *t = NULL;
  int rc;

  *out = NULL;
  if (l1i >= q->h.l1_size) {
    return wr_corrupt(q, guest, "lies past the L1 table");
  }
  l1e = q->l1[l1i];
  old = l1e & QCOW2_L1E_OFFSET_MASK;
  if (old != 0 && (l1e & QCOW2_OFLAG_COPIED) != 0) {
    rc = qcow2_cache_load(q, old, &t);
    if (rc == 0) {
      t->pins++;
      *out = t;
    }
    return rc;
  }
  if (old == 0 && !create) {
    return 0;
  }
  if (old != 0) {
    rc = qcow2_cache_load(q, old, &src);
    if (rc < 0) {
      return rc;
    }
    src->pins++;
  }
  rc = qcow2_alloc_clusters(q, 1, &fresh);
  if (rc == 0) {
    rc = qcow2_cache_new(q, fresh, &t);
  }
  if (rc == 0 && src != NULL) {
    size_t words = (size_t)q->l2_entries * (q->extended_l2 ? 2 : 1);
    memcpy(t->entries, src->entries, words * sizeof(uint64_t));
  }
  if (src != NULL) {
    src->pins--;
  }
  if (rc < 0) {
    return rc;
  }
  q->l1[l1i] = fresh | QCOW2_OFLAG_COPIED;
  q->l1_dirty = true;
  t->pins++;
  *out = t;
  return old != 0 ? qcow2_refcount_free_deferred(q, old, q->cluster_size) : 0;
}

static void wr_l2_put(struct qcow2_l2_table *t)
{
  if (t != NULL) {
    assert(t->pins > 0);
    t->pins--;
  }
}

/* ---- filling a cluster buffer from the old state ---------------------------------------- */

/* Fills the subclusters in `fill` of buf (cluster bytes from span_at on) with what they
 * read as under the old entry; `inflated` holds a compressed cluster's data. */
static int wr_fill(struct qcow2 *q, const struct wr_old *o, uint64_t gcluster, uint32_t fill,
                   uint8_t *buf, uint64_t span_at, const uint8_t *inflated)
{
  uint64_t ss = wr_ss(q);
  uint32_t s = 0, nsub = wr_nsub(q);
  int rc = 0;

  while (rc == 0 && s < nsub) {
    uint32_t kind, e;
    uint64_t at, len;
    if ((fill & (1u << s)) == 0) {
      s++;
      continue;
    }
    kind = (o->alloc_mask >> s) & 1 ? 2 : ((o->zero_mask >> s) & 1 ? 1 : 0);
    for (e = s + 1; e < nsub && (fill & (1u << e)) != 0; e++) {
      uint32_t k = (o->alloc_mask >> e) & 1 ? 2 : ((o->zero_mask >> e) & 1 ? 1 : 0);
      if (k != kind) {
        break;
      }
    }
    at = s * ss;
    len = (e - s) * ss;
    if (kind == 2 && inflated != NULL) {
      memcpy(buf + at - span_at, inflated + at, len);
    } else if (kind == 2) {
      rc = format_pread_zero_tail(q->file, buf + at - span_at, len, o->off + at);
    } else if (kind == 1) {
      memset(buf + at - span_at, 0, len);
    } else {
      rc = format_pread_zero_tail(q->backing_node, buf + at - span_at, len, gcluster + at);
    }
    s = e;
  }
  return rc;
}

/* Inflates the compressed cluster of `o` into out (cluster_size bytes). */
static int wr_inflate(struct qcow2 *q, const struct wr_old *o, uint8_t *out)
{
  uint64_t at, len;
  uint8_t *raw;
  int rc;

  if (qcow2_compressed_extent(q, o->word, &at, &len) < 0) {
    return -EIO;
  }
  raw = malloc(len);
  if (raw == NULL) {
    return -ENOMEM;
  }
  rc = format_pread(q->file, raw, len, at);
  if (rc == 0) {
    rc = qcow2_decompress(q, raw, len, out);
  }
  free(raw);
  return rc;
}

/* ---- one cluster ------------------------------------------------------------------------ */

/* True when the write to the old entry needs a new host cluster. */
static bool wr_needs_alloc(const struct wr_old *o)
{
  return o->off == 0 || !o->copied || o->compressed;
}

/* Adds a write of len bytes from data (or owned) at host, joined to the last one when
 * host and buffer both continue it. */
static void wr_io_add(struct wr_batch *bt, uint64_t host, const uint8_t *data, uint8_t *owned,
                      uint64_t len)
{
  struct wr_io *last = bt->nio > 0 ? &bt->io[bt->nio - 1] : NULL;

  if (last != NULL && owned == NULL && last->owned == NULL && last->host + last->len == host &&
      last->data + last->len == data) {
    last->len += len;
    return;
  }
  bt->io[bt->nio++] = (struct wr_io){.host = host, .data = owned ? owned : data,
                                     .owned = owned, .len = len};
}

/* Plans the write of bytes [a, b) of the guest cluster at `gcluster` from data (NULL:
 * zeroes) into host cluster `host`, the subclusters in `fill` filled from the old state
 * first (read now, under the lock). The buffer spans the subclusters in `span`. */
static int wr_data(struct qcow2 *q, const struct wr_old *o, uint64_t gcluster, uint64_t host,
                   uint32_t a, uint32_t b, const uint8_t *data, uint32_t fill, uint32_t span,
                   struct wr_batch *bt)
{
  uint64_t ss = wr_ss(q), at, end;
  uint8_t *buf, *inflated = NULL;
  int rc = 0;

  if (fill == 0 && data != NULL) {
    wr_io_add(bt, host + a, data, NULL, b - a);
    return 0;
  }
  at = fill == 0 ? a : (uint64_t)__builtin_ctz(span) * ss;
  end = fill == 0 ? b : (uint64_t)(32 - __builtin_clz(span)) * ss;
  buf = calloc(1, end - at);
  if (buf == NULL) {
    return -ENOMEM;
  }
  if (o->compressed && (fill & o->alloc_mask) != 0) {
    inflated = malloc(q->cluster_size);
    rc = inflated == NULL ? -ENOMEM : wr_inflate(q, o, inflated);
  }
  if (rc == 0 && fill != 0) {
    rc = wr_fill(q, o, gcluster, fill, buf, at, inflated);
  }
  if (rc == 0) {
    if (data != NULL) {
      memcpy(buf + a - at, data, b - a);
    } else {
      memset(buf + a - at, 0, b - a);
    }
    wr_io_add(bt, host + at, NULL, buf, end - at);
    buf = NULL;
  }
  free(inflated);
  free(buf);
  return rc;
}

/* Plans the write of bytes [a, b) of the guest cluster at `gcluster` (data NULL: zeroes),
 * the table t pinned and writable: its data writes and the entry change that follows them.
 * Lock held. */
static int wr_cluster(struct qcow2 *q, struct qcow2_l2_table *t, uint64_t gcluster,
                      uint32_t a, uint32_t b, const uint8_t *data, struct wr_batch *bt)
{
  uint64_t *e = wr_entry(q, t, gcluster), ss = wr_ss(q), host;
  uint32_t s0 = (uint32_t)(a / ss), s1 = (uint32_t)((b - 1) / ss);
  uint32_t touched = wr_mask(s0, s1), partial = 0, fill, span;
  struct wr_item *it = &bt->item[bt->nitem];
  int rc = wr_decode(q, e, gcluster, &it->old);
  const struct wr_old *o = &it->old;

  if (rc < 0) {
    return rc;
  }
  partial |= a % ss != 0 ? 1u << s0 : 0;
  partial |= b % ss != 0 ? 1u << s1 : 0;
  if (data == NULL && (touched & ~o->zero_mask & (o->alloc_mask | (q->backing_node ? ~0u : 0u)))
                      == 0) {
    return 0; /* zeroes over subclusters that read as zeroes already */
  }
  it->gcluster = gcluster;
  it->free_old = false;
  if (!wr_needs_alloc(o)) {
    /* Whole subclusters are written when one needs filling: fill both partial ends. */
    fill = (partial & ~o->alloc_mask) != 0 ? partial : 0;
    rc = wr_data(q, o, gcluster, o->off, a, b, data, fill, touched, bt);
    it->word = o->word & ~QCOW2_OFLAG_ZERO;
    it->bitmap = q->extended_l2 ? (o->bitmap | touched) & ~((uint64_t)touched << 32) : 0;
    bt->nitem += rc == 0 && (it->word != o->word || it->bitmap != o->bitmap);
    return rc;
  }
  if (bt->left == 0) {
    rc = qcow2_alloc_clusters(q, 1, &bt->next);
    if (rc < 0) {
      return rc;
    }
    bt->left = 1;
  }
  host = bt->next;
  bt->next += q->cluster_size;
  bt->left--;
  span = o->alloc_mask | touched;
  fill = (o->alloc_mask & ~touched) | partial;
  rc = wr_data(q, o, gcluster, host, a, b, data, fill, span, bt);
  it->word = host | QCOW2_OFLAG_COPIED;
  it->bitmap = q->extended_l2 ? ((uint64_t)span | ((uint64_t)(o->zero_mask & ~touched) << 32))
                              : 0;
  it->free_old = true;
  bt->nitem += rc == 0;
  return rc;
}

/* Clusters from gcluster on, at most `max`, inside t, whose writes all need a new cluster. */
static uint64_t wr_alloc_run(struct qcow2 *q, struct qcow2_l2_table *t, uint64_t gcluster,
                             uint64_t max)
{
  uint64_t i = (gcluster >> q->cluster_bits) & (q->l2_entries - 1), n = 0;
  struct wr_old o;

  while (n < max && i + n < q->l2_entries) {
    if (wr_decode(q, wr_entry(q, t, gcluster + n * q->cluster_size),
                  gcluster + n * q->cluster_size, &o) < 0 || !wr_needs_alloc(&o)) {
      break;
    }
    n++;
  }
  return n;
}

/* Writes the batch's data (lock dropped), then sets its entries in t and queues the frees
 * of what they replace. On a failed write no entry changes (the new clusters leak). */
static int wr_batch_commit(struct qcow2 *q, struct qcow2_l2_table *t, struct wr_batch *bt)
{
  int rc = 0;

  if (bt->nio > 0) {
    for (size_t i = 0; i < bt->nio; i++) {
      if (bt->io[i].host + bt->io[i].len > q->file->geo.size) {
        q->file->geo.size = bt->io[i].host + bt->io[i].len; /* the write grows the file */
      }
    }
    pthread_mutex_unlock(&q->lock);
    for (size_t i = 0; rc == 0 && i < bt->nio; i++) {
      rc = format_pwrite(q->file, bt->io[i].data, bt->io[i].len, bt->io[i].host);
    }
    qcow2_lock(q);
  }
  for (size_t i = 0; rc == 0 && i < bt->nitem; i++) {
    const struct wr_item *it = &bt->item[i];
    uint64_t *e = wr_entry(q, t, it->gcluster);
    e[0] = it->word;
    if (q->extended_l2) {
      e[1] = it->bitmap;
    }
    qcow2_cache_mark_dirty(q, t);
    rc = it->free_old ? wr_free_old(q, &it->old) : 0;
  }
  return rc;
}

/* Writes guest bytes [pos, end) (inside one L2 table's span, marked in flight) from data
 * (NULL: zeroes). Lock held; dropped during the data writes. */
static int wr_chunk(struct qcow2 *q, uint64_t pos, uint64_t end, const uint8_t *data)
{
  uint64_t cs = q->cluster_size, g0 = pos & ~(cs - 1);
  size_t clusters = (size_t)((end - g0 + cs - 1) / cs);
  struct wr_batch bt = {0};
  struct qcow2_l2_table *t = NULL;
  int rc;

  bt.io = calloc(clusters, sizeof *bt.io);
  bt.item = calloc(clusters, sizeof *bt.item);
  rc = bt.io == NULL || bt.item == NULL ? -ENOMEM : wr_l2_get(q, g0, true, &t);
  if (rc == 0 && data != NULL) {
    uint64_t n = wr_alloc_run(q, t, g0, clusters);
    if (n > 1) {
      rc = qcow2_alloc_clusters(q, n, &bt.next);
      bt.left = rc == 0 ? n : 0;
    }
  }
  for (uint64_t p = pos; rc == 0 && p < end;) {
    uint64_t gc = p & ~(cs - 1), b = end - gc < cs ? end - gc : cs;
    struct qcow2_map m;
    rc = qcow2_map_range(q, p, gc + b - p, &m); /* checks the entry; logs */
    if (rc == 0) {
      rc = wr_cluster(q, t, gc, (uint32_t)(p - gc), (uint32_t)b,
                      data != NULL ? data + (p - pos) : NULL, &bt);
    }
    p = gc + b;
  }
  if (rc == 0) {
    rc = wr_batch_commit(q, t, &bt);
  }
  for (size_t i = 0; bt.io != NULL && i < bt.nio; i++) {
    free(bt.io[i].owned);
  }
  free(bt.io);
  free(bt.item);
  wr_l2_put(t);
  return rc;
}

/* Writes guest bytes [offset, + len) from data (NULL: zeroes), one L2 table's span at a
 * time. Lock held; dropped during data writes and while waiting for ops in flight. */
static int wr_range(struct qcow2 *q, uint64_t offset, uint64_t len, const uint8_t *data)
{
  uint64_t cs = q->cluster_size, pos = offset, end = offset + len;
  uint64_t span = (uint64_t)q->l2_entries * cs;
  int rc = 0;

  while (rc == 0 && pos < end) {
    uint64_t stop = (pos / span + 1) * span, g0 = pos & ~(cs - 1), g1;
    uint64_t cap = (pos + WR_CHUNK_MAX) & ~(cs - 1); /* bounds a batch's buffers */
    stop = stop < end ? stop : end;
    stop = stop < cap ? stop : cap;
    g1 = (stop + cs - 1) & ~(cs - 1);
    rc = qcow2_inflight_enter(q, g0, g1);
    if (rc == 0) {
      rc = wr_chunk(q, pos, stop, data != NULL ? data + (pos - offset) : NULL);
      qcow2_inflight_leave(q, g0, g1);
    }
    pos = stop;
  }
  return rc;
}

int qcow2_write_slow(struct qcow2 *q, struct backing_op *op)
{
  int rc;

  if (!q->writable) {
    return -EROFS;
  }
  qcow2_lock(q);
  rc = wr_range(q, op->offset, op->length, op->buf);
  pthread_mutex_unlock(&q->lock);
  return rc;
}

/* ---- TRIM and WRITE_ZEROES: whole clusters by metadata ----------------------------------- */

enum wr_meta_mode {
  WR_TRIM,       /* discard: the cluster may read back as anything */
  WR_ZERO_UNMAP, /* reads as zeroes, its host cluster freed */
  WR_ZERO_KEEP,  /* reads as zeroes, its host cluster kept (BACKING_FLAG_NO_HOLE) */
};

/* The new entry for a whole cluster under `mode`; false: leave the entry as it is. */
static bool wr_meta_entry(const struct qcow2 *q, const struct wr_old *o, enum wr_meta_mode mode,
                          uint64_t *word, uint64_t *bitmap, bool *free_old)
{
  bool backing = q->backing_node != NULL, unalloc = o->off == 0 && !o->compressed;
  bool reads_zero = q->extended_l2 ? (o->zero_mask == WR_ALL_SUBS ||
                                      (o->alloc_mask == 0 && !backing))
                                   : (o->zero_mask != 0 || (unalloc && !backing));

  *free_old = false;
  if (mode == WR_TRIM) {
    /* v3: reads as zeroes afterwards, as QEMU's discard leaves it (a zero cluster hides the
     * backing file); v2 cannot hide a backing file, so its clusters stay. */
    if ((unalloc && !backing) || (q->h.version < 3 && backing) || (backing && reads_zero)) {
      return false;
    }
    *word = backing && !q->extended_l2 ? QCOW2_OFLAG_ZERO : 0;
    *bitmap = backing ? WR_ALL_SUBS << 32 : 0;
    *free_old = !unalloc;
    return true;
  }
  if (reads_zero && (mode == WR_ZERO_KEEP || unalloc)) {
    return false;
  }
  if (mode == WR_ZERO_UNMAP || o->compressed || unalloc) {
    *word = q->extended_l2 ? 0 : QCOW2_OFLAG_ZERO;
    *free_old = !unalloc;
  } else {
    /* A zero cluster that keeps its preallocated host cluster. */
    *word = (o->word & (QCOW2_L2E_OFFSET_MASK | QCOW2_OFLAG_COPIED)) |
            (q->extended_l2 ? 0 : QCOW2_OFLAG_ZERO);
  }
  *bitmap = WR_ALL_SUBS << 32;
  return true;
}

/* Applies mode to the whole clusters [gcluster, + n clusters) of one L2 table. Lock held. */
static int wr_meta_run(struct qcow2 *q, uint64_t gcluster, uint64_t n, enum wr_meta_mode mode)
{
  bool create = q->backing_node != NULL && q->h.version >= 3;
  struct qcow2_l2_table *t = NULL;
  int rc;

  rc = qcow2_map_range(q, gcluster, n * q->cluster_size, &(struct qcow2_map){0});
  if (rc == 0) {
    rc = wr_l2_get(q, gcluster, create, &t);
  }
  if (rc < 0 || t == NULL) {
    return rc; /* no L2 table: every cluster reads from the backing, or zeroes */
  }
  for (uint64_t i = 0; rc == 0 && i < n; i++) {
    uint64_t g = gcluster + i * q->cluster_size, *e = wr_entry(q, t, g), word, bitmap;
    struct wr_old o;
    bool free_old;
    rc = wr_decode(q, e, g, &o);
    if (rc == 0 && wr_meta_entry(q, &o, mode, &word, &bitmap, &free_old)) {
      e[0] = word;
      if (q->extended_l2) {
        e[1] = bitmap;
      }
      qcow2_cache_mark_dirty(q, t);
      rc = free_old ? wr_free_old(q, &o) : 0;
    }
  }
  wr_l2_put(t);
  return rc;
}

/* Applies mode to every whole cluster of [offset, + len), one L2 table at a time. */
static int wr_meta_range(struct qcow2 *q, uint64_t offset, uint64_t len, enum wr_meta_mode mode)
{
  uint64_t cs = q->cluster_size;
  uint64_t pos = (offset + cs - 1) & ~(cs - 1), end = (offset + len) & ~(cs - 1);
  uint64_t table_span = (uint64_t)q->l2_entries * cs;
  int rc = 0;

  while (rc == 0 && pos < end) {
    uint64_t stop = (pos / table_span + 1) * table_span;
    stop = stop < end ? stop : end;
    rc = qcow2_inflight_enter(q, pos, stop);
    if (rc == 0) {
      rc = wr_meta_run(q, pos, (stop - pos) / cs, mode);
      qcow2_inflight_leave(q, pos, stop);
    }
    pos = stop;
  }
  return rc;
}

int qcow2_discard(struct qcow2 *q, struct backing_op *op)
{
  int rc;

  if (!q->writable) {
    return -EROFS;
  }
  qcow2_lock(q);
  rc = wr_meta_range(q, op->offset, op->length, WR_TRIM);
  pthread_mutex_unlock(&q->lock);
  return rc;
}

/* True when guest bytes [offset, + len) read as zeroes by the metadata alone. */
static int wr_reads_zero(struct qcow2 *q, uint64_t offset, uint64_t len, bool *out)
{
  *out = true;
  while (len > 0) {
    struct qcow2_map m;
    int rc = qcow2_map_range(q, offset, len, &m);
    if (rc < 0) {
      return rc;
    }
    if (m.kind != QCOW2_ZERO && (m.kind != QCOW2_UNALLOC || q->backing_node != NULL)) {
      *out = false;
      return 0;
    }
    m.length = m.length < len ? m.length : len;
    offset += m.length;
    len -= m.length;
  }
  return 0;
}

/* BACKING_FLAG_FAST_ZERO: -ENOTSUP unless metadata alone can zero [offset, + len): a v3
 * image, and partial clusters at either end that read as zeroes already. */
static int wr_fast_zero_check(struct qcow2 *q, uint64_t offset, uint64_t len)
{
  uint64_t cs = q->cluster_size, end = offset + len;
  uint64_t head_end = ((offset + cs - 1) & ~(cs - 1)), tail = end & ~(cs - 1);
  bool zero = true;
  int rc = 0;

  if (q->h.version < 3) {
    return -ENOTSUP;
  }
  head_end = head_end < end ? head_end : end;
  if (head_end > offset) {
    rc = wr_reads_zero(q, offset, head_end - offset, &zero);
  }
  if (rc == 0 && zero && tail > head_end && tail < end) {
    rc = wr_reads_zero(q, tail, end - tail, &zero);
  }
  return rc < 0 ? rc : (zero ? 0 : -ENOTSUP);
}

int qcow2_write_zeroes(struct qcow2 *q, struct backing_op *op)
{
  uint64_t cs = q->cluster_size, offset = op->offset, end = op->offset + op->length;
  uint64_t first = (offset + cs - 1) & ~(cs - 1), last = end & ~(cs - 1);
  enum wr_meta_mode mode = (op->flags & BACKING_FLAG_NO_HOLE) ? WR_ZERO_KEEP : WR_ZERO_UNMAP;
  int rc = 0;

  if (!q->writable) {
    return -EROFS;
  }
  qcow2_lock(q);
  if ((op->flags & BACKING_FLAG_FAST_ZERO) != 0) {
    rc = wr_fast_zero_check(q, offset, op->length);
  }
  if (rc == 0 && (q->h.version < 3 || first >= last)) {
    rc = wr_range(q, offset, op->length, NULL); /* zeroes as data */
  } else if (rc == 0) {
    if (offset < first) {
      rc = wr_range(q, offset, first - offset, NULL);
    }
    if (rc == 0) {
      rc = wr_meta_range(q, first, last - first, mode);
    }
    if (rc == 0 && last < end) {
      rc = wr_range(q, last, end - last, NULL);
    }
  }
  pthread_mutex_unlock(&q->lock);
  return rc;
}
