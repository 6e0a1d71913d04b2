/* SPDX-License-Identifier: MIT */
/* bench_cli.c: option parsing with getopt_long. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/bench_cli.h"
#include "bench/bench_profiles.h"
#include "util/cli.h"
#include "util/log.h"

enum {
  OPT_PROFILE = 256,
  OPT_CONFIGS,
  OPT_WORKLOADS,
  OPT_RUNS,
  OPT_RUNTIME,
  OPT_RAMP,
  OPT_SIZE,
  OPT_COPY_SIZE,
  OPT_DIR,
  OPT_OUT,
  OPT_KEEP,
  OPT_LIST,
  OPT_RENDER,
  OPT_CEPH_CONF,
  OPT_RBD_IMAGE,
  OPT_DISKGATE,
  OPT_HELP,
};

static const struct option long_opts[] = {
  { "profile", required_argument, NULL, OPT_PROFILE },
  { "configs", required_argument, NULL, OPT_CONFIGS },
  { "workloads", required_argument, NULL, OPT_WORKLOADS },
  { "runs", required_argument, NULL, OPT_RUNS },
  { "runtime", required_argument, NULL, OPT_RUNTIME },
  { "ramp", required_argument, NULL, OPT_RAMP },
  { "size", required_argument, NULL, OPT_SIZE },
  { "copy-size", required_argument, NULL, OPT_COPY_SIZE },
  { "dir", required_argument, NULL, OPT_DIR },
  { "out", required_argument, NULL, OPT_OUT },
  { "keep", no_argument, NULL, OPT_KEEP },
  { "list", no_argument, NULL, OPT_LIST },
  { "render", required_argument, NULL, OPT_RENDER },
  { "ceph-conf", required_argument, NULL, OPT_CEPH_CONF },
  { "rbd-image", required_argument, NULL, OPT_RBD_IMAGE },
  { "diskgate", required_argument, NULL, OPT_DISKGATE },
  { "rounds", required_argument, NULL, OPT_RUNS }, /* an A/B's word for --runs */
  { "help", no_argument, NULL, OPT_HELP },
  { NULL, 0, NULL, 0 },
};

void bench_cli_usage(FILE *out)
{
  fputs("Usage: diskgate bench [OPTIONS]\n"
        "Runs fio against the host path, diskgate, qemu-nbd, nbdkit, QEMU guests and Ceph RBD\n"
        "images, and writes a Markdown table, a JSON file with every run, and an SVG chart\n"
        "(see docs/lab.md).\n"
        "\n"
        "  --profile quick|seeds|sync|rbd|peers|scaling|collapse|qcow2|asif|metrics|gateway|all\n"
        "                      what to run (default: quick); peers: the performance targets T1-T6 against qemu-nbd,\n"
        "                      nbdkit and the host path, with a PASS/FAIL table; scaling: 4K\n"
        "                      random reads over 1-64 connections x iodepth 1-128; qcow2: the\n"
        "                      qcow2 targets Q1-Q4 against qemu-nbd -f qcow2; asif: the ASIF\n"
        "                      targets A1-A2, diskgate --format asif against the same bytes raw;\n"
        "                      collapse: target C1, 4K random writes from 4, 16 and 32\n"
        "                      connections into one file (--cache writeback)\n"
        "                      metrics: the target M1, --metrics on against off;\n"
        "                      gateway: targets G1-G2, one diskgate serving 100 exports\n"
        "                      against 100 qemu-nbd, and its fairness over 500 connections\n"
        "  --configs LIST      rows: comma-separated names or patterns (e.g. 'host,diskgate-unix-*')\n"
        "  --workloads LIST    columns: comma-separated names or patterns\n"
        "  --runs N            runs per cell, taken in rounds over all rows; the table shows\n"
        "                      medians (default 3; quick, scaling: 1); --rounds N is the same\n"
        "  --runtime SECONDS   measured seconds per run (default 10; quick, peers, scaling,\n"
        "                      collapse, qcow2: 5)\n"
        "  --ramp SECONDS      unmeasured warm-up before each run (default: runtime / 5, 0.5-2)\n"
        "  --size BYTES        test file (and RBD image) size, suffixes K/M/G (default: quick\n"
        "                      256M, seeds, rbd, peers, scaling, collapse, qcow2 and metrics 1G,\n"
        "                      sync and all 2G, asif 4G, gateway 64M: each export a copy)\n"
        "  --copy-size BYTES   bytes in the copy test's file tree (default: size / 2, at most 1G)\n"
        "  --dir DIR           where the test file lives (default: a new folder under\n"
        "                      /var/tmp, removed afterwards)\n"
        "  --out DIR           where bench.md, bench.json and bench.svg go (default: bench-out,\n"
        "                      git-ignored in the source tree)\n"
        "  --keep              keep the test file, the copy tree, the ASIF image and the\n"
        "                      gateway's export files\n"
        "  --ceph-conf PATH    rbd rows: use the cluster of this ceph.conf (client.admin) instead\n"
        "                      of starting a throw-away one (scripts/ceph-cluster.sh)\n"
        "  --rbd-image POOL/IMAGE  rbd rows: the image the lab creates, fills, measures and\n"
        "                      removes; it must not exist (default: rbd/diskgate-bench)\n"
        "  --diskgate PATH[:ARGS]  the diskgate binary of the diskgate rows, ARGS added to their\n"
        "                      serve options (e.g. build/diskgate:'--engine threads'); given\n"
        "                      N > 1 times, an A/B: each diskgate row becomes N rows, NAME@1..\n"
        "  --list              list the configurations and workloads, then exit\n"
        "  --render JSON       write bench.md and bench.svg (and bench.json) into --out again\n"
        "                      from an earlier run's bench.json; runs nothing\n"
        "  --help              this text\n",
        out);
}

