/* SPDX-License-Identifier: MIT */
/* test_option.c: unit tests of nbd/option.h, the handshake's wire format
 * (doc/proto.md "Newstyle negotiation", "Option types"; rules 1-15 of nbd-spec-rules.md). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nbd/option.h"
#include "nbd/proto.h"

/* Writes an INFO/GO payload (name length, name, count, types) into out; returns its size. */
static uint32_t build_info_payload(uint8_t *out, const uint8_t *name, uint32_t name_length,
                                   const uint16_t *types, uint16_t count)
{
  uint32_t pos = 0;

  out[pos++] = (uint8_t)(name_length >> 24);
  out[pos++] = (uint8_t)(name_length >> 16);
  out[pos++] = (uint8_t)(name_length >> 8);
  out[pos++] = (uint8_t)name_length;
  if (name_length > 0) {
    memcpy(out + pos, name, name_length);
  }
  pos += name_length;
  out[pos++] = (uint8_t)(count >> 8);
  out[pos++] = (uint8_t)count;
  for (uint16_t i = 0; i < count; i++) {
    out[pos++] = (uint8_t)(types[i] >> 8);
    out[pos++] = (uint8_t)types[i];
  }
  return pos;
}

/* ---- greeting and client flags ---- */

static void test_rule1_greeting_layout(void **state)
{
  uint8_t out[NBD_GREETING_SIZE + 1];
  const uint8_t expect[NBD_GREETING_SIZE + 1] = {
      'N', 'B', 'D', 'M', 'A', 'G', 'I', 'C',
      'I', 'H', 'A', 'V', 'E', 'O', 'P', 'T',
      0x00, 0x03, 0xEE};

  (void)state;
  assert_int_equal(NBD_GREETING_SIZE, 18);
  memset(out, 0xEE, sizeof out);
  nbd_greeting_encode(out, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
  assert_memory_equal(out, expect, sizeof expect);
}

static void test_rule1_greeting_fixed_newstyle_only(void **state)
{
  uint8_t out[NBD_GREETING_SIZE];

  (void)state;
  nbd_greeting_encode(out, NBD_FLAG_FIXED_NEWSTYLE);
  assert_int_equal(out[16], 0x00);
  assert_int_equal(out[17], 0x01);
}

static void test_rule2_client_flags_accepted(void **state)
{
  bool no_zeroes = true;
  const uint16_t both = NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES;

  (void)state;
  assert_int_equal(nbd_client_flags_check(NBD_FLAG_C_FIXED_NEWSTYLE, both, &no_zeroes), 0);
  assert_false(no_zeroes);

  assert_int_equal(nbd_client_flags_check(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES,
                                          both, &no_zeroes), 0);
  assert_true(no_zeroes);

  no_zeroes = true;
  assert_int_equal(nbd_client_flags_check(0, both, &no_zeroes), 0);
  assert_false(no_zeroes);

  assert_int_equal(nbd_client_flags_check(NBD_FLAG_C_FIXED_NEWSTYLE, NBD_FLAG_FIXED_NEWSTYLE,
                                          &no_zeroes), 0);
  assert_false(no_zeroes);
}

static void test_rule2_client_no_zeroes_not_advertised_eproto(void **state)
{
  bool no_zeroes = false;

  (void)state;
  assert_int_equal(nbd_client_flags_check(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES,
                                          NBD_FLAG_FIXED_NEWSTYLE, &no_zeroes), -EPROTO);
  assert_int_equal(nbd_client_flags_check(NBD_FLAG_C_NO_ZEROES, NBD_FLAG_FIXED_NEWSTYLE,
                                          &no_zeroes), -EPROTO);
}

static void test_rule2_client_unknown_flag_eproto(void **state)
{
  bool no_zeroes = false;
  const uint16_t both = NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES;

  (void)state;
  assert_int_equal(nbd_client_flags_check(NBD_FLAG_C_FIXED_NEWSTYLE | (1u << 2), both,
                                          &no_zeroes), -EPROTO);
  assert_int_equal(nbd_client_flags_check(1u << 15, both, &no_zeroes), -EPROTO);
  assert_int_equal(nbd_client_flags_check(1u << 16, both, &no_zeroes), -EPROTO);
  assert_int_equal(nbd_client_flags_check(UINT32_C(1) << 31, both, &no_zeroes), -EPROTO);
  assert_int_equal(nbd_client_flags_check(UINT32_MAX, both, &no_zeroes), -EPROTO);
  /* Even a bit the server set in its 16-bit field but that no client flag defines. */
  assert_int_equal(nbd_client_flags_check(1u << 2, 0xFFFF, &no_zeroes), -EPROTO);
}

/* ---- option header and option reply ---- */

static void test_option_header_decode(void **state)
{
  const uint8_t in[NBD_OPTION_HEADER_SIZE] = {
      'I', 'H', 'A', 'V', 'E', 'O', 'P', 'T',
      0x00, 0x00, 0x00, 0x07,  /* NBD_OPT_GO */
      0x00, 0x01, 0x02, 0x03}; /* length */
  struct nbd_option_header h = {0, 0};

  (void)state;
  assert_int_equal(NBD_OPTION_HEADER_SIZE, 16);
  assert_int_equal(nbd_option_header_decode(in, &h), 0);
  assert_int_equal(h.option, NBD_OPT_GO);
  assert_int_equal(h.length, UINT32_C(0x00010203));
}

static void test_rule3_option_header_unknown_option_decoded(void **state)
{
  const uint8_t in[NBD_OPTION_HEADER_SIZE] = {
      'I', 'H', 'A', 'V', 'E', 'O', 'P', 'T',
      0x00, 0x00, 0xDE, 0xAD,
      0x00, 0x00, 0x00, 100};
  struct nbd_option_header h = {0, 0};

  (void)state;
  assert_int_equal(nbd_option_header_decode(in, &h), 0);
  assert_int_equal(h.option, 0xDEAD);
  assert_int_equal(h.length, 100);
}

static void test_option_header_decode_max_values(void **state)
{
  const uint8_t in[NBD_OPTION_HEADER_SIZE] = {
      'I', 'H', 'A', 'V', 'E', 'O', 'P', 'T',
      0xFF, 0xFF, 0xFF, 0xFF,
      0xFF, 0xFF, 0xFF, 0xFE};
  struct nbd_option_header h = {0, 0};

  (void)state;
  assert_int_equal(nbd_option_header_decode(in, &h), 0);
  assert_int_equal(h.option, UINT32_MAX);
  assert_int_equal(h.length, UINT32_C(0xFFFFFFFE));
}

static void test_option_header_bad_magic_eproto(void **state)
{
  uint8_t in[NBD_OPTION_HEADER_SIZE] = {
      'I', 'H', 'A', 'V', 'E', 'O', 'P', 'T',
      0x00, 0x00, 0x00, 0x01,
      0x00, 0x00, 0x00, 0x04};
  struct nbd_option_header h = {0, 0};

  (void)state;
  in[7] = 'X';
  assert_int_equal(nbd_option_header_decode(in, &h), -EPROTO);
  in[7] = 'T';
  in[0] = 'i';
  assert_int_equal(nbd_option_header_decode(in, &h), -EPROTO);
  memcpy(in, "NBDMAGIC", 8);
  assert_int_equal(nbd_option_header_decode(in, &h), -EPROTO);
}

static void test_rule4_option_reply_layout(void **state)
{
  uint8_t out[NBD_OPTION_REPLY_SIZE + 1];
  const uint8_t expect[NBD_OPTION_REPLY_SIZE + 1] = {
      0x00, 0x03, 0xE8, 0x89, 0x04, 0x55, 0x65, 0xA9, /* NBD_REP_MAGIC */
      0x00, 0x00, 0xDE, 0xAD,                         /* the client's option */
      0x80, 0x00, 0x00, 0x01,                         /* NBD_REP_ERR_UNSUP */
      0x00, 0x00, 0x00, 0x00,                         /* length */
      0xEE};

  (void)state;
  assert_int_equal(NBD_OPTION_REPLY_SIZE, 20);
  memset(out, 0xEE, sizeof out);
  nbd_option_reply_encode(out, 0xDEAD, NBD_REP_ERR_UNSUP, 0);
  assert_memory_equal(out, expect, sizeof expect);
}

static void test_rule4_option_reply_info_with_length(void **state)
{
  uint8_t out[NBD_OPTION_REPLY_SIZE];
  const uint8_t expect[NBD_OPTION_REPLY_SIZE] = {
      0x00, 0x03, 0xE8, 0x89, 0x04, 0x55, 0x65, 0xA9,
      0x00, 0x00, 0x00, 0x07,  /* NBD_OPT_GO */
      0x00, 0x00, 0x00, 0x03,  /* NBD_REP_INFO */
      0x00, 0x00, 0x00, 0x0C}; /* 12 */

  (void)state;
  nbd_option_reply_encode(out, NBD_OPT_GO, NBD_REP_INFO, 12);
  assert_memory_equal(out, expect, sizeof expect);
}

/* ---- NBD_OPT_INFO / NBD_OPT_GO payload ---- */

static void test_rule8_info_request_decode_name_and_types(void **state)
{
  uint8_t payload[64];
  const uint16_t types[] = {NBD_INFO_NAME, NBD_INFO_BLOCK_SIZE};
  struct nbd_info_request r;
  uint32_t len = build_info_payload(payload, (const uint8_t *)"disk", 4, types, 2);

  (void)state;
  assert_int_equal(len, 4 + 4 + 2 + 4);
  assert_int_equal(nbd_info_request_decode(payload, len, &r), 0);
  assert_ptr_equal(r.name, payload + 4);
  assert_int_equal(r.name_length, 4);
  assert_memory_equal(r.name, "disk", 4);
  assert_int_equal(r.info_count, 2);
  assert_true(r.want_name);
  assert_false(r.want_description);
  assert_true(r.want_block_size);
}

static void test_rule8_info_request_empty_name_no_types(void **state)
{
  const uint8_t payload[6] = {0, 0, 0, 0, 0, 0};
  struct nbd_info_request r;

  (void)state;
  assert_int_equal(nbd_info_request_decode(payload, 6, &r), 0);
  assert_int_equal(r.name_length, 0);
  assert_int_equal(r.info_count, 0);
  assert_false(r.want_name);
  assert_false(r.want_description);
  assert_false(r.want_block_size);
}

static void test_rule8_info_request_shorter_than_6_einval(void **state)
{
  const uint8_t payload[6] = {0, 0, 0, 0, 0, 0};
  struct nbd_info_request r;

  (void)state;
  assert_int_equal(nbd_info_request_decode(payload, 0, &r), -EINVAL);
  assert_int_equal(nbd_info_request_decode(payload, 4, &r), -EINVAL);
  assert_int_equal(nbd_info_request_decode(payload, 5, &r), -EINVAL);
}

static void test_rule8_info_request_name_length_over_optlen_minus_6_einval(void **state)
{
  uint8_t payload[64];
  struct nbd_info_request r;
  uint32_t len = build_info_payload(payload, (const uint8_t *)"disk", 4, NULL, 0);

  (void)state;
  assert_int_equal(len, 10);
  /* Claim 5 name bytes in a 10-byte option: 5 > 10 - 6. */
  payload[3] = 5;
  assert_int_equal(nbd_info_request_decode(payload, len, &r), -EINVAL);
  /* The name swallowing the count field entirely. */
  payload[3] = 6;
  assert_int_equal(nbd_info_request_decode(payload, len, &r), -EINVAL);
  /* Exactly optlen - 6 is fine. */
  payload[3] = 4;
  assert_int_equal(nbd_info_request_decode(payload, len, &r), 0);
  assert_int_equal(r.name_length, 4);
}

static void test_rule15_info_request_huge_name_length_enametoolong(void **state)
{
  uint8_t payload[16] = {0xFF, 0xFF, 0xFF, 0xFF, 'a', 'b', 'c', 'd', 0, 0};
  struct nbd_info_request r;

  (void)state;
  /* 0xFFFFFFFF must not overflow into an in-range value. */
  assert_int_equal(nbd_info_request_decode(payload, 10, &r), -ENAMETOOLONG);
  payload[0] = 0x80;
  payload[1] = 0x00;
  payload[2] = 0x00;
  payload[3] = 0x00;
  assert_int_equal(nbd_info_request_decode(payload, 10, &r), -ENAMETOOLONG);
}

static void test_rule8_info_request_count_mismatch_einval(void **state)
{
  uint8_t payload[64];
  const uint16_t types[] = {NBD_INFO_NAME, NBD_INFO_DESCRIPTION};
  struct nbd_info_request r;
  uint32_t len = build_info_payload(payload, (const uint8_t *)"d", 1, types, 2);

  (void)state;
  assert_int_equal(len, 4 + 1 + 2 + 4);
  /* One type short. */
  assert_int_equal(nbd_info_request_decode(payload, len - 2, &r), -EINVAL);
  /* An odd trailing byte. */
  assert_int_equal(nbd_info_request_decode(payload, len - 1, &r), -EINVAL);
  /* Count 0 but type bytes follow. */
  payload[6] = 0;
  assert_int_equal(nbd_info_request_decode(payload, len, &r), -EINVAL);
  /* Count 3 with only two types. */
  payload[6] = 3;
  assert_int_equal(nbd_info_request_decode(payload, len, &r), -EINVAL);
  /* Count 0xFFFF. */
  payload[5] = 0xFF;
  payload[6] = 0xFF;
  assert_int_equal(nbd_info_request_decode(payload, len, &r), -EINVAL);
}

static void test_rule15_info_request_nul_in_name_einval(void **state)
{
  uint8_t payload[64];
  struct nbd_info_request r;
  uint32_t len = build_info_payload(payload, (const uint8_t *)"di\0k", 4, NULL, 0);

  (void)state;
  assert_int_equal(nbd_info_request_decode(payload, len, &r), -EINVAL);
  len = build_info_payload(payload, (const uint8_t *)"\0", 1, NULL, 0);
  assert_int_equal(nbd_info_request_decode(payload, len, &r), -EINVAL);
  len = build_info_payload(payload, (const uint8_t *)"disk\0", 5, NULL, 0);
  assert_int_equal(nbd_info_request_decode(payload, len, &r), -EINVAL);
}

static void test_rule15_info_request_4096_byte_name_ok(void **state)
{
  static uint8_t name[NBD_MAX_STRING + 1];
  static uint8_t payload[4 + NBD_MAX_STRING + 1 + 2 + 2];
  const uint16_t types[] = {NBD_INFO_NAME};
  struct nbd_info_request r;
  uint32_t len;

  (void)state;
  memset(name, 'x', sizeof name);
  len = build_info_payload(payload, name, 4096, types, 1);
  assert_int_equal(len, 4 + 4096 + 2 + 2);
  assert_int_equal(nbd_info_request_decode(payload, len, &r), 0);
  assert_int_equal(r.name_length, 4096);
  assert_ptr_equal(r.name, payload + 4);
  assert_true(r.want_name);
}

static void test_rule15_info_request_4097_byte_name_enametoolong(void **state)
{
  static uint8_t name[NBD_MAX_STRING + 1];
  static uint8_t payload[4 + NBD_MAX_STRING + 1 + 2];
  struct nbd_info_request r;
  uint32_t len;

  (void)state;
  memset(name, 'x', sizeof name);
  len = build_info_payload(payload, name, 4097, NULL, 0);
  assert_int_equal(len, 4 + 4097 + 2);
  assert_int_equal(nbd_info_request_decode(payload, len, &r), -ENAMETOOLONG);
}

static void test_rule8_info_request_unknown_types_ignored(void **state)
{
  uint8_t payload[64];
  const uint16_t types[] = {NBD_INFO_EXPORT, 0x1234, NBD_INFO_DESCRIPTION, 0xFFFF, 4};
  struct nbd_info_request r;
  uint32_t len = build_info_payload(payload, (const uint8_t *)"a", 1, types, 5);

  (void)state;
  assert_int_equal(nbd_info_request_decode(payload, len, &r), 0);
  assert_int_equal(r.info_count, 5);
  assert_false(r.want_name);
  assert_true(r.want_description);
  assert_false(r.want_block_size);
}

static void test_rule8_info_request_more_than_max_requests(void **state)
{
  uint8_t payload[4 + 1 + 2 + 2 * 40];
  uint16_t types[40];
  struct nbd_info_request r;
  uint32_t len;

  (void)state;
  for (uint16_t i = 0; i < 40; i++) {
    types[i] = (uint16_t)(0x100 + i);
  }
  types[39] = NBD_INFO_BLOCK_SIZE; /* beyond NBD_INFO_MAX_REQUESTS, still seen */
  len = build_info_payload(payload, (const uint8_t *)"a", 1, types, 40);
  assert_int_equal(len, sizeof payload);
  assert_int_equal(nbd_info_request_decode(payload, len, &r), 0);
  assert_int_equal(r.info_count, 40);
  assert_true(r.want_block_size);
  assert_false(r.want_name);
}

/* ---- NBD_OPT_EXPORT_NAME ---- */

static void test_rule15_export_name_check(void **state)
{
  static uint8_t name[NBD_MAX_STRING + 1];

  (void)state;
  memset(name, 'n', sizeof name);
  assert_int_equal(nbd_export_name_check(name, 0), 0);
  assert_int_equal(nbd_export_name_check((const uint8_t *)"disk", 4), 0);
  assert_int_equal(nbd_export_name_check(name, 4096), 0);
  assert_int_equal(nbd_export_name_check(name, 4097), -ENAMETOOLONG);
  assert_int_equal(nbd_export_name_check((const uint8_t *)"d\0sk", 4), -EINVAL);
  name[4095] = 0;
  assert_int_equal(nbd_export_name_check(name, 4096), -EINVAL);
}

/* ---- NBD_OPT_LIST_META_CONTEXT / NBD_OPT_SET_META_CONTEXT (rule 14) ---- */

/* Appends a 32-bit big-endian value. */
static uint32_t put32(uint8_t *out, uint32_t pos, uint32_t v)
{
  out[pos] = (uint8_t)(v >> 24);
  out[pos + 1] = (uint8_t)(v >> 16);
  out[pos + 2] = (uint8_t)(v >> 8);
  out[pos + 3] = (uint8_t)v;
  return pos + 4;
}

/* Writes a meta-context payload: name, count, then each query; returns its size. */
static uint32_t build_meta_payload(uint8_t *out, const char *name, uint32_t count,
                                   const char *const *queries, uint32_t nqueries)
{
  uint32_t pos = put32(out, 0, (uint32_t)strlen(name));

  memcpy(out + pos, name, strlen(name));
  pos += (uint32_t)strlen(name);
  pos = put32(out, pos, count);
  for (uint32_t i = 0; i < nqueries; i++) {
    pos = put32(out, pos, (uint32_t)strlen(queries[i]));
    memcpy(out + pos, queries[i], strlen(queries[i]));
    pos += (uint32_t)strlen(queries[i]);
  }
  return pos;
}

static void test_rule14_meta_request_decode_and_iterate(void **state)
{
  static const char *const queries[] = {"base:allocation", "qemu:"};
  uint8_t payload[128];
  struct nbd_meta_request m;
  const uint8_t *q = NULL;
  uint32_t qlen = 0, pos = 0;
  uint32_t len = build_meta_payload(payload, "disk", 2, queries, 2);

  (void)state;
  assert_int_equal(len, 4 + 4 + 4 + 4 + 15 + 4 + 5);
  assert_int_equal(nbd_meta_request_decode(payload, len, &m), 0);
  assert_ptr_equal(m.name, payload + 4);
  assert_int_equal(m.name_length, 4);
  assert_int_equal(m.query_count, 2);
  assert_ptr_equal(m.queries, payload + 12);
  assert_int_equal(m.queries_length, len - 12);
  assert_int_equal(nbd_meta_query_next(&m, &pos, &q, &qlen), 1);
  assert_int_equal(qlen, 15);
  assert_memory_equal(q, "base:allocation", 15);
  assert_int_equal(nbd_meta_query_next(&m, &pos, &q, &qlen), 1);
  assert_int_equal(qlen, 5);
  assert_memory_equal(q, "qemu:", 5);
  assert_int_equal(nbd_meta_query_next(&m, &pos, &q, &qlen), 0);
}

static void test_rule14_meta_request_zero_queries(void **state)
{
  uint8_t payload[32];
  struct nbd_meta_request m;
  const uint8_t *q = NULL;
  uint32_t qlen = 0, pos = 0;
  uint32_t len = build_meta_payload(payload, "", 0, NULL, 0);

  (void)state;
  assert_int_equal(len, 8);
  assert_int_equal(nbd_meta_request_decode(payload, len, &m), 0);
  assert_int_equal(m.name_length, 0);
  assert_int_equal(m.query_count, 0);
  assert_int_equal(m.queries_length, 0);
  assert_int_equal(nbd_meta_query_next(&m, &pos, &q, &qlen), 0);
}

static void test_rule14_meta_request_bad_lengths_einval(void **state)
{
  static const char *const one[] = {"base:allocation"};
  uint8_t payload[128] = {0};
  struct nbd_meta_request m;
  uint32_t len;

  (void)state;
  assert_int_equal(nbd_meta_request_decode(payload, 7, &m), -EINVAL);
  len = build_meta_payload(payload, "disk", 1, one, 1);
  assert_int_equal(nbd_meta_request_decode(payload, len, &m), 0);
  /* Query length running past the payload. */
  assert_int_equal(nbd_meta_request_decode(payload, len - 1, &m), -EINVAL);
  put32(payload, 12, 16);
  assert_int_equal(nbd_meta_request_decode(payload, len, &m), -EINVAL);
  put32(payload, 12, UINT32_MAX);
  assert_int_equal(nbd_meta_request_decode(payload, len, &m), -EINVAL);
  put32(payload, 12, 15);
  /* Count says 2 (a query missing) or 0 (bytes left over). */
  put32(payload, 8, 2);
  assert_int_equal(nbd_meta_request_decode(payload, len, &m), -EINVAL);
  put32(payload, 8, 0);
  assert_int_equal(nbd_meta_request_decode(payload, len, &m), -EINVAL);
  put32(payload, 8, UINT32_MAX);
  assert_int_equal(nbd_meta_request_decode(payload, len, &m), -EINVAL);
  put32(payload, 8, 1);
  /* Export name length past the payload (> optlen - 8). */
  put32(payload, 0, len - 7);
  assert_int_equal(nbd_meta_request_decode(payload, len, &m), -EINVAL);
  put32(payload, 0, UINT32_MAX);
  assert_int_equal(nbd_meta_request_decode(payload, len, &m), -EINVAL);
}

static void test_rule15_meta_request_nul_or_4097_byte_strings_einval(void **state)
{
  static const char *const nul_query[] = {"base:alloc\x01tion"};
  static uint8_t big[8 + 4 + NBD_MAX_STRING + 1];
  uint8_t payload[128];
  struct nbd_meta_request m;
  uint32_t len = build_meta_payload(payload, "disk", 1, nul_query, 1);

  (void)state;
  payload[12 + 4 + 10] = 0; /* the \x01 becomes a NUL in the query */
  assert_int_equal(nbd_meta_request_decode(payload, len, &m), -EINVAL);
  len = build_meta_payload(payload, "disk", 0, NULL, 0);
  payload[5] = 0; /* NUL in the export name */
  assert_int_equal(nbd_meta_request_decode(payload, len, &m), -EINVAL);

  /* A 4097-byte query; 4096 is fine. */
  memset(big, 'q', sizeof big);
  put32(big, 0, 0);
  put32(big, 4, 1);
  put32(big, 8, NBD_MAX_STRING + 1);
  assert_int_equal(nbd_meta_request_decode(big, sizeof big, &m), -EINVAL);
  put32(big, 8, NBD_MAX_STRING);
  assert_int_equal(nbd_meta_request_decode(big, sizeof big - 1, &m), 0);
}

static void test_rule14_rep_meta_context_encode(void **state)
{
  uint8_t out[32];
  const uint8_t expect[20] = {0x00, 0x00, 0x00, 0x01, 'b', 'a', 's', 'e', ':', 'a',
                              'l',  'l',  'o',  'c',  'a', 't', 'i', 'o', 'n', 0xEE};

  (void)state;
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_rep_meta_context_encode(out, 1, NBD_META_BASE_ALLOCATION), 19);
  assert_memory_equal(out, expect, sizeof expect);
}

