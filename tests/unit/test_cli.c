/* SPDX-License-Identifier: MIT */
/* test_cli.c: unit tests of util/cli.h: cli_option_error (the line that names what
 * getopt_long refused; the real parsers give it argv[optind - 1] and optopt, these cases
 * give the same values directly) and cli_value_option_error (an option's value that is
 * another option, as getopt_long leaves it in a real parse). */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "util/cli.h"

enum { OPT_RUN = 256, OPT_RUNTIME, OPT_READ_ONLY, OPT_SOCKET, OPT_SYNC };

static const struct option opts[] = {
  {"run", required_argument, NULL, OPT_RUN},
  {"runtime", required_argument, NULL, OPT_RUNTIME},
  {"read-only", no_argument, NULL, OPT_READ_ONLY},
  {"socket", required_argument, NULL, OPT_SOCKET},
  {"sync", required_argument, NULL, OPT_SYNC},
  {NULL, 0, NULL, 0},
};

static void check(const char *arg, int short_opt, const char *expect)
{
  char msg[256];

  memset(msg, 'Z', sizeof msg);
  assert_ptr_equal(cli_option_error(opts, arg, short_opt, msg, sizeof msg), msg);
  assert_string_equal(msg, expect);
}

static void test_short_option_is_unknown_whatever_the_argument(void **state)
{
  (void)state;
  /* "-r" alone, and "-rv" where optind has not moved past the element yet, so the
   * argument given is the one before it */
  check("-r", 'r', "unknown option '-r' (the options are long ones, --NAME)");
  check("--read-only", 'r', "unknown option '-r' (the options are long ones, --NAME)");
}

/* A byte above 0x7f ("-\xc3", the first byte of "-é") reaches optopt as a negative char:
 * it still takes the short-option case and names itself, not the argument before it. */
static void test_short_option_above_0x7f(void **state)
{
  (void)state;
  check("serve", (char)0xc3, "unknown option '-\\xc3' (the options are long ones, --NAME)");
}

/* A newline or other control byte in the argument is escaped: the message stays one line. */
static void test_argument_bytes_escaped(void **state)
{
  (void)state;
  check("--foo\nbar", 0, "unknown option '--foo\\x0abar'");
  check("x\ny", 0, "unknown option 'x\\x0ay'");
}

static void test_value_given_to_an_option_without_one(void **state)
{
  (void)state;
  check("--read-only=yes", 0, "option '--read-only' takes no value");
  check("--read-only=yes", OPT_READ_ONLY, "option '--read-only' takes no value");
  check("--read-only=", 0, "option '--read-only' takes no value");
  check("--read=1", 0, "option '--read-only' takes no value"); /* an abbreviation */
}

static void test_missing_value(void **state)
{
  (void)state;
  check("--socket", 0, "option '--socket' needs a value");
  check("--socket", OPT_SOCKET, "option '--socket' needs a value"); /* optopt as glibc sets it */
  check("--so", 0, "option '--socket' needs a value");
}

static void test_exact_name_beats_a_longer_one(void **state)
{
  (void)state;
  check("--run", 0, "option '--run' needs a value");
  check("--runt", 0, "option '--runtime' needs a value");
}

static void test_ambiguous_abbreviation_lists_the_candidates(void **state)
{
  (void)state;
  check("--s", 0, "option '--s' is ambiguous (--socket, --sync)");
  check("--ru=3", 0, "option '--ru' is ambiguous (--run, --runtime)");
}

static void test_unknown_long_option_without_its_value(void **state)
{
  (void)state;
  check("--bogus", 0, "unknown option '--bogus'");
  check("--bogus=3", 0, "unknown option '--bogus'");
  check("--", 0, "unknown option '--'");
}

static void test_message_is_cut_to_the_buffer(void **state)
{
  char msg[16];

  (void)state;
  assert_ptr_equal(cli_option_error(opts, "--s", 0, msg, sizeof msg), msg);
  assert_int_equal(strlen(msg), sizeof msg - 1);
  assert_memory_equal(msg, "option '--s' is", 15);
}

