/* SPDX-License-Identifier: MIT */
/* format.c: image formats: parsing their names, probing by magic, opening a spec as a
 * format node over its protocol backing, and the synchronous I/O that format code running
 * off the event loops uses on its children. */
#include "backing/format.h"
#include "util/file_ident.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backing/asif/asif.h"
#include "backing/qcow2/qcow2.h"
#include "io/engine.h"
#include "nbd/proto.h"

#define FORMAT_IO_ALIGN 4096u
#define FORMAT_IO_CHUNK (1u << 20) /* bytes per child request */

#define MAGIC_BYTES 4u

static const uint8_t qcow2_magic[MAGIC_BYTES] = {'Q', 'F', 'I', 0xfb};
static const uint8_t asif_magic[MAGIC_BYTES] = {'s', 'h', 'd', 'w'};

/* The magics a probe recognizes, with their formats. */
static const struct {
  const uint8_t *magic;
  enum image_format fmt;
} known_magics[] = {
    {qcow2_magic, IMAGE_FORMAT_QCOW2},
    {asif_magic, IMAGE_FORMAT_ASIF},
};
#define KNOWN_MAGICS (sizeof known_magics / sizeof known_magics[0])

int image_format_parse(const char *text, enum image_format *out)
{
  if (strcmp(text, "auto") == 0) {
    *out = IMAGE_FORMAT_AUTO;
  } else if (strcmp(text, "raw") == 0) {
    *out = IMAGE_FORMAT_RAW;
  } else if (strcmp(text, "qcow2") == 0) {
    *out = IMAGE_FORMAT_QCOW2;
  } else if (strcmp(text, "asif") == 0) {
    *out = IMAGE_FORMAT_ASIF;
  } else {
    return -EINVAL;
  }
  return 0;
}

const char *image_format_name(enum image_format fmt)
{
  switch (fmt) {
  case IMAGE_FORMAT_RAW:
    return "raw";
  case IMAGE_FORMAT_QCOW2:
    return "qcow2";
  case IMAGE_FORMAT_ASIF:
    return "asif";
  default:
    return "auto";
  }
}

/* The format whose magic `head` (len bytes) starts with, or IMAGE_FORMAT_RAW. */
static enum image_format magic_format(const void *head, size_t len)
{
  for (size_t k = 0; k < KNOWN_MAGICS && len >= MAGIC_BYTES; k++) {
    if (memcmp(head, known_magics[k].magic, MAGIC_BYTES) == 0) {
      return known_magics[k].fmt;
    }
  }
  return IMAGE_FORMAT_RAW;
}

bool format_header_known(const void *head, size_t len)
{
  return magic_format(head, len) != IMAGE_FORMAT_RAW;
}

bool format_write_makes_header(uint64_t offset, const void *data, uint64_t len)
{
  const uint8_t *p = data;

  if (offset >= MAGIC_BYTES || len == 0) {
    return false;
  }
  for (size_t k = 0; k < KNOWN_MAGICS; k++) {
    const uint8_t *magic = known_magics[k].magic;
    bool same = true;
    for (uint64_t i = 0; i < len && offset + i < MAGIC_BYTES && same; i++) {
      same = p[i] == magic[offset + i];
    }
    if (same) {
      return true;
    }
  }
  return false;
}

/* One synchronous child request: the submitter sleeps until done() runs. */
struct sync_wait {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool done;
  int result;
};

static void sync_done(struct backing_op *op, int result)
{
  struct sync_wait *w = op->opaque;
  pthread_mutex_lock(&w->lock);
  w->result = result;
  w->done = true;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->lock);
}

int format_submit_wait(struct backing *b, struct backing_op *op)
{
  struct sync_wait w = {.done = false, .result = 0};
  int rc;

  pthread_mutex_init(&w.lock, NULL);
  pthread_cond_init(&w.cond, NULL);
  op->done = sync_done;
  op->opaque = &w;
  rc = backing_submit(b, op);
  if (rc == 0) {
    engine_wait_begin();
    pthread_mutex_lock(&w.lock);
    while (!w.done) {
      pthread_cond_wait(&w.cond, &w.lock);
    }
    pthread_mutex_unlock(&w.lock);
    engine_wait_end();
    rc = w.result;
  }
  pthread_cond_destroy(&w.cond);
  pthread_mutex_destroy(&w.lock);
  return rc;
}

