/* SPDX-License-Identifier: MIT */
/* tests/bench/test_bench_json.c: parsing fio's JSON output (recorded fixtures). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bench_test.h"

#include "bench/bench_json.h"
#include "bench/bench_workloads.h"

#ifndef BENCH_FIXTURES
#error "BENCH_FIXTURES must name tests/bench/fixtures"
#endif

static void fixture(const char *name, char *buf, size_t len)
{
  snprintf(buf, len, "%s/%s", BENCH_FIXTURES, name);
}

static char *slurp(const char *name)
{
  char path[1024];
  FILE *f;
  long size;
  char *buf;

  fixture(name, path, sizeof(path));
  f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)size + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
  buf[size] = '\0';
  fclose(f);
  return buf;
}

/* fio io_uring, 4K random read QD32 on the host */
static void test_host_randread(void **state)
{
  const struct bench_workload *wl = bench_workloads_find("randread-4k");
  struct bench_fio_result r;
  struct bench_sample s;
  char path[1024];

  (void)state;
  fixture("host-randread-4k.json", path, sizeof(path));
  assert_int_equal(bench_json_parse_fio_file(path, "randread-4k", &r), 0);
  assert_string_equal(r.jobname, "randread-4k");
  assert_int_equal(r.error, 0);
  assert_near(r.runtime_ms, 2000, 0);
  assert_near(r.read_iops, 68075.962019, 1e-6);
  assert_near(r.read_bw, 278902596, 0);
  assert_near(r.read_ios, 136220, 0);
  assert_near(r.read_p99_ns, 1466368, 0);
  assert_near(r.write_iops, 0, 0);
  assert_near(r.sync_ios, 0, 0);
  assert_near(r.sync_p99_ns, 0, 0);

  memset(&s, 0, sizeof(s));
  bench_json_fill_sample(&r, wl, &s);
  assert_near(s.value, 68075.962019, 1e-6);
  assert_near(s.iops, 68075.962019, 1e-6);
  assert_near(s.mbps, 278.902596, 1e-9);
  assert_near(s.ios, 136220, 0);
  assert_near(s.p99_us, 1466.368, 1e-9);
  /* the first job when no name is given */
  assert_int_equal(bench_json_parse_fio_file(path, NULL, &r), 0);
  assert_string_equal(r.jobname, "randread-4k");
}

/* fio's nbd engine writes "fio: connected to NBD server" before the JSON; fsync latencies */
static void test_nbd_fsync(void **state)
{
  const struct bench_workload *wl = bench_workloads_find("randwrite-4k-qd8-fsync");
  struct bench_fio_result r;
  struct bench_sample s;
  char path[1024];

  (void)state;
  fixture("nbd-randwrite-4k-qd8-fsync.json", path, sizeof(path));
  assert_int_equal(bench_json_parse_fio_file(path, "randwrite-4k-qd8-fsync", &r), 0);
  assert_near(r.write_iops, 10875.062469, 1e-6);
  assert_near(r.write_ios, 21761, 0);
  assert_near(r.write_p99_ns, 1073152, 0);
  assert_near(r.sync_ios, 21756, 0);
  assert_near(r.sync_p99_ns, 1613824, 0);
  memset(&s, 0, sizeof(s));
  bench_json_fill_sample(&r, wl, &s);
  assert_near(s.value, 10875.062469, 1e-6);
  assert_near(s.p99_us, 1073.152, 1e-9);
  assert_near(s.fsync_p99_us, 1613.824, 1e-9);
}

/* 70/30 mix of 1M: reads and writes add up; p99 is the worse of the two */
static void test_nbd_mixed(void **state)
{
  const struct bench_workload *wl = bench_workloads_find("randrw-1m");
  struct bench_fio_result r;
  struct bench_sample s;
  char path[1024];

  (void)state;
  fixture("nbd-randrw-1m.json", path, sizeof(path));
  assert_int_equal(bench_json_parse_fio_file(path, "rw-1m", &r), 0);
  assert_near(r.read_iops, 709.226933, 1e-6);
  assert_near(r.write_iops, 308.229426, 1e-6);
  memset(&s, 0, sizeof(s));
  bench_json_fill_sample(&r, wl, &s);
  assert_near(s.value, (744724301.0 + 323724959.0) / 1e6, 1e-6);
  assert_near(s.iops, 709.226933 + 308.229426, 1e-6);
  assert_near(s.ios, 1422 + 618, 0);
  assert_near(s.p99_us, 7045.120, 1e-9);
}

static void test_bad_inputs(void **state)
{
  const char *no_json = "fio: engine nbd not loadable\nfio: failed to load engine\n";
  const char *no_jobs = "{ \"fio version\" : \"fio-3.33\" }\n";
  const char *cut = "{ \"jobs\" : [ { \"jobname\" : \"x\", \"read\" : { \"iops\" : 1";
  struct bench_fio_result r;
  char path[1024];

  (void)state;
  assert_int_equal(bench_json_parse_fio(no_json, strlen(no_json), NULL, &r), -EINVAL);
  assert_int_equal(bench_json_parse_fio(no_jobs, strlen(no_jobs), NULL, &r), -EINVAL);
  assert_int_equal(bench_json_parse_fio(cut, strlen(cut), NULL, &r), -EINVAL);
  assert_int_equal(bench_json_parse_fio("", 0, NULL, &r), -EINVAL);
  fixture("host-randread-4k.json", path, sizeof(path));
  assert_int_equal(bench_json_parse_fio_file(path, "no-such-job", &r), -ENOENT);
  fixture("does-not-exist.json", path, sizeof(path));
  assert_int_equal(bench_json_parse_fio_file(path, NULL, &r), -ENOENT);
}

/* The guest task's output as run-guest.sh prints it: markers, then each job's JSON. */
static void test_guest_output(void **state)
{
  const struct bench_workload *wls[] = { bench_workloads_find("read-1m"),
                                         bench_workloads_find("randread-4k") };
  struct bench_sample out[2];
  char *text = slurp("guest-task-output.txt");
  char *status;

  (void)state;
  memset(out, 0, sizeof(out));
  assert_int_equal(bench_json_parse_guest_output(text, wls, 2, out), 2);
  assert_true(out[0].ok);
  assert_near(out[0].value, 1079.663029, 1e-6);
  assert_near(out[0].ios, 3088, 0);
  assert_near(out[0].p99_us, 18743.296, 1e-9);
  assert_true(out[1].ok);
  assert_near(out[1].value, 7054.315228, 1e-6);
  assert_near(out[1].p99_us, 18219.008, 1e-9);

  /* a job whose fio failed in the guest is not used */
  status = strstr(text, "@@DGB-END randread-4k 0");
  assert_non_null(status);
  status[strlen("@@DGB-END randread-4k ")] = '1';
  memset(out, 0, sizeof(out));
  assert_int_equal(bench_json_parse_guest_output(text, wls, 2, out), 1);
  assert_true(out[0].ok);
  assert_false(out[1].ok);
  free(text);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_host_randread),
    cmocka_unit_test(test_nbd_fsync),
    cmocka_unit_test(test_nbd_mixed),
    cmocka_unit_test(test_bad_inputs),
    cmocka_unit_test(test_guest_output),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