/* Parses argv with getopt_long until `want` is returned and gives cli_value_option_error
 * what a parser has at that point; returns its message, or "" for NULL. */
static const char *value_error(int argc, char **argv, int want, char *msg, size_t size)
{
  int c;

  opterr = 0;
  optind = 0; /* glibc: full re-initialisation */
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == want) {
      const char *m = cli_value_option_error(opts, argv, optind, optarg, c, msg, size);
      return m != NULL ? m : "";
    }
  }
  fail_msg("getopt_long never returned %d", want);
  return NULL;
}

static void test_value_that_is_an_option_is_refused(void **state)
{
  static const struct {
    const char *argv[5];
    int opt;
    const char *expect;
  } cases[] = {
    /* the forgotten value: `--socket --read-only img` took "--read-only" as the socket */
    { { "x", "--socket", "--read-only", "img" }, OPT_SOCKET,
      "option '--socket' needs a value, not the option '--read-only'; "
      "write --socket=--read-only if that is the value" },
    { { "x", "--socket", "--rea", "img" }, OPT_SOCKET,
      "option '--socket' needs a value, not the option '--rea' (--read-only); "
      "write --socket=--rea if that is the value" },
    { { "x", "--run", "--sync=full", "img" }, OPT_RUN,
      "option '--run' needs a value, not the option '--sync'; "
      "write --run=--sync=full if that is the value" },
    { { "x", "--run", "--s", "img" }, OPT_RUN,
      "option '--run' needs a value, not the option '--s' (an abbreviation of options); "
      "write --run=--s if that is the value" },
    { { "x", "img", "--socket", "--read-only" }, OPT_SOCKET, /* getopt_long permutes */
      "option '--socket' needs a value, not the option '--read-only'; "
      "write --socket=--read-only if that is the value" },
  };
  char msg[256];

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *argv[5];
    memcpy(argv, cases[i].argv, sizeof argv); /* getopt_long takes char *const[] */
    assert_string_equal(value_error(4, argv, cases[i].opt, msg, sizeof msg), cases[i].expect);
  }
}

static void test_value_that_is_not_an_option_is_fine(void **state)
{
  char msg[256];
  char *a1[] = {"x", "--socket=--read-only", "img", NULL}; /* asked for in so many words */
  char *a2[] = {"x", "--socket", "--bogus", "img", NULL};  /* no such option */
  char *a3[] = {"x", "--socket", "-r", "img", NULL};       /* short: not options here */
  char *a4[] = {"x", "--socket", "/tmp/--read-only", "img", NULL};
  char *a5[] = {"x", "--socket", "--", "img", NULL};

  (void)state;
  assert_string_equal(value_error(3, a1, OPT_SOCKET, msg, sizeof msg), "");
  assert_string_equal(value_error(4, a2, OPT_SOCKET, msg, sizeof msg), "");
  assert_string_equal(value_error(4, a3, OPT_SOCKET, msg, sizeof msg), "");
  assert_string_equal(value_error(4, a4, OPT_SOCKET, msg, sizeof msg), "");
  assert_string_equal(value_error(4, a5, OPT_SOCKET, msg, sizeof msg), "");
}

/* Numbers: digits only. serve's parser took " 5", "+5" and " -0" (strtoul skips spaces and
 * takes a sign), as the bench's did not. */
