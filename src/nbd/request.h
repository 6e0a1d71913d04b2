/* SPDX-License-Identifier: MIT */
/* request.h: the transmission phase's requests: header decoding and encoding, payload
 * length and validation against the export, as pure functions over byte buffers (no
 * sockets, no files). Replies are encoded by reply.h. Any thread; nothing allocates.
 *
 * Source: doc/proto.md, "Transmission phase", "Request message", "Request types";
 * spec rules 17-26 (docs/spec-rules.md).
 */
#ifndef DISKGATE_NBD_REQUEST_H
#define DISKGATE_NBD_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nbd/proto.h"

struct nbd_request {
  uint16_t flags;  /* NBD_CMD_FLAG_* */
  uint16_t type;   /* NBD_CMD_* */
  uint64_t cookie; /* echoed in the reply */
  uint64_t offset; /* bytes */
  uint64_t length; /* bytes (32 bits on the wire without extended headers) */
};

/* What the server negotiated for this connection's export. */
struct nbd_export_limits {
  uint64_t size;            /* export size, bytes */
  uint16_t transmission_flags;
  uint32_t max_payload;     /* bytes, for READ and WRITE */
  bool structured_replies;  /* NBD_OPT_STRUCTURED_REPLY (or extended headers) acknowledged */
  bool extended_headers;    /* NBD_OPT_EXTENDED_HEADERS acknowledged */
  bool meta_context;        /* at least one metadata context selected (BLOCK_STATUS) */
  uint32_t min_block;       /* bytes: offsets and lengths must be multiples of it (spec rule
                               23); 0 or 1 when unaligned requests are served */
};

/* Decodes a 28-byte request header. Returns 0, or -EPROTO when the magic is wrong (the
 * stream cannot be trusted: the connection must be closed). */
int nbd_request_decode(const uint8_t in[NBD_REQUEST_SIZE], struct nbd_request *out);

/* Decodes a 32-byte extended request header (extension-ext-header: 64-bit length).
 * Returns 0 or -EPROTO (wrong magic: close the connection). */
int nbd_request_decode_extended(const uint8_t in[NBD_EXTENDED_REQUEST_SIZE],
                                struct nbd_request *out);

/* Writes a 32-byte extended request header (for tests and clients). */
void nbd_request_encode_extended(uint8_t out[NBD_EXTENDED_REQUEST_SIZE],
                                 const struct nbd_request *req);

/* Writes a 28-byte request header (for tests and clients). */
void nbd_request_encode(uint8_t out[NBD_REQUEST_SIZE], const struct nbd_request *req);

/* Bytes of payload that follow the header on the wire: compact headers: the length of a
 * WRITE, else 0; extended headers: the length of a WRITE (with or without the
 * NBD_CMD_FLAG_PAYLOAD_LEN it must carry) or of any request with PAYLOAD_LEN, else 0.
 * The server reads (or discards) exactly this much whether or not the request is valid,
 * so the next header parses (spec rule 24). */
uint64_t nbd_request_payload_length(const struct nbd_request *req, bool extended_headers);

/* Validates req against the export. Returns NBD_SUCCESS or the NBD error to reply with:
 *   NBD_EINVAL  unknown command (not DISC), a flag unknown or not valid for the command,
 *               FLUSH with non-zero offset/length, READ/TRIM/CACHE/BLOCK_STATUS past the
 *               end or overflowing 64 bits, READ/WRITE longer than max_payload,
 *               BLOCK_STATUS without a selected context or with length 0, a payload on a
 *               command other than WRITE, a WRITE without PAYLOAD_LEN under extended
 *               headers; READ, WRITE, TRIM, WRITE_ZEROES, CACHE or BLOCK_STATUS whose offset
 *               or length is not a multiple of a min_block above 1;
 *   NBD_EPERM   WRITE, TRIM, WRITE_ZEROES on a read-only export, whatever else is wrong
 *               with them (checked before the flags, alignment and range: spec rule 17);
 *   NBD_ENOSPC  WRITE or WRITE_ZEROES past the end.
 * NBD_CMD_DISC is always valid. Length 0 is valid (the caller replies success without I/O). */
uint32_t nbd_request_validate(const struct nbd_request *req,
                              const struct nbd_export_limits *limits);

/* The command's name for logs ("READ", ...; "UNKNOWN" otherwise). */
const char *nbd_command_name(uint16_t type);

#endif