/* ---- NBD_REP_INFO payloads ---- */

static void test_rule8_info_export_layout_length_12(void **state)
{
  uint8_t out[13];
  const uint8_t expect[13] = {
      0x00, 0x00,                                     /* NBD_INFO_EXPORT */
      0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, /* size */
      0x01, 0x4D,                                     /* flags */
      0xEE};
  const uint16_t flags = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA |
                         NBD_FLAG_SEND_WRITE_ZEROES | NBD_FLAG_CAN_MULTI_CONN;

  (void)state;
  assert_int_equal(flags, 0x014D);
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_info_export_encode(out, UINT64_C(0x0123456789ABCDEF), flags), 12);
  assert_memory_equal(out, expect, sizeof expect);
}

static void test_rule10_info_block_size_layout_length_14(void **state)
{
  uint8_t out[15];
  const uint8_t expect[15] = {
      0x00, 0x03,             /* NBD_INFO_BLOCK_SIZE */
      0x00, 0x00, 0x02, 0x00, /* 512 */
      0x00, 0x00, 0x10, 0x00, /* 4096 */
      0x02, 0x00, 0x00, 0x00, /* 32 MiB */
      0xEE};

  (void)state;
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_info_block_size_encode(out, 512, 4096, DG_MAX_PAYLOAD), 14);
  assert_memory_equal(out, expect, sizeof expect);

  assert_int_equal(nbd_info_block_size_encode(out, 1, 512, UINT32_MAX), 14);
  assert_int_equal(out[5], 0x01);
  assert_memory_equal(out + 10, "\xFF\xFF\xFF\xFF", 4);
}

