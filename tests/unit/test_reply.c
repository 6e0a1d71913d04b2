/* SPDX-License-Identifier: MIT */
/* test_reply.c: unit tests of the reply side of nbd/request.h: simple replies, structured
 * and extended chunk headers, error chunks, block status chunks, and the errno mapping
 * (doc/proto.md "Simple reply message", "Structured reply chunk message", "Error values";
 * rules 16, 18, 20, 30, 31 and 35 of nbd-spec-rules.md). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nbd/proto.h"
#include "nbd/reply.h"
#include "nbd/request.h"

/* ---- replies ---- */

static void test_rule18_simple_reply_layout(void **state)
{
  uint8_t out[NBD_SIMPLE_REPLY_SIZE + 1];
  const uint8_t expect[NBD_SIMPLE_REPLY_SIZE + 1] = {
      0x67, 0x44, 0x66, 0x98,                         /* NBD_SIMPLE_REPLY_MAGIC */
      0x00, 0x00, 0x00, 0x1C,                         /* NBD_ENOSPC */
      0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10, /* cookie echoed */
      0xEE};

  (void)state;
  assert_int_equal(NBD_SIMPLE_REPLY_SIZE, 16);
  memset(out, 0xEE, sizeof out);
  nbd_simple_reply_encode(out, NBD_ENOSPC, UINT64_C(0xFEDCBA9876543210));
  assert_memory_equal(out, expect, sizeof expect);
  nbd_simple_reply_encode(out, NBD_SUCCESS, 0);
  assert_memory_equal(out + 4, "\0\0\0\0\0\0\0\0\0\0\0\0", 12);
}

static void test_rule18_chunk_header_layout(void **state)
{
  uint8_t out[NBD_STRUCTURED_REPLY_SIZE + 1];
  const uint8_t expect[NBD_STRUCTURED_REPLY_SIZE + 1] = {
      0x66, 0x8E, 0x33, 0xEF,                         /* NBD_STRUCTURED_REPLY_MAGIC */
      0x00, 0x01,                                     /* NBD_REPLY_FLAG_DONE */
      0x00, 0x00,                                     /* NBD_REPLY_TYPE_NONE */
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* cookie */
      0x00, 0x00, 0x00, 0x00,                         /* length */
      0xEE};

  (void)state;
  assert_int_equal(NBD_STRUCTURED_REPLY_SIZE, 20);
  memset(out, 0xEE, sizeof out);
  nbd_chunk_header_encode(out, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE,
                          UINT64_C(0x1122334455667788), 0);
  assert_memory_equal(out, expect, sizeof expect);

  nbd_chunk_header_encode(out, 0, NBD_REPLY_TYPE_OFFSET_HOLE, 1, 12);
  assert_memory_equal(out + 4, "\x00\x00\x00\x02", 4);
  assert_memory_equal(out + 16, "\x00\x00\x00\x0C", 4);
}

static void test_rule20_offset_data_header_layout(void **state)
{
  uint8_t out[NBD_OFFSET_DATA_HEADER_SIZE + 1];
  const uint8_t expect[NBD_OFFSET_DATA_HEADER_SIZE + 1] = {
      0x66, 0x8E, 0x33, 0xEF,                         /* magic */
      0x00, 0x00,                                     /* flags: not DONE */
      0x00, 0x01,                                     /* NBD_REPLY_TYPE_OFFSET_DATA */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A, /* cookie */
      0x00, 0x01, 0x00, 0x08,                         /* length: 8 + 65536 */
      0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, /* offset */
      0xEE};

  (void)state;
  assert_int_equal(NBD_OFFSET_DATA_HEADER_SIZE, 28);
  memset(out, 0xEE, sizeof out);
  nbd_offset_data_header_encode(out, 0, 42, UINT64_C(0x200000000), 65536);
  assert_memory_equal(out, expect, sizeof expect);

  nbd_offset_data_header_encode(out, NBD_REPLY_FLAG_DONE, 42, 0, 1);
  assert_memory_equal(out + 4, "\x00\x01\x00\x01", 4);
  assert_memory_equal(out + 16, "\x00\x00\x00\x09", 4);
}

