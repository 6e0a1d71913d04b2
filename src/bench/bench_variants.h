/* SPDX-License-Identifier: MIT */
/* bench_variants.h: the diskgate binaries a run measures (`--diskgate PATH[:ARGS]`, given
 * once to measure another build, more than once for an A/B). Given once, every diskgate row
 * runs that binary with ARGS added to its `serve` options. Given N > 1 times, every selected
 * diskgate row becomes N rows, NAME@1 ... NAME@N, one per binary, measured in the same
 * interleaved rounds as every other row. Main thread only (the rows live in static
 * storage). A row's title names its binary, ARGS and what its --version printed. */
#ifndef DISKGATE_BENCH_VARIANTS_H
#define DISKGATE_BENCH_VARIANTS_H

#include <stddef.h>
#include <stdio.h>

#include "bench/bench_types.h"

/* At most this many ARGS words per binary (they go into the server's argv). */
#define BENCH_VARIANT_MAX_ARGS 16

/* Parses opts->variants (PATH, or PATH:ARGS with ARGS split as a shell would, without
 * command substitution) and applies them to r's selected rows as described above, in
 * table order. Returns 0; -EINVAL after one line on `err` when a PATH is not an executable
 * file, ARGS do not parse or are too many; -E2BIG after one line when the rows would be more
 * than BENCH_MAX_CONFIGS. Call once, after bench_profiles_select(). */
int bench_variants_apply(const struct bench_opts *opts, struct bench_results *r, FILE *err);

/* The binary a diskgate row runs: its variant's absolute PATH, or `self` for a row without
 * one. */
const char *bench_variants_binary(const struct bench_config *cfg, const char *self);

/* Appends the row's ARGS words to argv[*argc...] (argv has room for BENCH_VARIANT_MAX_ARGS
 * more) and advances *argc; nothing for a row without a variant. */
void bench_variants_add_args(const struct bench_config *cfg, char **argv, int *argc);

/* For a report read back (--render): the row called NAME@K or NAME (a diskgate row's name, K
 * from 1 to BENCH_MAX_VARIANTS) with `title` (NULL: the base row's), made once per name; its
 * binary is not known, so bench_variants_binary() gives `self` for it. Returns NULL for any
 * other name or when BENCH_MAX_CONFIGS rows are made. */
const struct bench_config *bench_variants_named(const char *name, const char *title);

/* The row a variant row was made from (itself for any other row): its table entry. */
const struct bench_config *bench_variants_base(const struct bench_config *cfg);

#endif
