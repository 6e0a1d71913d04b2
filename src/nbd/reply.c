/* SPDX-License-Identifier: MIT */
/* reply.c: reply encoding (doc/proto.md, "Transmission phase"). Pure functions: see
 * reply.h for contracts. */
#include "nbd/reply.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "util/bytes.h"

void nbd_simple_reply_encode(uint8_t out[NBD_SIMPLE_REPLY_SIZE], uint32_t error,
                             uint64_t cookie)
{
  bytes_put_be32(out, NBD_SIMPLE_REPLY_MAGIC);
  bytes_put_be32(out + 4, error);
  bytes_put_be64(out + 8, cookie);
}

void nbd_chunk_header_encode(uint8_t out[NBD_STRUCTURED_REPLY_SIZE], uint16_t flags,
                             uint16_t type, uint64_t cookie, uint32_t length)
{
  bytes_put_be32(out, NBD_STRUCTURED_REPLY_MAGIC);
  bytes_put_be16(out + 4, flags);
  bytes_put_be16(out + 6, type);
  bytes_put_be64(out + 8, cookie);
  bytes_put_be32(out + 16, length);
}

void nbd_ext_reply_header_encode(uint8_t out[NBD_EXTENDED_REPLY_SIZE], uint16_t flags,
                                 uint16_t type, uint64_t cookie, uint64_t offset,
                                 uint64_t length)
{
  bytes_put_be32(out, NBD_EXTENDED_REPLY_MAGIC);
  bytes_put_be16(out + 4, flags);
  bytes_put_be16(out + 6, type);
  bytes_put_be64(out + 8, cookie);
  bytes_put_be64(out + 16, offset);
  bytes_put_be64(out + 24, length);
}

void nbd_reply_header_clear_done(uint8_t *hdr)
{
  assert(bytes_get_be16(hdr + 4) & NBD_REPLY_FLAG_DONE);
  bytes_put_be16(hdr + 4, (uint16_t)(bytes_get_be16(hdr + 4) & ~NBD_REPLY_FLAG_DONE));
}

size_t nbd_reply_header_encode(uint8_t *out, bool extended, uint16_t flags, uint16_t type,
                               uint64_t cookie, uint64_t offset, uint64_t length)
{
  if (extended) {
    nbd_ext_reply_header_encode(out, flags, type, cookie, offset, length);
    return NBD_EXTENDED_REPLY_SIZE;
  }
  assert(length <= UINT32_MAX);
  nbd_chunk_header_encode(out, flags, type, cookie, (uint32_t)length);
  return NBD_STRUCTURED_REPLY_SIZE;
}

void nbd_offset_data_header_encode(uint8_t out[NBD_OFFSET_DATA_HEADER_SIZE], uint16_t flags,
                                   uint64_t cookie, uint64_t offset, uint32_t data_length)
{
  assert(data_length > 0 && data_length <= UINT32_MAX - 8);
  nbd_chunk_header_encode(out, flags, NBD_REPLY_TYPE_OFFSET_DATA, cookie, 8 + data_length);
  bytes_put_be64(out + NBD_STRUCTURED_REPLY_SIZE, offset);
}

/* Writes the payload of an error chunk at p: error, message length, message (truncated as
 * nbd_error_chunk_encode says), then `error_offset` when it is not NULL (ERROR_OFFSET).
 * Returns the payload's length in bytes. */
static size_t error_payload_put(uint8_t *p, uint32_t error, const char *message,
                                const uint64_t *error_offset)
{
  size_t msg_length = message != NULL ? strlen(message) : 0;

  assert(error != 0);
  if (msg_length > NBD_ERROR_MESSAGE_MAX) {
    msg_length = NBD_ERROR_MESSAGE_MAX;
    /* Never cut a UTF-8 character in two: back up over continuation bytes (10xxxxxx)
     * to the start of the character that would be split. A character is at most 4 bytes,
     * so at most 3 bytes are dropped: invalid UTF-8 (a long run of continuation bytes)
     * keeps its first NBD_ERROR_MESSAGE_MAX - 3 bytes instead of vanishing. */
    size_t floor = NBD_ERROR_MESSAGE_MAX - 3;
    while (msg_length > floor && ((unsigned char)message[msg_length] & 0xC0) == 0x80) {
      msg_length--;
    }
  }
  bytes_put_be32(p, error);
  bytes_put_be16(p + 4, (uint16_t)msg_length);
  if (msg_length > 0) {
    memcpy(p + 6, message, msg_length);
  }
  if (error_offset != NULL) {
    bytes_put_be64(p + 6 + msg_length, *error_offset);
    return 6 + msg_length + 8;
  }
  return 6 + msg_length;
}

/* A whole error chunk of `type` (DONE set) in the negotiated header style. */
static size_t error_reply_put(uint8_t *out, bool extended, uint16_t type, uint64_t cookie,
                              uint64_t offset, uint32_t error, const char *message,
                              const uint64_t *error_offset)
{
  size_t head = extended ? NBD_EXTENDED_REPLY_SIZE : NBD_STRUCTURED_REPLY_SIZE;
  size_t n = error_payload_put(out + head, error, message, error_offset);

  (void)nbd_reply_header_encode(out, extended, NBD_REPLY_FLAG_DONE, type, cookie, offset, n);
  return head + n;
}

size_t nbd_error_chunk_encode(uint8_t *out, uint64_t cookie, uint32_t error,
                              const char *message)
{
  return error_reply_put(out, false, NBD_REPLY_TYPE_ERROR, cookie, 0, error, message, NULL);
}

size_t nbd_error_reply_encode(uint8_t *out, bool extended, uint64_t cookie, uint64_t offset,
                              uint32_t error, const char *message)
{
  return error_reply_put(out, extended, NBD_REPLY_TYPE_ERROR, cookie, offset, error, message,
                         NULL);
}

