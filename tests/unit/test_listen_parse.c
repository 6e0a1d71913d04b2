/* SPDX-License-Identifier: MIT */
/* test_listen_parse.c: unit tests of listen_parse_address (server/listen.h), the pure
 * string parsing of "HOST:PORT", "[V6]:PORT", "HOST" and ":PORT". */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/listen.h"

static void check_ok(const char *text, const char *expect_host, unsigned expect_port)
{
  char host[64];
  unsigned port = 1;

  memset(host, 'Z', sizeof host);
  assert_int_equal(listen_parse_address(text, host, sizeof host, &port), 0);
  assert_string_equal(host, expect_host);
  assert_int_equal(port, expect_port);
}

static void check_einval(const char *text)
{
  char host[64];
  unsigned port = 0;

  assert_int_equal(listen_parse_address(text, host, sizeof host, &port), -EINVAL);
}

static void test_ipv4_with_port(void **state)
{
  (void)state;
  check_ok("127.0.0.1:10809", "127.0.0.1", 10809);
  check_ok("0.0.0.0:1", "0.0.0.0", 1);
  check_ok("192.168.10.2:65535", "192.168.10.2", 65535);
}

static void test_ipv6_in_brackets_with_port(void **state)
{
  (void)state;
  check_ok("[::1]:10810", "::1", 10810);
  check_ok("[::]:10809", "::", 10809);
  check_ok("[2001:db8::1]:443", "2001:db8::1", 443);
}

static void test_ipv6_in_brackets_default_port(void **state)
{
  (void)state;
  check_ok("[::1]", "::1", 10809);
}

static void test_host_only_default_port_10809(void **state)
{
  (void)state;
  check_ok("localhost", "localhost", 10809);
  check_ok("10.0.0.1", "10.0.0.1", 10809);
}

static void test_port_only_means_loopback(void **state)
{
  (void)state;
  check_ok(":1234", "127.0.0.1", 1234);
  check_ok(":10809", "127.0.0.1", 10809);
}

static void test_port_zero_accepted(void **state)
{
  (void)state;
  /* 0 asks the kernel for a free port (listener.port is resolved after bind). */
  check_ok("127.0.0.1:0", "127.0.0.1", 0);
}

static void test_ipv6_without_brackets_einval(void **state)
{
  (void)state;
  check_einval("::1:80");
  check_einval("::1");
  check_einval("2001:db8::1");
  check_einval("a:b:c");
}

static void test_port_65536_einval(void **state)
{
  (void)state;
  check_einval("127.0.0.1:65536");
  check_einval("[::1]:65536");
  check_einval(":65536");
  check_einval("127.0.0.1:99999999999999999999999");
}

static void test_unclosed_bracket_einval(void **state)
{
  (void)state;
  check_einval("[::1");
  check_einval("[::1:80");
  check_einval("[");
}

static void test_empty_port_einval(void **state)
{
  (void)state;
  check_einval("1.2.3.4:");
  check_einval("[::1]:");
  check_einval(":");
}

static void test_bad_port_text_einval(void **state)
{
  (void)state;
  check_einval("1.2.3.4:80x");
  check_einval("1.2.3.4:x80");
  check_einval("1.2.3.4:-1");
  check_einval("[::1]:http");
}

static void test_bracket_garbage_einval(void **state)
{
  (void)state;
  check_einval("[::1]80");
  check_einval("[::1]x:80");
  check_einval("[]:80");
  check_einval("[]");
}

static void test_host_too_long_einval(void **state)
{
  char host[8];
  unsigned port = 0;

  (void)state;
  assert_int_equal(listen_parse_address("abcdefg:1", host, sizeof host, &port), 0);
  assert_string_equal(host, "abcdefg");
  assert_int_equal(port, 1);
  assert_int_equal(listen_parse_address("abcdefgh:1", host, sizeof host, &port), -EINVAL);
  assert_int_equal(listen_parse_address("abcdefgh", host, sizeof host, &port), -EINVAL);
  assert_int_equal(listen_parse_address("[1:2:3:4]:1", host, sizeof host, &port), 0);
  assert_string_equal(host, "1:2:3:4");
  assert_int_equal(listen_parse_address("[1:2:3:45]:1", host, sizeof host, &port), -EINVAL);
}

/* ":PORT" fills in "127.0.0.1" (9 bytes + NUL): a buffer too small for it must be refused
 * like any other host that does not fit, not silently truncated. */
static void test_port_only_host_buffer_too_small_einval(void **state)
{
  char host[16];
  unsigned port = 0;

  (void)state;
  memset(host, 'Z', sizeof host);
  assert_int_equal(listen_parse_address(":1234", host, 10, &port), 0);
  assert_string_equal(host, "127.0.0.1");
  assert_int_equal(listen_parse_address(":1234", host, 9, &port), -EINVAL);
  assert_int_equal(listen_parse_address(":1234", host, 4, &port), -EINVAL);
}

/* Regression: strtoul accepted a sign or leading space, and wrapped negative numbers. */
static void test_port_sign_space_and_wrap_einval(void **state)
{
  (void)state;
  check_einval("1.2.3.4:+80");
  check_einval("1.2.3.4: 80");
  check_einval("1.2.3.4:-18446744073709551615");
  check_ok("1.2.3.4:080", "1.2.3.4", 80);
}

/* A bare number is a port given without its host (qemu-nbd's -p habit), never an IPv4
 * address in inet_aton's one-number form (10809 = 0.0.42.57). Names and
 * dotted addresses that start with digits still parse. */
static void test_bare_number_einval(void **state)
{
  (void)state;
  check_einval("10809");
  check_einval("0");
  check_ok("10.0.0.1", "10.0.0.1", 10809);
  check_ok("1host:7", "1host", 7);
}

/* An empty address is no address: `--listen ''` listened on the default 127.0.0.1:10809. */
static void test_empty_einval(void **state)
{
  (void)state;
  check_einval("");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ipv4_with_port),
      cmocka_unit_test(test_ipv6_in_brackets_with_port),
      cmocka_unit_test(test_ipv6_in_brackets_default_port),
      cmocka_unit_test(test_host_only_default_port_10809),
      cmocka_unit_test(test_port_only_means_loopback),
      cmocka_unit_test(test_port_zero_accepted),
      cmocka_unit_test(test_ipv6_without_brackets_einval),
      cmocka_unit_test(test_port_65536_einval),
      cmocka_unit_test(test_unclosed_bracket_einval),
      cmocka_unit_test(test_empty_port_einval),
      cmocka_unit_test(test_bad_port_text_einval),
      cmocka_unit_test(test_bracket_garbage_einval),
      cmocka_unit_test(test_host_too_long_einval),
      cmocka_unit_test(test_port_only_host_buffer_too_small_einval),
      cmocka_unit_test(test_port_sign_space_and_wrap_einval),
      cmocka_unit_test(test_bare_number_einval),
      cmocka_unit_test(test_empty_einval),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
