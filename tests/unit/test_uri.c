/* SPDX-License-Identifier: MIT */
/* test_uri.c: unit tests of nbd/uri.h, NBD URI formatting (doc/uri.md of the NBD project;
 * the URI section of nbd-spec-rules.md). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nbd/uri.h"

static void check_tcp(const char *host, unsigned port, const char *name, const char *expect)
{
  char out[512];

  memset(out, 'Z', sizeof out);
  assert_int_equal(nbd_uri_format_tcp(out, sizeof out, host, port, name), (int)strlen(expect));
  assert_string_equal(out, expect);
}

static void check_unix(const char *path, const char *name, const char *expect)
{
  char out[512];

  memset(out, 'Z', sizeof out);
  assert_int_equal(nbd_uri_format_unix(out, sizeof out, path, name), (int)strlen(expect));
  assert_string_equal(out, expect);
}

/* ---- TCP ---- */

static void test_tcp_ipv4(void **state)
{
  (void)state;
  check_tcp("127.0.0.1", 10809, "disk", "nbd://127.0.0.1:10809/disk");
  check_tcp("192.168.1.20", 65535, "vm01", "nbd://192.168.1.20:65535/vm01");
  check_tcp("0.0.0.0", 1, "a", "nbd://0.0.0.0:1/a");
}

static void test_tcp_ipv6_host_in_brackets(void **state)
{
  (void)state;
  check_tcp("::1", 10810, "disk", "nbd://[::1]:10810/disk");
  check_tcp("::", 10809, "disk", "nbd://[::]:10809/disk");
  check_tcp("2001:db8::42", 10809, "vm", "nbd://[2001:db8::42]:10809/vm");
}

static void test_tcp_hostname_not_bracketed(void **state)
{
  (void)state;
  check_tcp("localhost", 10809, "disk", "nbd://localhost:10809/disk");
}

static void test_tcp_empty_export_name(void **state)
{
  (void)state;
  check_tcp("127.0.0.1", 10809, "", "nbd://127.0.0.1:10809/");
  check_tcp("::1", 10809, "", "nbd://[::1]:10809/");
}

static void test_tcp_name_percent_encoded_space(void **state)
{
  (void)state;
  check_tcp("127.0.0.1", 10809, "my disk", "nbd://127.0.0.1:10809/my%20disk");
  check_tcp("127.0.0.1", 10809, " ", "nbd://127.0.0.1:10809/%20");
}

static void test_tcp_name_percent_encoded_utf8(void **state)
{
  (void)state;
  /* "café" and "日本": every UTF-8 byte is encoded, upper-case hex. */
  check_tcp("127.0.0.1", 10809, "caf\xC3\xA9", "nbd://127.0.0.1:10809/caf%C3%A9");
  check_tcp("127.0.0.1", 10809, "\xE6\x97\xA5\xE6\x9C\xAC",
            "nbd://127.0.0.1:10809/%E6%97%A5%E6%9C%AC");
}

static void test_tcp_name_percent_encoded_query_and_fragment(void **state)
{
  (void)state;
  check_tcp("127.0.0.1", 10809, "a?b#c", "nbd://127.0.0.1:10809/a%3Fb%23c");
  check_tcp("127.0.0.1", 10809, "100%", "nbd://127.0.0.1:10809/100%25");
  check_tcp("127.0.0.1", 10809, "[x]@:&=+", "nbd://127.0.0.1:10809/%5Bx%5D%40%3A%26%3D%2B");
}

static void test_tcp_name_unreserved_and_slash_kept(void **state)
{
  (void)state;
  check_tcp("127.0.0.1", 10809, "pool/vm-01_disk.raw~1",
            "nbd://127.0.0.1:10809/pool/vm-01_disk.raw~1");
  check_tcp("127.0.0.1", 10809, "/abs", "nbd://127.0.0.1:10809//abs");
}

/* ---- Unix socket ---- */

static void test_unix_basic(void **state)
{
  (void)state;
  check_unix("/run/diskgate.sock", "disk", "nbd+unix:///disk?socket=/run/diskgate.sock");
}

static void test_unix_empty_export_name(void **state)
{
  (void)state;
  check_unix("/tmp/s", "", "nbd+unix:///?socket=/tmp/s");
}

static void test_unix_socket_path_percent_encoded(void **state)
{
  (void)state;
  check_unix("/tmp/my dir/s.sock", "disk", "nbd+unix:///disk?socket=/tmp/my%20dir/s.sock");
  check_unix("/tmp/caf\xC3\xA9.sock", "disk", "nbd+unix:///disk?socket=/tmp/caf%C3%A9.sock");
  check_unix("/tmp/a?b#c", "disk", "nbd+unix:///disk?socket=/tmp/a%3Fb%23c");
  check_unix("/tmp/a&b=c", "disk", "nbd+unix:///disk?socket=/tmp/a%26b%3Dc");
}

static void test_unix_name_percent_encoded(void **state)
{
  (void)state;
  check_unix("/s", "my disk?#", "nbd+unix:///my%20disk%3F%23?socket=/s");
  check_unix("/s", "caf\xC3\xA9", "nbd+unix:///caf%C3%A9?socket=/s");
}

