/* SPDX-License-Identifier: MIT */
/* test_request.c: unit tests of nbd/request.h, the transmission phase's wire format and
 * request validation (doc/proto.md "Transmission phase"; rules 17-35 of nbd-spec-rules.md). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nbd/proto.h"
#include "nbd/request.h"

#define EXPORT_SIZE (UINT64_C(1) << 30) /* 1 GiB */

/* Every optional feature advertised, structured replies negotiated. */
static struct nbd_export_limits limits_full(void)
{
  struct nbd_export_limits l = {
      .size = EXPORT_SIZE,
      .transmission_flags = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA |
                            NBD_FLAG_SEND_TRIM | NBD_FLAG_SEND_WRITE_ZEROES |
                            NBD_FLAG_SEND_DF | NBD_FLAG_SEND_FAST_ZERO |
                            NBD_FLAG_CAN_MULTI_CONN,
      .max_payload = DG_MAX_PAYLOAD,
      .structured_replies = true,
  };
  return l;
}

/* Nothing optional advertised, simple replies only. */
static struct nbd_export_limits limits_bare(void)
{
  struct nbd_export_limits l = {
      .size = EXPORT_SIZE,
      .transmission_flags = NBD_FLAG_HAS_FLAGS,
      .max_payload = DG_MAX_PAYLOAD,
      .structured_replies = false,
  };
  return l;
}

static uint32_t validate(uint16_t type, uint16_t flags, uint64_t offset, uint64_t length,
                         const struct nbd_export_limits *l)
{
  struct nbd_request r = {
      .flags = flags, .type = type, .cookie = 1, .offset = offset, .length = length};
  return nbd_request_validate(&r, l);
}

/* ---- request header ---- */

static const uint8_t sample_request[NBD_REQUEST_SIZE] = {
    0x25, 0x60, 0x95, 0x13,                         /* NBD_REQUEST_MAGIC */
    0x00, 0x01,                                     /* flags: FUA */
    0x00, 0x01,                                     /* type: WRITE */
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* cookie */
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00, /* offset */
    0x00, 0x01, 0x00, 0x00,                         /* length */
};

static void test_request_decode_layout(void **state)
{
  struct nbd_request r;

  (void)state;
  assert_int_equal(NBD_REQUEST_SIZE, 28);
  memset(&r, 0xEE, sizeof r);
  assert_int_equal(nbd_request_decode(sample_request, &r), 0);
  assert_int_equal(r.flags, NBD_CMD_FLAG_FUA);
  assert_int_equal(r.type, NBD_CMD_WRITE);
  assert_true(r.cookie == UINT64_C(0x0102030405060708));
  assert_true(r.offset == UINT64_C(0x0000000100001000));
  assert_true(r.length == UINT64_C(0x00010000));
}

static void test_request_encode_layout(void **state)
{
  uint8_t out[NBD_REQUEST_SIZE + 1];
  const struct nbd_request r = {.flags = NBD_CMD_FLAG_FUA,
                                .type = NBD_CMD_WRITE,
                                .cookie = UINT64_C(0x0102030405060708),
                                .offset = UINT64_C(0x0000000100001000),
                                .length = 0x10000};

  (void)state;
  memset(out, 0xEE, sizeof out);
  nbd_request_encode(out, &r);
  assert_memory_equal(out, sample_request, NBD_REQUEST_SIZE);
  assert_int_equal(out[NBD_REQUEST_SIZE], 0xEE);
}

static void test_request_encode_decode_round_trip(void **state)
{
  static const struct nbd_request cases[] = {
      {0, NBD_CMD_READ, 0, 0, 0},
      {NBD_CMD_FLAG_DF, NBD_CMD_READ, UINT64_MAX, UINT64_MAX, UINT32_MAX},
      {0xFFFF, 0xFFFF, UINT64_C(0x8000000000000000), UINT64_C(0x7FFFFFFFFFFFFFFF), 1},
      {NBD_CMD_FLAG_NO_HOLE | NBD_CMD_FLAG_FAST_ZERO, NBD_CMD_WRITE_ZEROES, 42, 4096,
       UINT32_C(0x80000000)},
      {0, NBD_CMD_DISC, 7, 0, 0},
  };

  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t buf[NBD_REQUEST_SIZE];
    struct nbd_request back;

    nbd_request_encode(buf, &cases[i]);
    assert_int_equal(nbd_request_decode(buf, &back), 0);
    assert_int_equal(back.flags, cases[i].flags);
    assert_int_equal(back.type, cases[i].type);
    assert_true(back.cookie == cases[i].cookie);
    assert_true(back.offset == cases[i].offset);
    assert_true(back.length == cases[i].length);
  }
}

