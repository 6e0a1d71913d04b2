/* SPDX-License-Identifier: MIT */
/* tests/bench/test_bench_cli.c: `diskgate bench` options, profiles and row selection. */
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

#include "bench_test.h"

#include "bench/bench_cli.h"
#include "bench/bench_configs.h"
#include "bench/bench_profiles.h"

/* Parses a NULL-terminated argument list; returns the result and what went to stderr. */
static int parse(struct bench_opts *o, char *err, size_t errlen, ...)
{
  char *argv[32];
  int argc = 0;
  char *buf = NULL;
  size_t len = 0;
  FILE *e = open_memstream(&buf, &len);
  FILE *out = fopen("/dev/null", "w");
  va_list ap;
  int rc;

  argv[argc++] = "bench";
  va_start(ap, errlen);
  for (char *a = va_arg(ap, char *); a != NULL && argc < 31; a = va_arg(ap, char *)) {
    argv[argc++] = a;
  }
  va_end(ap);
  argv[argc] = NULL;
  rc = bench_cli_parse(argc, argv, o, out, e);
  fclose(e);
  fclose(out);
  snprintf(err, errlen, "%s", buf != NULL ? buf : "");
  free(buf);
  return rc;
}

static void test_sizes(void **state)
{
  uint64_t v = 0;

  (void)state;
  assert_int_equal(bench_cli_parse_size("4096", &v), 0);
  assert_int_equal(v, 4096);
  assert_int_equal(bench_cli_parse_size("4K", &v), 0);
  assert_int_equal(v, 4096);
  assert_int_equal(bench_cli_parse_size("256m", &v), 0);
  assert_int_equal(v, 256ull << 20);
  assert_int_equal(bench_cli_parse_size("1G", &v), 0);
  assert_int_equal(v, 1ull << 30);
  assert_int_equal(bench_cli_parse_size("2GiB", &v), 0);
  assert_int_equal(v, 2ull << 30);
  assert_int_equal(bench_cli_parse_size("1T", &v), 0);
  assert_int_equal(v, 1ull << 40);
  assert_int_equal(bench_cli_parse_size("", &v), -EINVAL);
  assert_int_equal(bench_cli_parse_size("G", &v), -EINVAL);
  assert_int_equal(bench_cli_parse_size("-1G", &v), -EINVAL);
  assert_int_equal(bench_cli_parse_size("1.5G", &v), -EINVAL);
  assert_int_equal(bench_cli_parse_size("12Q", &v), -EINVAL);
  assert_int_equal(bench_cli_parse_size("99999999999T", &v), -ERANGE);
}

static void test_profile_defaults(void **state)
{
  struct bench_opts o;
  char err[256];

  (void)state;
  assert_int_equal(parse(&o, err, sizeof(err), NULL), BENCH_CLI_OK);
  assert_string_equal(o.profile, "quick");
  assert_int_equal(o.runs, 1);
  assert_int_equal(o.runtime_s, 5);
  assert_int_equal(o.size, 256ull << 20);
  assert_near(o.ramp_s, 1.0, 1e-12);
  assert_null(o.dir); /* no --dir: a fresh folder under /var/tmp, never the cwd */
  assert_string_equal(o.out, "bench-out");

  assert_int_equal(parse(&o, err, sizeof(err), "--profile", "seeds", NULL), BENCH_CLI_OK);
  assert_int_equal(o.runs, 3);
  assert_int_equal(o.runtime_s, 10);
  assert_int_equal(o.size, 1ull << 30);
  assert_near(o.ramp_s, 2.0, 1e-12);
  assert_int_equal(o.copy_size, 512ull << 20);

  assert_int_equal(parse(&o, err, sizeof(err), "--profile=sync", "--runs", "5", "--runtime",
                         "2", "--size", "4G", "--dir", "/var/tmp", "--out", "o", NULL),
                   BENCH_CLI_OK);
  assert_string_equal(o.profile, "sync");
  assert_int_equal(o.runs, 5);
  assert_int_equal(o.runtime_s, 2);
  assert_int_equal(o.size, 4ull << 30);
  assert_int_equal(o.copy_size, 1ull << 30);
  assert_near(o.ramp_s, 0.5, 1e-12);
  assert_string_equal(o.dir, "/var/tmp");
  assert_string_equal(o.out, "o");
  assert_string_equal(err, "");
}

