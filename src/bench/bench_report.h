/* SPDX-License-Identifier: MIT */
/* bench_report.h: the three outputs of a lab run (Markdown table, JSON with every run, SVG
 * bar chart) and the number formats they share. Pure functions of a bench_results; any
 * thread, as long as the results are not being changed. */
#ifndef DISKGATE_BENCH_REPORT_H
#define DISKGATE_BENCH_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "bench/bench_types.h"

/* Formats a value in unit: IOPS as "84.7K" / "950" / "1.25M", MB/s as "2374 MB/s",
 * MiB/s as "412 MiB/s". */
void bench_report_fmt_value(double v, enum bench_unit unit, char *buf, size_t len);

/* Formats a latency given in µs: "58 µs", "1.6 ms", "20 ms". */
void bench_report_fmt_latency(double us, char *buf, size_t len);

/* Formats a percentage: "19%", "6.5%" under 10, "0.4%" under 1. */
void bench_report_fmt_pct(double pct, char *buf, size_t len);

/* Formats seconds as "42s", "3m05s", "1h02m"; a time above 0 and below half a second as
 * "under 1s". */
void bench_report_fmt_duration(double s, char *buf, size_t len);

/* Writes the Markdown report: the title and command; "What this run shows" (per group of
 * rows, each column's best row, best diskgate row and serve's default rows with their share
 * of the best; a note first when the cells are single runs); the method (machine, tools);
 * one table per group of rows (host side, RBD, guest) with cells "value (NN%)" and column
 * headers naming their unit, then p99 latency and CPU tables and the legend. Rows running
 * serve's default configuration are flagged "(default)". Returns 0 or -EIO on a write
 * error. */
int bench_report_md_write(FILE *f, const struct bench_results *r);

/* Writes the JSON report (options, machine, every cell with its medians and every run).
 * Returns 0, -ENOMEM, or -EIO on a write error. */
int bench_report_json_write(FILE *f, const struct bench_results *r);

/* Writes the SVG chart: a header naming the profile, the date (of r->started) and the machine;
 * one group of bars per workload (labelled with its unit), one bar per configuration, heights
 * in % of the group's baseline row, the measured value written above each bar (one panel
 * per group of rows); serve's default rows flagged in the legend. Returns 0 or -EIO. */
int bench_report_svg_write(FILE *f, const struct bench_results *r);

#endif