/* One READ, WRITE or FLUSH of b, waited for. */
static int sync_submit(struct backing *b, enum backing_op_type type, void *buf, uint64_t len,
                       uint64_t offset)
{
  struct backing_op op;

  memset(&op, 0, sizeof op);
  op.type = type;
  op.offset = offset;
  op.length = len;
  op.buf = buf;
  return format_submit_wait(b, &op);
}

/* The aligned window [*start, *start + *span) around [offset, offset + len). */
static void align_window(const struct backing *b, uint64_t offset, uint64_t len,
                         uint64_t *start, uint64_t *span)
{
  uint64_t a = b->geo.direct_alignment > 1 ? b->geo.direct_alignment : 1;
  *start = offset / a * a;
  *span = (offset + len + a - 1) / a * a - *start;
}

static int format_rw(struct backing *b, void *buf, uint64_t len, uint64_t offset, bool write)
{
  while (len > 0) {
    uint64_t part = len < FORMAT_IO_CHUNK ? len : FORMAT_IO_CHUNK;
    uint64_t start, span;
    uint8_t *bounce;
    int rc = 0;

    if (offset > b->geo.size || part > b->geo.size - offset) {
      return -EIO;
    }
    align_window(b, offset, part, &start, &span);
    if (start + span > b->geo.size) {
      span = b->geo.size - start; /* the unaligned tail of a file: the backing copes */
    }
    if (start == offset && span == part && ((uintptr_t)buf % FORMAT_IO_ALIGN) == 0) {
      rc = sync_submit(b, write ? BACKING_OP_WRITE : BACKING_OP_READ, buf, part, offset);
    } else {
      bounce = aligned_alloc(FORMAT_IO_ALIGN, (span + FORMAT_IO_ALIGN - 1) / FORMAT_IO_ALIGN *
                                                  FORMAT_IO_ALIGN);
      if (bounce == NULL) {
        return -ENOMEM;
      }
      if (!write || start != offset || span != part) {
        rc = sync_submit(b, BACKING_OP_READ, bounce, span, start);
      }
      if (rc == 0 && write) {
        memcpy(bounce + (offset - start), buf, part);
        rc = sync_submit(b, BACKING_OP_WRITE, bounce, span, start);
      } else if (rc == 0) {
        memcpy(buf, bounce + (offset - start), part);
      }
      free(bounce);
    }
    if (rc < 0) {
      return rc;
    }
    buf = (uint8_t *)buf + part;
    offset += part;
    len -= part;
  }
  return 0;
}

int format_pread(struct backing *b, void *buf, uint64_t len, uint64_t offset)
{
  return format_rw(b, buf, len, offset, false);
}

int format_pwrite(struct backing *b, const void *buf, uint64_t len, uint64_t offset)
{
  return format_rw(b, (void *)buf, len, offset, true);
}

int format_pread_zero_tail(struct backing *b, void *buf, uint64_t len, uint64_t offset)
{
  uint64_t have = 0;

  if (b != NULL && offset < b->geo.size) {
    have = b->geo.size - offset < len ? b->geo.size - offset : len;
  }
  if (have > 0) {
    int rc = format_pread(b, buf, have, offset);
    if (rc < 0) {
      return rc;
    }
  }
  memset((uint8_t *)buf + have, 0, len - have);
  return 0;
}

int format_flush(struct backing *b)
{
  return sync_submit(b, BACKING_OP_FLUSH, NULL, 0, 0);
}

int format_block_status(struct backing *b, uint64_t offset, uint64_t len,
                        struct backing_extent *ext, uint32_t max, uint32_t *count)
{
  struct backing_op op;
  int rc;

  *count = 0;
  memset(&op, 0, sizeof op);
  op.type = BACKING_OP_BLOCK_STATUS;
  op.offset = offset;
  op.length = len;
  op.buf = ext;
  op.extent_max = max;
  rc = format_submit_wait(b, &op);
  if (rc == 0) {
    *count = op.extent_count <= max ? op.extent_count : max;
  }
  return rc;
}