static void test_rule31_error_chunk_layout(void **state)
{
  uint8_t out[NBD_ERROR_CHUNK_MAX + 8];
  const uint8_t expect[20 + 6 + 7 + 1] = {
      0x66, 0x8E, 0x33, 0xEF,                         /* magic */
      0x00, 0x01,                                     /* DONE */
      0x80, 0x01,                                     /* NBD_REPLY_TYPE_ERROR */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, /* cookie */
      0x00, 0x00, 0x00, 0x0D,                         /* length: 6 + 7 */
      0x00, 0x00, 0x00, 0x05,                         /* NBD_EIO */
      0x00, 0x07,                                     /* message length */
      'I', '/', 'O', ' ', 'e', 'r', 'r',
      0xEE};

  (void)state;
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_error_chunk_encode(out, 7, NBD_EIO, "I/O err"), 33);
  assert_memory_equal(out, expect, sizeof expect);
}

static void test_rule31_error_chunk_without_message_length_6(void **state)
{
  uint8_t out[NBD_ERROR_CHUNK_MAX + 8];
  const uint8_t tail[10] = {0x00, 0x00, 0x00, 0x06,  /* length */
                            0x00, 0x00, 0x00, 0x16,  /* NBD_EINVAL */
                            0x00, 0x00};             /* message length */

  (void)state;
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_error_chunk_encode(out, 1, NBD_EINVAL, NULL), 26);
  assert_memory_equal(out + 16, tail, sizeof tail);
  assert_int_equal(out[26], 0xEE);

  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_error_chunk_encode(out, 1, NBD_EINVAL, ""), 26);
  assert_memory_equal(out + 16, tail, sizeof tail);
  assert_int_equal(out[26], 0xEE);
}

static void test_rule31_error_chunk_message_truncated(void **state)
{
  static char message[5000];
  uint8_t out[NBD_ERROR_CHUNK_MAX + 8];
  const size_t max_msg = NBD_ERROR_CHUNK_MAX - NBD_STRUCTURED_REPLY_SIZE - 6;

  (void)state;
  assert_int_equal(max_msg, 256);
  memset(message, 'm', sizeof message - 1);
  message[sizeof message - 1] = '\0';
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_error_chunk_encode(out, 9, NBD_ENOMEM, message), NBD_ERROR_CHUNK_MAX);
  assert_memory_equal(out + 16, "\x00\x00\x01\x06", 4);  /* 6 + 256 */
  assert_memory_equal(out + 20, "\x00\x00\x00\x0C", 4);  /* NBD_ENOMEM */
  assert_memory_equal(out + 24, "\x01\x00", 2);          /* 256 */
  assert_memory_equal(out + 26, message, 256);
  for (size_t i = NBD_ERROR_CHUNK_MAX; i < sizeof out; i++) {
    assert_int_equal(out[i], 0xEE);
  }

  /* Exactly 256 bytes is not truncated; 257 is. */
  message[256] = '\0';
  assert_int_equal(nbd_error_chunk_encode(out, 9, NBD_ENOMEM, message), NBD_ERROR_CHUNK_MAX);
  message[256] = 'm';
  message[257] = '\0';
  assert_int_equal(nbd_error_chunk_encode(out, 9, NBD_ENOMEM, message), NBD_ERROR_CHUNK_MAX);
  message[255] = '\0';
  assert_int_equal(nbd_error_chunk_encode(out, 9, NBD_ENOMEM, message), NBD_ERROR_CHUNK_MAX - 1);
  assert_memory_equal(out + 24, "\x00\xFF", 2);
}

/* Strings on the wire are sequences of UTF-8 code points (doc/proto.md, first section):
 * truncation must not cut a multi-byte character in half. */
