/* SPDX-License-Identifier: MIT */
/* option.c: encoders and decoders of the handshake (doc/proto.md, "Newstyle negotiation").
 * Pure functions: see option.h for contracts. */
#include "nbd/option.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "nbd/proto.h"
#include "util/bytes.h"

void nbd_greeting_encode(uint8_t out[NBD_GREETING_SIZE], uint16_t handshake_flags)
{
  bytes_put_be64(out, NBD_MAGIC);
  bytes_put_be64(out + 8, NBD_IHAVEOPT);
  bytes_put_be16(out + 16, handshake_flags);
}

int nbd_client_flags_check(uint32_t client_flags, uint16_t server_flags, bool *no_zeroes)
{
  const uint32_t known = NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES;

  if ((client_flags & ~known) != 0 || (client_flags & ~(uint32_t)server_flags) != 0) {
    return -EPROTO;
  }
  *no_zeroes = (client_flags & NBD_FLAG_C_NO_ZEROES) != 0;
  return 0;
}

int nbd_option_header_decode(const uint8_t in[NBD_OPTION_HEADER_SIZE],
                             struct nbd_option_header *out)
{
  if (bytes_get_be64(in) != NBD_IHAVEOPT) {
    return -EPROTO;
  }
  out->option = bytes_get_be32(in + 8);
  out->length = bytes_get_be32(in + 12);
  return 0;
}

void nbd_option_reply_encode(uint8_t out[NBD_OPTION_REPLY_SIZE], uint32_t option,
                             uint32_t type, uint32_t length)
{
  bytes_put_be64(out, NBD_REP_MAGIC);
  bytes_put_be32(out + 8, option);
  bytes_put_be32(out + 12, type);
  bytes_put_be32(out + 16, length);
}

static int name_check(const uint8_t *name, uint32_t length)
{
  if (length > NBD_MAX_STRING) {
    return -ENAMETOOLONG;
  }
  if (length > 0 && memchr(name, 0, length) != NULL) {
    return -EINVAL;
  }
  return 0;
}

int nbd_export_name_check(const uint8_t *payload, uint32_t length)
{
  return name_check(payload, length);
}

int nbd_info_request_decode(const uint8_t *payload, uint32_t length,
                            struct nbd_info_request *out)
{
  uint32_t name_length;
  uint32_t pos;
  int rc;

  memset(out, 0, sizeof *out);
  if (length < 6) {
    return -EINVAL;
  }
  name_length = bytes_get_be32(payload);
  if (name_length > length - 6) { /* spec rule 8: name length > optlen - 6 is invalid */
    return name_length > NBD_MAX_STRING ? -ENAMETOOLONG : -EINVAL;
  }
  rc = name_check(payload + 4, name_length);
  if (rc < 0) {
    return rc;
  }
  out->name = payload + 4;
  out->name_length = name_length;
  pos = 4 + name_length;
  out->info_count = bytes_get_be16(payload + pos);
  pos += 2;
  if ((uint64_t)out->info_count * 2 != (uint64_t)(length - pos)) {
    return -EINVAL;
  }
  for (uint32_t i = 0; i < out->info_count; i++) {
    uint16_t type = bytes_get_be16(payload + pos + 2 * i);
    if (type == NBD_INFO_NAME) {
      out->want_name = true;
    } else if (type == NBD_INFO_DESCRIPTION) {
      out->want_description = true;
    } else if (type == NBD_INFO_BLOCK_SIZE) {
      out->want_block_size = true;
    }
    /* Unknown info types are ignored (spec rule 8). */
  }
  return 0;
}

size_t nbd_info_export_encode(uint8_t out[12], uint64_t size, uint16_t transmission_flags)
{
  bytes_put_be16(out, NBD_INFO_EXPORT);
  bytes_put_be64(out + 2, size);
  bytes_put_be16(out + 10, transmission_flags);
  return 12;
}

size_t nbd_info_block_size_encode(uint8_t out[14], uint32_t minimum, uint32_t preferred,
                                  uint32_t maximum)
{
  assert(nbd_block_size_valid(minimum, preferred, maximum));
  bytes_put_be16(out, NBD_INFO_BLOCK_SIZE);
  bytes_put_be32(out + 2, minimum);
  bytes_put_be32(out + 6, preferred);
  bytes_put_be32(out + 10, maximum);
  return 14;
}

size_t nbd_info_text_encode(uint8_t *out, uint16_t info_type, const char *text,
                            uint32_t length)
{
  assert(length <= NBD_MAX_STRING);
  bytes_put_be16(out, info_type);
  memcpy(out + 2, text, length);
  return 2 + (size_t)length;
}

size_t nbd_rep_server_encode(uint8_t *out, const char *name, uint32_t length,
                             const char *details, uint32_t details_length)
{
  assert(length <= NBD_MAX_STRING && details_length <= NBD_MAX_STRING);
  bytes_put_be32(out, length);
  memcpy(out + 4, name, length);
  if (details_length > 0) {
    memcpy(out + 4 + length, details, details_length);
  }
  return 4 + (size_t)length + details_length;
}

