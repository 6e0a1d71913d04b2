/* SPDX-License-Identifier: MIT */
/* export_open.h: what an export serves, stacked over its opened protocol backing: the
 * image's format (backing/format.h: probed, or as --format says) and, with --snapshot, a
 * temporary qcow2 overlay on top whose backing node is the image (qemu-nbd's -s).
 * Source: QEMU's docs/interop/qcow2.txt (the overlay's header), DESIGN.md "Image formats
 * are layers". Units: bytes. Errors: -errno. Threads: main thread at start-up, or
 * export_attach under the export's attach_lock. */
#ifndef DISKGATE_SERVER_EXPORT_OPEN_H
#define DISKGATE_SERVER_EXPORT_OPEN_H

#include <stdbool.h>
#include <stddef.h>

#include "backing/backing.h"
#include "backing/format.h"

/* Room for export_stack's describe and why texts, bytes. */
#define EXPORT_STACK_TEXT_MAX 1280u

struct export_stack_args {
  const char *spec;                   /* as given to backing_open */
  const char *spec_shown;             /* spec escaped for messages */
  enum image_format format;           /* --format */
  bool snapshot;                      /* --snapshot */
  const struct backing_options *opts; /* the export's (not the read-only base's) */
};

/* Sets *out to the options `spec` of format `format` is opened with: opts, read-only
 * under --snapshot (the image never changes) and for a format this build only reads
 * (format_spec_read_only: ASIF), so its lock is a reader's. Returns 0, or -EAGAIN when
 * the probe found `spec` replaced between its check and its open (case C18; *out is then
 * opts as given). Main thread, or the thread attaching a lazy export. */
int export_stack_base_options(const struct backing_options *opts, bool snapshot,
                              const char *spec, enum image_format format,
                              struct backing_options *out);

/* Stacks the format node (and the --snapshot overlay) over `child`, the protocol backing
 * of a->spec, opened by the caller (read-only under --snapshot:
 * export_stack_base_options). On success *out is the top node and owns `child`;
 * *probed_raw is true when the format was probed and found raw (the export then guards
 * sector 0: format_write_makes_header); describe[0..size) says what is served, for the
 * log ("qcow2 image (probed)", and the overlay's path). On failure `child` is closed and
 * why[0..size) holds one line naming the problem (without a "diskgate serve:" prefix).
 * The overlay is created in $TMPDIR (default /var/tmp) with O_EXCL and unlinked as soon as
 * it is open, so nothing is left behind, even after kill -9.
 * Returns 0, or -EINVAL (a malformed image), -ENOTSUP (a feature not served), -ELOOP (a
 * backing chain that loops or is too deep), -EUCLEAN (a dirty image), -ENOMEM, or the
 * -errno of creating or opening the overlay. */
int export_stack_open(const struct export_stack_args *a, struct backing *child,
                      struct backing **out, bool *probed_raw, char *describe, char *why,
                      size_t size);

#endif
