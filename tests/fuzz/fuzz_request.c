/* SPDX-License-Identifier: MIT */
/* fuzz_request.c: libFuzzer harness for request decoding and validation, and for the reply
 * encoders, over the pure code of src/nbd/request.c (doc/proto.md "Transmission phase";
 * rules 16-35 of docs/spec-rules.md).
 *
 * Input:
 *   bytes 0-14   the connection: export size (64 bits), transmission flags (16), maximum
 *                payload (32), mode (8: bit 0 structured replies, bit 1 extended headers,
 *                bit 2 a meta context selected, bits 3-5 the enforced minimum block size:
 *                0 none (unaligned requests served), then 1, 512, 4096, 2, 65536, 1024, 3)
 *   then requests: a 28-byte header (32 bytes with extended headers) and the payload the
 *                decoder says follows (min(payload, rest) bytes), as the server reads them.
 * For each request: decode, re-encode (must give the same bytes), validate against the
 * limits and check the verdict against the spec (an independent model below); then encode
 * the replies the server would send -- error reply with the payload as its message, block
 * status with extents made of the request's fields -- and parse them back.
 * A broken invariant aborts. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nbd/proto.h"
#include "nbd/reply.h"
#include "nbd/request.h"
#include "util/bytes.h"

#define CHECK(cond)                                                                         \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "fuzz_request: invariant failed at line %d: %s\n", __LINE__, #cond); \
      abort();                                                                              \
    }                                                                                       \
  } while (0)

static bool error_allowed(uint32_t e)
{
  switch (e) {
  case NBD_SUCCESS:
  case NBD_EPERM:
  case NBD_EIO:
  case NBD_ENOMEM:
  case NBD_EINVAL:
  case NBD_ENOSPC:
  case NBD_EOVERFLOW:
  case NBD_ENOTSUP:
  case NBD_ESHUTDOWN:
    return true;
  default:
    return false;
  }
}

/* The flags the spec documents for each command (independent of request.c's table). */
static uint16_t documented_flags(uint16_t type, const struct nbd_export_limits *l)
{
  uint16_t f = (l->transmission_flags & NBD_FLAG_SEND_FUA) ? NBD_CMD_FLAG_FUA : 0;

  switch (type) {
  case NBD_CMD_READ:
    return f | ((l->structured_replies && (l->transmission_flags & NBD_FLAG_SEND_DF))
                    ? NBD_CMD_FLAG_DF : 0);
  case NBD_CMD_WRITE:
    return f | (l->extended_headers ? NBD_CMD_FLAG_PAYLOAD_LEN : 0);
  case NBD_CMD_WRITE_ZEROES:
    return f | NBD_CMD_FLAG_NO_HOLE |
           ((l->transmission_flags & NBD_FLAG_SEND_FAST_ZERO) ? NBD_CMD_FLAG_FAST_ZERO : 0);
  case NBD_CMD_BLOCK_STATUS:
    return f | NBD_CMD_FLAG_REQ_ONE;
  default:
    return f;
  }
}

static void check_verdict(const struct nbd_request *r, const struct nbd_export_limits *l,
                          uint32_t v)
{
  uint16_t tx = l->transmission_flags;
  bool ro = (tx & NBD_FLAG_READ_ONLY) != 0;
  uint64_t end;
  bool in_range = !__builtin_add_overflow(r->offset, r->length, &end) && end <= l->size;

  CHECK(error_allowed(v)); /* rule 35 */
  if (r->type == NBD_CMD_DISC) {
    CHECK(v == NBD_SUCCESS);
    return;
  }
  if (v != NBD_SUCCESS) {
    /* Errors are the spec's: EPERM only for writes on a read-only export, ENOSPC only for
     * writes past the end (rules 17, 22). */
    if (v == NBD_EPERM) {
      CHECK(ro && (r->type == NBD_CMD_WRITE || r->type == NBD_CMD_TRIM ||
                   r->type == NBD_CMD_WRITE_ZEROES));
    }
    if (v == NBD_ENOSPC) {
      CHECK((r->type == NBD_CMD_WRITE || r->type == NBD_CMD_WRITE_ZEROES) && !in_range);
    }
    CHECK(v == NBD_EINVAL || v == NBD_EPERM || v == NBD_ENOSPC || v == NBD_EOVERFLOW);
    if (r->type > NBD_CMD_BLOCK_STATUS) {
      CHECK(v == NBD_EINVAL); /* rule 24: unknown command */
    }
    return;
  }
  /* Accepted: the request is one the spec lets a server carry out. */
  CHECK(r->type <= NBD_CMD_BLOCK_STATUS && r->type != NBD_CMD_RESIZE);
  CHECK((r->flags & ~documented_flags(r->type, l)) == 0);         /* rule 24 */
  if (l->min_block > 1 && r->type != NBD_CMD_FLUSH) {
    CHECK(r->offset % l->min_block == 0 && r->length % l->min_block == 0); /* rule 23 */
  }
  if (!l->extended_headers) {
    CHECK(r->length <= UINT32_MAX);
  }
  switch (r->type) {
  case NBD_CMD_READ:
    CHECK(in_range && r->length <= l->max_payload);                  /* rules 22, 25 */
    break;
  case NBD_CMD_WRITE:
    CHECK(!ro && in_range && r->length <= l->max_payload);
    if (l->extended_headers) {
      CHECK(r->flags & NBD_CMD_FLAG_PAYLOAD_LEN);
    }
    break;
  case NBD_CMD_FLUSH:
    CHECK(r->offset == 0 && r->length == 0 && (tx & NBD_FLAG_SEND_FLUSH));   /* rule 26 */
    break;
  case NBD_CMD_TRIM:
  case NBD_CMD_WRITE_ZEROES:
    CHECK(!ro && in_range);
    CHECK(r->type == NBD_CMD_TRIM ? (tx & NBD_FLAG_SEND_TRIM) != 0
                                  : (tx & NBD_FLAG_SEND_WRITE_ZEROES) != 0);
    break;
  case NBD_CMD_CACHE:
    CHECK(in_range && (tx & NBD_FLAG_SEND_CACHE));                   /* rule 32 */
    break;
  case NBD_CMD_BLOCK_STATUS:
    CHECK(in_range && r->length > 0 && l->meta_context && l->structured_replies); /* 30 */
    break;
  default:
    CHECK(false);
  }
}