size_t nbd_error_offset_reply_encode(uint8_t *out, bool extended, uint64_t cookie,
                                     uint64_t offset, uint32_t error, const char *message,
                                     uint64_t error_offset)
{
  size_t n = error_reply_put(out, extended, NBD_REPLY_TYPE_ERROR_OFFSET, cookie, offset, error,
                             message, &error_offset);

  assert(n <= NBD_ERROR_OFFSET_REPLY_MAX);
  return n;
}

/* The extents a chunk carries: all `count`, or in compact form up to and including the
 * first one too long for a 32-bit descriptor (reported shorter; later ones would no longer
 * be consecutive). */
static uint32_t chunk_count(const struct nbd_extent *extents, uint32_t count, bool extended)
{
  for (uint32_t i = 0; !extended && i < count; i++) {
    if (extents[i].length > UINT32_MAX - 4095) {
      return i + 1;
    }
  }
  return count;
}

/* Writes `count` descriptors of `extents` (their flags, or their depth when `depth`) at
 * `wire`, which may be `extents` itself: each entry is read before its wire form, which
 * starts at or before the entry and ends before the next one, is written. */
static void descriptors_put(uint8_t *wire, const struct nbd_extent *extents, uint32_t count,
                            bool extended, bool depth)
{
  for (uint32_t i = 0; i < count; i++) {
    uint64_t length = extents[i].length;
    uint32_t value = depth ? extents[i].depth : extents[i].flags;
    assert(length > 0);
    if (extended) {
      bytes_put_be64(wire + 16 * (size_t)i, length);
      bytes_put_be64(wire + 16 * (size_t)i + 8, value);
    } else {
      bytes_put_be32(wire + 8 * (size_t)i,
                     length > UINT32_MAX - 4095 ? UINT32_MAX - 4095 : (uint32_t)length);
      bytes_put_be32(wire + 8 * (size_t)i + 4, value);
    }
  }
}

/* A block status chunk's header and context id (and count when extended) for `count`
 * descriptors. Returns the bytes written at hdr (24 compact, 40 extended). */
static size_t chunk_header_put(uint8_t *hdr, bool extended, bool done, uint64_t cookie,
                               uint64_t offset, uint32_t context_id, uint32_t count)
{
  uint16_t flags = done ? NBD_REPLY_FLAG_DONE : 0;
  size_t desc = (size_t)count * (extended ? 16 : 8);
  size_t n;

  if (extended) {
    n = nbd_reply_header_encode(hdr, true, flags, NBD_REPLY_TYPE_BLOCK_STATUS_EXT, cookie,
                                offset, 8 + desc);
    bytes_put_be32(hdr + n, context_id);
    bytes_put_be32(hdr + n + 4, count);
    return n + 8;
  }
  n = nbd_reply_header_encode(hdr, false, flags, NBD_REPLY_TYPE_BLOCK_STATUS, cookie, offset,
                              4 + desc);
  bytes_put_be32(hdr + n, context_id);
  return n + 4;
}

size_t nbd_block_status_reply_encode(uint8_t *hdr, bool extended, uint64_t cookie,
                                     uint64_t offset, uint32_t base_id, uint32_t depth_id,
                                     struct nbd_extent *extents, uint32_t count,
                                     size_t *payload_bytes)
{
  uint8_t *wire = (uint8_t *)extents;
  size_t desc, n;

  assert(count > 0 && (base_id != 0 || depth_id != 0));
  count = chunk_count(extents, count, extended);
  desc = (size_t)count * (extended ? 16 : 8);
  if (base_id != 0 && depth_id != 0) {
    /* The depth chunk first, past the entries; then the flags in place; then the depth
     * chunk moved up behind them. */
    uint8_t *tail = wire + (size_t)count * sizeof *extents;
    size_t h2 = chunk_header_put(tail, extended, true, cookie, offset, depth_id, count);
    descriptors_put(tail + h2, extents, count, extended, true);
    descriptors_put(wire, extents, count, extended, false);
    memmove(wire + desc, tail, h2 + desc);
    *payload_bytes = desc + h2 + desc;
    n = chunk_header_put(hdr, extended, false, cookie, offset, base_id, count);
    /* the header's length field covers only its own chunk */
    return n;
  }
  descriptors_put(wire, extents, count, extended, depth_id != 0);
  *payload_bytes = desc;
  return chunk_header_put(hdr, extended, true, cookie, offset,
                          depth_id != 0 ? depth_id : base_id, count);
}

size_t nbd_block_status_encode(uint8_t *hdr, bool extended, uint64_t cookie, uint64_t offset,
                               uint32_t context_id, struct nbd_extent *extents,
                               uint32_t count, size_t *payload_bytes)
{
  return nbd_block_status_reply_encode(hdr, extended, cookie, offset, context_id, 0, extents,
                                       count, payload_bytes);
}

uint32_t nbd_error_from_errno(int err)
{
  if (err == INT_MIN) {
    return NBD_EINVAL;
  }
  if (err < 0) {
    err = -err;
  }
  switch (err) {
  case 0:
    return NBD_SUCCESS;
  case EPERM:
  case EROFS:
  case EACCES:
    return NBD_EPERM;
  case EIO:
    return NBD_EIO;
  case ENOMEM:
    return NBD_ENOMEM;
  case ENOSPC:
  case EDQUOT:
  case EFBIG:
    return NBD_ENOSPC;
  case EOVERFLOW:
    return NBD_EOVERFLOW;
  case ENOTSUP:
    return NBD_ENOTSUP;
  case ESHUTDOWN:
    return NBD_ESHUTDOWN;
  default:
    return NBD_EINVAL;
  }
}
