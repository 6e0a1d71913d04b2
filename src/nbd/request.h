/* request.h: the transmission phase's wire format and request validation, as pure
 * functions over byte buffers (no sockets, no files). Any thread; nothing allocates.
 *
 * Source: doc/proto.md, "Transmission phase", "Request message", "Simple reply message",
 * "Structured reply chunk message", "Request types", "Error values"; rules 17-26 and 35 of
 * ../shared/nbd-spec-rules.md.
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
 *               with them (checked before the flags, alignment and range: rule 17);
 *   NBD_ENOSPC  WRITE or WRITE_ZEROES past the end.
 * NBD_CMD_DISC is always valid. Length 0 is valid (the caller replies success without I/O). */
uint32_t nbd_request_validate(const struct nbd_request *req,
                              const struct nbd_export_limits *limits);

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
 * Returns the bytes written. error must not be 0 (rule 31). */
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
 * first byte the error concerns; it must lie inside the request: rule 31). `offset` is
 * the request's, echoed by an extended header. `out` must hold NBD_ERROR_OFFSET_REPLY_MAX
 * bytes. Returns the bytes written. Any thread. Source: doc/proto.md "Structured reply
 * types" (the chunk may appear several times in one reply, once per offset). */
#define NBD_ERROR_OFFSET_REPLY_MAX (NBD_ERROR_CHUNK_MAX + 12u + 8u)
size_t nbd_error_offset_reply_encode(uint8_t *out, bool extended, uint64_t cookie,
                                     uint64_t offset, uint32_t error, const char *message,
                                     uint64_t error_offset);

/* One base:allocation extent. */
struct nbd_extent {
  uint64_t length; /* bytes, > 0 */
  uint32_t flags;  /* NBD_STATE_* */
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

/* Maps a -errno (or errno) from the backing to an NBD error value (spec rule 35):
 * EPERM/EROFS/EACCES -> EPERM, EIO -> EIO, ENOMEM -> ENOMEM, ENOSPC/EDQUOT/EFBIG -> ENOSPC,
 * EOVERFLOW, ENOTSUP/EOPNOTSUPP -> ENOTSUP, ESHUTDOWN, EINVAL; anything else -> EINVAL
 * (and 0 -> NBD_SUCCESS). */
uint32_t nbd_error_from_errno(int err);

/* The command's name for logs ("READ", ...; "UNKNOWN" otherwise). */
const char *nbd_command_name(uint16_t type);

#endif
