/* SPDX-License-Identifier: MIT */
/* request.c: request decoding and validation (doc/proto.md, "Transmission phase"). Pure
 * functions: see request.h for contracts. */
#include "nbd/request.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "util/bytes.h"

int nbd_request_decode(const uint8_t in[NBD_REQUEST_SIZE], struct nbd_request *out)
{
  if (bytes_get_be32(in) != NBD_REQUEST_MAGIC) {
    return -EPROTO;
  }
  out->flags = bytes_get_be16(in + 4);
  out->type = bytes_get_be16(in + 6);
  out->cookie = bytes_get_be64(in + 8);
  out->offset = bytes_get_be64(in + 16);
  out->length = bytes_get_be32(in + 24);
  return 0;
}

int nbd_request_decode_extended(const uint8_t in[NBD_EXTENDED_REQUEST_SIZE],
                                struct nbd_request *out)
{
  if (bytes_get_be32(in) != NBD_EXTENDED_REQUEST_MAGIC) {
    return -EPROTO;
  }
  out->flags = bytes_get_be16(in + 4);
  out->type = bytes_get_be16(in + 6);
  out->cookie = bytes_get_be64(in + 8);
  out->offset = bytes_get_be64(in + 16);
  out->length = bytes_get_be64(in + 24);
  return 0;
}

void nbd_request_encode_extended(uint8_t out[NBD_EXTENDED_REQUEST_SIZE],
                                 const struct nbd_request *req)
{
  bytes_put_be32(out, NBD_EXTENDED_REQUEST_MAGIC);
  bytes_put_be16(out + 4, req->flags);
  bytes_put_be16(out + 6, req->type);
  bytes_put_be64(out + 8, req->cookie);
  bytes_put_be64(out + 16, req->offset);
  bytes_put_be64(out + 24, req->length);
}

void nbd_request_encode(uint8_t out[NBD_REQUEST_SIZE], const struct nbd_request *req)
{
  assert(req->length <= UINT32_MAX);
  bytes_put_be32(out, NBD_REQUEST_MAGIC);
  bytes_put_be16(out + 4, req->flags);
  bytes_put_be16(out + 6, req->type);
  bytes_put_be64(out + 8, req->cookie);
  bytes_put_be64(out + 16, req->offset);
  bytes_put_be32(out + 24, (uint32_t)req->length);
}

uint64_t nbd_request_payload_length(const struct nbd_request *req, bool extended_headers)
{
  if (extended_headers) {
    /* A WRITE's data is on the wire even when a faulty client left PAYLOAD_LEN out (the
     * request is then refused): reading length 0 would parse the data as requests. */
    return (req->type == NBD_CMD_WRITE || (req->flags & NBD_CMD_FLAG_PAYLOAD_LEN)) ? req->length
                                                                                    : 0;
  }
  return req->type == NBD_CMD_WRITE ? req->length : 0;
}

/* The flags a command accepts, given what the export advertised (spec: "Command flags"). */
static uint16_t allowed_flags(uint16_t type, const struct nbd_export_limits *limits)
{
  uint16_t tx = limits->transmission_flags;
  uint16_t allowed = 0;

  if (tx & NBD_FLAG_SEND_FUA) {
    allowed |= NBD_CMD_FLAG_FUA; /* valid on every command once SEND_FUA is negotiated */
  }
  switch (type) {
  case NBD_CMD_READ:
    if (limits->structured_replies && (tx & NBD_FLAG_SEND_DF)) {
      allowed |= NBD_CMD_FLAG_DF;
    }
    break;
  case NBD_CMD_WRITE:
    if (limits->extended_headers) {
      allowed |= NBD_CMD_FLAG_PAYLOAD_LEN;
    }
    break;
  case NBD_CMD_BLOCK_STATUS:
    allowed |= NBD_CMD_FLAG_REQ_ONE;
    break;
  case NBD_CMD_WRITE_ZEROES:
    allowed |= NBD_CMD_FLAG_NO_HOLE;
    if (tx & NBD_FLAG_SEND_FAST_ZERO) {
      allowed |= NBD_CMD_FLAG_FAST_ZERO;
    }
    break;
  default:
    break;
  }
  return allowed;
}

