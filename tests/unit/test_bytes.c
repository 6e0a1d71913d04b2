/* SPDX-License-Identifier: MIT */
/* test_bytes.c: unit tests of util/bytes.h (big-endian loads/stores, overflow-checked
 * range arithmetic, alignment helpers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/bytes.h"

static void test_be16_put_layout_and_round_trip(void **state)
{
  uint8_t buf[4] = {0xAA, 0xAA, 0xAA, 0xAA};
  const uint8_t expect[4] = {0xAA, 0x12, 0x34, 0xAA};

  (void)state;
  bytes_put_be16(buf + 1, 0x1234);
  assert_memory_equal(buf, expect, sizeof expect);
  assert_int_equal(bytes_get_be16(buf + 1), 0x1234);

  bytes_put_be16(buf, 0xFFFF);
  assert_int_equal(buf[0], 0xFF);
  assert_int_equal(buf[1], 0xFF);
  assert_int_equal(bytes_get_be16(buf), 0xFFFF);

  bytes_put_be16(buf, 0x0000);
  assert_int_equal(bytes_get_be16(buf), 0);

  bytes_put_be16(buf, 0x8001);
  assert_int_equal(buf[0], 0x80);
  assert_int_equal(buf[1], 0x01);
  assert_int_equal(bytes_get_be16(buf), 0x8001);
}

static void test_be32_put_layout_and_round_trip(void **state)
{
  uint8_t buf[6] = {0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA};
  const uint8_t expect[6] = {0xAA, 0x12, 0x34, 0x56, 0x78, 0xAA};

  (void)state;
  bytes_put_be32(buf + 1, UINT32_C(0x12345678));
  assert_memory_equal(buf, expect, sizeof expect);
  assert_int_equal(bytes_get_be32(buf + 1), UINT32_C(0x12345678));

  bytes_put_be32(buf, UINT32_C(0xFFFFFFFF));
  assert_int_equal(bytes_get_be32(buf), UINT32_C(0xFFFFFFFF));

  /* The top bit must not be sign-extended. */
  bytes_put_be32(buf, UINT32_C(0x80000001));
  assert_int_equal(buf[0], 0x80);
  assert_int_equal(buf[3], 0x01);
  assert_int_equal(bytes_get_be32(buf), UINT32_C(0x80000001));

  bytes_put_be32(buf, 0);
  assert_int_equal(bytes_get_be32(buf), 0);
}

static void test_be64_put_layout_and_round_trip(void **state)
{
  uint8_t buf[10];
  const uint8_t expect[10] = {0xAA, 0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0xAA};
  static const uint64_t values[] = {
      0,
      1,
      UINT64_C(0xFF),
      UINT64_C(0x100000000),
      UINT64_C(0x8000000000000000),
      UINT64_C(0x7FFFFFFFFFFFFFFF),
      UINT64_C(0xFFFFFFFFFFFFFFFF),
      UINT64_C(0x4e42444d41474943),
  };

  (void)state;
  memset(buf, 0xAA, sizeof buf);
  bytes_put_be64(buf + 1, UINT64_C(0x0123456789ABCDEF));
  assert_memory_equal(buf, expect, sizeof expect);
  assert_true(bytes_get_be64(buf + 1) == UINT64_C(0x0123456789ABCDEF));

  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    bytes_put_be64(buf, values[i]);
    assert_true(bytes_get_be64(buf) == values[i]);
    assert_int_equal(buf[0], (uint8_t)(values[i] >> 56));
    assert_int_equal(buf[7], (uint8_t)values[i]);
  }
}

static void test_be64_reads_nbdmagic_text(void **state)
{
  const uint8_t text[8] = {'N', 'B', 'D', 'M', 'A', 'G', 'I', 'C'};

  (void)state;
  assert_true(bytes_get_be64(text) == UINT64_C(0x4e42444d41474943));
  assert_int_equal(bytes_get_be32(text), UINT32_C(0x4e42444d));
  assert_int_equal(bytes_get_be16(text), 0x4e42);
}

