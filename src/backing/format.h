/* SPDX-License-Identifier: MIT */
/* format.h: image formats, the layer above a protocol backing (file, block device, RBD).
 * A format node (qcow2, asif) is itself a struct backing that reads its metadata and data
 * (and qcow2 writes them) through a child backing, and through a second child for its backing file, so a chain
 * is a small tree of the same vtable (QEMU's split between protocol and format nodes).
 *
 * Units: bytes. Errors: -errno. Threads: main thread (opening happens at start-up, or in
 * export_attach under the export's lock). */
#ifndef DISKGATE_BACKING_FORMAT_H
#define DISKGATE_BACKING_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backing/backing.h"

enum image_format {
  IMAGE_FORMAT_AUTO,  /* probe a regular file by its magic; anything else is raw */
  IMAGE_FORMAT_RAW,   /* the bytes are the disk */
  IMAGE_FORMAT_QCOW2, /* QEMU's qcow2, docs/interop/qcow2.txt */
  IMAGE_FORMAT_ASIF,  /* Apple's sparse image format v1, docs/asif.md (served read-only) */
};

/* The deepest backing chain opened (image + backing files). A deeper chain is refused with
 * -ELOOP, as is a chain that names a file twice. */
#define FORMAT_CHAIN_MAX 64

/* Parses "raw" | "qcow2" | "asif" (and "auto"). Returns 0 or -EINVAL. Any thread. */
int image_format_parse(const char *text, enum image_format *out);

/* "auto", "raw", "qcow2", "asif". Any thread. */
const char *image_format_name(enum image_format fmt);

/* Reads the first bytes of `child` (synchronously, through backing_submit) and names the
 * format they announce: IMAGE_FORMAT_QCOW2 for qcow2's magic "QFI\xfb", IMAGE_FORMAT_ASIF
 * for ASIF's "shdw", else RAW.
 * Returns 0 and *out, or -errno from the read. Main thread, before the child serves. */
int format_probe(struct backing *child, enum image_format *out);

/* True when `head` (the first `len` bytes of a sector 0 write) starts with a header of a
 * format this build knows (qcow2's or ASIF's magic). A probed raw image refuses such a
 * write (QEMU's rule against CVE-2008-2004: a guest must not turn its raw disk into an
 * image that a later probe would open as something else). Any thread. */
bool format_header_known(const void *head, size_t len);

/* True when a WRITE of `len` bytes of `data` at byte `offset` could leave the image starting
 * with a header format_header_known() recognizes: the written bytes that fall inside the
 * magic's span at the start of sector 0 equal the magic there (a write of the whole magic
 * at 0, or of its pieces one by one), for each magic format_header_known knows. The guard
 * of a probed raw image; conservative: it never reads the image, so a write of a magic's
 * first bytes alone is also refused.
 * Any thread. */
bool format_write_makes_header(uint64_t offset, const void *data, uint64_t len);

/* Synchronous I/O on a backing for format code running off the event loops (start-up, or an
 * engine worker): submits op-equivalents and waits for them. `buf` need not be aligned for
 * reads/writes of whole direct_alignment units; the helper bounces otherwise.
 * Returns 0 or -errno (a short transfer is -EIO). Any thread but an event loop's. */
int format_pread(struct backing *b, void *buf, uint64_t len, uint64_t offset);
int format_pwrite(struct backing *b, const void *buf, uint64_t len, uint64_t offset);
int format_flush(struct backing *b);
/* As format_pread, but bytes past the end of b (all of them when b is NULL) read as
 * zeroes: a qcow2 backing file shorter than its overlay, or a last cluster that ends past
 * the end of the image file. Returns 0 or -errno. Any thread but an event loop's. */
int format_pread_zero_tail(struct backing *b, void *buf, uint64_t len, uint64_t offset);

/* Submits `op` (type, offset, length, buf and flags set by the caller; done and opaque are
 * this function's) to b and waits for its done(). An engine worker that waits lets the
 * pool grow (engine_wait_begin), so the op itself still finds a worker. Returns the op's
 * result: 0 or -errno (of the submit or of the op). Any thread but an event loop's. */
int format_submit_wait(struct backing *b, struct backing_op *op);

/* Synchronous BLOCK_STATUS of [offset, +len) (len > 0, inside b) into ext[0..max): *count
 * extents, consecutive from offset (they may cover less than len). Returns 0 or -errno
 * (-ENOTSUP: b does not report extents). Any thread but an event loop's. */
int format_block_status(struct backing *b, uint64_t offset, uint64_t len,
                        struct backing_extent *ext, uint32_t max, uint32_t *count);

/* Opens `spec` as `fmt` (AUTO: probe regular files, and faulty: specs over one; block
 * devices and rbd: images are raw unless `fmt` names a format) and returns the top node in
 * *out. `depth` is the number of images above this one in a chain (0 for the export's own
 * image). For qcow2 the backing file named in
 * the header is opened read-only through this same function, relative to the image's folder.
 * *probed_raw is set when AUTO found raw (the caller then refuses header-making writes).
 * Returns 0 or -errno: those of backing_open, -EINVAL (a malformed image), -ENOTSUP (a
 * feature this build does not serve), -ELOOP (chain too deep or looping); on failure
 * why[0..why_size) holds one line (no newline) naming the field, feature or file at fault,
 * or "" when there is nothing to add to the errno; nothing is logged. why may be NULL.
 * Main thread. */
/* format_open for an already opened protocol backing `child` (the caller opened `spec`
 * with backing_open, so it can tell that open's errors from the format's): with AUTO,
 * probes `child` when it is a regular file (or a faulty: over one) and takes anything
 * else as raw without reading it. On success *out owns `child`; on failure `child` stays
 * the caller's. Returns 0 or -EINVAL, -ENOTSUP, -EUCLEAN, -ELOOP, -ENOMEM, an I/O -errno,
 * with why[] filled (as format_open). Main thread, or export_attach under the export's
 * lock. */
int format_open_node(struct backing *child, const char *spec, enum image_format fmt,
                     const struct backing_options *opts, unsigned depth, struct backing **out,
                     bool *probed_raw, char *why, size_t why_size);

/* True when IMAGE_FORMAT_AUTO reads `spec`'s magic: a regular file, or a faulty: spec
 * over one. Block and character devices and rbd: images are raw unless the command line
 * names a format. Looks at the path (stat), opens nothing. Any thread. */
bool format_spec_probed(const char *spec);

/* Sets *read_only when `spec` opened as `fmt` is an image this build only reads (ASIF:
 * named by `fmt`, or AUTO over a regular file, or a faulty: spec over one, starting with
 * "shdw"), so the caller opens its protocol backing read-only and it is locked as a
 * reader's (beside other readers). Peeks at the magic with a read through
 * file_open_checked, without a lock; the probe after the open still decides the format (a
 * file rewritten meanwhile is at worst served read-only). Returns 0, or -EAGAIN when the
 * path was replaced between its check and its open (case C18: the caller refuses it as
 * backing_open's -EAGAIN). Main thread, before the open. */
int format_spec_read_only(const char *spec, enum image_format fmt, bool *read_only);

/* The format of an opened node: IMAGE_FORMAT_QCOW2 for a qcow2 node (vtable kind "qcow2"),
 * IMAGE_FORMAT_ASIF for an ASIF node ("asif"), else IMAGE_FORMAT_RAW. Any thread. */
enum image_format format_of_node(const struct backing *b);

int format_open(const char *spec, enum image_format fmt, const struct backing_options *opts,
                unsigned depth, struct backing **out, bool *probed_raw, char *why,
                size_t why_size);

#endif