static void test_rule31_error_chunk_truncation_keeps_utf8_whole(void **state)
{
  char message[300];
  uint8_t out[NBD_ERROR_CHUNK_MAX + 8];

  (void)state;
  memset(message, 'a', 255);
  memcpy(message + 255, "\xC3\xA9\xC3\xA9", 4); /* "éé": bytes 255-258 */
  message[259] = '\0';
  assert_int_equal(nbd_error_chunk_encode(out, 3, NBD_EIO, message), 20 + 6 + 255);
  assert_memory_equal(out + 16, "\x00\x00\x01\x05", 4); /* 6 + 255 */
  assert_memory_equal(out + 24, "\x00\xFF", 2);         /* 255 */
}

/* A 4-byte character straddling the cut loses at most 3 bytes; invalid UTF-8 (a run of
 * continuation bytes, crashes/request/utf8-continuation-run) keeps 253 bytes instead of
 * coming out empty. */
static void test_rule31_error_chunk_truncation_drops_at_most_3_bytes(void **state)
{
  char message[400];
  uint8_t out[NBD_ERROR_CHUNK_MAX + 8];

  (void)state;
  memset(message, 'a', 253);
  memcpy(message + 253, "\xF0\x9F\x98\x80", 4); /* U+1F600: bytes 253-256 */
  message[257] = 'z';
  message[258] = '\0';
  assert_int_equal(nbd_error_chunk_encode(out, 3, NBD_EIO, message), 20 + 6 + 253);
  assert_memory_equal(out + 24, "\x00\xFD", 2); /* 253 */

  memset(message, 0x80, sizeof message - 1);
  message[sizeof message - 1] = '\0';
  assert_int_equal(nbd_error_chunk_encode(out, 3, NBD_EIO, message), 20 + 6 + 253);
  assert_memory_equal(out + 24, "\x00\xFD", 2); /* 253, not 0 */
  assert_memory_equal(out + 26, message, 253);
}

/* ---- extended headers (rule 16) and block status (rule 30) ---- */

static void test_rule16_extended_reply_header_echoes_offset(void **state)
{
  uint8_t out[NBD_EXTENDED_REPLY_SIZE + 1];
  const uint8_t expect[NBD_EXTENDED_REPLY_SIZE + 1] = {
      0x6E, 0x8A, 0x27, 0x8C,                         /* NBD_EXTENDED_REPLY_MAGIC */
      0x00, 0x01,                                     /* DONE */
      0x00, 0x01,                                     /* NBD_REPLY_TYPE_OFFSET_DATA */
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* cookie */
      0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x10, 0x00, /* request offset */
      0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x08, /* 64-bit length */
      0xEE};

  (void)state;
  assert_int_equal(NBD_EXTENDED_REPLY_SIZE, 32);
  memset(out, 0xEE, sizeof out);
  nbd_ext_reply_header_encode(out, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_OFFSET_DATA,
                              UINT64_C(0x1122334455667788), UINT64_C(0x200001000),
                              UINT64_C(0x100000008));
  assert_memory_equal(out, expect, sizeof expect);
}

static void test_rule16_reply_header_encode_both_styles(void **state)
{
  uint8_t a[40], b[40];

  (void)state;
  memset(a, 0xEE, sizeof a);
  memset(b, 0xEE, sizeof b);
  assert_int_equal(nbd_reply_header_encode(a, false, 0, NBD_REPLY_TYPE_OFFSET_HOLE, 5, 4096, 12),
                   NBD_STRUCTURED_REPLY_SIZE);
  nbd_chunk_header_encode(b, 0, NBD_REPLY_TYPE_OFFSET_HOLE, 5, 12);
  assert_memory_equal(a, b, sizeof a);

  assert_int_equal(nbd_reply_header_encode(a, true, 0, NBD_REPLY_TYPE_OFFSET_HOLE, 5, 4096, 12),
                   NBD_EXTENDED_REPLY_SIZE);
  nbd_ext_reply_header_encode(b, 0, NBD_REPLY_TYPE_OFFSET_HOLE, 5, 4096, 12);
  assert_memory_equal(a, b, sizeof a);
  assert_int_equal(a[NBD_EXTENDED_REPLY_SIZE], 0xEE);
}