size_t nbd_export_name_reply_encode(uint8_t out[134], uint64_t size,
                                    uint16_t transmission_flags, bool no_zeroes)
{
  bytes_put_be64(out, size);
  bytes_put_be16(out + 8, transmission_flags);
  if (no_zeroes) {
    return 10;
  }
  memset(out + 10, 0, 124);
  return 134;
}

bool nbd_block_size_valid(uint32_t minimum, uint32_t preferred, uint32_t maximum)
{
  uint32_t floor = minimum > 512 ? minimum : 512;

  return bytes_is_power_of_two(minimum) && minimum <= 65536 &&
         bytes_is_power_of_two(preferred) && preferred >= floor && maximum >= preferred;
}

int nbd_meta_request_decode(const uint8_t *payload, uint32_t length,
                            struct nbd_meta_request *out)
{
  uint32_t pos;

  memset(out, 0, sizeof *out);
  if (length < 8) {
    return -EINVAL;
  }
  out->name_length = bytes_get_be32(payload);
  if (out->name_length > length - 8 || name_check(payload + 4, out->name_length) < 0) {
    return -EINVAL;
  }
  out->name = payload + 4;
  pos = 4 + out->name_length;
  out->query_count = bytes_get_be32(payload + pos);
  pos += 4;
  out->queries = payload + pos;
  out->queries_length = length - pos;
  for (uint32_t i = 0; i < out->query_count; i++) {
    uint32_t qlen;
    if (length - pos < 4) {
      return -EINVAL;
    }
    qlen = bytes_get_be32(payload + pos);
    pos += 4;
    if (qlen > length - pos || name_check(payload + pos, qlen) < 0) {
      return -EINVAL;
    }
    pos += qlen;
  }
  return pos == length ? 0 : -EINVAL;
}

int nbd_meta_query_next(const struct nbd_meta_request *m, uint32_t *pos,
                        const uint8_t **query, uint32_t *query_length)
{
  if (*pos + 4 > m->queries_length) {
    return 0;
  }
  *query_length = bytes_get_be32(m->queries + *pos);
  *query = m->queries + *pos + 4;
  *pos += 4 + *query_length;
  return 1;
}

size_t nbd_rep_meta_context_encode(uint8_t *out, uint32_t context_id, const char *name)
{
  size_t len = strlen(name);

  assert(len <= NBD_MAX_STRING);
  bytes_put_be32(out, context_id);
  memcpy(out + 4, name, len);
  return 4 + len;
}

/* names[i], or `unknown` past the end of the table or at a number it leaves out. */
static const char *name_at(const char *const *names, size_t count, uint32_t i,
                           const char *unknown)
{
  return i < count && names[i] != NULL ? names[i] : unknown;
}

#define NAME_OF(x) [x] = #x

const char *nbd_option_name(uint32_t option)
{
  static const char *const names[] = {
      NAME_OF(NBD_OPT_EXPORT_NAME),       NAME_OF(NBD_OPT_ABORT),
      NAME_OF(NBD_OPT_LIST),              NAME_OF(NBD_OPT_PEEK_EXPORT),
      NAME_OF(NBD_OPT_STARTTLS),          NAME_OF(NBD_OPT_INFO),
      NAME_OF(NBD_OPT_GO),                NAME_OF(NBD_OPT_STRUCTURED_REPLY),
      NAME_OF(NBD_OPT_LIST_META_CONTEXT), NAME_OF(NBD_OPT_SET_META_CONTEXT),
      NAME_OF(NBD_OPT_EXTENDED_HEADERS),
  };
  return name_at(names, sizeof names / sizeof names[0], option, "an unknown option");
}

/* The error replies' numbers without NBD_REP_FLAG_ERROR, to index a table. */
#define ERR_NAME_OF(x) [(x) & ~NBD_REP_FLAG_ERROR] = #x

const char *nbd_rep_error_name(uint32_t type)
{
  static const char *const names[] = {
      ERR_NAME_OF(NBD_REP_ERR_UNSUP),           ERR_NAME_OF(NBD_REP_ERR_POLICY),
      ERR_NAME_OF(NBD_REP_ERR_INVALID),         ERR_NAME_OF(NBD_REP_ERR_PLATFORM),
      ERR_NAME_OF(NBD_REP_ERR_TLS_REQD),        ERR_NAME_OF(NBD_REP_ERR_UNKNOWN),
      ERR_NAME_OF(NBD_REP_ERR_SHUTDOWN),        ERR_NAME_OF(NBD_REP_ERR_BLOCK_SIZE_REQD),
      ERR_NAME_OF(NBD_REP_ERR_TOO_BIG),         ERR_NAME_OF(NBD_REP_ERR_EXT_HEADER_REQD),
  };
  const char *unknown = "an unknown error reply";

  if ((type & NBD_REP_FLAG_ERROR) == 0) {
    return unknown;
  }
  return name_at(names, sizeof names / sizeof names[0], type & ~NBD_REP_FLAG_ERROR, unknown);
}