static void test_info_text_encode_name_and_description(void **state)
{
  uint8_t out[16];
  const uint8_t expect_name[7] = {0x00, 0x01, 'd', 'i', 's', 'k', 0xEE};
  const uint8_t expect_desc[3] = {0x00, 0x02, 0xEE};

  (void)state;
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_info_text_encode(out, NBD_INFO_NAME, "disk", 4), 6);
  assert_memory_equal(out, expect_name, sizeof expect_name);

  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_info_text_encode(out, NBD_INFO_DESCRIPTION, "", 0), 2);
  assert_memory_equal(out, expect_desc, sizeof expect_desc);
}

static void test_rep_server_encode(void **state)
{
  uint8_t out[16];
  const uint8_t expect[9] = {0x00, 0x00, 0x00, 0x04, 'v', 'm', '0', '1', 0xEE};

  (void)state;
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_rep_server_encode(out, "vm01", 4, NULL, 0), 8);
  assert_memory_equal(out, expect, sizeof expect);
  assert_int_equal(nbd_rep_server_encode(out, "", 0, "", 0), 4);
  assert_memory_equal(out, "\0\0\0\0", 4);
  /* the details (the description) follow the name, with no length of their own */
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_rep_server_encode(out, "vm", 2, "raw file", 8), 14);
  assert_memory_equal(out, "\0\0\0\2vmraw file", 14);
  assert_int_equal(out[14], 0xEE);
}