int format_probe(struct backing *child, enum image_format *out)
{
  uint8_t head[MAGIC_BYTES];
  int rc;

  *out = IMAGE_FORMAT_RAW;
  if (child->geo.size < sizeof head) {
    return 0;
  }
  rc = format_pread(child, head, sizeof head, 0);
  if (rc < 0) {
    return rc;
  }
  *out = magic_format(head, sizeof head);
  return 0;
}

bool format_spec_probed(const char *spec)
{
  struct stat st;

  if (strncmp(spec, "faulty:", 7) == 0) {
    spec += 7;
  } else if (strncmp(spec, "rbd:", 4) == 0) {
    return false;
  }
  return stat(spec, &st) == 0 && S_ISREG(st.st_mode);
}

int format_spec_read_only(const char *spec, enum image_format fmt, bool *read_only)
{
  uint8_t head[MAGIC_BYTES];
  ssize_t n;
  int fd;

  *read_only = fmt == IMAGE_FORMAT_ASIF;
  if (fmt != IMAGE_FORMAT_AUTO || !format_spec_probed(spec)) {
    return 0;
  }
  if (strncmp(spec, "faulty:", 7) == 0) {
    spec += 7;
  }
  fd = file_open_checked(spec, O_RDONLY | O_NOCTTY);
  if (fd == -EAGAIN) {
    return -EAGAIN;
  }
  if (fd < 0) {
    return 0; /* backing_open reports on it */
  }
  n = pread(fd, head, sizeof head, 0);
  close(fd);
  *read_only = n == (ssize_t)sizeof head && magic_format(head, sizeof head) == IMAGE_FORMAT_ASIF;
  return 0;
}

enum image_format format_of_node(const struct backing *b)
{
  if (strcmp(b->vt->kind, "qcow2") == 0) {
    return IMAGE_FORMAT_QCOW2;
  }
  return strcmp(b->vt->kind, "asif") == 0 ? IMAGE_FORMAT_ASIF : IMAGE_FORMAT_RAW;
}

int format_open_node(struct backing *child, const char *spec, enum image_format fmt,
                     const struct backing_options *opts, unsigned depth, struct backing **out,
                     bool *probed_raw, char *why, size_t why_size)
{
  int rc;

  *probed_raw = false;
  if (why != NULL && why_size > 0) {
    why[0] = '\0';
  }
  if (depth >= FORMAT_CHAIN_MAX) {
    return -ELOOP;
  }
  if (fmt == IMAGE_FORMAT_AUTO) {
    fmt = IMAGE_FORMAT_RAW;
    if (format_spec_probed(spec)) {
      rc = format_probe(child, &fmt);
      if (rc < 0) {
        return rc;
      }
      *probed_raw = fmt == IMAGE_FORMAT_RAW;
    }
  }
  if (fmt == IMAGE_FORMAT_RAW) {
    *out = child;
    return 0;
  }
  if (fmt == IMAGE_FORMAT_ASIF) {
    struct asif_open_args aargs = {
        .file = child, .path = spec, .opts = opts, .why = why, .why_size = why_size};
    return backing_asif_open(&aargs, out);
  }
  struct qcow2_open_args args = {.file = child,
                                 .path = spec,
                                 .depth = depth,
                                 .l2_cache_size = opts->l2_cache_size,
                                 .opts = opts,
                                 .why = why,
                                 .why_size = why_size};
  return backing_qcow2_open(&args, out);
}

int format_open(const char *spec, enum image_format fmt, const struct backing_options *opts,
                unsigned depth, struct backing **out, bool *probed_raw, char *why,
                size_t why_size)
{
  struct backing *child;
  int rc;

  *probed_raw = false;
  if (why != NULL && why_size > 0) {
    why[0] = '\0';
  }
  if (depth >= FORMAT_CHAIN_MAX) {
    if (why != NULL && why_size > 0) {
      snprintf(why, why_size, "the chain is deeper than %u images", FORMAT_CHAIN_MAX);
    }
    return -ELOOP;
  }
  rc = backing_open(spec, opts, &child);
  if (rc < 0) {
    return rc;
  }
  rc = format_open_node(child, spec, fmt, opts, depth, out, probed_raw, why, why_size);
  if (rc < 0) {
    backing_close(child);
  }
  return rc;
}