int bench_cli_parse_size(const char *s, uint64_t *bytes)
{
  unsigned long long v;
  uint64_t mult = 1;
  char *end;

  if (s == NULL || *s < '0' || *s > '9') {
    return -EINVAL;
  }
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno == ERANGE) {
    return -ERANGE;
  }
  switch (*end) {
  case 'k': case 'K':
    mult = 1ull << 10;
    end++;
    break;
  case 'm': case 'M':
    mult = 1ull << 20;
    end++;
    break;
  case 'g': case 'G':
    mult = 1ull << 30;
    end++;
    break;
  case 't': case 'T':
    mult = 1ull << 40;
    end++;
    break;
  default:
    break;
  }
  if (mult > 1 && (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0)) {
    end += strlen(end);
  }
  if (*end != '\0') {
    return -EINVAL;
  }
  if (v > UINT64_MAX / mult) {
    return -ERANGE;
  }
  *bytes = (uint64_t)v * mult;
  return 0;
}

/* Returns true for POOL/IMAGE with both parts made of letters, digits, '.', '_' and '-' (no
 * snapshot, no options: the lab writes to the image). */
static bool rbd_image_valid(const char *s)
{
  const char *slash = strchr(s, '/');

  if (slash == NULL || slash == s || slash[1] == '\0' || strlen(s) > 100) {
    return false;
  }
  for (const char *p = s; *p != '\0'; p++) {
    bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-' || p == slash;

    if (!ok) {
      return false;
    }
  }
  return true;
}

static int bad(FILE *err, const char *fmt, const char *arg)
{
  char shown[LOG_SHOWN_MAX];

  fputs("diskgate bench: ", err);
  fprintf(err, fmt, log_escape_str(shown, sizeof shown, arg)); /* one line, whatever arg holds */
  fputc('\n', err);
  return -EINVAL;
}

int bench_cli_check_copy_size(const struct bench_opts *opts, FILE *err)
{
  char sizes[96];

  if (opts->copy_size <= opts->size / 5 * 3) {
    return BENCH_CLI_OK;
  }
  snprintf(sizes, sizeof sizes, "%llu bytes of --size %llu",
           (unsigned long long)opts->copy_size, (unsigned long long)opts->size);
  return bad(err, "--copy-size must fit in the file system on the test file (at most 60%% "
                  "of --size): %s", sizes);
}

/* The options that bench_cli_parse() checks only after the loop, once the profile's defaults
 * are in place (NULL when not given). */
struct cli_deferred {
  const char *profile; /* --profile, "quick" by default */
  const char *size;    /* --size, bytes with an optional suffix */
  const char *copy;    /* --copy-size, the same */
};

/* Applies one getopt_long() result c (its value in optarg, argv[optind - 1] the option word)
 * to *opts, or to *d for the deferred options. Returns BENCH_CLI_OK to go on, BENCH_CLI_HELP
 * after printing the usage on `out`, or -EINVAL after printing one line on `err`. */
