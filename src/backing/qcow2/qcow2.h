/* SPDX-License-Identifier: MIT */
/* qcow2.h: the qcow2 format node (QEMU's docs/interop/qcow2.txt, versions 2 and 3).
 * A struct backing whose bytes come from `file` (the image itself: a file, block device,
 * RBD image or faulty: backing) and, for unallocated clusters, from `backing_node` (the
 * backing file's top node, or NULL: zeroes).
 *
 * Units: bytes. Errors: -errno. Threads: open/create on the main thread; the node's submit
 * from any thread, as backing.h says; metadata I/O never runs on an event loop (it moves to
 * an engine worker). */
#ifndef DISKGATE_BACKING_QCOW2_H
#define DISKGATE_BACKING_QCOW2_H

#include <stdint.h>

#include "backing/backing.h"

/* Default bound on the L2 table cache, bytes (--l2-cache-size). */
#define QCOW2_L2_CACHE_DEFAULT (8u << 20)

struct qcow2_open_args {
  struct backing *file;          /* the image's bytes; owned by the node on success */
  const char *path;              /* the image's path, to resolve a relative backing file name
                                    (NULL: the image names none, or it is not a path) */
  struct backing *backing_node;  /* the caller's backing node (--snapshot's base), owned on
                                    success; NULL: open the one the header names, if any */
  unsigned depth;                /* images above this one (format.h, FORMAT_CHAIN_MAX) */
  uint64_t l2_cache_size;        /* bytes; 0: QCOW2_L2_CACHE_DEFAULT */
  const struct backing_options *opts;
  char *why;                     /* on failure: one line (no newline) naming the field,
                                    feature or file at fault; NULL: not wanted */
  size_t why_size;               /* bytes of why */
};

/* Validates the header and opens the node: the backing file the header names (only with a
 * recorded backing format) is opened read-only through format_open at depth + 1, relative
 * to the folder of `path`, unless `backing_node` is given. An image with the corrupt bit
 * is opened read-only (base.opts.read_only: the export advertises it; start_note says
 * why); a writable open clears the autoclear feature bits. On failure `file` and
 * `backing_node` stay the caller's and why[] names the field, feature or file at fault
 * (nothing is logged). Returns 0 and *out, or -EINVAL (malformed), -ENOTSUP (encryption, an
 * external data file, an unknown incompatible feature bit, a backing file without a
 * recorded format), -EUCLEAN (the dirty bit is set: `qemu-img check -r all` repairs it),
 * -ELOOP (a backing chain that loops or is deeper than FORMAT_CHAIN_MAX), -ENOMEM, or an
 * I/O -errno. Main thread. */
int backing_qcow2_open(const struct qcow2_open_args *args, struct backing **out);

/* Creates an empty qcow2 v3 image of `size` bytes at `path` (O_EXCL: never overwrites),
 * 64 KiB clusters, refcount_bits 16, whose backing file is `backing_file` of format
 * `backing_fmt` (both NULL: none). Returns 0 or -errno. Main thread. */
int qcow2_create(const char *path, uint64_t size, const char *backing_file,
                 const char *backing_fmt);

#endif
