/* SPDX-License-Identifier: MIT */
/* bench_report_svg.c: a grouped bar chart (one group per workload, % of the baseline row),
 * each bar labelled with its measured value, under a header naming the profile, the date and
 * the machine. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench_configs.h"
#include "bench/bench_report.h"
#include "bench/bench_stats.h"
#include "bench/bench_workloads.h"

#define BAR_W 14
#define GROUP_GAP 24
#define PLOT_H 260
#define LEFT 56
#define TOP 96     /* panel title, then room for the value labels above the tallest bars */
#define HEADER 62  /* the chart's header: profile, date, machine; how to read the bars */
#define LEGEND_LINE 16

static const char *const palette[] = {
  "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
  "#9c755f", "#bab0ac", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#17becf",
};

/* Writes text with the XML special characters escaped. */
static void put_escaped(FILE *f, const char *s)
{
  for (; *s != '\0'; s++) {
    switch (*s) {
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '&':
      fputs("&amp;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    default:
      fputc(*s, f);
      break;
    }
  }
}

static size_t group_rows(const struct bench_results *r, enum bench_group group, size_t *rows)
{
  size_t n = 0;

  for (size_t c = 0; c < r->nconfigs; c++) {
    if (bench_configs_group(r->configs[c]) == group) {
      rows[n++] = c;
    }
  }
  return n;
}

/* Fills cols with the workloads some row of the panel can run; returns how many. */
static size_t panel_columns(const struct bench_results *r, const size_t *rows, size_t n,
                            size_t *cols)
{
  size_t m = 0;

  for (size_t w = 0; w < r->nworkloads; w++) {
    for (size_t i = 0; i < n; i++) {
      if (bench_configs_applies(r->configs[rows[i]], r->workloads[w], NULL)) {
        cols[m++] = w;
        break;
      }
    }
  }
  return m;
}

/* The highest percentage drawn in a panel, rounded up to a multiple of 50 (at least 100). */
static double panel_max(const struct bench_results *r, const size_t *rows, size_t n)
{
  double max = 100.0;

  for (size_t i = 0; i < n; i++) {
    for (size_t w = 0; w < r->nworkloads; w++) {
      const struct bench_cell *cell = &r->cells[rows[i] * r->nworkloads + w];

      if (cell->state == BENCH_CELL_DONE && cell->have_pct && cell->pct > max) {
        max = cell->pct;
      }
    }
  }
  return ceil(max / 50.0) * 50.0;
}

/* Width of one workload's group: its bars, or its label when that is wider. */
static int group_width(const struct bench_results *r, size_t n)
{
  int w = (int)n * BAR_W;

  for (size_t i = 0; i < r->nworkloads; i++) {
    int lw = (int)(strlen(r->workloads[i]->name) +
                   strlen(bench_workloads_unit_label(r->workloads[i]->unit)) + 3) * 6;

    if (lw > w) {
      w = lw;
    }
  }
  return w + GROUP_GAP;
}

static int panel_width(const struct bench_results *r, enum bench_group group)
{
  size_t rows[BENCH_MAX_CONFIGS] = { 0 }, cols[BENCH_MAX_WORKLOADS] = { 0 };
  size_t n = group_rows(r, group, rows);

  return LEFT + (int)panel_columns(r, rows, n, cols) * group_width(r, n) + 20;
}

/* Writes a bar's value ("84.7K", "2374 MB/s") upwards from (x, y), just above the bar. */
static void write_bar_label(FILE *f, const struct bench_cell *cell, int x, int y)
{
  char v[40];

  bench_report_fmt_value(cell->value, cell->wl->unit, v, sizeof(v));
  fprintf(f, "<text class=\"value\" x=\"%d\" y=\"%d\" font-size=\"9\" "
          "transform=\"rotate(-90 %d %d)\">", x, y, x, y);
  put_escaped(f, v);
  fputs("</text>\n", f);
}

/* Writes the chart's header: profile, date and machine, and whether the cells are single
 * runs. */
static void write_header(FILE *f, const struct bench_results *r)
{
  const struct bench_machine *m = &r->machine;
  char line[512];

  snprintf(line, sizeof(line), "diskgate bench: profile %s, %.10s",
           r->opts.profile != NULL ? r->opts.profile : "?", r->started);
  fprintf(f, "<text x=\"8\" y=\"18\" font-size=\"14\" font-weight=\"bold\">");
  put_escaped(f, line);
  fputs("</text>\n", f);
  snprintf(line, sizeof(line), "%s (%u cores), %s", m->cpu_model[0] ? m->cpu_model : "unknown CPU",
           m->cores, m->kernel);
  fprintf(f, "<text x=\"8\" y=\"36\" font-size=\"11\">");
  put_escaped(f, line);
  fputs("</text>\n", f);
  if (r->opts.runs == 1) {
    snprintf(line, sizeof(line), "one run per cell (runs=1): indicative only; "
             "%u s runs, test file on %s", r->opts.runtime_s, m->dir_fs);
  } else {
    snprintf(line, sizeof(line), "medians of %u runs of %u s per cell; test file on %s",
             r->opts.runs, r->opts.runtime_s, m->dir_fs);
  }
  fprintf(f, "<text x=\"8\" y=\"52\" font-size=\"11\">");
  put_escaped(f, line);
  fputs("</text>\n", f);
}

/* Draws one panel with its top at y0; returns its height. */
static int write_panel(FILE *f, const struct bench_results *r, enum bench_group group, int y0)
{
  size_t rows[BENCH_MAX_CONFIGS] = { 0 }, cols[BENCH_MAX_WORKLOADS] = { 0 };
  size_t n = group_rows(r, group, rows);
  size_t ncols = panel_columns(r, rows, n, cols);
  int pw = panel_width(r, group);
  long base = bench_stats_baseline_row(r, group);
  double max = panel_max(r, rows, n);
  int gw = group_width(r, n);
  int py = y0 + TOP;

  fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">", LEFT, y0 + 20);
  if (group == BENCH_GROUP_GUEST) {
    fprintf(f, "Guest rows (accel=%s): %% of ", r->machine.accel[0] ? r->machine.accel : "?");
  } else if (group == BENCH_GROUP_RBD) {
    fputs("RBD rows: % of ", f);
  } else {
    fputs("Host and NBD rows: % of ", f);
  }
  put_escaped(f, base >= 0 ? r->configs[base]->name : "(no baseline selected)");
  fputs("</text>\n", f);
  fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">bar height: %% of that row, higher is "
          "better; above each bar: the measured value</text>\n", LEFT, y0 + 36);
  for (double t = 0; t <= max + 0.1; t += max > 200 ? 100 : 25) {
    int y = py + PLOT_H - (int)lround(t / max * PLOT_H);

    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n", LEFT, y,
            pw - 20, y);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">%.0f%%</text>\n",
            LEFT - 4, y + 3, t);
  }
  {
    int y = py + PLOT_H - (int)lround(100.0 / max * PLOT_H);

    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\" "
            "stroke-dasharray=\"4 3\"/>\n", LEFT, y, pw - 20, y);
  }
  for (size_t k = 0; k < ncols; k++) {
    size_t w = cols[k];
    int gx = LEFT + (int)k * gw + (gw - (int)n * BAR_W) / 2;

    for (size_t i = 0; i < n; i++) {
      const struct bench_cell *cell = &r->cells[rows[i] * r->nworkloads + w];
      int h;

      if (cell->state != BENCH_CELL_DONE || !cell->have_pct) {
        continue;
      }
      h = (int)lround(cell->pct / max * PLOT_H);
      fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>",
              gx + (int)i * BAR_W, py + PLOT_H - h, BAR_W - 2, h,
              palette[i % (sizeof(palette) / sizeof(palette[0]))]);
      put_escaped(f, cell->cfg->name);
      fprintf(f, " / %s: %.1f%%</title></rect>\n", cell->wl->name, cell->pct);
      write_bar_label(f, cell, gx + (int)i * BAR_W + (BAR_W - 2) / 2 + 3, py + PLOT_H - h - 3);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">", gx + (int)n *
            BAR_W / 2, py + PLOT_H + 14);
    put_escaped(f, r->workloads[w]->name);
    fprintf(f, " (%s)</text>\n", bench_workloads_unit_label(r->workloads[w]->unit));
  }
  for (size_t i = 0; i < n; i++) {
    int ly = py + PLOT_H + 32 + (int)i * LEGEND_LINE;

    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>\n", LEFT, ly - 9,
            palette[i % (sizeof(palette) / sizeof(palette[0]))]);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">", LEFT + 16, ly);
    put_escaped(f, r->configs[rows[i]]->name);
    fputs(bench_configs_is_serve_default(r->configs[rows[i]])
            ? " (default: diskgate serve with no options)</text>\n" : "</text>\n", f);
  }
  return TOP + PLOT_H + 32 + (int)n * LEGEND_LINE + 10;
}

int bench_report_svg_write(FILE *f, const struct bench_results *r)
{
  size_t rows[BENCH_MAX_CONFIGS];
  size_t n[BENCH_GROUP_COUNT];
  int width = 560, height = HEADER, y = HEADER;

  for (int g = 0; g < BENCH_GROUP_COUNT; g++) {
    int w = panel_width(r, (enum bench_group)g);

    n[g] = group_rows(r, (enum bench_group)g, rows);
    if (n[g] > 0) {
      height += TOP + PLOT_H + 32 + (int)n[g] * LEGEND_LINE + 10;
    }
    if (w > width) {
      width = w;
    }
  }
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n", width, height, width, height);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  write_header(f, r);
  for (int g = 0; g < BENCH_GROUP_COUNT; g++) {
    if (n[g] > 0) {
      y += write_panel(f, r, (enum bench_group)g, y);
    }
  }
  fputs("</svg>\n", f);
  return ferror(f) ? -EIO : 0;
}