static void test_request_decode_bad_magic_eproto(void **state)
{
  uint8_t in[NBD_REQUEST_SIZE];
  struct nbd_request r;

  (void)state;
  memcpy(in, sample_request, sizeof in);
  in[3] = 0x14;
  assert_int_equal(nbd_request_decode(in, &r), -EPROTO);
  /* The extended-header request magic was not negotiated. */
  in[0] = 0x21;
  in[1] = 0xE4;
  in[2] = 0x1C;
  in[3] = 0x71;
  assert_int_equal(nbd_request_decode(in, &r), -EPROTO);
  /* A reply magic is not a request. */
  in[0] = 0x67;
  in[1] = 0x44;
  in[2] = 0x66;
  in[3] = 0x98;
  assert_int_equal(nbd_request_decode(in, &r), -EPROTO);
  memset(in, 0, sizeof in);
  assert_int_equal(nbd_request_decode(in, &r), -EPROTO);
}

/* ---- extended request header (rule 16) ---- */

static const uint8_t sample_ext_request[NBD_EXTENDED_REQUEST_SIZE] = {
    0x21, 0xE4, 0x1C, 0x71,                         /* NBD_EXTENDED_REQUEST_MAGIC */
    0x00, 0x21,                                     /* flags: FUA | PAYLOAD_LEN */
    0x00, 0x01,                                     /* type: WRITE */
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* cookie */
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00, /* offset */
    0x00, 0x00, 0x00, 0x01, 0x80, 0x00, 0x00, 0x00, /* 64-bit length */
};

static void test_rule16_extended_request_decode_encode_layout(void **state)
{
  uint8_t out[NBD_EXTENDED_REQUEST_SIZE + 1];
  struct nbd_request r;

  (void)state;
  assert_int_equal(NBD_EXTENDED_REQUEST_SIZE, 32);
  assert_int_equal(nbd_request_decode_extended(sample_ext_request, &r), 0);
  assert_int_equal(r.flags, NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_PAYLOAD_LEN);
  assert_int_equal(r.type, NBD_CMD_WRITE);
  assert_true(r.cookie == UINT64_C(0x0102030405060708));
  assert_true(r.offset == UINT64_C(0x0000000100001000));
  assert_true(r.length == UINT64_C(0x0000000180000000));
  memset(out, 0xEE, sizeof out);
  nbd_request_encode_extended(out, &r);
  assert_memory_equal(out, sample_ext_request, NBD_EXTENDED_REQUEST_SIZE);
  assert_int_equal(out[NBD_EXTENDED_REQUEST_SIZE], 0xEE);
}

static void test_rule16_extended_request_bad_magic_eproto(void **state)
{
  uint8_t in[NBD_EXTENDED_REQUEST_SIZE];
  struct nbd_request r;

  (void)state;
  memcpy(in, sample_ext_request, sizeof in);
  /* The compact magic once extended headers are in use. */
  in[0] = 0x25;
  in[1] = 0x60;
  in[2] = 0x95;
  in[3] = 0x13;
  assert_int_equal(nbd_request_decode_extended(in, &r), -EPROTO);
  memset(in, 0, sizeof in);
  assert_int_equal(nbd_request_decode_extended(in, &r), -EPROTO);
}

static void test_rule24_payload_length_only_for_write(void **state)
{
  struct nbd_request r = {.flags = 0, .type = NBD_CMD_WRITE, .cookie = 1, .offset = 0,
                          .length = 65536};
  static const uint16_t others[] = {NBD_CMD_READ,         NBD_CMD_TRIM,  NBD_CMD_FLUSH,
                                    NBD_CMD_WRITE_ZEROES, NBD_CMD_DISC,  NBD_CMD_CACHE,
                                    NBD_CMD_BLOCK_STATUS, 0x7F};

  (void)state;
  assert_true(nbd_request_payload_length(&r, false) == 65536);
  r.flags = 0xFFFF; /* an invalid WRITE still carries its payload */
  r.length = UINT32_MAX;
  assert_true(nbd_request_payload_length(&r, false) == UINT32_MAX);
  r.length = 0;
  assert_true(nbd_request_payload_length(&r, false) == 0);
  r.length = 4096;
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    r.type = others[i];
    r.flags = 0;
    assert_true(nbd_request_payload_length(&r, false) == 0);
    /* Without extended headers PAYLOAD_LEN means nothing for the framing. */
    r.flags = NBD_CMD_FLAG_PAYLOAD_LEN;
    assert_true(nbd_request_payload_length(&r, false) == 0);
  }
}

