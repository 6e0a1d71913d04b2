/* SPDX-License-Identifier: MIT */
/* backing.c: opens a backing by spec, and the parsers shared by all backings. */
#include "backing/backing.h"

#include <errno.h>
#include <string.h>

#include "backing/file.h"
#ifdef DISKGATE_HAVE_FAULTY
#include "backing/faulty/faulty.h"
#endif
#ifdef DISKGATE_HAVE_RBD
#include "backing/rbd.h"
#include "backing/rbd_lib.h"
#endif

int backing_open(const char *spec, const struct backing_options *opts, struct backing **out)
{
  if (strncmp(spec, "rbd:", 4) == 0) {
#ifdef DISKGATE_HAVE_RBD
    return backing_rbd_open(spec + 4, opts, out);
#else
    return -ENOTSUP;
#endif
  }
  if (strncmp(spec, "faulty:", 7) == 0) {
#ifdef DISKGATE_HAVE_FAULTY
    return backing_faulty_open(spec + 7, opts, out);
#else
    return -ENOTSUP;
#endif
  }
  return backing_file_open(spec, opts, out);
}

int backing_spec_check(const char *spec, struct backing_spec_info *info)
{
  memset(info, 0, sizeof *info);
  if (strncmp(spec, "rbd:", 4) == 0) {
#ifdef DISKGATE_HAVE_RBD
    return backing_rbd_spec_check(spec + 4, info);
#else
    return -ENOTSUP;
#endif
  }
#ifndef DISKGATE_HAVE_FAULTY
  if (strncmp(spec, "faulty:", 7) == 0) {
    return -ENOTSUP;
  }
#endif
  return 0;
}

int backing_spec_load(const char *spec, char *why, size_t len)
{
  if (strncmp(spec, "rbd:", 4) == 0) {
#ifdef DISKGATE_HAVE_RBD
    const struct rbd_lib *lib;
    return rbd_lib_load(&lib, why, len);
#else
    (void)why;
    (void)len;
    return -ENOTSUP;
#endif
  }
  return 0;
}

int backing_refresh_size(struct backing *b, uint64_t *size)
{
  if (b->vt->refresh_size == NULL) {
    *size = b->geo.size;
    return 0;
  }
  return b->vt->refresh_size(b, size);
}

void backing_close(struct backing *b)
{
  if (b != NULL) {
    b->vt->close(b);
  }
}

int sync_mode_parse(const char *text, enum sync_mode *out)
{
  if (strcmp(text, "full") == 0) {
    *out = SYNC_FULL;
  } else if (strcmp(text, "fsync") == 0) {
    *out = SYNC_FSYNC;
  } else if (strcmp(text, "none") == 0) {
    *out = SYNC_NONE;
  } else {
    return -EINVAL;
  }
  return 0;
}

int cache_mode_parse(const char *text, enum cache_mode *out)
{
  if (strcmp(text, "direct") == 0) {
    *out = CACHE_DIRECT;
  } else if (strcmp(text, "writeback") == 0) {
    *out = CACHE_WRITEBACK;
  } else if (strcmp(text, "writethrough") == 0) {
    *out = CACHE_WRITETHROUGH;
  } else if (strcmp(text, "directsync") == 0) {
    *out = CACHE_DIRECTSYNC;
  } else {
    return -EINVAL;
  }
  return 0;
}

const char *sync_mode_name(enum sync_mode mode)
{
  return mode == SYNC_FULL ? "full" : mode == SYNC_FSYNC ? "fsync" : "none";
}

const char *cache_mode_name(enum cache_mode mode)
{
  switch (mode) {
  case CACHE_DIRECT:
    return "direct";
  case CACHE_WRITETHROUGH:
    return "writethrough";
  case CACHE_DIRECTSYNC:
    return "directsync";
  default:
    return "writeback";
  }
}