static int cli_apply_option(int c, char **argv, struct bench_opts *opts, struct cli_deferred *d,
                            FILE *out, FILE *err)
{
  char vmsg[512];

  if (c != '?' && c != ':' &&
      cli_value_option_error(long_opts, argv, optind, optarg, c, vmsg, sizeof vmsg) != NULL) {
    /* --dir --keep: no DIR */
    fprintf(err, "diskgate bench: %s (see diskgate bench --help)\n", vmsg);
    return -EINVAL;
  }
  switch (c) {
  case OPT_PROFILE:
    d->profile = optarg;
    break;
  case OPT_CONFIGS:
    opts->configs = optarg;
    break;
  case OPT_WORKLOADS:
    opts->workloads = optarg;
    break;
  case OPT_RUNS:
    if (cli_parse_unsigned(optarg, 1, BENCH_MAX_RUNS, &opts->runs) < 0) {
      return bad(err, "--runs wants a number from 1 to 50, not '%s'", optarg);
    }
    opts->runs_set = true;
    break;
  case OPT_RUNTIME:
    if (cli_parse_unsigned(optarg, 1, 3600, &opts->runtime_s) < 0) {
      return bad(err, "--runtime wants whole seconds from 1 to 3600, not '%s'", optarg);
    }
    opts->runtime_set = true;
    break;
  case OPT_RAMP: {
    char *end;

    opts->ramp_s = strtod(optarg, &end);
    if (*optarg == '\0' || *end != '\0' || !(opts->ramp_s >= 0.0 && opts->ramp_s <= 600.0)) {
      return bad(err, "--ramp wants seconds from 0 to 600, not '%s'", optarg);
    }
    break;
  }
  case OPT_SIZE:
    d->size = optarg;
    break;
  case OPT_COPY_SIZE:
    d->copy = optarg;
    break;
  case OPT_DIR:
    opts->dir = optarg;
    break;
  case OPT_OUT:
    opts->out = optarg;
    break;
  case OPT_KEEP:
    opts->keep = true;
    break;
  case OPT_LIST:
    opts->list = true;
    break;
  case OPT_RENDER:
    opts->render = optarg;
    break;
  case OPT_CEPH_CONF:
    if (*optarg == '\0') {
      return bad(err, "%s wants the path of a ceph.conf", "--ceph-conf");
    }
    opts->ceph_conf = optarg;
    break;
  case OPT_RBD_IMAGE:
    if (!rbd_image_valid(optarg)) {
      return bad(err, "--rbd-image wants POOL/IMAGE (letters, digits, '.', '_', '-'), not '%s'",
                 optarg);
    }
    opts->rbd_image = optarg;
    break;
  case OPT_DISKGATE:
    if (opts->nvariants >= BENCH_MAX_VARIANTS) {
      return bad(err, "--diskgate is given more than 8 times (at '%s')", optarg);
    }
    opts->variants[opts->nvariants++] = optarg;
    break;
  case OPT_HELP:
    bench_cli_usage(out);
    return BENCH_CLI_HELP;
  default: { /* ':' (a missing value) or '?' */
    char msg[512];
    cli_option_error(long_opts, argv[optind - 1], optopt, msg, sizeof msg); /* escaped */
    fprintf(err, "diskgate bench: %s (see diskgate bench --help)\n", msg);
    return -EINVAL;
  }
  }
  return BENCH_CLI_OK;
}

/* Applies the profile d->profile to *opts, then the deferred --size and --copy-size (bytes;
 * the copy tree defaults to half the size, at most 1 GiB), the default ramp (a fifth of the
 * runtime, 0.5 to 2 s), and checks that --dir and --out are not empty. Returns BENCH_CLI_OK,
 * or -EINVAL after printing one line on `err`. */
static int cli_finish_opts(struct bench_opts *opts, const struct cli_deferred *d, FILE *err)
{
  if (bench_profiles_apply(d->profile, opts) < 0) {
    return bad(err, "unknown profile '%s' (quick, seeds, sync, rbd, peers, scaling, collapse, "
               "qcow2, asif, metrics, gateway or all)",
               d->profile);
  }
  if (d->size != NULL) {
    if (bench_cli_parse_size(d->size, &opts->size) < 0) {
      return bad(err, "--size wants bytes with an optional K/M/G suffix, not '%s'", d->size);
    }
    if (opts->size < (16u << 20) || opts->size % 4096 != 0) {
      return bad(err, "--size must be at least 16M and a multiple of 4K, not '%s'", d->size);
    }
    opts->size_set = true;
  }
  if (d->copy != NULL) {
    if (bench_cli_parse_size(d->copy, &opts->copy_size) < 0 || opts->copy_size < (1u << 20)) {
      return bad(err, "--copy-size wants at least 1M (suffixes K/M/G), not '%s'", d->copy);
    }
  } else {
    opts->copy_size = opts->size / 2 < (1ull << 30) ? opts->size / 2 : (1ull << 30);
  }
  if (opts->ramp_s < 0.0) {
    opts->ramp_s = fmin(2.0, fmax(0.5, opts->runtime_s / 5.0));
  }
  bool no_dir = opts->dir != NULL && *opts->dir == '\0';

  if (no_dir || *opts->out == '\0') {
    return bad(err, "%s wants a directory", no_dir ? "--dir" : "--out");
  }
  return BENCH_CLI_OK;
}

int bench_cli_parse(int argc, char **argv, struct bench_opts *opts, FILE *out, FILE *err)
{
  struct cli_deferred d = { .profile = "quick" };
  int c;

  memset(opts, 0, sizeof(*opts));
  opts->dir = NULL; /* bench_main makes a temporary folder */
  opts->out = "bench-out";
  opts->ramp_s = -1.0;
  opts->rbd_image = "rbd/diskgate-bench";
  opterr = 0;
  optind = 0; /* full re-initialisation, so the parser can run more than once (tests) */
  while ((c = getopt_long(argc, argv, ":", long_opts, NULL)) != -1) {
    int rc = cli_apply_option(c, argv, opts, &d, out, err);

    if (rc != BENCH_CLI_OK) {
      return rc;
    }
  }
  if (optind < argc) {
    return bad(err, "unexpected argument '%s' (see diskgate bench --help)", argv[optind]);
  }
  return cli_finish_opts(opts, &d, err);
}