/* ---- buffer size ---- */

static void test_tcp_buffer_exact_fit_and_one_short(void **state)
{
  const char *expect = "nbd://[::1]:10809/a%20b";
  size_t len = strlen(expect);
  char out[64];

  (void)state;
  memset(out, 'Z', sizeof out);
  assert_int_equal(nbd_uri_format_tcp(out, len + 1, "::1", 10809, "a b"), (int)len);
  assert_string_equal(out, expect);

  memset(out, 'Z', sizeof out);
  assert_int_equal(nbd_uri_format_tcp(out, len, "::1", 10809, "a b"), -ENAMETOOLONG);
  assert_true(memchr(out, '\0', len) != NULL); /* still a string within out_size */
  assert_int_equal(out[len], 'Z');             /* nothing written past out_size */
}

static void test_tcp_buffer_too_small_enametoolong(void **state)
{
  char out[16];

  (void)state;
  memset(out, 'Z', sizeof out);
  assert_int_equal(nbd_uri_format_tcp(out, 1, "127.0.0.1", 10809, "d"), -ENAMETOOLONG);
  assert_int_equal(out[0], '\0');
  assert_int_equal(out[1], 'Z');
  assert_int_equal(nbd_uri_format_tcp(out, 0, "127.0.0.1", 10809, "d"), -ENAMETOOLONG);
  assert_int_equal(out[1], 'Z');
  assert_int_equal(nbd_uri_format_tcp(out, 10, "127.0.0.1", 10809, "d"), -ENAMETOOLONG);
  assert_int_equal(strlen(out), 9);
  assert_int_equal(out[10], 'Z');
}

static void test_tcp_buffer_short_inside_percent_escape(void **state)
{
  /* "nbd://h:1/%C3%A9" is 16 bytes: cut the escape in the middle. */
  char out[32];

  (void)state;
  memset(out, 'Z', sizeof out);
  assert_int_equal(nbd_uri_format_tcp(out, 13, "h", 1, "\xC3\xA9"), -ENAMETOOLONG);
  assert_int_equal(out[12], '\0');
  assert_int_equal(out[13], 'Z');
  assert_int_equal(nbd_uri_format_tcp(out, 17, "h", 1, "\xC3\xA9"), 16);
  assert_string_equal(out, "nbd://h:1/%C3%A9");
}

static void test_unix_buffer_exact_fit_and_one_short(void **state)
{
  const char *expect = "nbd+unix:///d?socket=/tmp/x%20y";
  size_t len = strlen(expect);
  char out[64];

  (void)state;
  memset(out, 'Z', sizeof out);
  assert_int_equal(nbd_uri_format_unix(out, len + 1, "/tmp/x y", "d"), (int)len);
  assert_string_equal(out, expect);

  memset(out, 'Z', sizeof out);
  assert_int_equal(nbd_uri_format_unix(out, len, "/tmp/x y", "d"), -ENAMETOOLONG);
  assert_true(memchr(out, '\0', len) != NULL);
  assert_int_equal(out[len], 'Z');
  assert_int_equal(nbd_uri_format_unix(out, 0, "/tmp/x y", "d"), -ENAMETOOLONG);
}

/* Regression: an IPv6 zone id's '%' must be percent-encoded as %25 (RFC 6874). */
static void test_tcp_ipv6_zone_id_encoded(void **state)
{
  char out[128];
  (void)state;
  assert_int_equal(nbd_uri_format_tcp(out, sizeof out, "fe80::1%eth0", 10809, "d"),
                   (int)strlen("nbd://[fe80::1%25eth0]:10809/d"));
  assert_string_equal(out, "nbd://[fe80::1%25eth0]:10809/d");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tcp_ipv4),
      cmocka_unit_test(test_tcp_ipv6_host_in_brackets),
      cmocka_unit_test(test_tcp_hostname_not_bracketed),
      cmocka_unit_test(test_tcp_empty_export_name),
      cmocka_unit_test(test_tcp_name_percent_encoded_space),
      cmocka_unit_test(test_tcp_name_percent_encoded_utf8),
      cmocka_unit_test(test_tcp_name_percent_encoded_query_and_fragment),
      cmocka_unit_test(test_tcp_name_unreserved_and_slash_kept),
      cmocka_unit_test(test_unix_basic),
      cmocka_unit_test(test_unix_empty_export_name),
      cmocka_unit_test(test_unix_socket_path_percent_encoded),
      cmocka_unit_test(test_unix_name_percent_encoded),
      cmocka_unit_test(test_tcp_buffer_exact_fit_and_one_short),
      cmocka_unit_test(test_tcp_buffer_too_small_enametoolong),
      cmocka_unit_test(test_tcp_buffer_short_inside_percent_escape),
      cmocka_unit_test(test_unix_buffer_exact_fit_and_one_short),
      cmocka_unit_test(test_tcp_ipv6_zone_id_encoded),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