static void test_rule16_error_reply_extended_layout(void **state)
{
  uint8_t out[NBD_ERROR_CHUNK_MAX + 12 + 8];
  const uint8_t expect[32 + 6 + 4 + 1] = {
      0x6E, 0x8A, 0x27, 0x8C,                         /* NBD_EXTENDED_REPLY_MAGIC */
      0x00, 0x01,                                     /* DONE */
      0x80, 0x01,                                     /* NBD_REPLY_TYPE_ERROR */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x63, /* cookie 99 */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, /* offset 8192 */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0A, /* length: 6 + 4 */
      0x00, 0x00, 0x00, 0x1C,                         /* NBD_ENOSPC */
      0x00, 0x04,                                     /* message length */
      'f', 'u', 'l', 'l',
      0xEE};
  uint8_t compact[NBD_ERROR_CHUNK_MAX + 12];

  (void)state;
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_error_reply_encode(out, true, 99, 8192, NBD_ENOSPC, "full"), 42);
  assert_memory_equal(out, expect, sizeof expect);

  /* Compact style: exactly nbd_error_chunk_encode. */
  assert_int_equal(nbd_error_reply_encode(out, false, 99, 8192, NBD_ENOSPC, "full"), 30);
  assert_int_equal(nbd_error_chunk_encode(compact, 99, NBD_ENOSPC, "full"), 30);
  assert_memory_equal(out, compact, 30);
}

static void test_rule30_block_status_compact_layout(void **state)
{
  struct nbd_extent ext[2] = {{4096, 0, 1}, {8192, NBD_STATE_HOLE | NBD_STATE_ZERO, 0}};
  uint8_t hdr[48];
  size_t payload = 0;
  const uint8_t expect_hdr[24] = {
      0x66, 0x8E, 0x33, 0xEF,                         /* NBD_STRUCTURED_REPLY_MAGIC */
      0x00, 0x01,                                     /* DONE */
      0x00, 0x05,                                     /* NBD_REPLY_TYPE_BLOCK_STATUS */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, /* cookie */
      0x00, 0x00, 0x00, 0x14,                         /* length: 4 + 2 * 8 */
      0x00, 0x00, 0x00, 0x01};                        /* context id */
  const uint8_t expect_desc[16] = {
      0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x03};

  (void)state;
  assert_int_equal(nbd_block_status_encode(hdr, false, 7, 0, 1, ext, 2, &payload), 24);
  assert_int_equal(payload, 16);
  assert_memory_equal(hdr, expect_hdr, sizeof expect_hdr);
  assert_memory_equal((const uint8_t *)ext, expect_desc, sizeof expect_desc);
}

static void test_rule30_block_status_compact_caps_long_extent(void **state)
{
  struct nbd_extent ext[2] = {{UINT64_C(1) << 33, NBD_STATE_HOLE, 0}, {4096, 0, 1}};
  uint8_t hdr[48];
  size_t payload = 0;
  const uint8_t expect_desc[8] = {0xFF, 0xFF, 0xF0, 0x00, 0x00, 0x00, 0x00, 0x01};

  (void)state;
  assert_int_equal(nbd_block_status_encode(hdr, false, 7, 0, 1, ext, 2, &payload), 24);
  /* One descriptor of 4 GiB - 4 KiB; the second is dropped (no longer consecutive). */
  assert_int_equal(payload, 8);
  assert_memory_equal(hdr + 16, "\x00\x00\x00\x0C", 4); /* 4 + 8 */
  assert_memory_equal((const uint8_t *)ext, expect_desc, sizeof expect_desc);
}

/* A chunk encoded whole and later found not to be its reply's last (server/txn_split.c):
 * only the DONE bit changes, in both header styles. */