/* True when the first n bytes of s are valid UTF-8, allowing a character cut at the end. */
static bool utf8_valid(const unsigned char *s, size_t n)
{
  size_t i = 0;

  while (i < n) {
    unsigned char c = s[i];
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
               : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0) {
      return false;
    }
    for (size_t k = 1; k < len && i + k < n; k++) {
      if ((s[i + k] & 0xC0) != 0x80) {
        return false;
      }
    }
    i += len;
  }
  return true;
}

/* Encodes the error reply the server would send with `msg` and parses it back. */
static void check_error_reply(const struct nbd_request *r, bool extended, uint32_t error,
                              const char *msg)
{
  uint8_t out[NBD_ERROR_CHUNK_MAX + 12];
  size_t hdr = extended ? NBD_EXTENDED_REPLY_SIZE : NBD_STRUCTURED_REPLY_SIZE;
  size_t n = nbd_error_reply_encode(out, extended, r->cookie, r->offset, error, msg);
  uint64_t length;
  uint16_t mlen;
  size_t want = strlen(msg);

  CHECK(n >= hdr + 6 && n <= sizeof out);
  if (extended) {
    CHECK(bytes_get_be32(out) == NBD_EXTENDED_REPLY_MAGIC);
    CHECK(bytes_get_be64(out + 16) == r->offset);                    /* rule 16 */
    length = bytes_get_be64(out + 24);
  } else {
    CHECK(bytes_get_be32(out) == NBD_STRUCTURED_REPLY_MAGIC);
    length = bytes_get_be32(out + 16);
  }
  CHECK(bytes_get_be16(out + 4) == NBD_REPLY_FLAG_DONE);
  CHECK(bytes_get_be16(out + 6) == NBD_REPLY_TYPE_ERROR);
  CHECK(bytes_get_be64(out + 8) == r->cookie);
  CHECK(length == n - hdr && length >= 6);                           /* rule 31 */
  CHECK(bytes_get_be32(out + hdr) == error && error != 0);
  mlen = bytes_get_be16(out + hdr + 4);
  CHECK(mlen == length - 6 && mlen <= NBD_MAX_STRING && mlen <= NBD_ERROR_MESSAGE_MAX);
  CHECK(mlen <= want && memcmp(out + hdr + 6, msg, mlen) == 0);
  if (mlen < want) {
    CHECK(want > NBD_ERROR_MESSAGE_MAX); /* only long messages are cut */
    /* the cut backs up from NBD_ERROR_MESSAGE_MAX over continuation bytes (10xxxxxx) only */
    for (size_t k = (size_t)mlen + 1; k <= NBD_ERROR_MESSAGE_MAX; k++) {
      CHECK(((unsigned char)msg[k] & 0xC0) == 0x80);
    }
    /* at most 3 bytes are dropped (a UTF-8 character is at most 4 bytes long), and the
     * cut stops early only at a character start */
    CHECK((unsigned)mlen + 3u >= NBD_ERROR_MESSAGE_MAX);
    CHECK((unsigned)mlen + 3u == NBD_ERROR_MESSAGE_MAX ||
          ((unsigned char)msg[mlen] & 0xC0) != 0x80);
    if (utf8_valid((const unsigned char *)msg, NBD_ERROR_MESSAGE_MAX + 4 < want
                                                   ? NBD_ERROR_MESSAGE_MAX + 4 : want)) {
      /* valid UTF-8 is cut at a character boundary, losing less than one character */
      CHECK(((unsigned char)msg[mlen] & 0xC0) != 0x80);
      CHECK((unsigned)mlen + 3u >= NBD_ERROR_MESSAGE_MAX);
    }
    /* Invalid UTF-8 (server messages never are: they are its own strings) has no
     * boundary to cut at; crashes/request/utf8-continuation-run: a run of continuation
     * bytes was once dropped whole, leaving an empty message; now it keeps
     * NBD_ERROR_MESSAGE_MAX - 3 bytes. */
  }
}