static bool command_supported(uint16_t type, const struct nbd_export_limits *limits)
{
  uint16_t tx = limits->transmission_flags;

  switch (type) {
  case NBD_CMD_READ:
  case NBD_CMD_WRITE:
  case NBD_CMD_DISC:
    return true;
  case NBD_CMD_FLUSH:
    return (tx & NBD_FLAG_SEND_FLUSH) != 0;
  case NBD_CMD_TRIM:
    return (tx & NBD_FLAG_SEND_TRIM) != 0 || (tx & NBD_FLAG_READ_ONLY) != 0;
  case NBD_CMD_WRITE_ZEROES:
    return (tx & NBD_FLAG_SEND_WRITE_ZEROES) != 0 || (tx & NBD_FLAG_READ_ONLY) != 0;
  case NBD_CMD_CACHE:
    return (tx & NBD_FLAG_SEND_CACHE) != 0;
  case NBD_CMD_BLOCK_STATUS:
    return limits->meta_context && limits->structured_replies;
  default:
    return false;
  }
}

uint32_t nbd_request_validate(const struct nbd_request *req,
                              const struct nbd_export_limits *limits)
{
  uint16_t tx = limits->transmission_flags;
  bool in_range = bytes_range_within(req->offset, req->length, limits->size);

  if (req->type == NBD_CMD_DISC) {
    return NBD_SUCCESS;
  }
  if (!command_supported(req->type, limits)) {
    return NBD_EINVAL;
  }
  if ((tx & NBD_FLAG_READ_ONLY) &&
      (req->type == NBD_CMD_WRITE || req->type == NBD_CMD_TRIM ||
       req->type == NBD_CMD_WRITE_ZEROES)) {
    /* spec rule 17's EPERM before any other check: a write with FUA or FAST_ZERO, flags a
     * read-only export does not advertise, is refused for being a write (spec rule 24 would
     * also allow EINVAL), and so are unaligned and out-of-range ones */
    return NBD_EPERM;
  }
  if ((req->flags & ~allowed_flags(req->type, limits)) != 0) {
    return NBD_EINVAL;
  }
  if (limits->extended_headers && req->type == NBD_CMD_WRITE &&
      !(req->flags & NBD_CMD_FLAG_PAYLOAD_LEN)) {
    return NBD_EINVAL; /* extended headers: WRITE MUST carry PAYLOAD_LEN */
  }
  if (!limits->extended_headers && req->length > UINT32_MAX) {
    return NBD_EINVAL; /* cannot happen from the 32-bit wire field */
  }
  if (limits->min_block > 1 && req->type != NBD_CMD_FLUSH &&
      (req->offset % limits->min_block != 0 || req->length % limits->min_block != 0)) {
    return NBD_EINVAL; /* unaligned to the advertised minimum block size (spec rule 23) */
  }
  switch (req->type) {
  case NBD_CMD_READ:
    if (req->length > limits->max_payload || !in_range) {
      return NBD_EINVAL;
    }
    return NBD_SUCCESS;
  case NBD_CMD_WRITE:
    if (req->length > limits->max_payload) {
      return NBD_EINVAL;
    }
    return in_range ? NBD_SUCCESS : NBD_ENOSPC;
  case NBD_CMD_FLUSH:
    return (req->offset == 0 && req->length == 0) ? NBD_SUCCESS : NBD_EINVAL;
  case NBD_CMD_TRIM:
    return in_range ? NBD_SUCCESS : NBD_EINVAL;
  case NBD_CMD_WRITE_ZEROES:
    return in_range ? NBD_SUCCESS : NBD_ENOSPC;
  case NBD_CMD_CACHE:
    return in_range ? NBD_SUCCESS : NBD_EINVAL;
  case NBD_CMD_BLOCK_STATUS:
    return (in_range && req->length > 0) ? NBD_SUCCESS : NBD_EINVAL;
  default:
    return NBD_EINVAL;
  }
}

const char *nbd_command_name(uint16_t type)
{
  static const char *const names[] = {"READ", "WRITE", "DISC", "FLUSH", "TRIM",
                                      "CACHE", "WRITE_ZEROES", "BLOCK_STATUS", "RESIZE"};
  return type < sizeof names / sizeof names[0] ? names[type] : "UNKNOWN";
}
