/* SPDX-License-Identifier: MIT */
/* fuzz_option.c: libFuzzer harness for option haggling, over the pure code of src/nbd/option.c
 * (doc/proto.md "Newstyle negotiation", "Option types"; rules 2-15 of
 * docs/spec-rules.md).
 *
 * Input: the client's side of a handshake.
 *   byte 0        the server's handshake flags (low 2 bits) and knobs for the encoders
 *   bytes 1-4     the client's 32-bit flags
 *   then options: 16-byte header (IHAVEOPT, option, length) and min(length, rest) bytes of
 *                 data; a wrong magic ends the stream, as it ends the connection.
 * Each option's data is copied into a buffer of exactly its length (so ASan sees any read
 * past it) and handed to the decoder the server uses for that option; the results are
 * checked against the spec and against an independent re-parse. A broken invariant
 * aborts (a crash for libFuzzer). The replies the server would send are encoded too.
 *
 * Built by tests/fuzz/run.sh (clang -fsanitize=fuzzer,address,undefined) and, with
 * replay_main.c, by tests/fuzz/meson.build as a regression test over the corpus and the
 * crashes found so far (tests/fuzz/crashes/). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nbd/option.h"
#include "nbd/proto.h"
#include "util/bytes.h"

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "fuzz_option: invariant failed at line %d: %s\n", __LINE__, #cond); \
      abort();                                                                             \
    }                                                                                      \
  } while (0)

static bool has_nul(const uint8_t *p, uint32_t n)
{
  return n > 0 && memchr(p, 0, n) != NULL;
}

/* An independent reading of the INFO/GO layout: is `p` (n bytes) well formed? */
static bool info_layout_ok(const uint8_t *p, uint32_t n)
{
  uint32_t name_length, count;

  if (n < 6) {
    return false;
  }
  name_length = bytes_get_be32(p);
  if ((uint64_t)name_length + 6 > n || name_length > NBD_MAX_STRING || has_nul(p + 4, name_length)) {
    return false;
  }
  count = bytes_get_be16(p + 4 + name_length);
  return (uint64_t)4 + name_length + 2 + 2 * (uint64_t)count == n;
}

/* An independent reading of the META_CONTEXT layout. Returns the number of queries, or -1. */
static long meta_layout_queries(const uint8_t *p, uint32_t n)
{
  uint64_t pos;
  uint32_t name_length, count;

  if (n < 8) {
    return -1;
  }
  name_length = bytes_get_be32(p);
  if ((uint64_t)name_length + 8 > n || name_length > NBD_MAX_STRING || has_nul(p + 4, name_length)) {
    return -1;
  }
  pos = 4 + (uint64_t)name_length;
  count = bytes_get_be32(p + pos);
  pos += 4;
  for (uint32_t i = 0; i < count; i++) {
    uint32_t qlen;
    if (pos + 4 > n) {
      return -1;
    }
    qlen = bytes_get_be32(p + pos);
    pos += 4;
    if (pos + qlen > n || qlen > NBD_MAX_STRING || has_nul(p + pos, qlen)) {
      return -1;
    }
    pos += qlen;
  }
  return pos == n ? (long)count : -1;
}

static void check_info(const uint8_t *payload, uint32_t length, uint8_t knobs)
{
  struct nbd_info_request req;
  int rc = nbd_info_request_decode(payload, length, &req);
  bool ok = info_layout_ok(payload, length);

  CHECK(rc == 0 || rc == -EINVAL || rc == -ENAMETOOLONG);
  CHECK((rc == 0) == ok);
  if (rc == -ENAMETOOLONG) {
    CHECK(length >= 4 && bytes_get_be32(payload) > NBD_MAX_STRING);
  }
  if (rc != 0) {
    return;
  }
  CHECK(req.name == payload + 4);
  CHECK(req.name_length <= NBD_MAX_STRING && req.name_length <= length - 6);
  CHECK(!has_nul(req.name, req.name_length));
  CHECK((uint32_t)4 + req.name_length + 2 + 2u * req.info_count == length);
  {
    bool name = false, desc = false, bs = false;
    for (uint32_t i = 0; i < req.info_count; i++) {
      uint16_t t = bytes_get_be16(payload + 4 + req.name_length + 2 + 2 * i);
      name |= t == NBD_INFO_NAME;
      desc |= t == NBD_INFO_DESCRIPTION;
      bs |= t == NBD_INFO_BLOCK_SIZE;
    }
    CHECK(name == req.want_name && desc == req.want_description && bs == req.want_block_size);
  }
  /* The replies a successful INFO/GO produces, with the requested name echoed. */
  {
    uint8_t buf[2 + NBD_MAX_STRING];
    uint8_t srv[4 + NBD_MAX_STRING + 8];
    char name[NBD_MAX_STRING + 1];
    size_t n;
    uint32_t minimum = 1u << (knobs & 15), preferred = 512u << ((knobs >> 4) & 7);

    memcpy(name, req.name, req.name_length);
    name[req.name_length] = '\0';
    n = nbd_info_text_encode(buf, NBD_INFO_NAME, name, req.name_length);
    CHECK(n == 2u + req.name_length && bytes_get_be16(buf) == NBD_INFO_NAME);
    CHECK(memcmp(buf + 2, req.name, req.name_length) == 0);
    n = nbd_rep_server_encode(srv, name, req.name_length, "raw file", 8);
    CHECK(n == 12u + req.name_length && bytes_get_be32(srv) == req.name_length);
    CHECK(memcmp(srv + 4 + req.name_length, "raw file", 8) == 0);
    n = nbd_info_export_encode(buf, (uint64_t)length << 20, (uint16_t)length);
    CHECK(n == 12 && bytes_get_be16(buf) == NBD_INFO_EXPORT);
    if (nbd_block_size_valid(minimum, preferred, length)) {
      n = nbd_info_block_size_encode(buf, minimum, preferred, length);
      CHECK(n == 14 && bytes_get_be32(buf + 2) == minimum && bytes_get_be32(buf + 10) == length);
    }
  }
}