static void test_rule16_payload_length_extended_follows_payload_len_flag(void **state)
{
  struct nbd_request r = {.flags = NBD_CMD_FLAG_PAYLOAD_LEN, .type = NBD_CMD_WRITE,
                          .cookie = 1, .offset = 0, .length = UINT64_C(0x100000000)};

  (void)state;
  assert_true(nbd_request_payload_length(&r, true) == UINT64_C(0x100000000));
  /* Regression: an extended WRITE without PAYLOAD_LEN (a client bug: the flag is a MUST)
   * still has its data on the wire, as QEMU's server assumes too; taking length as 0 made
   * the server parse the client's data as requests. It is consumed, then refused. */
  r.flags = 0;
  r.length = 512;
  assert_true(nbd_request_payload_length(&r, true) == 512);
  /* PAYLOAD_LEN on another command still frames a payload the server must skip. */
  r.type = NBD_CMD_READ;
  r.flags = NBD_CMD_FLAG_PAYLOAD_LEN;
  r.length = 512;
  assert_true(nbd_request_payload_length(&r, true) == 512);
  r.flags = 0;
  assert_true(nbd_request_payload_length(&r, true) == 0);
}

/* ---- validation: commands and flags ---- */

static void test_rule24_unknown_command_0x7f_einval(void **state)
{
  const struct nbd_export_limits full = limits_full();

  (void)state;
  assert_int_equal(validate(0x7F, 0, 0, 512, &full), NBD_EINVAL);
  assert_int_equal(validate(0x7F, 0, 0, 0, &full), NBD_EINVAL);
  assert_int_equal(validate(0xFFFF, 0, 0, 0, &full), NBD_EINVAL);
  assert_int_equal(validate(9, 0, 0, 0, &full), NBD_EINVAL);
}

static void test_rule24_unadvertised_commands_einval(void **state)
{
  const struct nbd_export_limits full = limits_full();
  const struct nbd_export_limits bare = limits_bare();

  (void)state;
  /* CACHE without SEND_CACHE, BLOCK_STATUS without a selected context, RESIZE never. */
  assert_int_equal(validate(NBD_CMD_CACHE, 0, 0, 512, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, 0, 0, 512, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_RESIZE, 0, 0, 0, &full), NBD_EINVAL);
  /* FLUSH, TRIM, WRITE_ZEROES without their transmission flag. */
  assert_int_equal(validate(NBD_CMD_FLUSH, 0, 0, 0, &bare), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_TRIM, 0, 0, 512, &bare), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, 0, 512, &bare), NBD_EINVAL);
  /* READ and WRITE need no flag. */
  assert_int_equal(validate(NBD_CMD_READ, 0, 0, 512, &bare), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE, 0, 0, 512, &bare), NBD_SUCCESS);
}

static void test_rule24_unknown_flag_einval(void **state)
{
  const struct nbd_export_limits full = limits_full();
  static const uint16_t commands[] = {NBD_CMD_READ, NBD_CMD_WRITE, NBD_CMD_FLUSH,
                                      NBD_CMD_TRIM, NBD_CMD_WRITE_ZEROES};

  (void)state;
  for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++) {
    uint64_t length = commands[c] == NBD_CMD_FLUSH ? 0 : 512;

    assert_int_equal(validate(commands[c], 0, 0, length, &full), NBD_SUCCESS);
    /* PAYLOAD_LEN (extended headers, not negotiated) and every undefined bit. */
    for (unsigned bit = 5; bit < 16; bit++) {
      assert_int_equal(validate(commands[c], (uint16_t)(1u << bit), 0, length, &full),
                       NBD_EINVAL);
    }
    /* REQ_ONE is for BLOCK_STATUS only. */
    assert_int_equal(validate(commands[c], NBD_CMD_FLAG_REQ_ONE, 0, length, &full),
                     NBD_EINVAL);
    assert_int_equal(validate(commands[c], 0xFFFF, 0, length, &full), NBD_EINVAL);
  }
}

