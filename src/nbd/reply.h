/* SPDX-License-Identifier: MIT */
/* reply.h: the transmission phase's replies: simple replies, structured and extended chunk
 * headers, error chunks, block status chunks, and the mapping of errno values to NBD
 * errors, as pure functions over byte buffers (no sockets, no files). Requests are decoded
 * by request.h. Any thread; nothing allocates.
 *
 * Source: doc/proto.md, "Simple reply message", "Structured reply chunk message",
 * "Structured reply types", "Error values", extension-ext-header; spec rules 31
 * and 35 (docs/spec-rules.md).
 */
#ifndef DISKGATE_NBD_REPLY_H
#define DISKGATE_NBD_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nbd/proto.h"

/* Writes a 16-byte simple reply header. */
void nbd_simple_reply_encode(uint8_t out[NBD_SIMPLE_REPLY_SIZE], uint32_t error,
                             uint64_t cookie);

/* Writes a 20-byte structured reply chunk header. */
void nbd_chunk_header_encode(uint8_t out[NBD_STRUCTURED_REPLY_SIZE], uint16_t flags,
                             uint16_t type, uint64_t cookie, uint32_t length);

/* Clears NBD_REPLY_FLAG_DONE in a chunk header written by nbd_chunk_header_encode or
 * nbd_ext_reply_header_encode (the flags are bytes 4-5 of both), for a chunk encoded whole
 * before the sender knew whether more chunks of its reply follow. Any thread.
 * Source: doc/proto.md "Structured reply flags". */
void nbd_reply_header_clear_done(uint8_t *hdr);

/* Writes a 32-byte extended reply header (extension-ext-header): flags, type, the
 * request's cookie and offset, payload length. */
void nbd_ext_reply_header_encode(uint8_t out[NBD_EXTENDED_REPLY_SIZE], uint16_t flags,
                                 uint16_t type, uint64_t cookie, uint64_t offset,
                                 uint64_t length);

/* Writes a chunk header in the negotiated style: 20 bytes (structured) or 32 bytes
 * (extended, with `offset` echoing the request). Returns the bytes written. */
size_t nbd_reply_header_encode(uint8_t *out, bool extended, uint16_t flags, uint16_t type,
                               uint64_t cookie, uint64_t offset, uint64_t length);

/* Writes an NBD_REPLY_TYPE_OFFSET_DATA chunk header plus its 8-byte offset (28 bytes);
 * `data_length` bytes of data follow it on the wire. */
#define NBD_OFFSET_DATA_HEADER_SIZE 28u
void nbd_offset_data_header_encode(uint8_t out[NBD_OFFSET_DATA_HEADER_SIZE], uint16_t flags,
                                   uint64_t cookie, uint64_t offset, uint32_t data_length);

/* Writes a whole NBD_REPLY_TYPE_ERROR chunk with the DONE flag: header, error, message
 * length, message (truncated to NBD_ERROR_MESSAGE_MAX bytes at a UTF-8 character
 * boundary; the spec allows up to 4096). `out` must hold NBD_ERROR_CHUNK_MAX bytes.
 * Returns the bytes written. error must not be 0 (spec rule 31). */
#define NBD_ERROR_MESSAGE_MAX 256u
#define NBD_ERROR_CHUNK_MAX (NBD_STRUCTURED_REPLY_SIZE + 6u + NBD_ERROR_MESSAGE_MAX)
size_t nbd_error_chunk_encode(uint8_t *out, uint64_t cookie, uint32_t error,
                              const char *message);

/* Writes a whole NBD_REPLY_TYPE_ERROR chunk (DONE set) in the negotiated style: like
 * nbd_error_chunk_encode, with a 32-byte header when `extended`. `out` must hold
 * NBD_ERROR_CHUNK_MAX + 12 bytes. Returns the bytes written. */
size_t nbd_error_reply_encode(uint8_t *out, bool extended, uint64_t cookie, uint64_t offset,
                              uint32_t error, const char *message);

