/* test_tls_psk.c: unit tests of the --tls-psk file (server/tls_psk.h): the start-up check
 * and the per-handshake lookup, on files written here. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/tls_psk.h"

static char path[64];

static void write_file(const char *text)
{
  FILE *f = fopen(path, "w");

  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
  int fd;

  (void)state;
  strcpy(path, "/tmp/test_tls_psk.XXXXXX");
  fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  unlink(path);
  return 0;
}

static int lookup(const char *user, gnutls_datum_t *key)
{
  key->data = NULL;
  key->size = 0;
  return tls_psk_lookup(path, (const unsigned char *)user, strlen(user), key);
}

/* Asserts that the file gives `user` the len bytes of `want`. */
static void assert_key(const char *user, const char *want, unsigned len)
{
  gnutls_datum_t key;

  assert_int_equal(lookup(user, &key), 0);
  assert_int_equal(key.size, len);
  assert_memory_equal(key.data, want, len);
  gnutls_free(key.data);
}

static void test_lookup_finds_the_user_s_key(void **state)
{
  (void)state;
  write_file("alice:00ff10\n\nbob:0A0b\r\n");
  assert_key("alice", "\x00\xff\x10", 3);
  assert_key("bob", "\x0a\x0b", 2); /* CRLF line, mixed-case hex */
}

static void test_lookup_matches_whole_names_only(void **state)
{
  gnutls_datum_t key;

  (void)state;
  write_file("alice:00ff\n");
  assert_int_equal(lookup("alic", &key), -ENOENT);
  assert_int_equal(lookup("alicex", &key), -ENOENT);
  assert_int_equal(lookup("", &key), -ENOENT);
  assert_int_equal(tls_psk_lookup(path, (const unsigned char *)"alice\0x", 7, &key), -ENOENT);
  assert_null(key.data);
}

static void test_lookup_skips_malformed_lines_and_reads_the_file_again(void **state)
{
  gnutls_datum_t key;

  (void)state;
  write_file("carol:0\ncarol:zz\ncarol 00\n");
  assert_int_equal(lookup("carol", &key), -ENOENT);
  write_file("carol:0\ncarol:1234\n"); /* changed since the last lookup */
  assert_key("carol", "\x12\x34", 2);
}

static void test_lookup_of_a_missing_file_is_its_errno(void **state)
{
  gnutls_datum_t key;

  (void)state;
  unlink(path);
  assert_int_equal(lookup("alice", &key), -ENOENT); /* no file: no user either */
  assert_int_equal(tls_psk_lookup("/proc/self/nonexistent/x", (const unsigned char *)"a", 1, &key),
                   -ENOENT);
}

static void test_check_file_names_the_bad_line(void **state)
{
  char err[256];

  (void)state;
  write_file("alice:00ff\n\nbob:123\n");
  assert_int_equal(tls_psk_check_file(path, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "line 3: expected username:hexkey"));
  write_file(":00ff\n");
  assert_int_equal(tls_psk_check_file(path, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "line 1: expected username:hexkey"));
  write_file("\n\n");
  assert_int_equal(tls_psk_check_file(path, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "no username:hexkey line"));
  write_file("alice:00ff\nbob:A0\n");
  assert_int_equal(tls_psk_check_file(path, err, sizeof err), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_lookup_finds_the_user_s_key, setup, teardown),
    cmocka_unit_test_setup_teardown(test_lookup_matches_whole_names_only, setup, teardown),
    cmocka_unit_test_setup_teardown(test_lookup_skips_malformed_lines_and_reads_the_file_again,
                                    setup, teardown),
    cmocka_unit_test_setup_teardown(test_lookup_of_a_missing_file_is_its_errno, setup, teardown),
    cmocka_unit_test_setup_teardown(test_check_file_names_the_bad_line, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