static void test_rule24_no_hole_on_read_einval(void **state)
{
  const struct nbd_export_limits full = limits_full();

  (void)state;
  assert_int_equal(validate(NBD_CMD_READ, NBD_CMD_FLAG_NO_HOLE, 0, 512, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE, NBD_CMD_FLAG_NO_HOLE, 0, 512, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_TRIM, NBD_CMD_FLAG_NO_HOLE, 0, 512, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_FLUSH, NBD_CMD_FLAG_NO_HOLE, 0, 0, &full), NBD_EINVAL);
}

static void test_rule28_no_hole_on_write_zeroes_accepted(void **state)
{
  struct nbd_export_limits l = limits_full();

  (void)state;
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, NBD_CMD_FLAG_NO_HOLE, 0, 512, &l),
                   NBD_SUCCESS);
  /* Even without SEND_TRIM. */
  l.transmission_flags &= (uint16_t)~NBD_FLAG_SEND_TRIM;
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, NBD_CMD_FLAG_NO_HOLE, 0, 512, &l),
                   NBD_SUCCESS);
}

static void test_rule28_fast_zero_only_when_advertised(void **state)
{
  struct nbd_export_limits l = limits_full();
  const uint16_t both = NBD_CMD_FLAG_FAST_ZERO | NBD_CMD_FLAG_NO_HOLE;

  (void)state;
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, NBD_CMD_FLAG_FAST_ZERO, 0, 512, &l),
                   NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, both, 0, 512, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE, NBD_CMD_FLAG_FAST_ZERO, 0, 512, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_TRIM, NBD_CMD_FLAG_FAST_ZERO, 0, 512, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_READ, NBD_CMD_FLAG_FAST_ZERO, 0, 512, &l), NBD_EINVAL);
  l.transmission_flags &= (uint16_t)~NBD_FLAG_SEND_FAST_ZERO;
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, NBD_CMD_FLAG_FAST_ZERO, 0, 512, &l),
                   NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, both, 0, 512, &l), NBD_EINVAL);
}

static void test_rule26_fua_accepted_on_every_command_with_send_fua(void **state)
{
  const struct nbd_export_limits full = limits_full();
  const uint16_t fua = NBD_CMD_FLAG_FUA;

  (void)state;
  assert_int_equal(validate(NBD_CMD_READ, fua, 0, 512, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE, fua, 0, 512, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_FLUSH, fua, 0, 0, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_TRIM, fua, 0, 512, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, fua, 0, 512, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, fua | NBD_CMD_FLAG_NO_HOLE, 0, 512, &full),
                   NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_READ, fua | NBD_CMD_FLAG_DF, 0, 512, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_DISC, fua, 0, 0, &full), NBD_SUCCESS);
}

static void test_rule24_fua_without_send_fua_einval(void **state)
{
  struct nbd_export_limits l = limits_full();
  const uint16_t fua = NBD_CMD_FLAG_FUA;

  (void)state;
  l.transmission_flags &= (uint16_t)~NBD_FLAG_SEND_FUA;
  assert_int_equal(validate(NBD_CMD_READ, fua, 0, 512, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE, fua, 0, 512, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_FLUSH, fua, 0, 0, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_TRIM, fua, 0, 512, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, fua, 0, 512, &l), NBD_EINVAL);
}

static void test_rule29_df_on_read_with_structured_replies_and_send_df(void **state)
{
  struct nbd_export_limits l = limits_full();

  (void)state;
  assert_int_equal(validate(NBD_CMD_READ, NBD_CMD_FLAG_DF, 0, 65536, &l), NBD_SUCCESS);
  /* DF is a READ flag only. */
  assert_int_equal(validate(NBD_CMD_WRITE, NBD_CMD_FLAG_DF, 0, 512, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_TRIM, NBD_CMD_FLAG_DF, 0, 512, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, NBD_CMD_FLAG_DF, 0, 512, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_FLUSH, NBD_CMD_FLAG_DF, 0, 0, &l), NBD_EINVAL);
}

static void test_rule29_df_without_structured_replies_einval(void **state)
{
  struct nbd_export_limits l = limits_full();

  (void)state;
  l.structured_replies = false;
  assert_int_equal(validate(NBD_CMD_READ, NBD_CMD_FLAG_DF, 0, 512, &l), NBD_EINVAL);
}