/* ---- end of a successful NBD_OPT_EXPORT_NAME ---- */

static void test_rule7_export_name_reply_134_bytes_with_zeroes(void **state)
{
  uint8_t out[140];
  const uint8_t head[10] = {0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, /* 4 GiB */
                            0x00, 0x03};
  uint8_t zeroes[124];

  (void)state;
  memset(zeroes, 0, sizeof zeroes);
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_export_name_reply_encode(out, UINT64_C(1) << 32,
                                                NBD_FLAG_HAS_FLAGS | NBD_FLAG_READ_ONLY,
                                                false), 134);
  assert_memory_equal(out, head, sizeof head);
  assert_memory_equal(out + 10, zeroes, sizeof zeroes);
  assert_int_equal(out[134], 0xEE);
}

static void test_rule7_export_name_reply_10_bytes_with_no_zeroes(void **state)
{
  uint8_t out[140];
  const uint8_t head[10] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE, 0x00, 0x00, 0x01};

  (void)state;
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_export_name_reply_encode(out, UINT64_C(0xFFFFFFFFFFFFFE00),
                                                NBD_FLAG_HAS_FLAGS, true), 10);
  assert_memory_equal(out, head, sizeof head);
  for (size_t i = 10; i < sizeof out; i++) {
    assert_int_equal(out[i], 0xEE);
  }
}

