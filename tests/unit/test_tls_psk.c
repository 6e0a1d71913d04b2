/* SPDX-License-Identifier: MIT */
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
  return tls_psk_lookup_key(path, (const unsigned char *)user, strlen(user), key);
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
  assert_int_equal(lookup("alic", &key), -ESRCH);
  assert_int_equal(lookup("alicex", &key), -ESRCH);
  assert_int_equal(lookup("", &key), -ESRCH);
  assert_int_equal(tls_psk_lookup_key(path, (const unsigned char *)"alice\0x", 7, &key), -ESRCH);
  assert_null(key.data);
}

/* `#HEX` usernames are those bytes (psktool writes them for names with ':' or odd bytes). */
static void test_lookup_hex_usernames(void **state)
{
  gnutls_datum_t key;

  (void)state;
  write_file("#613a62:0102\n#00ff:0304\n");
  assert_key("a:b", "\x01\x02", 2);
  assert_int_equal(tls_psk_lookup_key(path, (const unsigned char *)"\x00\xff", 2, &key), 0);
  assert_int_equal(key.size, 2);
  assert_memory_equal(key.data, "\x03\x04", 2);
  gnutls_free(key.data);
  assert_int_equal(lookup("#613a62", &key), -ESRCH); /* the name as written is not the user */
}

/* A key line longer than any stdio buffer is read whole (lines are not cut at 1 KiB). */
static void test_lookup_long_key(void **state)
{
  char text[8192], want[2048];

  (void)state;
  strcpy(text, "big:");
  for (unsigned i = 0; i < sizeof want; i++) {
    want[i] = (char)(i * 7);
    sprintf(text + 4 + 2 * i, "%02x", (unsigned char)want[i]);
  }
  strcat(text, "\n");
  write_file(text);
  assert_key("big", want, sizeof want);
}

static void test_lookup_skips_malformed_lines_and_reads_the_file_again(void **state)
{
  gnutls_datum_t key;

  (void)state;
  write_file("carol:0\ncarol:zz\ncarol 00\n");
  assert_int_equal(lookup("carol", &key), -ESRCH);
  write_file("carol:0\ncarol:1234\n"); /* changed since the last lookup */
  assert_key("carol", "\x12\x34", 2);
}

/* A file that cannot be read is its errno, never "no such user" (-ESRCH): the server then
 * logs the file, not an unknown user. */
static void test_lookup_of_an_unreadable_file_is_its_errno(void **state)
{
  gnutls_datum_t key;
  char through[96];

  (void)state;
  write_file("alice:00ff\n");
  snprintf(through, sizeof through, "%s/x", path); /* a path through a regular file */
  assert_int_equal(tls_psk_lookup_key(through, (const unsigned char *)"alice", 5, &key),
                   -ENOTDIR);
  assert_int_equal(tls_psk_lookup_key("/tmp", (const unsigned char *)"alice", 5, &key), -EISDIR);
  unlink(path);
  assert_int_equal(lookup("alice", &key), -ENOENT);
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
    cmocka_unit_test_setup_teardown(test_lookup_of_an_unreadable_file_is_its_errno, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_lookup_hex_usernames, setup, teardown),
    cmocka_unit_test_setup_teardown(test_lookup_long_key, setup, teardown),
    cmocka_unit_test_setup_teardown(test_check_file_names_the_bad_line, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
