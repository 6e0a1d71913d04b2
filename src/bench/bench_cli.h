/* SPDX-License-Identifier: MIT */
/* bench_cli.h: the command line of `diskgate bench` (getopt_long). Main thread only (getopt
 * keeps global state). */
#ifndef DISKGATE_BENCH_CLI_H
#define DISKGATE_BENCH_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "bench/bench_types.h"

/* bench_cli_parse() results besides -errno. */
#define BENCH_CLI_OK 0
#define BENCH_CLI_HELP 1 /* --help was printed: exit 0 */

/* Parses "123", "4K", "256M", "1G", "2T" (binary multiples; "KiB", "MB" and the like are
 * accepted too) into *bytes. Returns 0, or -EINVAL for anything else, -ERANGE on overflow. */
int bench_cli_parse_size(const char *s, uint64_t *bytes);

/* Parses argv (argv[0] = "bench") into *opts, after setting the defaults of the chosen
 * profile. Prints one line naming the problem on `err` and returns -EINVAL for a bad command
 * line; prints the usage on `out` and returns BENCH_CLI_HELP for --help. */
int bench_cli_parse(int argc, char **argv, struct bench_opts *opts, FILE *out, FILE *err);

/* The copy test's tree lives in a file system made on the test file: checks that
 * opts->copy_size (bytes) is at most 60% of opts->size (bytes). Called only when the copy
 * test is selected (a --copy-size given for a run without it is not checked). Returns
 * BENCH_CLI_OK, or prints one line on `err` and returns -EINVAL. Any thread. */
int bench_cli_check_copy_size(const struct bench_opts *opts, FILE *err);

/* Prints the usage text. */
void bench_cli_usage(FILE *out);

#endif