/* ---- block size constraints ---- */

static void test_rule10_block_size_valid_accepts(void **state)
{
  (void)state;
  assert_true(nbd_block_size_valid(1, 512, 512));
  assert_true(nbd_block_size_valid(1, 4096, DG_MAX_PAYLOAD));
  assert_true(nbd_block_size_valid(512, 512, 512));
  assert_true(nbd_block_size_valid(512, 4096, DG_MAX_PAYLOAD));
  assert_true(nbd_block_size_valid(4096, 4096, 4096));
  assert_true(nbd_block_size_valid(65536, 65536, 65536));
  assert_true(nbd_block_size_valid(65536, 1u << 20, UINT32_MAX));
  /* max need not be a power of two. */
  assert_true(nbd_block_size_valid(512, 4096, 4096 + 512));
  assert_true(nbd_block_size_valid(512, UINT32_C(0x80000000), UINT32_MAX));
}

static void test_rule10_block_size_minimum_rejects(void **state)
{
  (void)state;
  assert_false(nbd_block_size_valid(0, 512, 512));
  assert_false(nbd_block_size_valid(3, 512, 512));
  assert_false(nbd_block_size_valid(768, 1024, 1024));
  assert_false(nbd_block_size_valid(131072, 131072, 131072));
  assert_false(nbd_block_size_valid(65537, 131072, 131072));
  assert_false(nbd_block_size_valid(UINT32_C(0x80000000), UINT32_C(0x80000000), UINT32_MAX));
}

