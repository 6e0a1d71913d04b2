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

size_t nbd_block_status_encode(uint8_t *hdr, bool extended, uint64_t cookie, uint64_t offset,
                               uint32_t context_id, struct nbd_extent *extents,
                               uint32_t count, size_t *payload_bytes)
{
  uint8_t *wire = (uint8_t *)extents;
  size_t n;

  assert(count > 0);
  for (uint32_t i = 0; i < count; i++) {
    /* Read entry i before writing its wire form: the wire form of entry i starts at or
     * before the struct of entry i and ends before the struct of entry i + 1. */
    uint64_t length = extents[i].length;
    uint32_t flags = extents[i].flags;
    assert(length > 0);
    if (extended) {
      bytes_put_be64(wire + 16 * (size_t)i, length);
      bytes_put_be64(wire + 16 * (size_t)i + 8, flags);
    } else if (length > UINT32_MAX - 4095) {
      /* Too long for a 32-bit descriptor: report a shorter extent and end the chunk there
       * (later descriptors would no longer be consecutive). */
      bytes_put_be32(wire + 8 * (size_t)i, UINT32_MAX - 4095);
      bytes_put_be32(wire + 8 * (size_t)i + 4, flags);
      count = i + 1;
      break;
    } else {
      bytes_put_be32(wire + 8 * (size_t)i, (uint32_t)length);
      bytes_put_be32(wire + 8 * (size_t)i + 4, flags);
    }
  }
  *payload_bytes = (size_t)count * (extended ? 16 : 8);
  if (extended) {
    n = nbd_reply_header_encode(hdr, true, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_BLOCK_STATUS_EXT,
                                cookie, offset, 8 + *payload_bytes);
    bytes_put_be32(hdr + n, context_id);
    bytes_put_be32(hdr + n + 4, count);
    return n + 8;
  }
  n = nbd_reply_header_encode(hdr, false, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_BLOCK_STATUS,
                              cookie, offset, 4 + *payload_bytes);
  bytes_put_be32(hdr + n, context_id);
  return n + 4;
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
