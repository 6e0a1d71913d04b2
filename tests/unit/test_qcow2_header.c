/* SPDX-License-Identifier: MIT */
/* Unit tests of qcow2_header_parse (src/backing/qcow2/qcow2_header.c) on headers built in
 * memory (QEMU's docs/interop/qcow2.txt, "Header", "Header extensions"): valid version 2
 * and 3 headers decode to their fields; each malformed field is refused with its errno and a
 * reason that names it; arbitrary bytes never crash the parser. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backing/qcow2/qcow2_impl.h"

#define CLUSTER_BITS 16u
#define CLUSTER (1u << CLUSTER_BITS)
#define FILE_SIZE (1ull << 20)

static uint8_t img[CLUSTER];

static void put32(size_t at, uint32_t v)
{
  for (int i = 0; i < 4; i++) {
    img[at + i] = (uint8_t)(v >> (24 - 8 * i));
  }
}

static void put64(size_t at, uint64_t v)
{
  put32(at, (uint32_t)(v >> 32));
  put32(at + 4, (uint32_t)v);
}

/* A valid header of `version` for a 1 GiB disk: L1 at 3 clusters, refcount table at 1. */
static void build(uint32_t version)
{
  memset(img, 0, sizeof img);
  put32(0, QCOW2_MAGIC);
  put32(4, version);
  put32(20, CLUSTER_BITS);
  put64(24, 1ull << 30);
  put32(36, 2); /* 2 entries of 512 MiB each */
  put64(40, 3 * CLUSTER);
  put64(48, CLUSTER);
  put32(56, 1);
  if (version == 3) {
    put32(96, 4);
    put32(100, 112);
  }
}

/* Appends a header extension at *at. */
static void ext(size_t *at, uint32_t type, const void *data, uint32_t len)
{
  put32(*at, type);
  put32(*at + 4, len);
  memcpy(img + *at + 8, data, len);
  *at += 8 + ((len + 7u) & ~7u);
}

static int parse(struct qcow2_header *h, char *why)
{
  return qcow2_header_parse(img, sizeof img, FILE_SIZE, h, why, 256);
}

/* Builds, applies `edit`'s change, and requires `rc` and a reason containing `word`. */
#define REFUSED(rc, word)                                                                     \
  do {                                                                                        \
    struct qcow2_header h_;                                                                   \
    char why_[256] = "";                                                                      \
    assert_int_equal(parse(&h_, why_), (rc));                                                 \
    if (strstr(why_, (word)) == NULL) {                                                       \
      fail_msg("reason \"%s\" does not name \"%s\"", why_, (word));                          \
    }                                                                                         \
  } while (0)

static void test_valid_v2(void **state)
{
  struct qcow2_header h;
  char why[256];

  (void)state;
  build(2);
  assert_int_equal(parse(&h, why), 0);
  assert_int_equal(h.version, 2);
  assert_int_equal(h.cluster_bits, CLUSTER_BITS);
  assert_int_equal(h.size, 1ull << 30);
  assert_int_equal(h.l1_size, 2);
  assert_int_equal(h.l1_table_offset, 3 * CLUSTER);
  assert_int_equal(h.refcount_order, 4);
  assert_int_equal(h.header_length, 72);
  assert_int_equal(h.incompatible_features, 0);
  assert_false(h.has_backing);
}

static void test_valid_v3_backing(void **state)
{
  static const char name[] = "../base image.qcow2";
  uint8_t table[48] = {0, 5};
  struct qcow2_header h;
  size_t at = 112;
  char why[256];

  (void)state;
  build(3);
  memcpy(table + 2, "future", 6);
  ext(&at, 0xe2792aca, "qcow2", 5);
  ext(&at, 0x6803f857, table, sizeof table);
  ext(&at, 0x23852875, "\0\0\0\1\0\0\0\0", 8); /* bitmaps: kept as they are */
  put32(at, 0);
  put64(8, 1024);
  put32(16, sizeof name - 1);
  memcpy(img + 1024, name, sizeof name - 1);
  put64(72, QCOW2_INCOMPAT_DIRTY | QCOW2_INCOMPAT_CORRUPT);
  put64(88, 1);
  assert_int_equal(parse(&h, why), 0);
  assert_int_equal(h.version, 3);
  assert_true(h.has_backing);
  assert_string_equal(h.backing_file, name);
  assert_true(h.has_backing_format);
  assert_string_equal(h.backing_format, "qcow2");
  assert_int_equal(h.incompatible_features, QCOW2_INCOMPAT_DIRTY | QCOW2_INCOMPAT_CORRUPT);
  assert_int_equal(h.autoclear_features, 1);
  assert_int_equal(h.header_ext_end, at + 8);
  /* the unknown bit 5 is refused, by the name the feature table gives it */
  put64(72, 1ull << 5);
  REFUSED(-ENOTSUP, "bit 5 (\"future\")");
}