static void test_rule10_block_size_preferred_rejects(void **state)
{
  (void)state;
  assert_false(nbd_block_size_valid(1, 256, 4096));    /* below 512 */
  assert_false(nbd_block_size_valid(1, 1, 4096));
  assert_false(nbd_block_size_valid(1, 0, 4096));
  assert_false(nbd_block_size_valid(4096, 2048, 4096)); /* below minimum */
  assert_false(nbd_block_size_valid(512, 1536, 4096));  /* not a power of two */
  assert_false(nbd_block_size_valid(512, UINT32_MAX, UINT32_MAX));
}

static void test_rule10_block_size_maximum_rejects(void **state)
{
  (void)state;
  assert_false(nbd_block_size_valid(512, 4096, 4095));
  assert_false(nbd_block_size_valid(512, 4096, 0));
  assert_false(nbd_block_size_valid(1, 512, 511));
}

/* The names in the log's refusal lines (handshake.c): the spec's spelling for every option
 * and error reply it defines, a plain phrase for numbers it does not, never NULL. */
static void test_option_and_rep_error_names(void **state)
{
  (void)state;
  assert_string_equal(nbd_option_name(NBD_OPT_EXPORT_NAME), "NBD_OPT_EXPORT_NAME");
  assert_string_equal(nbd_option_name(NBD_OPT_GO), "NBD_OPT_GO");
  assert_string_equal(nbd_option_name(NBD_OPT_EXTENDED_HEADERS), "NBD_OPT_EXTENDED_HEADERS");
  assert_string_equal(nbd_option_name(0), "an unknown option");
  assert_string_equal(nbd_option_name(12), "an unknown option");
  assert_string_equal(nbd_option_name(0xFFFFFFFFu), "an unknown option");
  assert_string_equal(nbd_rep_error_name(NBD_REP_ERR_UNSUP), "NBD_REP_ERR_UNSUP");
  assert_string_equal(nbd_rep_error_name(NBD_REP_ERR_INVALID), "NBD_REP_ERR_INVALID");
  assert_string_equal(nbd_rep_error_name(NBD_REP_ERR_EXT_HEADER_REQD),
                      "NBD_REP_ERR_EXT_HEADER_REQD");
  assert_string_equal(nbd_rep_error_name(NBD_REP_ERR_EXT_HEADER_REQD + 1),
                      "an unknown error reply");
  assert_string_equal(nbd_rep_error_name(3), "an unknown error reply"); /* no error bit */
  assert_string_equal(nbd_rep_error_name(NBD_REP_FLAG_ERROR), "an unknown error reply");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rule1_greeting_layout),
      cmocka_unit_test(test_rule1_greeting_fixed_newstyle_only),
      cmocka_unit_test(test_rule2_client_flags_accepted),
      cmocka_unit_test(test_rule2_client_no_zeroes_not_advertised_eproto),
      cmocka_unit_test(test_rule2_client_unknown_flag_eproto),
      cmocka_unit_test(test_option_header_decode),
      cmocka_unit_test(test_rule3_option_header_unknown_option_decoded),
      cmocka_unit_test(test_option_header_decode_max_values),
      cmocka_unit_test(test_option_header_bad_magic_eproto),
      cmocka_unit_test(test_rule4_option_reply_layout),
      cmocka_unit_test(test_rule4_option_reply_info_with_length),
      cmocka_unit_test(test_rule8_info_request_decode_name_and_types),
      cmocka_unit_test(test_rule8_info_request_empty_name_no_types),
      cmocka_unit_test(test_rule8_info_request_shorter_than_6_einval),
      cmocka_unit_test(test_rule8_info_request_name_length_over_optlen_minus_6_einval),
      cmocka_unit_test(test_rule15_info_request_huge_name_length_enametoolong),
      cmocka_unit_test(test_rule8_info_request_count_mismatch_einval),
      cmocka_unit_test(test_rule15_info_request_nul_in_name_einval),
      cmocka_unit_test(test_rule15_info_request_4096_byte_name_ok),
      cmocka_unit_test(test_rule15_info_request_4097_byte_name_enametoolong),
      cmocka_unit_test(test_rule8_info_request_unknown_types_ignored),
      cmocka_unit_test(test_rule8_info_request_more_than_max_requests),
      cmocka_unit_test(test_rule15_export_name_check),
      cmocka_unit_test(test_rule14_meta_request_decode_and_iterate),
      cmocka_unit_test(test_rule14_meta_request_zero_queries),
      cmocka_unit_test(test_rule14_meta_request_bad_lengths_einval),
      cmocka_unit_test(test_rule15_meta_request_nul_or_4097_byte_strings_einval),
      cmocka_unit_test(test_rule14_rep_meta_context_encode),
      cmocka_unit_test(test_rule8_info_export_layout_length_12),
      cmocka_unit_test(test_rule10_info_block_size_layout_length_14),
      cmocka_unit_test(test_info_text_encode_name_and_description),
      cmocka_unit_test(test_rep_server_encode),
      cmocka_unit_test(test_rule7_export_name_reply_134_bytes_with_zeroes),
      cmocka_unit_test(test_rule7_export_name_reply_10_bytes_with_no_zeroes),
      cmocka_unit_test(test_rule10_block_size_valid_accepts),
      cmocka_unit_test(test_rule10_block_size_minimum_rejects),
      cmocka_unit_test(test_rule10_block_size_preferred_rejects),
      cmocka_unit_test(test_rule10_block_size_maximum_rejects),
      cmocka_unit_test(test_option_and_rep_error_names),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
