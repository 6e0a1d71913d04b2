/* SPDX-License-Identifier: MIT */
/* rbd.h: the Ceph RBD backing (librbd), built when librbd is present (DISKGATE_HAVE_RBD).
 * Any thread; the server opens an image once (lazily: server/export.h, export_attach). */
#ifndef DISKGATE_BACKING_RBD_H
#define DISKGATE_BACKING_RBD_H

#include "backing/backing.h"

/* Opens "POOL/IMAGE[@SNAP]" (the part of the spec after "rbd:"). Snapshots open read-only.
 * Returns 0 and *out, or -errno: -ENOENT (no such pool/image/snap), -EINVAL (bad spec),
 * -ETIMEDOUT/-ECONNREFUSED (cluster unreachable), -EACCES (auth). */
int backing_rbd_open(const char *spec, const struct backing_options *opts,
                     struct backing **out);

/* Checks "POOL/IMAGE[@SNAP]" without connecting: info->costly is true, info->read_only for
 * a snapshot. Returns 0, -EINVAL (malformed) or -ENOMEM. */
int backing_rbd_spec_check(const char *spec, struct backing_spec_info *info);

#endif