/* The simple reply and the READ data header the server would send. */
static void check_simple_and_data(const struct nbd_request *r, uint32_t verdict)
{
  uint8_t out[NBD_OFFSET_DATA_HEADER_SIZE];

  nbd_simple_reply_encode(out, verdict, r->cookie);
  CHECK(bytes_get_be32(out) == NBD_SIMPLE_REPLY_MAGIC);
  CHECK(bytes_get_be32(out + 4) == verdict && bytes_get_be64(out + 8) == r->cookie);
  if (verdict == NBD_SUCCESS && r->type == NBD_CMD_READ && r->length > 0 &&
      r->length <= UINT32_MAX - 8) {
    nbd_offset_data_header_encode(out, NBD_REPLY_FLAG_DONE, r->cookie, r->offset,
                                  (uint32_t)r->length);
    CHECK(bytes_get_be32(out) == NBD_STRUCTURED_REPLY_MAGIC);
    CHECK(bytes_get_be16(out + 6) == NBD_REPLY_TYPE_OFFSET_DATA);
    CHECK(bytes_get_be32(out + 16) == 8 + r->length);                /* rule 20 */
    CHECK(bytes_get_be64(out + 20) == r->offset);
  }
}

/* Encodes a block status reply over extents made from `seed` and checks the wire form. */
static void check_block_status(const struct nbd_request *r, bool extended, const uint8_t *seed,
                               size_t seed_len)
{
  enum { MAX_EXTENTS = 32 };
  struct nbd_extent ext[MAX_EXTENTS], orig[MAX_EXTENTS];
  uint8_t hdr[64];
  uint32_t count = 1 + (uint32_t)(r->cookie % MAX_EXTENTS);
  size_t payload = 0, n;
  uint32_t got;

  for (uint32_t i = 0; i < count; i++) {
    uint64_t v = 0;
    for (size_t k = 0; k < 8 && seed_len > 0; k++) {
      v = (v << 8) | seed[(i * 8 + k) % seed_len];
    }
    if (i == 0) {
      v ^= r->length;
    }
    ext[i].length = v ? v : 1;
    ext[i].flags = (uint32_t)(r->offset >> (i % 32)) & (NBD_STATE_HOLE | NBD_STATE_ZERO);
  }
  memcpy(orig, ext, sizeof ext);
  n = nbd_block_status_encode(hdr, extended, r->cookie, r->offset, 7, ext, count, &payload);
  if (extended) {
    CHECK(n == NBD_EXTENDED_REPLY_SIZE + 8);
    CHECK(bytes_get_be32(hdr) == NBD_EXTENDED_REPLY_MAGIC);
    CHECK(bytes_get_be16(hdr + 6) == NBD_REPLY_TYPE_BLOCK_STATUS_EXT);
    CHECK(bytes_get_be64(hdr + 16) == r->offset);
    CHECK(bytes_get_be64(hdr + 24) == 8 + payload);                  /* rule 16 */
    got = bytes_get_be32(hdr + n - 4);
    CHECK(got == count && payload == 16u * count);
  } else {
    CHECK(n == NBD_STRUCTURED_REPLY_SIZE + 4);
    CHECK(bytes_get_be32(hdr) == NBD_STRUCTURED_REPLY_MAGIC);
    CHECK(bytes_get_be16(hdr + 6) == NBD_REPLY_TYPE_BLOCK_STATUS);
    CHECK(bytes_get_be32(hdr + 16) == 4 + payload);
    CHECK(payload % 8 == 0 && payload >= 8 && payload <= 8u * count);
    got = (uint32_t)(payload / 8);
  }
  CHECK(bytes_get_be32(hdr + n - (extended ? 8 : 4)) == 7);
  for (uint32_t i = 0; i < got; i++) {
    const uint8_t *d = (const uint8_t *)ext + (size_t)i * (extended ? 16 : 8);
    uint64_t len = extended ? bytes_get_be64(d) : bytes_get_be32(d);
    uint64_t fl = extended ? bytes_get_be64(d + 8) : bytes_get_be32(d + 4);
    CHECK(len > 0);                                                  /* rule 30 */
    CHECK(fl == orig[i].flags);
    if (extended || i + 1 < got) {
      CHECK(len == orig[i].length);
    } else {
      CHECK(len <= orig[i].length); /* the last compact descriptor may be shortened */
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct nbd_export_limits limits;
  size_t pos;
  uint8_t mode;

  if (size < 15) {
    return 0;
  }
  memset(&limits, 0, sizeof limits);
  limits.size = bytes_get_be64(data);
  limits.transmission_flags = bytes_get_be16(data + 8) | NBD_FLAG_HAS_FLAGS;
  limits.max_payload = bytes_get_be32(data + 10);
  mode = data[14];
  limits.extended_headers = (mode & 2) != 0;
  limits.structured_replies = (mode & 1) != 0 || limits.extended_headers;
  limits.meta_context = (mode & 4) != 0;
  {
    static const uint32_t min_blocks[8] = {0, 1, 512, 4096, 2, 65536, 1024, 3};
    limits.min_block = min_blocks[(mode >> 3) & 7];
  }

  (void)nbd_command_name(bytes_get_be16(data + 8));
  CHECK(error_allowed(nbd_error_from_errno((int)bytes_get_be32(data + 10))));
  CHECK(error_allowed(nbd_error_from_errno(-(int)(bytes_get_be32(data + 10) & 0x7fffffff))));
  CHECK(nbd_error_from_errno(INT_MIN) == NBD_EINVAL && nbd_error_from_errno(0) == 0);

  pos = 15;
  for (;;) {
    size_t hsize = limits.extended_headers ? NBD_EXTENDED_REQUEST_SIZE : NBD_REQUEST_SIZE;
    struct nbd_request req;
    uint8_t again[NBD_EXTENDED_REQUEST_SIZE];
    uint64_t payload;
    uint32_t verdict;
    char *msg;
    size_t mlen;
    int rc;

    if (size - pos < hsize) {
      break;
    }
    if (limits.extended_headers) {
      rc = nbd_request_decode_extended(data + pos, &req);
      CHECK((rc == 0) == (bytes_get_be32(data + pos) == NBD_EXTENDED_REQUEST_MAGIC));
    } else {
      rc = nbd_request_decode(data + pos, &req);
      CHECK((rc == 0) == (bytes_get_be32(data + pos) == NBD_REQUEST_MAGIC));
    }
    if (rc != 0) {
      CHECK(rc == -EPROTO);
      break; /* the server closes the connection */
    }
    if (limits.extended_headers) {
      nbd_request_encode_extended(again, &req);
    } else {
      CHECK(req.length <= UINT32_MAX);
      nbd_request_encode(again, &req);
    }
    CHECK(memcmp(again, data + pos, hsize) == 0);
    pos += hsize;

    payload = nbd_request_payload_length(&req, limits.extended_headers);
    if (limits.extended_headers) {
      /* a WRITE's data is on the wire even without the PAYLOAD_LEN it must carry */
      CHECK(payload == ((req.type == NBD_CMD_WRITE || (req.flags & NBD_CMD_FLAG_PAYLOAD_LEN))
                            ? req.length : 0));
    } else {
      CHECK(payload == (req.type == NBD_CMD_WRITE ? req.length : 0));
    }
    verdict = nbd_request_validate(&req, &limits);
    check_verdict(&req, &limits, verdict);
    if (verdict == NBD_SUCCESS && req.type == NBD_CMD_WRITE) {
      CHECK(payload == req.length); /* the data the server reads is the data it writes */
    }
    check_simple_and_data(&req, verdict);
    /* errno values the backing may return, from the cookie's low byte: always allowed */
    CHECK(error_allowed(nbd_error_from_errno(-(int)(req.cookie & 0xff))));
    CHECK(error_allowed(nbd_error_from_errno((int)((req.cookie >> 8) & 0xff))));
    {
      /* the same request under the other header style (64-bit lengths reach a compact
       * export only through this): the verdict still follows the spec */
      struct nbd_export_limits other = limits;
      other.extended_headers = !limits.extended_headers;
      other.structured_replies = limits.structured_replies || other.extended_headers;
      check_verdict(&req, &other, nbd_request_validate(&req, &other));
    }

    /* The payload (what the server reads or discards) becomes the error message. */
    mlen = payload < size - pos ? (size_t)payload : size - pos;
    msg = malloc(mlen + 1);
    CHECK(msg != NULL);
    memcpy(msg, data + pos, mlen);
    msg[mlen] = '\0';
    check_error_reply(&req, limits.extended_headers,
                      verdict != NBD_SUCCESS ? verdict : NBD_EIO, msg);
    if (req.type == NBD_CMD_BLOCK_STATUS || (req.cookie & 1)) {
      check_block_status(&req, limits.extended_headers, data + pos, mlen);
    }
    free(msg);
    pos += mlen;
  }
  return 0;
}