static void test_unsigned_digits_only(void **state)
{
  const char *bad[] = {"", " 5", "+5", " -0", "-0", "-1", "5 ", "5k", "0x10", "4294967297",
                       "18446744073709551617", "abc"};
  unsigned v = 77;

  (void)state;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(cli_parse_unsigned(bad[i], 0, 1000000, &v), -EINVAL);
    assert_int_equal(v, 77); /* unchanged on failure */
  }
  assert_int_equal(cli_parse_unsigned("0", 0, 10, &v), 0);
  assert_int_equal(v, 0);
  assert_int_equal(cli_parse_unsigned("010", 0, 10, &v), 0); /* decimal, not octal */
  assert_int_equal(v, 10);
  assert_int_equal(cli_parse_unsigned("1000000", 0, 1000000, &v), 0);
  assert_int_equal(v, 1000000);
  assert_int_equal(cli_parse_unsigned("1000001", 0, 1000000, &v), -EINVAL);
  assert_int_equal(cli_parse_unsigned("0", 1, 64, &v), -EINVAL);
  assert_int_equal(v, 1000000);
}

/* Export names go to clients as NBD strings, which are UTF-8; Latin-1 and broken names were
 * accepted on the command line. */
static void test_utf8_check(void **state)
{
  const char *good[] = {"", "disk", "d\xc3\xafsk-\xe2\x82\xac-\xf0\x9f\x98\x80",
                        "\xf4\x8f\xbf\xbf"};
  const char *bad[] = {"\xff", "caf\xe9", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                       "ab\xe2\x82"};

  char long_name[4096 + 1]; /* 1365 euro signs and a 1-byte tail: past iconv's 1 KiB buffer */

  (void)state;
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    assert_int_equal(cli_utf8_check(good[i]), 0);
  }
  for (size_t i = 0; i + 3 <= 4095; i += 3) {
    memcpy(long_name + i, "\xe2\x82\xac", 3);
  }
  long_name[4095] = 'x';
  long_name[4096] = '\0';
  assert_int_equal(cli_utf8_check(long_name), 0);
  long_name[4094] = 'x'; /* cuts the last euro sign short */
  assert_int_equal(cli_utf8_check(long_name), -EILSEQ);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(cli_utf8_check(bad[i]), -EILSEQ);
  }
}

/* Start-up failures: running out of files or memory exits 1, anything the command line
 * named exits 2; the open-files error names the limit (the hard limit, after raising). */
static void test_startup_status_and_error(void **state)
{
  struct rlimit old, low;
  char buf[128], want[128];

  (void)state;
  assert_int_equal(cli_startup_status(-EMFILE), 1);
  assert_int_equal(cli_startup_status(-ENFILE), 1);
  assert_int_equal(cli_startup_status(-ENOMEM), 1);
  assert_int_equal(cli_startup_status(-ENOBUFS), 1);
  assert_int_equal(cli_startup_status(-ENOENT), 2);
  assert_int_equal(cli_startup_status(-EADDRINUSE), 2);
  assert_int_equal(cli_startup_status(-EACCES), 2);
  assert_string_equal(cli_startup_error(-ENOENT, buf, sizeof buf), strerror(ENOENT));
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
  low = old;
  low.rlim_cur = old.rlim_cur > 200 ? 200 : old.rlim_cur;
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
  snprintf(want, sizeof want, "%s (the open-files limit, ulimit -Hn, is %llu)", strerror(EMFILE),
           (unsigned long long)low.rlim_cur);
  assert_string_equal(cli_startup_error(-EMFILE, buf, sizeof buf), want);
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_short_option_is_unknown_whatever_the_argument),
    cmocka_unit_test(test_short_option_above_0x7f),
    cmocka_unit_test(test_argument_bytes_escaped),
    cmocka_unit_test(test_value_given_to_an_option_without_one),
    cmocka_unit_test(test_missing_value),
    cmocka_unit_test(test_exact_name_beats_a_longer_one),
    cmocka_unit_test(test_ambiguous_abbreviation_lists_the_candidates),
    cmocka_unit_test(test_unknown_long_option_without_its_value),
    cmocka_unit_test(test_message_is_cut_to_the_buffer),
    cmocka_unit_test(test_value_that_is_an_option_is_refused),
    cmocka_unit_test(test_value_that_is_not_an_option_is_fine),
    cmocka_unit_test(test_unsigned_digits_only),
    cmocka_unit_test(test_utf8_check),
    cmocka_unit_test(test_startup_status_and_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