static void test_rule20_reply_header_clear_done(void **state)
{
  uint8_t a[NBD_EXTENDED_REPLY_SIZE], b[NBD_EXTENDED_REPLY_SIZE];

  (void)state;
  for (int ext = 0; ext <= 1; ext++) {
    size_t n = nbd_reply_header_encode(a, ext, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_OFFSET_DATA,
                                       77, 4096, 8 + 512);
    assert_int_equal(nbd_reply_header_encode(b, ext, 0, NBD_REPLY_TYPE_OFFSET_DATA, 77, 4096,
                                             8 + 512),
                     n);
    nbd_reply_header_clear_done(a);
    assert_memory_equal(a, b, n);
  }
}

/* A failed part of a READ answered in parts (server/txn_split.h) is reported at its own
 * offset: NBD_REPLY_TYPE_ERROR_OFFSET, the error payload followed by that offset; the
 * extended header still echoes the request's offset. */
static void test_rule31_error_offset_reply_layout(void **state)
{
  uint8_t out[NBD_ERROR_OFFSET_REPLY_MAX + 1];
  const uint8_t compact[20 + 6 + 2 + 8 + 1] = {
      0x66, 0x8E, 0x33, 0xEF,                         /* magic */
      0x00, 0x01,                                     /* DONE */
      0x80, 0x02,                                     /* NBD_REPLY_TYPE_ERROR_OFFSET */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, /* cookie */
      0x00, 0x00, 0x00, 0x10,                         /* length: 6 + 2 + 8 */
      0x00, 0x00, 0x00, 0x05,                         /* NBD_EIO */
      0x00, 0x02,                                     /* message length */
      'i', 'o',
      0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, /* error offset 0x140000 */
      0xEE};
  const uint8_t extended[32 + 6 + 8 + 1] = {
      0x6E, 0x8A, 0x27, 0x8C,                         /* NBD_EXTENDED_REPLY_MAGIC */
      0x00, 0x01,                                     /* DONE */
      0x80, 0x02,                                     /* NBD_REPLY_TYPE_ERROR_OFFSET */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, /* cookie */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, /* the request's offset 0x100000 */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0E, /* length: 6 + 8 */
      0x00, 0x00, 0x00, 0x05,                         /* NBD_EIO */
      0x00, 0x00,                                     /* no message */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, /* error offset 0x140000 */
      0xEE};
  char longest[NBD_ERROR_MESSAGE_MAX + 10];

  (void)state;
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_error_offset_reply_encode(out, false, 5, 0x100000, NBD_EIO, "io", 0x140000),
                   36);
  assert_memory_equal(out, compact, sizeof compact);
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_error_offset_reply_encode(out, true, 5, 0x100000, NBD_EIO, NULL, 0x140000),
                   46);
  assert_memory_equal(out, extended, sizeof extended);
  /* The longest message fills the buffer exactly, extended header and offset included. */
  memset(longest, 'm', sizeof longest - 1);
  longest[sizeof longest - 1] = '\0';
  memset(out, 0xEE, sizeof out);
  assert_int_equal(nbd_error_offset_reply_encode(out, true, 5, 0, NBD_EIO, longest, 0),
                   NBD_ERROR_OFFSET_REPLY_MAX);
  assert_int_equal(out[NBD_ERROR_OFFSET_REPLY_MAX], 0xEE);
}