static void test_rule29_df_without_send_df_einval(void **state)
{
  struct nbd_export_limits l = limits_full();

  (void)state;
  l.transmission_flags &= (uint16_t)~NBD_FLAG_SEND_DF;
  assert_int_equal(validate(NBD_CMD_READ, NBD_CMD_FLAG_DF, 0, 512, &l), NBD_EINVAL);
}

static void test_rule26_flush_nonzero_offset_or_length_einval(void **state)
{
  const struct nbd_export_limits full = limits_full();

  (void)state;
  assert_int_equal(validate(NBD_CMD_FLUSH, 0, 0, 0, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_FLUSH, 0, 512, 0, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_FLUSH, 0, 0, 512, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_FLUSH, 0, 4096, 4096, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_FLUSH, 0, UINT64_MAX, 0, &full), NBD_EINVAL);
}

/* ---- validation: ranges and sizes ---- */

static void test_rule23_unaligned_to_min_block_einval_only_when_enforced(void **state)
{
  struct nbd_export_limits l = limits_full();
  struct nbd_request r = {.type = NBD_CMD_READ, .cookie = 1, .offset = 256, .length = 512};

  (void)state;
  assert_int_equal(nbd_request_validate(&r, &l), NBD_SUCCESS); /* served by default */
  l.min_block = 512;
  assert_int_equal(nbd_request_validate(&r, &l), NBD_EINVAL);
  r.offset = 512;
  assert_int_equal(nbd_request_validate(&r, &l), NBD_SUCCESS);
  r.length = 100;
  assert_int_equal(nbd_request_validate(&r, &l), NBD_EINVAL);
  r.type = NBD_CMD_WRITE_ZEROES;
  assert_int_equal(nbd_request_validate(&r, &l), NBD_EINVAL);
  r.type = NBD_CMD_FLUSH; /* offset and length are 0 for FLUSH; not an alignment matter */
  r.offset = 0;
  r.length = 0;
  assert_int_equal(nbd_request_validate(&r, &l), NBD_SUCCESS);
}

static void test_rule22_read_and_trim_past_end_einval(void **state)
{
  const struct nbd_export_limits full = limits_full();

  (void)state;
  assert_int_equal(validate(NBD_CMD_READ, 0, EXPORT_SIZE - 512, 512, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_READ, 0, EXPORT_SIZE - 512, 1024, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_READ, 0, EXPORT_SIZE, 1, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_READ, 0, EXPORT_SIZE + 1, 0, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_TRIM, 0, 0, EXPORT_SIZE, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_TRIM, 0, 0, EXPORT_SIZE + 1, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_TRIM, 0, EXPORT_SIZE, 512, &full), NBD_EINVAL);
}

static void test_rule22_read_and_trim_overflowing_64_bits_einval(void **state)
{
  const struct nbd_export_limits full = limits_full();
  struct nbd_export_limits huge = limits_full();

  (void)state;
  huge.size = UINT64_MAX;
  assert_int_equal(validate(NBD_CMD_READ, 0, UINT64_MAX - 511, 1024, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_READ, 0, UINT64_MAX - 511, 1024, &huge), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_READ, 0, UINT64_MAX, 1, &huge), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_TRIM, 0, UINT64_MAX - 511, 1024, &full), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_TRIM, 0, UINT64_MAX, UINT32_MAX, &huge), NBD_EINVAL);
  /* The largest in-range request on a 2^64-1 export is fine. */
  assert_int_equal(validate(NBD_CMD_READ, 0, UINT64_MAX - 512, 512, &huge), NBD_SUCCESS);
}

static void test_rule22_write_and_write_zeroes_past_end_enospc(void **state)
{
  const struct nbd_export_limits full = limits_full();
  struct nbd_export_limits huge = limits_full();

  (void)state;
  huge.size = UINT64_MAX;
  assert_int_equal(validate(NBD_CMD_WRITE, 0, EXPORT_SIZE - 512, 512, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE, 0, EXPORT_SIZE - 512, 1024, &full), NBD_ENOSPC);
  assert_int_equal(validate(NBD_CMD_WRITE, 0, EXPORT_SIZE, 1, &full), NBD_ENOSPC);
  assert_int_equal(validate(NBD_CMD_WRITE, 0, UINT64_MAX, 1, &huge), NBD_ENOSPC);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, EXPORT_SIZE - 512, 512, &full),
                   NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, EXPORT_SIZE - 512, 1024, &full),
                   NBD_ENOSPC);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, NBD_CMD_FLAG_NO_HOLE, EXPORT_SIZE, 1, &full),
                   NBD_ENOSPC);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, UINT64_MAX - 10, 4096, &huge),
                   NBD_ENOSPC);
}

