/* SPDX-License-Identifier: MIT */
/* Unit tests of the format layer's pure parts (src/backing/format.c): --format's names, the
 * probed-raw guard's test of a write (QEMU's rule against CVE-2008-2004: no write may leave
 * sector 0 starting with qcow2's magic), and which specs AUTO probes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "backing/format.h"

static void test_format_names(void **state)
{
  enum image_format f = IMAGE_FORMAT_RAW;

  (void)state;
  assert_int_equal(image_format_parse("qcow2", &f), 0);
  assert_int_equal(f, IMAGE_FORMAT_QCOW2);
  assert_int_equal(image_format_parse("auto", &f), 0);
  assert_int_equal(f, IMAGE_FORMAT_AUTO);
  assert_int_equal(image_format_parse("raw", &f), 0);
  assert_int_equal(f, IMAGE_FORMAT_RAW);
  assert_int_equal(image_format_parse("QCOW2", &f), -22);
  assert_int_equal(image_format_parse("", &f), -22);
  assert_string_equal(image_format_name(IMAGE_FORMAT_QCOW2), "qcow2");
}

/* Writes that would put the magic at 0, whole or a piece at a time, are caught; writes of
 * other bytes, or past the magic's four bytes, are not. */
static void test_guard_write(void **state)
{
  static const uint8_t magic[4] = {'Q', 'F', 'I', 0xfb};
  uint8_t header[512] = {'Q', 'F', 'I', 0xfb, 0, 0, 0, 3};
  uint8_t other[512] = {0xeb, 0x63, 0x90};

  (void)state;
  assert_true(format_write_makes_header(0, header, sizeof header));
  assert_true(format_write_makes_header(0, magic, 4));
  assert_true(format_write_makes_header(0, magic, 1));     /* a piece: 'Q' at 0 */
  assert_true(format_write_makes_header(2, magic + 2, 2)); /* "I\xfb" at 2 */
  assert_true(format_write_makes_header(3, magic + 3, 100));
  assert_false(format_write_makes_header(0, other, sizeof other));
  assert_false(format_write_makes_header(1, magic, 4));    /* 'Q' at 1: no magic */
  assert_false(format_write_makes_header(4, magic, 4));    /* past the magic */
  assert_false(format_write_makes_header(512, magic, 4));
  assert_false(format_write_makes_header(0, magic, 0));
  header[3] = 0xfa;
  assert_false(format_write_makes_header(0, header, sizeof header));
}

/* AUTO reads the magic of regular files (and faulty: over one) only. */
static void test_spec_probed(void **state)
{
  char path[] = "/tmp/test-format.XXXXXX";
  char faulty[sizeof path + 8];
  int fd = mkstemp(path);

  (void)state;
  assert_true(fd >= 0);
  close(fd);
  snprintf(faulty, sizeof faulty, "faulty:%s", path);
  assert_true(format_spec_probed(path));
  assert_true(format_spec_probed(faulty));
  assert_false(format_spec_probed("/dev/null"));
  assert_false(format_spec_probed("/tmp"));
  assert_false(format_spec_probed("rbd:pool/image"));
  unlink(path);
  assert_false(format_spec_probed(path)); /* missing: nothing to probe */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_format_names),
      cmocka_unit_test(test_guard_write),
      cmocka_unit_test(test_spec_probed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