static void test_fields_refused(void **state)
{
  (void)state;
  build(3);
  img[0] = 'X';
  REFUSED(-EINVAL, "magic");
  build(3);
  put32(4, 4);
  REFUSED(-ENOTSUP, "version 4");
  build(3);
  put32(20, 30);
  REFUSED(-EINVAL, "cluster_bits 30 out of range 9-21");
  build(3);
  put32(20, 8);
  REFUSED(-EINVAL, "cluster_bits 8");
  build(3);
  put32(100, 100);
  REFUSED(-EINVAL, "header_length 100");
  build(3);
  put32(100, 108);
  REFUSED(-EINVAL, "header_length 108");
  build(3);
  put32(96, 7);
  REFUSED(-EINVAL, "refcount_order 7");
  build(3);
  put64(72, 1ull << 40);
  REFUSED(-ENOTSUP, "incompatible feature bit 40");
  build(3);
  put64(72, QCOW2_INCOMPAT_DATA_FILE);
  REFUSED(-ENOTSUP, "external data file");
  build(3);
  put32(32, 2);
  REFUSED(-ENOTSUP, "encryption");
  build(2);
  put32(32, 1);
  REFUSED(-ENOTSUP, "encryption");
}

static void test_tables_refused(void **state)
{
  (void)state;
  build(3);
  put64(40, 3 * CLUSTER + 512);
  REFUSED(-EINVAL, "l1_table_offset");
  build(3);
  put64(40, FILE_SIZE);
  REFUSED(-EINVAL, "l1_table_offset");
  build(3);
  put32(36, 1);
  REFUSED(-EINVAL, "l1_size 1 too small");
  build(3);
  put32(36, (32u << 20) / 8 + 1);
  REFUSED(-EINVAL, "l1_size");
  build(3);
  put64(24, 1ull << 63);
  REFUSED(-EINVAL, "size");
  build(3);
  put64(48, 0);
  REFUSED(-EINVAL, "refcount_table_offset");
  build(3);
  put64(48, FILE_SIZE - CLUSTER / 2);
  REFUSED(-EINVAL, "refcount_table_offset");
  build(3);
  put32(56, 0);
  REFUSED(-EINVAL, "refcount_table_clusters");
  build(3);
  put32(60, 1);
  put64(64, 12345);
  REFUSED(-EINVAL, "snapshots_offset");
}

static void test_extensions_refused(void **state)
{
  size_t at = 112;

  (void)state;
  build(3);
  put64(8, CLUSTER - 10);
  put32(16, 20);
  REFUSED(-EINVAL, "backing file name");
  build(3);
  put64(8, 2048);
  put32(16, 1024);
  REFUSED(-EINVAL, "backing file name");
  build(3);
  put64(8, 2048);
  put32(16, 4);
  memcpy(img + 2048, "a\0bc", 4);
  REFUSED(-EINVAL, "NUL");
  build(3);
  put32(at, 0x1234);
  put32(at + 4, CLUSTER);
  REFUSED(-EINVAL, "header extension 0x1234");
  build(3);
  ext(&at, 0xe2792aca, "a-format-name-longer-than-31-bytes", 34);
  REFUSED(-EINVAL, "backing format");
  build(3);
  at = 112;
  ext(&at, 0x44415441, "data.raw", 8);
  REFUSED(-ENOTSUP, "external data file");
  build(3);
  put64(72, QCOW2_INCOMPAT_COMPRESSION);
  img[104] = 2;
  REFUSED(-ENOTSUP, "compression_type 2");
  build(3);
  put64(72, QCOW2_INCOMPAT_COMPRESSION);
  REFUSED(-EINVAL, "compression type bit");
  build(3);
  img[104] = 1;
  REFUSED(-EINVAL, "compression_type 1 without");
  build(3);
  put32(20, 12);
  put64(40, 3 * 4096);
  put64(48, 4096);
  put32(36, 4096);
  put64(72, QCOW2_INCOMPAT_EXTL2);
  REFUSED(-EINVAL, "extended L2");
}

static void test_short_and_random(void **state)
{
  struct qcow2_header h;
  char why[256];
  unsigned seed = 12345;

  (void)state;
  build(3);
  assert_int_equal(qcow2_header_parse(img, 50, FILE_SIZE, &h, why, sizeof why), -EINVAL);
  assert_non_null(strstr(why, "shorter"));
  assert_int_equal(qcow2_header_parse(img, 100, FILE_SIZE, &h, why, sizeof why), -EINVAL);
  assert_int_equal(qcow2_header_parse(img, sizeof img, 2 * CLUSTER, &h, why, sizeof why),
                   -EINVAL); /* the L1 table lies past a 2-cluster file */
  for (int round = 0; round < 20000; round++) {
    build(round % 2 == 0 ? 3 : 2);
    for (int i = 0; i < 8; i++) {
      seed = seed * 1103515245u + 12345u;
      img[(seed >> 8) % 512] = (uint8_t)(seed >> 24);
    }
    int rc = qcow2_header_parse(img, sizeof img, FILE_SIZE, &h, why, sizeof why);
    assert_true(rc == 0 || rc == -EINVAL || rc == -ENOTSUP);
    if (rc < 0) {
      assert_true(why[0] != '\0');
    } else {
      assert_true(h.cluster_bits >= 9 && h.cluster_bits <= 21);
    }
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_v2),
      cmocka_unit_test(test_valid_v3_backing),
      cmocka_unit_test(test_fields_refused),
      cmocka_unit_test(test_tables_refused),
      cmocka_unit_test(test_extensions_refused),
      cmocka_unit_test(test_short_and_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