/* The peers profile's defaults; --diskgate given twice is an A/B, --rounds is --runs. */
static void test_profile_peers_and_ab(void **state)
{
  struct bench_opts o;
  char err[256];

  (void)state;
  assert_int_equal(parse(&o, err, sizeof(err), "--profile", "peers", NULL), BENCH_CLI_OK);
  assert_string_equal(o.profile, "peers");
  assert_int_equal(o.runs, 3);
  assert_int_equal(o.runtime_s, 5);
  assert_int_equal(o.size, 1ull << 30);
  assert_int_equal(o.nvariants, 0);

  assert_int_equal(parse(&o, err, sizeof(err), "--diskgate", "old/diskgate", "--rounds", "6",
                         "--diskgate=build/diskgate:--engine threads", NULL),
                   BENCH_CLI_OK);
  assert_int_equal(o.runs, 6);
  assert_true(o.runs_set);
  assert_int_equal(o.nvariants, 2);
  assert_string_equal(o.variants[0], "old/diskgate");
  assert_string_equal(o.variants[1], "build/diskgate:--engine threads");

  assert_int_equal(parse(&o, err, sizeof(err), "--diskgate", "a", "--diskgate", "b",
                         "--diskgate", "c", "--diskgate", "d", "--diskgate", "e", "--diskgate",
                         "f", "--diskgate", "g", "--diskgate", "h", "--diskgate", "i", NULL),
                   -EINVAL);
  assert_string_equal(err, "diskgate bench: --diskgate is given more than 8 times (at 'i')\n");
  assert_int_equal(parse(&o, err, sizeof(err), "--rounds", "0", NULL), -EINVAL);
  assert_non_null(strstr(err, "--runs wants a number from 1 to 50, not '0'"));
}

/* Every bad command line: BENCH_CLI error and exactly one line naming the problem. */
static void test_bad_command_lines(void **state)
{
  static const char *const bad[][3] = {
    { "--runs", "0", NULL },           { "--runs", "x", NULL },
    { "--runtime", "0", NULL },        { "--size", "10M", NULL },
    { "--size", "1000001", NULL },     { "--size", "huge", NULL },
    { "--profile", "slow", NULL },     { "--frobnicate", NULL, NULL },
    { "--runs", NULL, NULL },          { "stray", NULL, NULL },
    { "--ramp", "-1", NULL },          { "--copy-size", "900K", NULL },
    { "-x", NULL, NULL },              { "--rbd-image", "noslash", NULL },
    { "--rbd-image", "rbd/img@snap", NULL }, { "--rbd-image", "/img", NULL },
    { "--rbd-image", "rbd/", NULL },   { "--rbd-image", "rbd/a:conf=x", NULL },
    { "--ceph-conf", "", NULL },
    /* control characters in a value or an argument stay escaped on the one line */
    { "--runs", "1\n2", NULL },       { "--size", "1\nG", NULL },
    { "--profile", "\x1b[31mq", NULL }, { "x\ny", NULL, NULL },
    { "--rbd-image", "a\r/b", NULL },
  };
  struct bench_opts o;
  char err[512];

  (void)state;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    int rc = parse(&o, err, sizeof(err), bad[i][0], bad[i][1], bad[i][2], NULL);
    char *nl = strchr(err, '\n');

    if (rc != -EINVAL) {
      fail_msg("'%s %s' was accepted", bad[i][0], bad[i][1] ? bad[i][1] : "");
    }
    assert_non_null(nl);
    assert_int_equal(nl[1], '\0');
    assert_int_equal(strncmp(err, "diskgate bench: ", 16), 0);
    for (const char *c = err; c < nl; c++) {
      if ((unsigned char)*c < 0x20) {
        fail_msg("'%s': control character 0x%02x in the message", bad[i][0], (unsigned char)*c);
      }
    }
  }
}

/* Each kind of refused option is named as what it is: a value given to an option that takes
 * none is neither "needs a value" nor "unknown option '--keep=1'". */
static void test_option_errors_name_the_fault(void **state)
{
  static const char *const cases[][3] = {
    { "--keep=1", NULL, "option '--keep' takes no value" },
    { "-x", NULL, "unknown option '-x' (the options are long ones, --NAME)" },
    { "--runs", NULL, "diskgate bench: option '--runs' needs a value (see diskgate bench --help)" },
    { "--r", "3", "option '--r' is ambiguous (--runs, --runtime" },
    { "--frobnicate=2", NULL, "unknown option '--frobnicate'" },
    { "--fo\x02o", NULL, "unknown option '--fo\\x02o'" }, /* escaped once, not twice */
    /* a forgotten value: `--dir --keep` must not make a directory named "--keep" */
    { "--dir", "--keep", "diskgate bench: option '--dir' needs a value, not the option "
                         "'--keep'; write --dir=--keep if that is the value (see diskgate bench --help)" },
  };
  struct bench_opts o;
  char err[512];

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    assert_int_equal(parse(&o, err, sizeof(err), cases[i][0], cases[i][1], NULL), -EINVAL);
    if (strstr(err, cases[i][2]) == NULL) {
      fail_msg("'%s': got \"%s\", want \"%s\"", cases[i][0], err, cases[i][2]);
    }
  }
}

