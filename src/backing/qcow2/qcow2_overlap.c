/* SPDX-License-Identifier: MIT */
/* qcow2_overlap.c: the host clusters holding the image's metadata, and the checks that no
 * L2 table or data cluster a hostile image names is one of them (QEMU's
 * docs/interop/qcow2.txt, "Host cluster management", "Snapshots"; the clusters QEMU's
 * overlap-check=cached guards). Writing guest data or an L2 entry through such an entry
 * would overwrite the refcounts, the L1 table or the header.
 *
 * The map is taken once at open and read-only afterwards: every cluster allocated later
 * lies at or past q->alloc_end, past every cluster the file held at open, so no entry of
 * the image as found can name it, and clusters freed while the node is open are never
 * handed out again. The checks run when an L2 table is read into the cache, never on the
 * fast path: a cached table's bad entries are marked in its t->bad bitmap. */
#include "backing/qcow2/qcow2_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backing/format.h"
#include "util/bytes.h"

/* Snapshots the table parse follows at most (QEMU's QCOW_MAX_SNAPSHOTS). */
#define SNAPSHOTS_MAX 65536u
/* Bytes of a snapshot table entry before its variable parts. */
#define SNAPSHOT_FIXED 40u
/* Bytes of the snapshot table read at a time. */
#define SNAPSHOT_WINDOW 65536u

enum meta_kind {
  MK_HEADER,
  MK_REFTABLE,
  MK_REFBLOCK,
  MK_L1,
  MK_SNAPSHOTS,
  MK_SNAPSHOT_L1,
  MK_L2,
  MK_L2_SHARED,
};

static const char *const meta_kind_name[] = {
    [MK_HEADER] = "header cluster",
    [MK_REFTABLE] = "refcount table",
    [MK_REFBLOCK] = "refcount block",
    [MK_L1] = "L1 table",
    [MK_SNAPSHOTS] = "snapshot table",
    [MK_SNAPSHOT_L1] = "L1 table of a snapshot",
    [MK_L2] = "active L2 table",
    [MK_L2_SHARED] = "L2 table of another L1 entry",
};

struct meta_range {
  uint64_t start, end; /* host bytes [start, end), whole clusters */
  enum meta_kind kind;
};

struct qcow2_meta_map {
  struct meta_range *fixed; /* everything but L2 tables: sorted by start, disjoint */
  size_t nfixed, capfixed;
  uint64_t *l2;             /* host offsets of the active L2 tables: sorted, unique */
  size_t nl2;
  uint64_t *l2_shared;      /* of those, the ones two or more L1 entries name: sorted */
  size_t nl2_shared;
  struct meta_range *all;   /* fixed and the L2 tables outside it: sorted, disjoint */
  size_t nall;
};

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_range(const void *a, const void *b)
{
  const struct meta_range *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* Records [start, + len) rounded out to whole clusters as metadata of `kind`. */
static int fixed_add(struct qcow2 *q, enum meta_kind kind, uint64_t start, uint64_t len)
{
  struct qcow2_meta_map *m = q->meta;
  uint64_t cs = q->cluster_size;

  if (len == 0) {
    return 0;
  }
  if (m->nfixed == m->capfixed) {
    size_t cap = m->capfixed ? m->capfixed * 2 : 16;
    struct meta_range *p = realloc(m->fixed, cap * sizeof *p);
    if (p == NULL) {
      return -ENOMEM;
    }
    m->fixed = p;
    m->capfixed = cap;
  }
  m->fixed[m->nfixed++] = (struct meta_range){
      .start = start & ~(cs - 1), .end = bytes_align_up(start + len, cs), .kind = kind};
  return 0;
}

/* The index of the first of the sorted, disjoint ranges r[0..n) ending past host byte a
 * (n: none). Their ends ascend as their starts do. */
static size_t range_first_past(const struct meta_range *r, size_t n, uint64_t a)
{
  size_t lo = 0, hi = n;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r[mid].end <= a) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/* The fixed range overlapping host bytes [a, b), or NULL. */
static const struct meta_range *fixed_find(const struct qcow2_meta_map *m, uint64_t a,
                                           uint64_t b)
{
  size_t i = range_first_past(m->fixed, m->nfixed, a);

  return i < m->nfixed && m->fixed[i].start < b ? &m->fixed[i] : NULL;
}

/* True when a cluster of sorted[0..n) (cluster offsets) overlaps host bytes [a, b). */
static bool cluster_find(const uint64_t *sorted, size_t n, uint64_t cs, uint64_t a, uint64_t b)
{
  uint64_t first = a & ~(cs - 1);
  size_t lo = 0, hi = n;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] < first) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < n && sorted[lo] < b;
}

/* Follows the snapshot table: records it and the snapshots' L1 tables. A table running past
 * the end of the file is recorded up to there (reads of the snapshots are never served). */