static void test_rule17_read_only_write_trim_write_zeroes_eperm(void **state)
{
  struct nbd_export_limits ro = limits_full();
  struct nbd_export_limits ro_bare = limits_bare();

  (void)state;
  ro.transmission_flags |= NBD_FLAG_READ_ONLY;
  ro_bare.transmission_flags |= NBD_FLAG_READ_ONLY;
  assert_int_equal(validate(NBD_CMD_WRITE, 0, 0, 512, &ro), NBD_EPERM);
  assert_int_equal(validate(NBD_CMD_TRIM, 0, 0, 512, &ro), NBD_EPERM);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, 0, 512, &ro), NBD_EPERM);
  assert_int_equal(validate(NBD_CMD_READ, 0, 0, 512, &ro), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_FLUSH, 0, 0, 0, &ro), NBD_SUCCESS);
  /* A read-only export that advertises neither TRIM nor WRITE_ZEROES still says EPERM. */
  assert_int_equal(validate(NBD_CMD_WRITE, 0, 0, 512, &ro_bare), NBD_EPERM);
  assert_int_equal(validate(NBD_CMD_TRIM, 0, 0, 512, &ro_bare), NBD_EPERM);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, 0, 512, &ro_bare), NBD_EPERM);
  /* EPERM wins over the range check, and for zero-length writes too. */
  assert_int_equal(validate(NBD_CMD_WRITE, 0, EXPORT_SIZE, 512, &ro), NBD_EPERM);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, EXPORT_SIZE, 512, &ro), NBD_EPERM);
  assert_int_equal(validate(NBD_CMD_WRITE, 0, 0, 0, &ro), NBD_EPERM);
  /* ... and over flags a read-only export does not advertise (FUA, FAST_ZERO), and over the
   * alignment check. */
  assert_int_equal(validate(NBD_CMD_WRITE, NBD_CMD_FLAG_FUA, 0, 512, &ro_bare), NBD_EPERM);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, NBD_CMD_FLAG_FAST_ZERO, 0, 512, &ro_bare),
                   NBD_EPERM);
  assert_int_equal(validate(NBD_CMD_TRIM, NBD_CMD_FLAG_FUA, 0, 512, &ro_bare), NBD_EPERM);
  ro.min_block = 512; /* enforced (--unaligned error): EPERM still comes first */
  assert_int_equal(validate(NBD_CMD_WRITE, 0, 1, 511, &ro), NBD_EPERM);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, 1, 511, &ro), NBD_EPERM);
  assert_int_equal(validate(NBD_CMD_READ, 0, 1, 511, &ro), NBD_EINVAL);
}

static void test_rule25_read_write_over_max_payload_einval(void **state)
{
  struct nbd_export_limits l = limits_full();

  (void)state;
  assert_int_equal(validate(NBD_CMD_READ, 0, 0, DG_MAX_PAYLOAD, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE, 0, 0, DG_MAX_PAYLOAD, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_READ, 0, 0, DG_MAX_PAYLOAD + 1u, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE, 0, 0, DG_MAX_PAYLOAD + 1u, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_READ, 0, 0, UINT32_MAX, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE, 0, 0, UINT32_MAX, &l), NBD_EINVAL);
  l.max_payload = 65536;
  assert_int_equal(validate(NBD_CMD_READ, 0, 0, 65536, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_READ, 0, 0, 65537, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE, 0, 0, 65537, &l), NBD_EINVAL);
  /* A too-long WRITE past the end is EINVAL (length checked before the range). */
  assert_int_equal(validate(NBD_CMD_WRITE, 0, EXPORT_SIZE, 65537, &l), NBD_EINVAL);
}

static void test_rule25_trim_write_zeroes_not_limited_by_max_payload(void **state)
{
  struct nbd_export_limits l = limits_full();

  (void)state;
  l.max_payload = 65536;
  assert_int_equal(validate(NBD_CMD_TRIM, 0, 0, 65537, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, 0, EXPORT_SIZE, &l), NBD_SUCCESS);
}