/* --NAME=VALUE still sets a value that looks like an option (only "--dir --keep", the value
 * forgotten, is refused: test_option_errors_name_the_fault). */
static void test_option_like_value_given_with_equals(void **state)
{
  struct bench_opts o;
  char err[512];

  (void)state;
  assert_int_equal(parse(&o, err, sizeof(err), "--dir=--keep", NULL), BENCH_CLI_OK);
  assert_string_equal(o.dir, "--keep");
  assert_false(o.keep);
}

/* bench_cli_check_copy_size's result; *printed is what it wrote (the caller frees it). */
static int copy_size_check(const struct bench_opts *o, char **printed)
{
  size_t len = 0;
  FILE *e = open_memstream(printed, &len);
  int rc = bench_cli_check_copy_size(o, e);

  fclose(e);
  return rc;
}

/* --copy-size is checked against --size only when the copy test runs: the parser accepts
 * 10M with a 16M file (a run of other workloads goes ahead), and
 * bench_cli_check_copy_size refuses it with one line; 9M (under 60%) passes. */
static void test_copy_size_checked_apart(void **state)
{
  struct bench_opts o;
  char err[512];
  char *printed = NULL;

  (void)state;
  assert_int_equal(parse(&o, err, sizeof(err), "--size", "16M", "--copy-size", "10M", NULL),
                   BENCH_CLI_OK);
  assert_string_equal(err, "");
  assert_int_equal(o.copy_size, 10ull << 20);
  assert_int_equal(copy_size_check(&o, &printed), -EINVAL);
  assert_string_equal(printed, "diskgate bench: --copy-size must fit in the file system on the "
                               "test file (at most 60% of --size): 10485760 bytes of --size "
                               "16777216\n");
  free(printed);
  assert_int_equal(parse(&o, err, sizeof(err), "--size", "16M", "--copy-size", "9M", NULL),
                   BENCH_CLI_OK);
  printed = NULL;
  assert_int_equal(copy_size_check(&o, &printed), BENCH_CLI_OK);
  assert_string_equal(printed, "");
  free(printed);
}

static void test_select(void **state)
{
  static struct bench_results r;
  struct bench_opts o;
  char err[512];
  char *buf = NULL;
  size_t len = 0;
  FILE *e;

  (void)state;
  assert_int_equal(parse(&o, err, sizeof(err), "--configs", "host,diskgate-unix-*",
                         "--workloads", "randread-4k,copy", NULL), BENCH_CLI_OK);
  e = open_memstream(&buf, &len);
  assert_int_equal(bench_profiles_select(&o, &r, e), 0);
  fclose(e);
  free(buf);
  assert_int_equal(r.nconfigs, 9);
  assert_string_equal(r.configs[0]->name, "host");
  assert_string_equal(r.configs[1]->name, "diskgate-unix-direct-full");
  assert_int_equal(r.nworkloads, 2);
  assert_string_equal(r.workloads[0]->name, "randread-4k");
  assert_string_equal(r.workloads[1]->name, "copy");

  assert_int_equal(parse(&o, err, sizeof(err), "--configs", "host,nosuch", NULL), BENCH_CLI_OK);
  buf = NULL;
  e = open_memstream(&buf, &len);
  assert_int_equal(bench_profiles_select(&o, &r, e), -EINVAL);
  fclose(e);
  assert_non_null(strstr(buf, "unknown configuration 'nosuch'"));
  free(buf);

  /* the copy test does not run in guests: nothing left to run */
  assert_int_equal(parse(&o, err, sizeof(err), "--configs", "guest-virtio-file", "--workloads",
                         "copy", NULL), BENCH_CLI_OK);
  buf = NULL;
  e = open_memstream(&buf, &len);
  assert_int_equal(bench_profiles_select(&o, &r, e), -ENOENT);
  fclose(e);
  free(buf);

  /* the copy test does not run on RBD rows either */
  assert_int_equal(parse(&o, err, sizeof(err), "--configs", "*-rbd", "--workloads", "copy",
                         NULL), BENCH_CLI_OK);
  buf = NULL;
  e = open_memstream(&buf, &len);
  assert_int_equal(bench_profiles_select(&o, &r, e), -ENOENT);
  fclose(e);
  free(buf);

  /* every profile's lists name real rows and columns */
  for (const char *const *p = (const char *const[]){ "quick", "seeds", "sync", "rbd", "gateway",
                                                      "all", NULL };
       *p != NULL; p++) {
    assert_int_equal(parse(&o, err, sizeof(err), "--profile", *p, NULL), BENCH_CLI_OK);
    buf = NULL;
    e = open_memstream(&buf, &len);
    assert_int_equal(bench_profiles_select(&o, &r, e), 0);
    fclose(e);
    free(buf);
    assert_true(r.nworkloads > 0);
  }
}

