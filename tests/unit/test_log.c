/* SPDX-License-Identifier: MIT */
/* test_log.c: unit tests of log_escape (util/log.h): untrusted bytes become printable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/log.h"

static void test_escape_plain_and_control_bytes(void **state)
{
  char out[64];
  (void)state;
  assert_string_equal(log_escape(out, sizeof out, "disk-1", 6), "disk-1");
  assert_string_equal(log_escape(out, sizeof out, "a\nb\xff\\", 5), "a\\x0ab\\xff\\x5c");
  assert_string_equal(log_escape(out, sizeof out, "", 0), "");
}

static void test_escape_truncates_with_dots(void **state)
{
  char out[12];
  char in[100];
  (void)state;
  memset(in, 'x', sizeof in);
  log_escape(out, sizeof out, in, sizeof in);
  assert_true(strlen(out) < sizeof out);
  assert_string_equal(out + strlen(out) - 3, "...");
  log_escape(out, sizeof out, "\x01\x02\x03\x04", 4); /* never splits an escape */
  assert_string_equal(out, "\\x01\\x02...");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_escape_plain_and_control_bytes),
    cmocka_unit_test(test_escape_truncates_with_dots),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