static int snapshots_add(struct qcow2 *q)
{
  uint64_t file_size = q->file->geo.size, pos = q->h.snapshots_offset;
  uint64_t win_at = 0, win_len = 0;
  uint32_t n = q->h.nb_snapshots < SNAPSHOTS_MAX ? q->h.nb_snapshots : SNAPSHOTS_MAX;
  uint8_t *win;
  int rc = 0;

  if (n == 0 || pos == 0 || pos >= file_size) {
    return 0;
  }
  win = malloc(SNAPSHOT_WINDOW);
  if (win == NULL) {
    return -ENOMEM;
  }
  for (uint32_t i = 0; i < n && rc == 0 && file_size - pos >= SNAPSHOT_FIXED; i++) {
    const uint8_t *e;
    uint64_t l1_off, l1_bytes;
    if (pos < win_at || pos + SNAPSHOT_FIXED > win_at + win_len) {
      win_at = pos;
      win_len = file_size - pos < SNAPSHOT_WINDOW ? file_size - pos : SNAPSHOT_WINDOW;
      rc = format_pread(q->file, win, win_len, win_at);
      if (rc < 0) {
        break;
      }
    }
    e = win + (pos - win_at);
    l1_off = bytes_get_be64(e);
    l1_bytes = (uint64_t)bytes_get_be32(e + 8) * 8;
    if (l1_off != 0 && l1_off % q->cluster_size == 0 && l1_off < file_size &&
        l1_bytes <= file_size - l1_off) {
      rc = fixed_add(q, MK_SNAPSHOT_L1, l1_off, l1_bytes);
    }
    pos += bytes_align_up(SNAPSHOT_FIXED + (uint64_t)bytes_get_be32(e + 36) +
                              bytes_get_be16(e + 12) + bytes_get_be16(e + 14), 8);
    if (pos > file_size) {
      pos = file_size;
    }
  }
  free(win);
  if (rc == 0) {
    rc = fixed_add(q, MK_SNAPSHOTS, q->h.snapshots_offset, pos - q->h.snapshots_offset);
  }
  return rc;
}

/* Records the L2 tables the L1 entries name (those aligned and inside the file: the mapping
 * refuses the others at use), sorted, and which of them two entries share. */
static int l2_tables_add(struct qcow2 *q)
{
  struct qcow2_meta_map *m = q->meta;
  uint64_t file_size = q->file->geo.size, cs = q->cluster_size;
  size_t n = 0, u = 0;

  m->l2 = malloc(((size_t)q->h.l1_size + 1) * sizeof *m->l2);
  m->l2_shared = malloc(((size_t)q->h.l1_size + 1) * sizeof *m->l2_shared);
  if (m->l2 == NULL || m->l2_shared == NULL) {
    return -ENOMEM;
  }
  for (uint32_t i = 0; i < q->h.l1_size; i++) {
    uint64_t off = q->l1[i] & QCOW2_L1E_OFFSET_MASK;
    if (off != 0 && off % cs == 0 && off < file_size && cs <= file_size - off) {
      m->l2[n++] = off;
    }
  }
  qsort(m->l2, n, sizeof *m->l2, cmp_u64);
  for (size_t i = 0; i < n; i++) {
    if (u > 0 && m->l2[u - 1] == m->l2[i]) {
      if (m->nl2_shared == 0 || m->l2_shared[m->nl2_shared - 1] != m->l2[i]) {
        m->l2_shared[m->nl2_shared++] = m->l2[i];
      }
      continue;
    }
    m->l2[u++] = m->l2[i];
  }
  m->nl2 = u;
  return 0;
}

/* Merges the fixed ranges and the L2 tables outside them into m->all. */
static int all_build(struct qcow2 *q)
{
  struct qcow2_meta_map *m = q->meta;
  size_t f = 0, l = 0;

  m->all = malloc((m->nfixed + m->nl2 + 1) * sizeof *m->all);
  if (m->all == NULL) {
    return -ENOMEM;
  }
  while (f < m->nfixed || l < m->nl2) {
    if (l < m->nl2 && fixed_find(m, m->l2[l], m->l2[l] + q->cluster_size) != NULL) {
      l++; /* inside a fixed range already */
    } else if (l < m->nl2 && (f == m->nfixed || m->l2[l] < m->fixed[f].start)) {
      m->all[m->nall++] = (struct meta_range){
          .start = m->l2[l], .end = m->l2[l] + q->cluster_size, .kind = MK_L2};
      l++;
    } else {
      m->all[m->nall++] = m->fixed[f++];
    }
  }
  return 0;
}