/* --profile rbd: the two RBD rows, 4K random and 1M sequential jobs, on a 1 GiB image. */
static void test_profile_rbd(void **state)
{
  static const char *const wls[] = { "read-1m", "write-1m", "randread-4k", "randwrite-4k" };
  static struct bench_results r;
  struct bench_opts o;
  char err[256];
  char *buf = NULL;
  size_t len = 0;
  FILE *e;

  (void)state;
  assert_int_equal(parse(&o, err, sizeof(err), "--profile", "rbd", NULL), BENCH_CLI_OK);
  assert_int_equal(o.runs, 3);
  assert_int_equal(o.runtime_s, 10);
  assert_int_equal(o.size, 1ull << 30);
  assert_null(o.ceph_conf);
  assert_string_equal(o.rbd_image, "rbd/diskgate-bench");
  e = open_memstream(&buf, &len);
  assert_int_equal(bench_profiles_select(&o, &r, e), 0);
  fclose(e);
  assert_string_equal(buf, "");
  free(buf);
  assert_int_equal(r.nconfigs, 2);
  assert_string_equal(r.configs[0]->name, "diskgate-rbd");
  assert_string_equal(r.configs[1]->name, "qemu-nbd-rbd");
  for (size_t c = 0; c < 2; c++) {
    assert_int_equal(r.configs[c]->kind, BENCH_CFG_RBD);
    assert_int_equal(bench_configs_group(r.configs[c]), BENCH_GROUP_RBD);
  }
  assert_int_equal(r.nworkloads, 4);
  for (size_t w = 0; w < 4; w++) {
    assert_string_equal(r.workloads[w]->name, wls[w]);
  }

  assert_int_equal(parse(&o, err, sizeof(err), "--profile", "rbd", "--ceph-conf",
                         "/etc/ceph/ceph.conf", "--rbd-image", "vms/bench-1.img", "--size", "64M",
                         NULL), BENCH_CLI_OK);
  assert_string_equal(o.ceph_conf, "/etc/ceph/ceph.conf");
  assert_string_equal(o.rbd_image, "vms/bench-1.img");
  assert_int_equal(o.size, 64ull << 20);
}

/* --profile quick answers "which backing, which mode?": serve's default configuration (no
 * options) on the file and on a loop device, beside the host's file and block-device rows;
 * the O_DIRECT mode beside the default. */
static void test_profile_quick_has_serve_default(void **state)
{
  static struct bench_results r;
  struct bench_opts o;
  bool dflt_file = false, dflt_dev = false, host_dev = false, direct = false;

  (void)state;
  memset(&o, 0, sizeof(o));
  o.profile = "quick";
  assert_int_equal(bench_profiles_select(&o, &r, stderr), 0);
  for (size_t c = 0; c < r.nconfigs; c++) {
    const struct bench_config *cfg = r.configs[c];
    bool loop = bench_configs_on_loop(cfg);

    dflt_file |= bench_configs_is_serve_default(cfg) && !loop;
    dflt_dev |= bench_configs_is_serve_default(cfg) && loop;
    host_dev |= cfg->kind == BENCH_CFG_HOST_DEV;
    direct |= cfg->server == BENCH_SERVER_DISKGATE && strcmp(cfg->cache_mode, "direct") == 0;
  }
  assert_true(dflt_file);
  if (geteuid() == 0) { /* loop rows are skipped for other users */
    assert_true(dflt_dev);
    assert_true(host_dev);
  }
  assert_true(direct);
  assert_true(bench_configs_is_serve_default(bench_configs_find("diskgate-tcp-writeback-full")));
  assert_false(bench_configs_is_serve_default(bench_configs_find("diskgate-unix-direct-full")));
  assert_false(bench_configs_is_serve_default(bench_configs_find("diskgate-unix-writeback-none")));
  assert_false(bench_configs_is_serve_default(bench_configs_find("qemu-nbd-unix")));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sizes),
    cmocka_unit_test(test_profile_defaults),
    cmocka_unit_test(test_profile_peers_and_ab),
    cmocka_unit_test(test_bad_command_lines),
    cmocka_unit_test(test_option_errors_name_the_fault),
    cmocka_unit_test(test_option_like_value_given_with_equals),
    cmocka_unit_test(test_copy_size_checked_apart),
    cmocka_unit_test(test_select),
    cmocka_unit_test(test_profile_rbd),
    cmocka_unit_test(test_profile_quick_has_serve_default),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