static void test_rule25_length_zero_valid(void **state)
{
  const struct nbd_export_limits full = limits_full();

  (void)state;
  assert_int_equal(validate(NBD_CMD_READ, 0, 0, 0, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE, 0, 0, 0, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_TRIM, 0, 0, 0, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, 0, 0, &full), NBD_SUCCESS);
  /* At the very end of the export. */
  assert_int_equal(validate(NBD_CMD_READ, 0, EXPORT_SIZE, 0, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE, 0, EXPORT_SIZE, 0, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_TRIM, 0, EXPORT_SIZE, 0, &full), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, EXPORT_SIZE, 0, &full), NBD_SUCCESS);
}

static void test_rule33_disc_always_valid(void **state)
{
  struct nbd_export_limits ro = limits_bare();

  (void)state;
  ro.transmission_flags |= NBD_FLAG_READ_ONLY;
  assert_int_equal(validate(NBD_CMD_DISC, 0, 0, 0, &ro), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_DISC, 0xFFFF, UINT64_MAX, UINT32_MAX, &ro), NBD_SUCCESS);
  ro.size = 0;
  assert_int_equal(validate(NBD_CMD_DISC, 0, 4096, 4096, &ro), NBD_SUCCESS);
}

static void test_rule32_cache_when_advertised(void **state)
{
  struct nbd_export_limits l = limits_full();

  (void)state;
  l.transmission_flags |= NBD_FLAG_SEND_CACHE;
  assert_int_equal(validate(NBD_CMD_CACHE, 0, 0, 65536, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_CACHE, NBD_CMD_FLAG_FUA, 0, 65536, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_CACHE, 0, EXPORT_SIZE, 0, &l), NBD_SUCCESS);
  /* Unknown or foreign flags are rejected. */
  assert_int_equal(validate(NBD_CMD_CACHE, NBD_CMD_FLAG_NO_HOLE, 0, 512, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_CACHE, NBD_CMD_FLAG_DF, 0, 512, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_CACHE, NBD_CMD_FLAG_REQ_ONE, 0, 512, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_CACHE, NBD_CMD_FLAG_FAST_ZERO, 0, 512, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_CACHE, 1u << 9, 0, 512, &l), NBD_EINVAL);
  /* Past the end (rule 22) and overflowing. */
  assert_int_equal(validate(NBD_CMD_CACHE, 0, EXPORT_SIZE - 512, 1024, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_CACHE, 0, UINT64_MAX, 2, &l), NBD_EINVAL);
  /* Allowed on a read-only export. */
  l.transmission_flags |= NBD_FLAG_READ_ONLY;
  assert_int_equal(validate(NBD_CMD_CACHE, 0, 0, 512, &l), NBD_SUCCESS);
}

static void test_rule30_block_status_needs_context_and_structured_replies(void **state)
{
  struct nbd_export_limits l = limits_full();

  (void)state;
  l.meta_context = false;
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, 0, 0, 4096, &l), NBD_EINVAL);
  l.meta_context = true;
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, 0, 0, 4096, &l), NBD_SUCCESS);
  l.structured_replies = false;
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, 0, 0, 4096, &l), NBD_EINVAL);
}

static void test_rule30_block_status_flags_range_and_length(void **state)
{
  struct nbd_export_limits l = limits_full();

  (void)state;
  l.meta_context = true;
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, NBD_CMD_FLAG_REQ_ONE, 0, 4096, &l),
                   NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, NBD_CMD_FLAG_FUA, 0, 4096, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, NBD_CMD_FLAG_DF, 0, 4096, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, NBD_CMD_FLAG_NO_HOLE, 0, 4096, &l),
                   NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, NBD_CMD_FLAG_PAYLOAD_LEN, 0, 4096, &l),
                   NBD_EINVAL);
  /* Not limited by max_payload: the client does not send or receive that much data. */
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, 0, 0, EXPORT_SIZE, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, 0, EXPORT_SIZE - 1, 2, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, 0, UINT64_MAX, 1, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_BLOCK_STATUS, 0, 0, 0, &l), NBD_EINVAL);
}

/* ---- validation: extended headers (rule 16) ---- */

