/* SPDX-License-Identifier: MIT */
/* option.h: the handshake's wire format, as pure functions over byte buffers (no sockets).
 *
 * Source: doc/proto.md, "Newstyle negotiation" and "Option types". Every function here may
 * be called from any thread; none allocates. Buffers are caller-owned; sizes are bytes.
 * The decisions (which option gets which reply) live in server/handshake.c.
 */
#ifndef DISKGATE_NBD_OPTION_H
#define DISKGATE_NBD_OPTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nbd/proto.h"

#define NBD_GREETING_SIZE 18u /* NBDMAGIC, IHAVEOPT, 16-bit handshake flags */
#define NBD_INFO_MAX_REQUESTS 32u /* info types we remember from one INFO/GO */

/* Writes the server's greeting into out[18]. */
void nbd_greeting_encode(uint8_t out[NBD_GREETING_SIZE], uint16_t handshake_flags);

/* Checks the client's 32-bit flags against the handshake flags the server sent.
 * Returns 0 and sets *no_zeroes, or -EPROTO when the client sets a bit the server did not
 * advertise or does not know (the server must then drop the connection: spec rule 2). */
int nbd_client_flags_check(uint32_t client_flags, uint16_t server_flags, bool *no_zeroes);

struct nbd_option_header {
  uint32_t option; /* NBD_OPT_* */
  uint32_t length; /* payload bytes that follow */
};

/* Decodes a 16-byte option header. Returns 0, or -EPROTO when the magic is not IHAVEOPT
 * (the connection must be closed: the stream is out of sync). */
int nbd_option_header_decode(const uint8_t in[NBD_OPTION_HEADER_SIZE],
                             struct nbd_option_header *out);

/* Writes an option reply header (20 bytes) for `option` with reply `type` and `length`
 * payload bytes to follow. */
void nbd_option_reply_encode(uint8_t out[NBD_OPTION_REPLY_SIZE], uint32_t option,
                             uint32_t type, uint32_t length);

/* A decoded NBD_OPT_INFO or NBD_OPT_GO payload. `name` points into the payload (it is not
 * NUL-terminated). Info types beyond NBD_INFO_MAX_REQUESTS are still validated but only the
 * known ones are remembered as booleans. */
struct nbd_info_request {
  const uint8_t *name;
  uint32_t name_length;    /* bytes, at most NBD_MAX_STRING */
  uint16_t info_count;
  bool want_name;
  bool want_description;
  bool want_block_size;
};

/* Decodes an INFO/GO payload: 32-bit name length, name, 16-bit count, count 16-bit types.
 * Returns 0, or -EINVAL when the lengths are inconsistent with `length` or the name holds
 * a NUL byte (reply NBD_REP_ERR_INVALID), or -ENAMETOOLONG for a name over NBD_MAX_STRING
 * bytes (also NBD_REP_ERR_INVALID; spec rule 15). */
int nbd_info_request_decode(const uint8_t *payload, uint32_t length,
                            struct nbd_info_request *out);

/* Validates an NBD_OPT_EXPORT_NAME payload (the whole payload is the name).
 * Returns 0, -EINVAL (a NUL byte) or -ENAMETOOLONG (over NBD_MAX_STRING). */
int nbd_export_name_check(const uint8_t *payload, uint32_t length);

/* A decoded NBD_OPT_LIST_META_CONTEXT or NBD_OPT_SET_META_CONTEXT payload: export name,
 * then `query_count` queries (32-bit length, string), all within the payload. Pointers
 * point into the payload. */
struct nbd_meta_request {
  const uint8_t *name;
  uint32_t name_length;
  uint32_t query_count;
  const uint8_t *queries;   /* the first query's length field */
  uint32_t queries_length;  /* bytes from `queries` to the end of the payload */
};

/* Decodes and checks the whole payload: every length consistent with `length`, no byte
 * left over, names and queries free of NUL and at most NBD_MAX_STRING bytes.
 * Returns 0 or -EINVAL (reply NBD_REP_ERR_INVALID: spec rule 14). */
int nbd_meta_request_decode(const uint8_t *payload, uint32_t length,
                            struct nbd_meta_request *out);

/* Iterates over the queries of a decoded request: *pos starts at 0. Returns 1 with the
 * next query in *query and *query_length, or 0 at the end. */
int nbd_meta_query_next(const struct nbd_meta_request *m, uint32_t *pos,
                        const uint8_t **query, uint32_t *query_length);

/* NBD_REP_META_CONTEXT payload: 32-bit context id, then the name. `out` must hold
 * 4 + strlen(name) bytes. Returns the bytes written. */
size_t nbd_rep_meta_context_encode(uint8_t *out, uint32_t context_id, const char *name);

/* NBD_REP_INFO payloads. Return the bytes written. */
size_t nbd_info_export_encode(uint8_t out[12], uint64_t size, uint16_t transmission_flags);
size_t nbd_info_block_size_encode(uint8_t out[14], uint32_t minimum, uint32_t preferred,
                                  uint32_t maximum);
/* NBD_INFO_NAME or NBD_INFO_DESCRIPTION: type then text (length bytes, no NUL).
 * `out` must hold 2 + length bytes. */
size_t nbd_info_text_encode(uint8_t *out, uint16_t info_type, const char *text,
                            uint32_t length);

/* NBD_REP_SERVER payload for NBD_OPT_LIST: 32-bit name length, the name, then `details`
 * (details_length bytes, no NUL; 0 for none): the spec's "implementation-specific details",
 * a string for display, where libnbd's `nbdinfo --list` reads the export's description.
 * `out` must hold 4 + length + details_length bytes; each length is at most NBD_MAX_STRING.
 * Returns the bytes written. Source: doc/proto.md, NBD_REP_SERVER. */
size_t nbd_rep_server_encode(uint8_t *out, const char *name, uint32_t length,
                             const char *details, uint32_t details_length);

/* The 10 or 134 bytes that end a successful NBD_OPT_EXPORT_NAME: size, flags, and
 * 124 zero bytes unless NO_ZEROES was negotiated. `out` must hold 134 bytes.
 * Returns the bytes to send. */
size_t nbd_export_name_reply_encode(uint8_t out[134], uint64_t size,
                                    uint16_t transmission_flags, bool no_zeroes);

/* Checks block-size values against spec rule 10: minimum a power of two <= 64 KiB,
 * preferred a power of two >= max(minimum, 512), maximum >= preferred.
 * Returns true when valid. */
bool nbd_block_size_valid(uint32_t minimum, uint32_t preferred, uint32_t maximum);

/* Names for logs, as doc/proto.md spells them: the option's ("NBD_OPT_GO"; "an unknown
 * option" for a number the spec does not define) and the error reply's ("NBD_REP_ERR_INVALID";
 * "an unknown error reply" otherwise). Static strings. */
const char *nbd_option_name(uint32_t option);
const char *nbd_rep_error_name(uint32_t type);

#endif
