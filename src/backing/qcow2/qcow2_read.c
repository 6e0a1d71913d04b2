/* SPDX-License-Identifier: MIT */
/* qcow2_read.c: reads that need a worker (QEMU's docs/interop/qcow2.txt, "Cluster
 * mapping"): normal clusters from the image file, zero clusters as zeroes, unallocated ones
 * from the backing node (zeroes past its end, or without one), compressed ones inflated;
 * and the allocation map over the whole chain (base:allocation, qemu:allocation-depth). */
#include "backing/qcow2/qcow2_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backing/format.h"

/* Inflates the compressed cluster of `l2_entry` and copies `len` bytes of it from byte
 * `in_cluster` into buf. */
static int read_compressed(struct qcow2 *q, uint8_t *buf, uint64_t len, uint64_t in_cluster,
                           uint64_t l2_entry)
{
  uint64_t host, host_len;
  uint8_t *in, *out;
  int rc = qcow2_compressed_extent(q, l2_entry, &host, &host_len);

  if (rc < 0) {
    return rc;
  }
  in = malloc(host_len);
  out = malloc(q->cluster_size);
  if (in == NULL || out == NULL) {
    free(in);
    free(out);
    return -ENOMEM;
  }
  rc = format_pread(q->file, in, host_len, host);
  if (rc == 0) {
    rc = qcow2_decompress(q, in, host_len, out);
  }
  if (rc == 0) {
    memcpy(buf, out + in_cluster, len);
  }
  free(in);
  free(out);
  return rc;
}

int qcow2_read_slow(struct qcow2 *q, struct backing_op *op)
{
  uint8_t *buf = op->buf;
  uint64_t offset = op->offset, left = op->length;

  while (left > 0) {
    struct qcow2_map m;
    int rc;

    qcow2_lock(q);
    rc = qcow2_map_range(q, offset, left, &m);
    pthread_mutex_unlock(&q->lock);
    if (rc < 0) {
      return rc;
    }
    /* The lock is dropped for the data: a cluster freed meanwhile is never reused while
     * the node is open (qcow2_impl.h), so the bytes read are at worst the old ones. */
    switch (m.kind) {
    case QCOW2_NORMAL:
      rc = format_pread_zero_tail(q->file, buf, m.length, m.host_offset);
      break;
    case QCOW2_ZERO:
      memset(buf, 0, m.length);
      break;
    case QCOW2_UNALLOC:
      rc = format_pread_zero_tail(q->backing_node, buf, m.length, offset);
      break;
    case QCOW2_COMPRESSED:
      rc = read_compressed(q, buf, m.length, offset & (q->cluster_size - 1), m.l2_entry);
      break;
    }
    if (rc < 0) {
      return rc;
    }
    buf += m.length;
    offset += m.length;
    left -= m.length;
  }
  return 0;
}

/* Appends an extent, merging it with the last one when equal. Returns false when full. */
static bool extent_add(struct backing_op *op, uint64_t len, uint32_t flags, uint32_t depth)
{
  struct backing_extent *ext = op->buf;

  if (op->extent_count > 0) {
    struct backing_extent *last = &ext[op->extent_count - 1];
    if (last->flags == flags && last->depth == depth) {
      last->length += len;
      return true;
    }
  }
  if (op->extent_count >= op->extent_max) {
    return false;
  }
  ext[op->extent_count++] = (struct backing_extent){.length = len, .flags = flags,
                                                    .depth = depth};
  return true;
}

/* The extents of [offset, +len) of the backing node, depths counted from this image;
 * *added: the bytes appended (less than len when op's extents ran out). Returns 0 or
 * -errno. */
static int status_backing(struct qcow2 *q, struct backing_op *op, uint64_t offset,
                          uint64_t len, uint64_t *added)
{
  struct backing *b = q->backing_node;
  struct backing_extent *sub = NULL;
  uint64_t have = 0;
  uint32_t count = 0;
  int rc = 0;

  *added = 0;
  if (b != NULL && offset < b->geo.size) {
    have = b->geo.size - offset;
    have = have < len ? have : len;
  }
  if (have > 0 && b->geo.can_extents) {
    uint32_t room = op->extent_max - op->extent_count + 1; /* the first may merge */
    sub = calloc(room, sizeof *sub);
    if (sub == NULL) {
      return -ENOMEM;
    }
    rc = format_block_status(b, offset, have, sub, room, &count);
  }
  if (have > 0 && (!b->geo.can_extents || rc == -ENOTSUP)) {
    free(sub); /* a backing node without a map: all data, as the server would report it */
    if (!extent_add(op, have, 0, 2)) {
      return 0;
    }
    *added = have;
  } else if (have > 0) {
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
      uint32_t depth = !b->geo.can_depth ? 2 : sub[i].depth == 0 ? 0 : sub[i].depth + 1;
      if (!extent_add(op, sub[i].length, sub[i].flags, depth)) {
        break;
      }
      *added += sub[i].length;
    }
    free(sub);
    if (rc < 0 || *added < have) {
      return rc;
    }
  }
  /* Past a short backing node's end the zeroes count as its own (QEMU's
   * bdrv_is_allocated_above): depth 2; without a backing node nothing holds them. */
  if (len > have && extent_add(op, len - have, BACKING_EXTENT_HOLE | BACKING_EXTENT_ZERO,
                               b != NULL ? 2 : 0)) {
    *added += len - have;
  }
  return 0;
}

int qcow2_block_status(struct qcow2 *q, struct backing_op *op)
{
  uint64_t offset = op->offset, end = op->offset + op->length;

  op->extent_count = 0;
  while (offset < end) {
    struct qcow2_map m;
    uint64_t added;
    int rc;

    qcow2_lock(q);
    rc = qcow2_map_range(q, offset, end - offset, &m);
    pthread_mutex_unlock(&q->lock);
    if (rc < 0) {
      return op->extent_count > 0 ? 0 : rc;
    }
    if (m.kind == QCOW2_UNALLOC) {
      rc = status_backing(q, op, offset, m.length, &added);
      if (rc < 0) {
        return op->extent_count > 0 ? 0 : rc;
      }
      if (added < m.length) {
        break; /* extents ran out inside the backing node's answer */
      }
    } else if (!extent_add(op, m.length,
                           m.kind == QCOW2_ZERO ? BACKING_EXTENT_HOLE | BACKING_EXTENT_ZERO : 0,
                           1)) {
      break;
    }
    offset += m.length;
  }
  return 0;
}