static void test_rule16_extended_write_needs_payload_len(void **state)
{
  struct nbd_export_limits l = limits_full();
  const uint16_t pl = NBD_CMD_FLAG_PAYLOAD_LEN;

  (void)state;
  l.extended_headers = true;
  assert_int_equal(validate(NBD_CMD_WRITE, pl, 0, 4096, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE, pl | NBD_CMD_FLAG_FUA, 0, 4096, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE, 0, 0, 4096, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE, pl, 0, DG_MAX_PAYLOAD + 1u, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE, pl, EXPORT_SIZE, 512, &l), NBD_ENOSPC);
  /* A payload on any other command is refused. */
  assert_int_equal(validate(NBD_CMD_READ, pl, 0, 4096, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_TRIM, pl, 0, 4096, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, pl, 0, 4096, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_FLUSH, pl, 0, 0, &l), NBD_EINVAL);
}

static void test_rule16_64_bit_lengths_only_with_extended_headers(void **state)
{
  struct nbd_export_limits l = limits_full();
  const uint64_t four_gib = UINT64_C(1) << 32;

  (void)state;
  l.size = UINT64_C(1) << 40;
  assert_int_equal(validate(NBD_CMD_TRIM, 0, 0, four_gib, &l), NBD_EINVAL);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, 0, four_gib, &l), NBD_EINVAL);
  l.extended_headers = true;
  assert_int_equal(validate(NBD_CMD_TRIM, 0, 0, four_gib, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_WRITE_ZEROES, 0, 0, four_gib, &l), NBD_SUCCESS);
  assert_int_equal(validate(NBD_CMD_READ, 0, 0, four_gib, &l), NBD_EINVAL); /* max_payload */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_request_decode_layout),
      cmocka_unit_test(test_request_encode_layout),
      cmocka_unit_test(test_request_encode_decode_round_trip),
      cmocka_unit_test(test_request_decode_bad_magic_eproto),
      cmocka_unit_test(test_rule16_extended_request_decode_encode_layout),
      cmocka_unit_test(test_rule16_extended_request_bad_magic_eproto),
      cmocka_unit_test(test_rule24_payload_length_only_for_write),
      cmocka_unit_test(test_rule16_payload_length_extended_follows_payload_len_flag),
      cmocka_unit_test(test_rule24_unknown_command_0x7f_einval),
      cmocka_unit_test(test_rule24_unadvertised_commands_einval),
      cmocka_unit_test(test_rule24_unknown_flag_einval),
      cmocka_unit_test(test_rule24_no_hole_on_read_einval),
      cmocka_unit_test(test_rule28_no_hole_on_write_zeroes_accepted),
      cmocka_unit_test(test_rule28_fast_zero_only_when_advertised),
      cmocka_unit_test(test_rule26_fua_accepted_on_every_command_with_send_fua),
      cmocka_unit_test(test_rule24_fua_without_send_fua_einval),
      cmocka_unit_test(test_rule29_df_on_read_with_structured_replies_and_send_df),
      cmocka_unit_test(test_rule29_df_without_structured_replies_einval),
      cmocka_unit_test(test_rule29_df_without_send_df_einval),
      cmocka_unit_test(test_rule26_flush_nonzero_offset_or_length_einval),
      cmocka_unit_test(test_rule23_unaligned_to_min_block_einval_only_when_enforced),
      cmocka_unit_test(test_rule22_read_and_trim_past_end_einval),
      cmocka_unit_test(test_rule22_read_and_trim_overflowing_64_bits_einval),
      cmocka_unit_test(test_rule22_write_and_write_zeroes_past_end_enospc),
      cmocka_unit_test(test_rule17_read_only_write_trim_write_zeroes_eperm),
      cmocka_unit_test(test_rule25_read_write_over_max_payload_einval),
      cmocka_unit_test(test_rule25_trim_write_zeroes_not_limited_by_max_payload),
      cmocka_unit_test(test_rule25_length_zero_valid),
      cmocka_unit_test(test_rule33_disc_always_valid),
      cmocka_unit_test(test_rule32_cache_when_advertised),
      cmocka_unit_test(test_rule30_block_status_needs_context_and_structured_replies),
      cmocka_unit_test(test_rule30_block_status_flags_range_and_length),
      cmocka_unit_test(test_rule16_extended_write_needs_payload_len),
      cmocka_unit_test(test_rule16_64_bit_lengths_only_with_extended_headers),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
