/* SPDX-License-Identifier: MIT */
/* tests/unit/test_metrics.c: metrics.h's counting, folding, Prometheus text and cJSON stats
 * over a server with two exports (one named with the bytes the text format escapes) and a
 * live connection: the live and folded counts add up, buckets are cumulative and end at
 * the count, the label is escaped, and the JSON gives the same numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "server/conn.h"
#include "server/metrics.h"
#include "server/server.h"

static void test_count_fold_render(void **state)
{
  struct server s;
  struct export a = {0}, b = {0};
  struct export *exports[2] = {&a, &b};
  struct conn *c = calloc(1, sizeof *c);
  struct metrics_counts closed = {0};
  size_t len = 0;
  char *text;

  (void)state;
  assert_non_null(c);
  assert_int_equal(server_init(&s), 0);
  a.name = "vm\"1\\\n";
  b.name = "";
  s.exports = exports;
  s.nexports = 2;
  /* a closed connection of a: 2 reads of 4096 (5 us, 30 ms), 1 failed write */
  metrics_count(&closed, METRICS_OP_READ, 4096, false, 5000);
  metrics_count(&closed, METRICS_OP_READ, 4096, false, 30000000);
  metrics_count(&closed, METRICS_OP_WRITE, 512, true, 20000000000ull); /* past 10 s: +Inf */
  metrics_counts_fold(&a.metrics.closed, &closed);
  /* a live connection of a: 1 read of 512 (1 ms) */
  c->metrics_export = &a;
  metrics_count(&c->metrics, METRICS_OP_READ, 512, false, 1000000);
  s.conns = c;
  metrics_hist_observe(&a.metrics.sync, 2000000);
  assert_int_equal(metrics_op_of(1), METRICS_OP_WRITE);
  assert_int_equal(metrics_op_of(5), METRICS_OPS); /* CACHE */

  text = metrics_render(&s, &len);
  assert_non_null(text);
  assert_int_equal(strlen(text), len);
#define HAS(line) assert_non_null(strstr(text, "\n" line "\n"))
  HAS("diskgate_requests_total{export=\"vm\\\"1\\\\\\n\",op=\"read\"} 3");
  HAS("diskgate_bytes_total{export=\"vm\\\"1\\\\\\n\",op=\"read\"} 8704");
  HAS("diskgate_errors_total{export=\"vm\\\"1\\\\\\n\",op=\"write\"} 1");
  HAS("diskgate_bytes_total{export=\"vm\\\"1\\\\\\n\",op=\"write\"} 0");
  HAS("diskgate_requests_total{export=\"\",op=\"read\"} 0");
  HAS("diskgate_connections{export=\"vm\\\"1\\\\\\n\"} 1");
  HAS("diskgate_connections{export=\"\"} 0");
  HAS("diskgate_request_duration_seconds_bucket{export=\"vm\\\"1\\\\\\n\",op=\"read\",le=\"1e-05\"} 1");
  HAS("diskgate_request_duration_seconds_bucket{export=\"vm\\\"1\\\\\\n\",op=\"read\",le=\"0.001\"} 2");
  HAS("diskgate_request_duration_seconds_bucket{export=\"vm\\\"1\\\\\\n\",op=\"read\",le=\"0.025\"} 2");
  HAS("diskgate_request_duration_seconds_bucket{export=\"vm\\\"1\\\\\\n\",op=\"read\",le=\"0.05\"} 3");
  HAS("diskgate_request_duration_seconds_bucket{export=\"vm\\\"1\\\\\\n\",op=\"read\",le=\"+Inf\"} 3");
  HAS("diskgate_request_duration_seconds_count{export=\"vm\\\"1\\\\\\n\",op=\"read\"} 3");
  HAS("diskgate_request_duration_seconds_sum{export=\"vm\\\"1\\\\\\n\",op=\"read\"} 0.031005000");
  HAS("diskgate_request_duration_seconds_bucket{export=\"vm\\\"1\\\\\\n\",op=\"write\",le=\"10\"} 0");
  HAS("diskgate_request_duration_seconds_bucket{export=\"vm\\\"1\\\\\\n\",op=\"write\",le=\"+Inf\"} 1");
  HAS("diskgate_sync_duration_seconds_count{export=\"vm\\\"1\\\\\\n\"} 1");
  HAS("# TYPE diskgate_request_duration_seconds histogram");
  HAS("# TYPE process_open_fds gauge");
#undef HAS
  free(text);

  cJSON *o = cJSON_CreateObject();
  assert_int_equal(metrics_stats_json(&s, o), 0);
  cJSON *ea = cJSON_GetObjectItemCaseSensitive(o, "vm\"1\\\n");
  assert_non_null(ea);
  assert_int_equal(cJSON_GetObjectItem(ea, "connections")->valuedouble, 1);
  cJSON *read = cJSON_GetObjectItem(cJSON_GetObjectItem(ea, "ops"), "read");
  assert_int_equal(cJSON_GetObjectItem(read, "requests")->valuedouble, 3);
  assert_int_equal(cJSON_GetObjectItem(read, "bytes")->valuedouble, 8704);
  cJSON *dur = cJSON_GetObjectItem(read, "duration");
  assert_int_equal(cJSON_GetObjectItem(dur, "count")->valuedouble, 3);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(dur, "buckets")), METRICS_BUCKETS + 1);
  assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(ea, "sync"), "count")->valuedouble, 1);
  assert_non_null(cJSON_GetObjectItemCaseSensitive(o, ""));
  cJSON_Delete(o);

  /* the connection closes: folded, the totals stay, the gauge drops */
  metrics_counts_fold(&a.metrics.closed, &c->metrics);
  s.conns = NULL;
  text = metrics_render(&s, &len);
  assert_non_null(strstr(text, "\ndiskgate_requests_total{export=\"vm\\\"1\\\\\\n\",op=\"read\"} 3\n"));
  assert_non_null(strstr(text, "\ndiskgate_connections{export=\"vm\\\"1\\\\\\n\"} 0\n"));
  free(text);
  free(c);
  pthread_mutex_destroy(&s.lock);
  pthread_cond_destroy(&s.cond);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_count_fold_render),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
