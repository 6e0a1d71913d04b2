/* SPDX-License-Identifier: MIT */
/* bench_report_targets.c: the targets table in the Markdown and JSON reports. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>

#include "bench/bench_report.h"
#include "bench/bench_report_targets.h"
#include "bench/bench_targets.h"
#include "bench/bench_targets_asif.h"
#include "bench/bench_targets_collapse.h"
#include "bench/bench_targets_gateway.h"
#include "bench/bench_targets_metrics.h"
#include "bench/bench_targets_qcow2.h"
#include "bench/bench_variants.h"

bool bench_report_targets_wanted(const struct bench_results *r)
{
  if (r->opts.profile == NULL ||
      (strcmp(r->opts.profile, "peers") != 0 && strcmp(r->opts.profile, "qcow2") != 0 &&
       strcmp(r->opts.profile, "asif") != 0 && strcmp(r->opts.profile, "collapse") != 0 &&
       strcmp(r->opts.profile, "metrics") != 0 && strcmp(r->opts.profile, "gateway") != 0)) {
    return false;
  }
  for (size_t c = 0; c < r->nconfigs; c++) {
    if (strcmp(bench_variants_base(r->configs[c])->name, r->configs[c]->name) != 0) {
      return false; /* an A/B: its diskgate rows are NAME@K, none the one a target reads */
    }
  }
  return true;
}

/* The run's targets: the qcow2 profile's Q1-Q4, the asif profile's A1-A2, the collapse
 * profile's C1, the metrics profile's M1, the gateway profile's G1-G2, else the peers
 * profile's T1-T6. */
static size_t targets_eval(const struct bench_results *r, struct bench_target_row *rows)
{
  if (strcmp(r->opts.profile, "qcow2") == 0) {
    return bench_targets_qcow2_eval(r, rows, BENCH_TARGETS_MAX_ROWS);
  }
  if (strcmp(r->opts.profile, "asif") == 0) {
    return bench_targets_asif_eval(r, rows, BENCH_TARGETS_MAX_ROWS);
  }
  if (strcmp(r->opts.profile, "collapse") == 0) {
    return bench_targets_collapse_eval(r, rows, BENCH_TARGETS_MAX_ROWS);
  }
  if (strcmp(r->opts.profile, "metrics") == 0) {
    return bench_targets_metrics_eval(r, rows, BENCH_TARGETS_MAX_ROWS);
  }
  if (strcmp(r->opts.profile, "gateway") == 0) {
    return bench_targets_gateway_eval(r, rows, BENCH_TARGETS_MAX_ROWS);
  }
  return bench_targets_eval(r, rows, BENCH_TARGETS_MAX_ROWS);
}

int bench_report_targets_md_write(FILE *f, const struct bench_results *r)
{
  struct bench_target_row rows[BENCH_TARGETS_MAX_ROWS];
  size_t n;
  int rc = bench_report_md_write(f, r);

  if (rc < 0 || !bench_report_targets_wanted(r)) {
    return rc;
  }
  n = targets_eval(r, rows);
  fputs("\n## Targets (docs/performance.md)\n\n"
        "Ratios of medians of cells measured in the same rounds. FAIL (limit): the host path "
        "itself (fio on the file, no server) misses the goal, so no server could meet it on "
        "this machine.\n\n"
        "| target | what | value | limit | result | detail |\n"
        "|---|---|---|---|---|---|\n", f);
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "| %s | %s | %s | %s | %s | %s |\n", rows[i].target, rows[i].what, rows[i].value,
            rows[i].limit, bench_targets_verdict_name(rows[i].verdict), rows[i].detail);
  }
  return ferror(f) ? -EIO : 0;
}

void bench_report_targets_json_add(void *root, const struct bench_results *r)
{
  struct bench_target_row rows[BENCH_TARGETS_MAX_ROWS];
  cJSON *arr;
  size_t n;

  if (!bench_report_targets_wanted(r)) {
    return;
  }
  n = targets_eval(r, rows);
  arr = cJSON_AddArrayToObject(root, "targets");
  for (size_t i = 0; i < n; i++) {
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "target", rows[i].target);
    cJSON_AddStringToObject(o, "what", rows[i].what);
    cJSON_AddStringToObject(o, "value", rows[i].value);
    cJSON_AddStringToObject(o, "limit", rows[i].limit);
    cJSON_AddStringToObject(o, "result", bench_targets_verdict_name(rows[i].verdict));
    cJSON_AddStringToObject(o, "detail", rows[i].detail);
    cJSON_AddItemToArray(arr, o);
  }
}