int qcow2_overlap_open(struct qcow2 *q, char *why, size_t why_len)
{
  struct qcow2_meta_map *m = calloc(1, sizeof *m);
  uint64_t cs = q->cluster_size;
  int rc;

  if (m == NULL) {
    return -ENOMEM;
  }
  q->meta = m;
  rc = fixed_add(q, MK_HEADER, 0, cs);
  if (rc == 0) {
    rc = fixed_add(q, MK_REFTABLE, q->h.refcount_table_offset,
                   (uint64_t)q->h.refcount_table_clusters * cs);
  }
  for (uint64_t i = 0; rc == 0 && i < q->reftable_entries; i++) {
    if (q->reftable[i] != 0) {
      rc = fixed_add(q, MK_REFBLOCK, q->reftable[i], cs);
    }
  }
  if (rc == 0) {
    rc = fixed_add(q, MK_L1, q->h.l1_table_offset, (uint64_t)q->h.l1_size * 8);
  }
  if (rc == 0) {
    rc = snapshots_add(q);
  }
  if (rc == 0) {
    rc = l2_tables_add(q);
  }
  if (rc < 0) {
    return rc;
  }
  qsort(m->fixed, m->nfixed, sizeof *m->fixed, cmp_range);
  for (size_t i = 1; i < m->nfixed; i++) {
    const struct meta_range *a = &m->fixed[i - 1], *b = &m->fixed[i];
    if (b->start < a->end) {
      if (why != NULL && why_len > 0) {
        snprintf(why, why_len, "the %s at %#" PRIx64 " overlaps the %s at %#" PRIx64,
                 meta_kind_name[b->kind], b->start, meta_kind_name[a->kind], a->start);
      }
      return -EINVAL;
    }
  }
  return all_build(q);
}

void qcow2_overlap_close(struct qcow2 *q)
{
  if (q->meta != NULL) {
    free(q->meta->fixed);
    free(q->meta->l2);
    free(q->meta->l2_shared);
    free(q->meta->all);
    free(q->meta);
    q->meta = NULL;
  }
}

const char *qcow2_overlap_l2_table(const struct qcow2 *q, uint64_t l2_offset)
{
  const struct meta_range *r;

  if (q->meta == NULL) {
    return NULL;
  }
  r = fixed_find(q->meta, l2_offset, l2_offset + q->cluster_size);
  if (r != NULL) {
    return meta_kind_name[r->kind];
  }
  if (cluster_find(q->meta->l2_shared, q->meta->nl2_shared, q->cluster_size, l2_offset,
                   l2_offset + q->cluster_size)) {
    return meta_kind_name[MK_L2_SHARED];
  }
  return NULL;
}

/* Host bytes [*a, *b) entry e names, or false (none, or left to the mapping's checks). */
static bool entry_span(const struct qcow2 *q, uint64_t e, uint64_t *a, uint64_t *b)
{
  uint64_t host = e & QCOW2_L2E_OFFSET_MASK, len;

  if (e & QCOW2_OFLAG_COMPRESSED) {
    if (qcow2_compressed_extent(q, e, &host, &len) < 0) {
      return false;
    }
    *a = host;
    *b = host + len;
    return true;
  }
  if (host == 0 || host % q->cluster_size != 0 || host >= q->file->geo.size) {
    return false;
  }
  *a = host;
  *b = host + q->cluster_size;
  return true;
}

int qcow2_overlap_check_table(struct qcow2 *q, struct qcow2_l2_table *t)
{
  const struct qcow2_meta_map *m = q->meta;
  uint32_t step = q->extended_l2 ? 2 : 1;
  uint64_t clear_lo = 0, clear_hi = 0; /* host bytes between two metadata ranges */

  if (m == NULL) {
    return 0;
  }
  for (uint32_t i = 0; i < q->l2_entries; i++) {
    uint64_t e = t->entries[(size_t)i * step], a, b;
    size_t k;
    if (e == 0 || !entry_span(q, e, &a, &b) || (a >= clear_lo && b <= clear_hi)) {
      continue; /* data mostly lies in runs between metadata: one search per run */
    }
    k = range_first_past(m->all, m->nall, a);
    if (k == m->nall || m->all[k].start >= b) {
      clear_lo = k > 0 ? m->all[k - 1].end : 0;
      clear_hi = k < m->nall ? m->all[k].start : UINT64_MAX;
      continue;
    }
    if (t->bad == NULL) {
      t->bad = calloc((q->l2_entries + 63) / 64, sizeof *t->bad);
      if (t->bad == NULL) {
        return -ENOMEM;
      }
    }
    t->bad[i / 64] |= 1ull << (i % 64);
    qcow2_corrupt(q, "L2 table %#" PRIx64 " entry %u: host cluster %#" PRIx64 " overlaps the "
                  "image's %s", t->host_offset, i, a, meta_kind_name[m->all[k].kind]);
  }
  return 0;
}