static void test_rule16_rule30_block_status_extended_layout(void **state)
{
  struct nbd_extent ext[2] = {{UINT64_C(1) << 33, NBD_STATE_ZERO, 0}, {512, 0, 1}};
  uint8_t hdr[48];
  size_t payload = 0;
  const uint8_t expect_hdr[40] = {
      0x6E, 0x8A, 0x27, 0x8C,                         /* NBD_EXTENDED_REPLY_MAGIC */
      0x00, 0x01,                                     /* DONE */
      0x00, 0x06,                                     /* NBD_REPLY_TYPE_BLOCK_STATUS_EXT */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, /* cookie */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, /* offset echoed */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x28, /* length: 8 + 16 * 2 */
      0x00, 0x00, 0x00, 0x02,                         /* context id */
      0x00, 0x00, 0x00, 0x02};                        /* descriptor count */
  const uint8_t expect_desc[32] = {
      0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00};

  (void)state;
  assert_int_equal(sizeof ext, 32);
  assert_int_equal(nbd_block_status_encode(hdr, true, 7, 0x100000, 2, ext, 2, &payload), 40);
  assert_int_equal(payload, 32);
  assert_memory_equal(hdr, expect_hdr, sizeof expect_hdr);
  assert_memory_equal((const uint8_t *)ext, expect_desc, sizeof expect_desc);
}

/* qemu:allocation-depth alone: one chunk with its own context id, each descriptor's
 * value the extent's depth (QEMU's docs/interop/nbd.txt). */
static void test_rule30_block_status_depth_only(void **state)
{
  struct nbd_extent ext[3] = {{4096, NBD_STATE_HOLE, 0}, {8192, 0, 1}, {512, 0, 3}};
  uint8_t hdr[48];
  size_t payload = 0;
  const uint8_t expect_desc[24] = {
      0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00,  /* 4096, depth 0 */
      0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x01,  /* 8192, depth 1 */
      0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x03}; /* 512, depth 3 */

  (void)state;
  assert_int_equal(nbd_block_status_reply_encode(hdr, false, 9, 0, 0, 2, ext, 3, &payload), 24);
  assert_int_equal(payload, 24);
  assert_memory_equal(hdr + 4, "\x00\x01\x00\x05", 4);  /* DONE, BLOCK_STATUS */
  assert_memory_equal(hdr + 16, "\x00\x00\x00\x1C", 4); /* length 4 + 3 * 8 */
  assert_memory_equal(hdr + 20, "\x00\x00\x00\x02", 4); /* the depth context's id */
  assert_memory_equal((const uint8_t *)ext, expect_desc, sizeof expect_desc);
}

/* Both contexts, compact: the first chunk (flags, no DONE) in hdr and its descriptors,
 * then the second chunk (depth, DONE) whole, in one run of payload bytes. */
static void test_rule30_block_status_two_contexts_compact(void **state)
{
  struct nbd_extent buf[2 + 5] = {{4096, NBD_STATE_HOLE | NBD_STATE_ZERO, 0},
                                  {UINT64_C(1) << 33, 0, 2}};
  uint8_t hdr[48];
  size_t payload = 0;
  const uint8_t *wire = (const uint8_t *)buf;
  const uint8_t expect[8 * 2 + 24 + 8 * 2] = {
      0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x03, /* base: 4096 hole|zero */
      0xFF, 0xFF, 0xF0, 0x00, 0x00, 0x00, 0x00, 0x00, /* base: capped, data */
      0x66, 0x8E, 0x33, 0xEF, 0x00, 0x01, 0x00, 0x05, /* magic, DONE, BLOCK_STATUS */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, /* cookie */
      0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x02, /* length 4 + 16, context 2 */
      0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, /* depth: 4096 at 0 */
      0xFF, 0xFF, 0xF0, 0x00, 0x00, 0x00, 0x00, 0x02}; /* depth: capped, at 2 */

  (void)state;
  assert_true(sizeof buf >= 2 * sizeof buf[0] + NBD_BLOCK_STATUS_SECOND_ROOM(2));
  assert_int_equal(nbd_block_status_reply_encode(hdr, false, 9, 0, 1, 2, buf, 2, &payload), 24);
  assert_int_equal(payload, sizeof expect);
  assert_memory_equal(hdr + 4, "\x00\x00\x00\x05", 4);  /* no DONE: a chunk follows */
  assert_memory_equal(hdr + 16, "\x00\x00\x00\x14", 4); /* its own chunk's length */
  assert_memory_equal(hdr + 20, "\x00\x00\x00\x01", 4);
  assert_memory_equal(wire, expect, sizeof expect);
}