static void check_meta(const uint8_t *payload, uint32_t length)
{
  struct nbd_meta_request m;
  int rc = nbd_meta_request_decode(payload, length, &m);
  long queries = meta_layout_queries(payload, length);
  uint32_t pos = 0, seen = 0, qlen = 0;
  const uint8_t *q = NULL;

  CHECK(rc == 0 || rc == -EINVAL);
  CHECK((rc == 0) == (queries >= 0));
  if (rc != 0) {
    return;
  }
  CHECK(m.name == payload + 4 && m.name_length <= NBD_MAX_STRING);
  CHECK(m.query_count == (uint32_t)queries);
  CHECK(m.queries >= payload && m.queries + m.queries_length == payload + length);
  while (nbd_meta_query_next(&m, &pos, &q, &qlen)) {
    CHECK(q >= m.queries && q + qlen <= payload + length);
    CHECK(qlen <= NBD_MAX_STRING && !has_nul(q, qlen));
    CHECK(seen < m.query_count);
    seen++;
    if (qlen <= 64) { /* a context reply naming this query */
      uint8_t out[4 + 65];
      char name[65];
      memcpy(name, q, qlen);
      name[qlen] = '\0';
      CHECK(nbd_rep_meta_context_encode(out, seen, name) == 4u + qlen);
      CHECK(bytes_get_be32(out) == seen && memcmp(out + 4, q, qlen) == 0);
    }
  }
  CHECK(seen == m.query_count);
  CHECK(pos <= m.queries_length);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  uint8_t greeting[NBD_GREETING_SIZE];
  uint16_t server_flags;
  uint32_t client_flags;
  bool no_zeroes = false;
  size_t pos;
  int rc;

  if (size < 5) {
    return 0;
  }
  server_flags = NBD_FLAG_FIXED_NEWSTYLE | (data[0] & NBD_FLAG_NO_ZEROES);
  nbd_greeting_encode(greeting, server_flags);
  CHECK(bytes_get_be64(greeting) == NBD_MAGIC && bytes_get_be64(greeting + 8) == NBD_IHAVEOPT);
  CHECK(bytes_get_be16(greeting + 16) == server_flags);

  client_flags = bytes_get_be32(data + 1);
  rc = nbd_client_flags_check(client_flags, server_flags, &no_zeroes);
  /* Rule 2: unknown or unadvertised client flags end the connection. */
  CHECK((rc == 0) == ((client_flags & ~(uint32_t)server_flags) == 0));
  if (rc != 0) {
    CHECK(rc == -EPROTO);
    return 0;
  }
  CHECK(no_zeroes == ((client_flags & NBD_FLAG_C_NO_ZEROES) != 0));

  pos = 5;
  while (size - pos >= NBD_OPTION_HEADER_SIZE) {
    struct nbd_option_header opt;
    uint8_t reply[NBD_OPTION_REPLY_SIZE];
    uint8_t *payload;
    uint32_t length;

    rc = nbd_option_header_decode(data + pos, &opt);
    CHECK((rc == 0) == (bytes_get_be64(data + pos) == NBD_IHAVEOPT));
    if (rc != 0) {
      CHECK(rc == -EPROTO);
      break;
    }
    CHECK(opt.option == bytes_get_be32(data + pos + 8));
    CHECK(opt.length == bytes_get_be32(data + pos + 12));
    pos += NBD_OPTION_HEADER_SIZE;
    /* The server reads at most DG_MAX_OPTION_LENGTH bytes of an option; longer ones are
     * skipped or end the connection, so the decoders never see them. */
    length = opt.length;
    if (length > size - pos) {
      length = (uint32_t)(size - pos);
    }
    if (length > DG_MAX_OPTION_LENGTH) {
      pos += length;
      continue;
    }
    payload = malloc(length > 0 ? length : 1);
    CHECK(payload != NULL);
    memcpy(payload, data + pos, length);
    pos += length;

    nbd_option_reply_encode(reply, opt.option, NBD_REP_ACK, length);
    CHECK(bytes_get_be64(reply) == NBD_REP_MAGIC && bytes_get_be32(reply + 8) == opt.option);
    CHECK(bytes_get_be32(reply + 16) == length);

    switch (opt.option) {
    case NBD_OPT_EXPORT_NAME:
      rc = nbd_export_name_check(payload, length);
      CHECK(rc == 0 || rc == -EINVAL || rc == -ENAMETOOLONG);
      CHECK((rc == 0) == (length <= NBD_MAX_STRING && !has_nul(payload, length)));
      if (rc == 0) {
        uint8_t out[134];
        size_t n = nbd_export_name_reply_encode(out, length, (uint16_t)opt.option, no_zeroes);
        CHECK(n == (no_zeroes ? 10u : 134u));
        for (size_t i = 10; i < n; i++) {
          CHECK(out[i] == 0);
        }
      }
      break;
    case NBD_OPT_INFO:
    case NBD_OPT_GO:
      check_info(payload, length, data[0]);
      break;
    case NBD_OPT_LIST_META_CONTEXT:
    case NBD_OPT_SET_META_CONTEXT:
      check_meta(payload, length);
      break;
    default:
      /* Every decoder sees every payload, whatever the option number says. */
      check_info(payload, length, data[0]);
      check_meta(payload, length);
      (void)nbd_export_name_check(payload, length);
      break;
    }
    free(payload);
  }
  return 0;
}