static void test_range_within_inside_and_at_end(void **state)
{
  (void)state;
  assert_true(bytes_range_within(0, 0, 0));
  assert_true(bytes_range_within(0, 100, 100));
  assert_true(bytes_range_within(99, 1, 100));
  assert_true(bytes_range_within(100, 0, 100));
  assert_true(bytes_range_within(50, 25, 100));
  assert_true(bytes_range_within(0, UINT64_MAX, UINT64_MAX));
  assert_true(bytes_range_within(UINT64_MAX, 0, UINT64_MAX));
}

static void test_range_within_past_end(void **state)
{
  (void)state;
  assert_false(bytes_range_within(0, 101, 100));
  assert_false(bytes_range_within(100, 1, 100));
  assert_false(bytes_range_within(101, 0, 100));
  assert_false(bytes_range_within(0, 1, 0));
}

static void test_rule22_range_within_overflow_64_bits(void **state)
{
  (void)state;
  /* offset + length wraps around 2^64: must not look like a small in-range end. */
  assert_false(bytes_range_within(UINT64_MAX, 1, UINT64_MAX));
  assert_false(bytes_range_within(1, UINT64_MAX, UINT64_MAX));
  assert_false(bytes_range_within(UINT64_MAX, UINT64_MAX, UINT64_MAX));
  assert_false(bytes_range_within(UINT64_C(0x8000000000000000), UINT64_C(0x8000000000000000),
                                  100));
  assert_false(bytes_range_within(UINT64_MAX - 9, 20, 100));
  assert_false(bytes_range_within(10, UINT64_MAX - 5, 100));
}

static void test_align_down(void **state)
{
  (void)state;
  assert_true(bytes_align_down(0, 512) == 0);
  assert_true(bytes_align_down(511, 512) == 0);
  assert_true(bytes_align_down(512, 512) == 512);
  assert_true(bytes_align_down(1023, 512) == 512);
  assert_true(bytes_align_down(4097, 4096) == 4096);
  assert_true(bytes_align_down(12345, 1) == 12345);
  assert_true(bytes_align_down(UINT64_MAX, 4096) == UINT64_C(0xFFFFFFFFFFFFF000));
}

static void test_align_up(void **state)
{
  (void)state;
  assert_true(bytes_align_up(0, 512) == 0);
  assert_true(bytes_align_up(1, 512) == 512);
  assert_true(bytes_align_up(512, 512) == 512);
  assert_true(bytes_align_up(513, 512) == 1024);
  assert_true(bytes_align_up(4095, 4096) == 4096);
  assert_true(bytes_align_up(4097, 4096) == 8192);
  assert_true(bytes_align_up(12345, 1) == 12345);
  assert_true(bytes_align_up(UINT64_C(0xFFFFFFFFFFFFF000) - 1, 4096) ==
              UINT64_C(0xFFFFFFFFFFFFF000));
}

static void test_is_power_of_two(void **state)
{
  (void)state;
  assert_false(bytes_is_power_of_two(0));
  assert_true(bytes_is_power_of_two(1));
  assert_true(bytes_is_power_of_two(2));
  assert_false(bytes_is_power_of_two(3));
  assert_true(bytes_is_power_of_two(512));
  assert_false(bytes_is_power_of_two(768));
  assert_true(bytes_is_power_of_two(65536));
  assert_false(bytes_is_power_of_two(65537));
  assert_true(bytes_is_power_of_two(UINT64_C(0x8000000000000000)));
  assert_false(bytes_is_power_of_two(UINT64_MAX));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_be16_put_layout_and_round_trip),
      cmocka_unit_test(test_be32_put_layout_and_round_trip),
      cmocka_unit_test(test_be64_put_layout_and_round_trip),
      cmocka_unit_test(test_be64_reads_nbdmagic_text),
      cmocka_unit_test(test_range_within_inside_and_at_end),
      cmocka_unit_test(test_range_within_past_end),
      cmocka_unit_test(test_rule22_range_within_overflow_64_bits),
      cmocka_unit_test(test_align_down),
      cmocka_unit_test(test_align_up),
      cmocka_unit_test(test_is_power_of_two),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