/* Both contexts, extended headers: 16-byte descriptors and counts in both chunks. */
static void test_rule16_rule30_block_status_two_contexts_extended(void **state)
{
  struct nbd_extent buf[1 + 4] = {{65536, NBD_STATE_ZERO, 1}};
  uint8_t hdr[48];
  size_t payload = 0;
  const uint8_t *wire = (const uint8_t *)buf;
  const uint8_t expect[16 + 40 + 16] = {
      0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,   /* base: 65536, zero */
      0x6E, 0x8A, 0x27, 0x8C, 0x00, 0x01, 0x00, 0x06,   /* magic, DONE, BLOCK_STATUS_EXT */
      0, 0, 0, 0, 0, 0, 0, 9,                           /* cookie */
      0, 0, 0, 0, 0, 0, 0x10, 0,                        /* offset echoed */
      0, 0, 0, 0, 0, 0, 0, 0x18,                        /* length 8 + 16 */
      0, 0, 0, 2, 0, 0, 0, 1,                           /* context 2, one descriptor */
      0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};  /* depth: 65536 at 1 */

  (void)state;
  assert_int_equal(nbd_block_status_reply_encode(hdr, true, 9, 0x1000, 1, 2, buf, 1, &payload),
                   40);
  assert_int_equal(payload, sizeof expect);
  assert_memory_equal(hdr + 4, "\x00\x00\x00\x06", 4); /* no DONE */
  assert_memory_equal(hdr + 32, "\x00\x00\x00\x01\x00\x00\x00\x01", 8);
  assert_memory_equal(wire, expect, sizeof expect);
}

/* ---- errno mapping ---- */

static void test_rule35_error_from_errno_mapping(void **state)
{
  static const struct {
    int err;
    uint32_t nbd;
  } cases[] = {
      {0, NBD_SUCCESS},          {EPERM, NBD_EPERM},        {EROFS, NBD_EPERM},
      {EACCES, NBD_EPERM},       {EIO, NBD_EIO},            {ENOMEM, NBD_ENOMEM},
      {EINVAL, NBD_EINVAL},      {ENOSPC, NBD_ENOSPC},      {EDQUOT, NBD_ENOSPC},
      {EFBIG, NBD_ENOSPC},       {EOVERFLOW, NBD_EOVERFLOW}, {ENOTSUP, NBD_ENOTSUP},
      {EOPNOTSUPP, NBD_ENOTSUP}, {ESHUTDOWN, NBD_ESHUTDOWN},
  };

  (void)state;
  assert_int_equal(NBD_EPERM, 1);
  assert_int_equal(NBD_EIO, 5);
  assert_int_equal(NBD_ENOMEM, 12);
  assert_int_equal(NBD_EINVAL, 22);
  assert_int_equal(NBD_ENOSPC, 28);
  assert_int_equal(NBD_EOVERFLOW, 75);
  assert_int_equal(NBD_ENOTSUP, 95);
  assert_int_equal(NBD_ESHUTDOWN, 108);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    assert_int_equal(nbd_error_from_errno(cases[i].err), cases[i].nbd);
    assert_int_equal(nbd_error_from_errno(-cases[i].err), cases[i].nbd);
  }
}

static void test_rule35_error_from_errno_unknown_einval(void **state)
{
  static const int unknown[] = {ENOENT, EBADF, EAGAIN, ETIMEDOUT, ENODEV, ENXIO, EINTR,
                                EPIPE,  ECONNRESET, EPROTO, ENAMETOOLONG, 4095, 100000};

  (void)state;
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    assert_int_equal(nbd_error_from_errno(unknown[i]), NBD_EINVAL);
    assert_int_equal(nbd_error_from_errno(-unknown[i]), NBD_EINVAL);
  }
}