/* Writes a whole NBD_REPLY_TYPE_ERROR_OFFSET chunk (DONE set) in the negotiated style: the
 * payload of nbd_error_reply_encode followed by the 64-bit `error_offset` (bytes, the
 * first byte the error concerns; it must lie inside the request: spec rule 31). `offset` is
 * the request's, echoed by an extended header. `out` must hold NBD_ERROR_OFFSET_REPLY_MAX
 * bytes. Returns the bytes written. Any thread. Source: doc/proto.md "Structured reply
 * types" (the chunk may appear several times in one reply, once per offset). */
#define NBD_ERROR_OFFSET_REPLY_MAX (NBD_ERROR_CHUNK_MAX + 12u + 8u)
size_t nbd_error_offset_reply_encode(uint8_t *out, bool extended, uint64_t cookie,
                                     uint64_t offset, uint32_t error, const char *message,
                                     uint64_t error_offset);

/* One extent of the metadata contexts: its base:allocation flags and its
 * qemu:allocation-depth value. */
struct nbd_extent {
  uint64_t length; /* bytes, > 0 */
  uint32_t flags;  /* NBD_STATE_* */
  uint32_t depth;  /* qemu:allocation-depth: 0 unallocated, 1 the image, 2 its backing, ... */
};
_Static_assert(sizeof(struct nbd_extent) == 16, "in-place encoding needs 16-byte extents");

/* Encodes a block status chunk for context `context_id` in place over `extents`
 * (count > 0 entries): the descriptors are rewritten in wire form at the start of the same
 * buffer (8 bytes each compact, with lengths capped at 4 GiB - 4 KiB; 16 bytes extended),
 * and the chunk header plus the context id (and descriptor count when extended) go into
 * `hdr` (at least 48 bytes). Returns the header bytes; *payload_bytes gets the descriptor
 * bytes. Flags: DONE. */
size_t nbd_block_status_encode(uint8_t *hdr, bool extended, uint64_t cookie, uint64_t offset,
                               uint32_t context_id, struct nbd_extent *extents,
                               uint32_t count, size_t *payload_bytes);

/* Bytes a block status reply for both contexts needs at `extents` beyond the count
 * entries themselves: the second chunk's header and descriptors. */
#define NBD_BLOCK_STATUS_SECOND_ROOM(count) ((size_t)(count) * 16u + 40u)

/* The block status reply for the selected metadata contexts, in place over `extents`
 * (count > 0 entries, consecutive from `offset`): a chunk for base:allocation with context
 * id base_id (0: not selected) carrying each extent's flags, and one for
 * qemu:allocation-depth with id depth_id (0: not selected) carrying each extent's depth;
 * at least one id is not 0. The first chunk's header goes into `hdr` (at least 48 bytes);
 * its descriptors, and then the whole second chunk (header and descriptors) when both
 * contexts are selected, are written from the start of `extents`, so one header and one
 * run of payload bytes (*payload_bytes) make the reply. With both contexts the buffer
 * must hold count entries and NBD_BLOCK_STATUS_SECOND_ROOM(count) bytes more. Compact
 * descriptors cap a length at 4 GiB - 4 KiB and end the chunks there (both chunks cover
 * the same extents). Only the last chunk carries DONE. Returns the header bytes.
 * Source: doc/proto.md "NBD_REPLY_TYPE_BLOCK_STATUS" (one chunk per selected context);
 * QEMU's docs/interop/nbd.txt for the depth context. Any thread. */
size_t nbd_block_status_reply_encode(uint8_t *hdr, bool extended, uint64_t cookie,
                                     uint64_t offset, uint32_t base_id, uint32_t depth_id,
                                     struct nbd_extent *extents, uint32_t count,
                                     size_t *payload_bytes);

/* Maps a -errno (or errno) from the backing to an NBD error value (spec rule 35):
 * EPERM/EROFS/EACCES -> EPERM, EIO -> EIO, ENOMEM -> ENOMEM, ENOSPC/EDQUOT/EFBIG -> ENOSPC,
 * EOVERFLOW, ENOTSUP/EOPNOTSUPP -> ENOTSUP, ESHUTDOWN, EINVAL; anything else -> EINVAL
 * (and 0 -> NBD_SUCCESS). */
uint32_t nbd_error_from_errno(int err);

#endif
