/* SPDX-License-Identifier: MIT */
/* asif.h: the ASIF format node (Apple Sparse Image Format v1, the disk image format of
 * Virtualization.framework since macOS 26). Apple has not published the layout; this node
 * follows docs/asif.md (the layout as three independent readers and Apple-made samples
 * agree on it). A struct backing whose bytes come from `file` (the image itself), served
 * read-only: writing ASIF in place waits for real written samples to test against
 * (--snapshot gives a writable throw-away overlay).
 *
 * Units: bytes. Errors: -errno. Threads: open on the main thread (or export_attach under the
 * export's lock); the node's submit from any thread, as backing.h says; table and bitmap
 * reads never run on an event loop (they move to an engine worker). */
#ifndef DISKGATE_BACKING_ASIF_H
#define DISKGATE_BACKING_ASIF_H

#include <stddef.h>
#include <stdint.h>

#include "backing/backing.h"

/* Bound on the table cache (table groups and chunk bitmaps), bytes. */
#define ASIF_CACHE_DEFAULT (4u << 20)

struct asif_open_args {
  struct backing *file;              /* the image's bytes; owned by the node on success */
  const char *path;                  /* for log lines (the spec as given) */
  const struct backing_options *opts;
  char *why;                         /* on failure: one line (no newline) naming the field
                                        at fault; NULL: not wanted */
  size_t why_size;                   /* bytes of why */
};

/* Validates the header and both directories (the newer generation wins; a tie picks the
 * first), reads the metadata plist's stable uuid when it can (a metadata range that cannot
 * be read is a start_note warning, not a failure: the guest range is still served), and
 * opens the node: geo.size = sector_count x block size, geo.logical_block_size = the
 * image's block size, can_extents, no trim/zero; base.opts.read_only is always true, and
 * start_note (one line: GUID, stable uuid, active directory) says why. The caller opens
 * `file` read-only (format_spec_read_only), so the image is locked as a reader's. On failure `file` stays the
 * caller's and why[] names the field at fault (nothing is logged). Returns 0 and *out, or
 * -EINVAL (malformed, or a state no source has seen), -ENOMEM, or an I/O -errno.
 * Main thread. */
int backing_asif_open(const struct asif_open_args *args, struct backing **out);

#endif