static void test_rule35_error_from_errno_only_permitted_values(void **state)
{
  (void)state;
  for (int err = -4096; err <= 4096; err++) {
    uint32_t v = nbd_error_from_errno(err);

    if (err == 0) {
      assert_int_equal(v, NBD_SUCCESS);
      continue;
    }
    assert_true(v == NBD_EPERM || v == NBD_EIO || v == NBD_ENOMEM || v == NBD_EINVAL ||
                v == NBD_ENOSPC || v == NBD_EOVERFLOW || v == NBD_ENOTSUP ||
                v == NBD_ESHUTDOWN);
  }
}

static void test_command_name(void **state)
{
  (void)state;
  assert_string_equal(nbd_command_name(NBD_CMD_READ), "READ");
  assert_string_equal(nbd_command_name(NBD_CMD_WRITE), "WRITE");
  assert_string_equal(nbd_command_name(NBD_CMD_DISC), "DISC");
  assert_string_equal(nbd_command_name(NBD_CMD_FLUSH), "FLUSH");
  assert_string_equal(nbd_command_name(NBD_CMD_TRIM), "TRIM");
  assert_string_equal(nbd_command_name(NBD_CMD_CACHE), "CACHE");
  assert_string_equal(nbd_command_name(NBD_CMD_WRITE_ZEROES), "WRITE_ZEROES");
  assert_string_equal(nbd_command_name(NBD_CMD_BLOCK_STATUS), "BLOCK_STATUS");
  assert_string_equal(nbd_command_name(NBD_CMD_RESIZE), "RESIZE");
  assert_string_equal(nbd_command_name(9), "UNKNOWN");
  assert_string_equal(nbd_command_name(0x7F), "UNKNOWN");
  assert_string_equal(nbd_command_name(0xFFFF), "UNKNOWN");
}

/* Regression: negating INT_MIN overflowed (undefined behaviour). */
static void test_rule35_error_from_errno_int_min(void **state)
{
  (void)state;
  assert_int_equal(nbd_error_from_errno(INT_MIN), NBD_EINVAL);
  assert_int_equal(nbd_error_from_errno(INT_MAX), NBD_EINVAL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rule18_simple_reply_layout),
      cmocka_unit_test(test_rule18_chunk_header_layout),
      cmocka_unit_test(test_rule20_offset_data_header_layout),
      cmocka_unit_test(test_rule31_error_chunk_layout),
      cmocka_unit_test(test_rule31_error_chunk_without_message_length_6),
      cmocka_unit_test(test_rule31_error_chunk_message_truncated),
      cmocka_unit_test(test_rule31_error_chunk_truncation_keeps_utf8_whole),
    cmocka_unit_test(test_rule31_error_chunk_truncation_drops_at_most_3_bytes),
      cmocka_unit_test(test_rule16_extended_reply_header_echoes_offset),
      cmocka_unit_test(test_rule16_reply_header_encode_both_styles),
      cmocka_unit_test(test_rule16_error_reply_extended_layout),
      cmocka_unit_test(test_rule31_error_offset_reply_layout),
      cmocka_unit_test(test_rule20_reply_header_clear_done),
      cmocka_unit_test(test_rule30_block_status_compact_layout),
      cmocka_unit_test(test_rule30_block_status_compact_caps_long_extent),
      cmocka_unit_test(test_rule16_rule30_block_status_extended_layout),
      cmocka_unit_test(test_rule30_block_status_depth_only),
      cmocka_unit_test(test_rule30_block_status_two_contexts_compact),
      cmocka_unit_test(test_rule16_rule30_block_status_two_contexts_extended),
      cmocka_unit_test(test_rule35_error_from_errno_mapping),
      cmocka_unit_test(test_rule35_error_from_errno_unknown_einval),
      cmocka_unit_test(test_rule35_error_from_errno_only_permitted_values),
      cmocka_unit_test(test_command_name),
      cmocka_unit_test(test_rule35_error_from_errno_int_min),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
