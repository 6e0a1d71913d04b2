/* SPDX-License-Identifier: MIT */
/* tests/bench/test_bench_asif.c: the ASIF row's image maker (bench_asif_write) read back
 * with a reader written here from shared/asif.md §2-5 (header fields, the directory with
 * the higher sequence number, table entries, data chunks): every byte equals the raw
 * file's, every data entry is status 01 with no bitmap, the chunks are not in logical
 * order; geometries asif.md refuses; and the asif profile's rows, cells and targets A1-A2. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "bench_test.h"
#include "bench_test_profile.h"

#include "bench/bench_asif.h"
#include "bench/bench_configs.h"
#include "bench/bench_profiles.h"
#include "bench/bench_report_targets.h"
#include "bench/bench_stats.h"
#include "bench/bench_targets_asif.h"
#include "bench/bench_workloads.h"

static char dir[] = "/var/tmp/test-bench-asif.XXXXXX";

static uint64_t be(const uint8_t *p, unsigned bytes)
{
  uint64_t v = 0;

  for (unsigned i = 0; i < bytes; i++) {
    v = v << 8 | p[i];
  }
  return v;
}

static void path_in(char *buf, size_t len, const char *name)
{
  snprintf(buf, len, "%s/%s", dir, name);
}

/* A file of `size` bytes: byte k of 1 MiB block b is (k * 31 + b * 7 + 1) & 0xff, so that
 * chunks differ; only the blocks where `dense` or b % 64 == 0 are written, the rest is a
 * hole (reads as zeroes, as the image must give them back). */
static void make_raw(const char *path, uint64_t size, int dense)
{
  uint8_t *buf = malloc(1 << 20);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

  assert_non_null(buf);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, (off_t)size), 0);
  for (uint64_t b = 0; b * (1 << 20) < size; b++) {
    size_t n = size - b * (1 << 20) < (1 << 20) ? (size_t)(size - b * (1 << 20)) : (1 << 20);

    if (!dense && b % 64 != 0) {
      continue;
    }
    for (size_t k = 0; k < n; k++) {
      buf[k] = (uint8_t)(k * 31 + b * 7 + 1);
    }
    assert_int_equal(pwrite(fd, buf, n, (off_t)(b << 20)), (ssize_t)n);
  }
  close(fd);
  free(buf);
}

/* What the reader found. */
struct readback {
  uint64_t chunks;      /* data chunks */
  uint64_t in_order;    /* data chunks whose physical place follows logical order */
  uint64_t tables;      /* non-zero directory entries */
};

/* Reads the image back as asif.md §3-5 describe and compares every guest byte with the
 * raw file; bs, cs and max are the geometry the header must carry. */
static void read_back(const char *image, const char *raw, uint32_t bs, uint32_t cs,
                      uint64_t max, struct readback *rb)
{
  int fi = open(image, O_RDONLY), fr = open(raw, O_RDONLY);
  uint8_t hdr[0x200], *got = malloc(cs), *want = malloc(cs), *dirs[2], *table = malloc(cs);
  uint64_t n = 4ull * bs, s = 8 * (n + 1), c = cs / s, d = c * n * cs, t, seq[2], size;
  struct stat si, sr;
  unsigned active;

  assert_true(fi >= 0 && fr >= 0 && got != NULL && want != NULL && table != NULL);
  assert_int_equal(fstat(fi, &si), 0);
  assert_int_equal(fstat(fr, &sr), 0);
  memset(rb, 0, sizeof(*rb));
  assert_int_equal(pread(fi, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
  assert_memory_equal(hdr, "shdw", 4);
  assert_int_equal(be(hdr + 0x04, 4), 1);
  assert_int_equal(be(hdr + 0x08, 4), 0x200);
  assert_int_equal(be(hdr + 0x10, 8), 0x200);
  assert_int_equal(be(hdr + 0x38, 8), max);
  assert_int_equal(be(hdr + 0x40, 4), cs);
  assert_int_equal(be(hdr + 0x44, 2), bs);
  assert_int_equal(be(hdr + 0x46, 2), 0); /* total_segments */
  assert_int_equal(be(hdr + 0x48, 8), 0); /* no metadata chunk */
  size = be(hdr + 0x30, 8) * bs;
  assert_int_equal(size, (uint64_t)sr.st_size);
  assert_int_equal(si.st_size % cs, 0);
  t = (max * bs + d - 1) / d;
  /* directory B follows A, 512-aligned, and both lie before the first table */
  assert_int_equal(be(hdr + 0x18, 8), (0x200 + 8 * (t + 1) + 0x1ff) / 0x200 * 0x200);
  for (unsigned k = 0; k < 2; k++) {
    dirs[k] = malloc(8 * (t + 1));
    assert_non_null(dirs[k]);
    assert_int_equal(pread(fi, dirs[k], 8 * (t + 1), (off_t)be(hdr + 0x10 + 8 * k, 8)),
                     (ssize_t)(8 * (t + 1)));
    seq[k] = be(dirs[k], 8);
  }
  active = seq[1] > seq[0] ? 1 : 0;
  assert_int_equal(active, 1); /* B is the newer generation, as in Apple's images */
  assert_memory_equal(dirs[0] + 8, dirs[1] + 8, 8 * t);
  for (uint64_t e = 0; e < t; e++) {
    uint64_t chunk = be(dirs[active] + 8 * (e + 1), 8);

    assert_true(chunk == 0 || (e * d < size && chunk * cs + cs <= (uint64_t)si.st_size));
    assert_true(chunk == 0 || chunk * cs >= be(hdr + 0x18, 8) + 8 * (t + 1));
    rb->tables += chunk != 0;
  }
  assert_int_equal(rb->tables, (size + d - 1) / d);
  for (uint64_t off = 0; off < size; off += cs) {
    uint64_t tab = be(dirs[active] + 8 * (off / d + 1), 8), r = off % d;
    uint64_t g = r / (n * cs), i = (r % (n * cs)) / cs, entry, bitmap, phys;
    size_t len = size - off < cs ? (size_t)(size - off) : cs;

    assert_int_equal(pread(fi, table, cs, (off_t)(tab * cs)), (ssize_t)cs);
    entry = be(table + g * s + 8 * i, 8);
    bitmap = be(table + g * s + 8 * n, 8);
    assert_int_equal(entry >> 62, 1);              /* status 01: fully written */
    assert_int_equal(entry & (0x7full << 55), 0);  /* reserved bits clear */
    assert_int_equal(bitmap, 0);                   /* no status 11: no bitmap chunk */
    phys = entry & ((1ull << 55) - 1);
    assert_true(phys * cs + cs <= (uint64_t)si.st_size);
    assert_int_equal(pread(fi, got, cs, (off_t)(phys * cs)), (ssize_t)cs);
    assert_int_equal(pread(fr, want, len, (off_t)off), (ssize_t)len);
    assert_memory_equal(got, want, len);
    for (size_t k = len; k < cs; k++) {
      assert_int_equal(got[k], 0); /* the last chunk's tail past the guest size */
    }
    rb->in_order += phys == be(dirs[active] + 8 * ((size - 1) / d + 1), 8) + 1 + off / cs;
    rb->chunks++;
  }
  assert_int_equal((uint64_t)si.st_size / cs, be(dirs[active] + 8, 8) + rb->tables + rb->chunks);
  free(dirs[0]);
  free(dirs[1]);
  free(got);
  free(want);
  free(table);
  close(fi);
  close(fr);
}

/* The bench's geometry (Apple's: 512-byte blocks, 1 MiB chunks, 4 PiB of directory) on a
 * 20 MiB file and one whose last chunk is partial: every byte back, the chunks shuffled. */
static void test_apple_geometry(void **state)
{
  const struct bench_asif_geometry g = { BENCH_ASIF_BLOCK, BENCH_ASIF_CHUNK,
                                         BENCH_ASIF_MAX_SECTORS, 42 };
  char raw[256], image[256], why[256];
  struct readback rb;

  (void)state;
  path_in(raw, sizeof(raw), "raw");
  path_in(image, sizeof(image), "image.asif");
  make_raw(raw, 20u << 20, 1);
  assert_int_equal(bench_asif_write(raw, image, &g, why, sizeof(why)), 0);
  read_back(image, raw, 512, 1 << 20, 1ull << 43, &rb);
  assert_int_equal(rb.chunks, 20);
  assert_int_equal(rb.tables, 1);
  assert_true(rb.in_order < rb.chunks / 2); /* a shuffle, not a raw file behind a header */

  make_raw(raw, (20u << 20) + 4096, 1); /* 21 chunks, the last one 4 KiB of data */
  assert_int_equal(bench_asif_write(raw, image, &g, why, sizeof(why)), 0);
  read_back(image, raw, 512, 1 << 20, 1ull << 43, &rb);
  assert_int_equal(rb.chunks, 21);
}

/* Small chunks (32 KiB: C = 1 group, D = 64 MiB a table) over a 130 MiB file: three
 * tables, the later ones' data read back too; 4096-byte blocks (N = 16384, C = 7). */
static void test_other_geometries(void **state)
{
  const struct bench_asif_geometry small = { 512, 32u << 10, 1ull << 21, 7 };
  const struct bench_asif_geometry big = { 4096, 1u << 20, 1ull << 40, 9 };
  char raw[256], image[256], why[256];
  struct readback rb;

  (void)state;
  path_in(raw, sizeof(raw), "raw");
  path_in(image, sizeof(image), "image.asif");
  make_raw(raw, 130u << 20, 0);
  assert_int_equal(bench_asif_write(raw, image, &small, why, sizeof(why)), 0);
  read_back(image, raw, 512, 32u << 10, 1ull << 21, &rb);
  assert_int_equal(rb.tables, 3);
  assert_int_equal(rb.chunks, 130u * 32);

  make_raw(raw, 8u << 20, 1);
  assert_int_equal(bench_asif_write(raw, image, &big, why, sizeof(why)), 0);
  read_back(image, raw, 4096, 1u << 20, 1ull << 40, &rb);
  assert_int_equal(rb.chunks, 8);
}

/* Geometries asif.md §10 refuses, and a size that is no whole number of blocks, are
 * -EINVAL with a line, and leave no image behind. */
static void test_refused(void **state)
{
  static const struct bench_asif_geometry bad[] = {
    { 1000, 1u << 20, 1ull << 43, 1 },  /* block size not a multiple of 512 */
    { 8192, 1u << 20, 1ull << 43, 1 },  /* block size past 4096 */
    { 512, 8192, 1ull << 43, 1 },       /* C = 0: a group does not fit a chunk */
    { 512, 1000, 1ull << 43, 1 },       /* chunk not a multiple of the block */
    { 512, 128u << 20, 1ull << 43, 1 }, /* chunk past 64 MiB */
    { 512, 1u << 20, 1000, 1 },         /* the file is past max_sector_count */
    { 512, 32u << 10, 1ull << 43, 1 },  /* a directory past 64 MiB (2^26 entries) */
  };
  const struct bench_asif_geometry g = { 4096, 1u << 20, 1ull << 40, 1 };
  char raw[256], image[256], why[256];

  (void)state;
  path_in(raw, sizeof(raw), "raw");
  path_in(image, sizeof(image), "refused.asif");
  make_raw(raw, 2u << 20, 1);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    why[0] = '\0';
    assert_int_equal(bench_asif_write(raw, image, &bad[i], why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "ASIF geometry"));
    assert_int_equal(access(image, F_OK), -1);
  }
  make_raw(raw, (2u << 20) + 512, 1); /* not a whole number of 4096-byte blocks */
  assert_int_equal(bench_asif_write(raw, image, &g, why, sizeof(why)), -EINVAL);
  assert_int_equal(bench_asif_write("/nonexistent/raw", image, &g, why, sizeof(why)), -ENOENT);
  assert_non_null(strstr(why, "cannot read /nonexistent/raw"));
}

static struct bench_cell cells[BENCH_MAX_CONFIGS * BENCH_MAX_WORKLOADS];

/* The asif profile's results, every cell run once: diskgate-asif at `ratio` times the raw
 * row's 1000 MB/s and 10000 IOPS; with_host: the host row added (--configs), at 2x. */
static void asif_results(struct bench_results *r, double ratio, bool with_host)
{
  bench_test_profile(r, cells, sizeof(cells) / sizeof(cells[0]), "asif", with_host ? "host,diskgate-unix-direct-full,diskgate-asif" : NULL);
  for (size_t c = 0; c < r->nconfigs; c++) {
    double k = strcmp(r->configs[c]->name, "diskgate-asif") == 0 ? ratio
               : strcmp(r->configs[c]->name, "host") == 0    ? 2.0
                                                             : 1.0;

    for (size_t w = 0; w < r->nworkloads; w++) {
      struct bench_cell *cell = bench_results_cell(r, c, w);

      cell->nruns = 1;
      cell->runs[0] = (struct bench_sample){ .ok = true, .value = 1, .iops = 10000 * k,
                                             .mbps = 1000 * k, .ios = 1e5 };
    }
  }
  bench_stats_results_finish(r);
}

/* The profile: the raw row and the ASIF row (no host row) by read-1m and randread-4k,
 * 3 x 10 s on 4 GiB; the ASIF row is one of the host rows, read-only (no write or copy
 * workload). */
static void test_profile(void **state)
{
  static struct bench_results r;
  const struct bench_config *a = bench_configs_find("diskgate-asif");
  const char *why = NULL;

  (void)state;
  asif_results(&r, 1.0, false);
  assert_int_equal(r.nconfigs, 2);
  assert_string_equal(r.configs[0]->name, "diskgate-unix-direct-full");
  assert_string_equal(r.configs[1]->name, "diskgate-asif");
  assert_int_equal(r.nworkloads, 2);
  assert_int_equal(r.opts.runs, 3);
  assert_int_equal(r.opts.runtime_s, 10);
  assert_int_equal(r.opts.size, 4ull << 30);
  assert_non_null(a);
  assert_int_equal(a->kind, BENCH_CFG_ASIF);
  assert_int_equal(a->image, BENCH_IMAGE_ASIF_FULL);
  assert_string_equal(a->cache_mode, "direct");
  assert_int_equal(bench_configs_group(a), BENCH_GROUP_HOST);
  assert_true(bench_configs_applies(a, bench_workloads_find("read-1m"), NULL));
  assert_true(bench_configs_applies(a, bench_workloads_find("randread-4k-4j"), NULL));
  assert_false(bench_configs_applies(a, bench_workloads_find("randwrite-4k"), &why));
  assert_string_equal(why, "an ASIF image is served read-only");
  assert_false(bench_configs_applies(a, bench_workloads_find("randrw-4k"), NULL));
  assert_false(bench_configs_applies(a, bench_workloads_find("copy"), NULL));
  assert_false(bench_configs_applies(a, bench_workloads_find("write-1m"), NULL));
  assert_true(bench_report_targets_wanted(&r));
}

/* A1 (MB/s) and A2 (IOPS): exactly 0.9x passes, below fails; a failed cell makes its line
 * "not measured"; the host path is in the detail when the run has it. */
static void test_targets(void **state)
{
  static struct bench_results r;
  struct bench_target_row rows[BENCH_TARGETS_MAX_ROWS];

  (void)state;
  asif_results(&r, 0.9, true);
  assert_int_equal(bench_targets_asif_eval(&r, rows, BENCH_TARGETS_MAX_ROWS), 2);
  assert_string_equal(rows[0].target, "A1");
  assert_string_equal(rows[1].target, "A2");
  assert_int_equal(rows[0].verdict, BENCH_VERDICT_PASS);
  assert_int_equal(rows[1].verdict, BENCH_VERDICT_PASS);
  assert_string_equal(rows[0].value, "0.90x");
  assert_string_equal(rows[0].detail, "900 vs 1000 MB/s; host path 2000 MB/s");
  assert_string_equal(rows[1].detail, "9000 vs 10000 IOPS; host path 20000 IOPS");
  assert_non_null(strstr(rows[0].what, "MB/s vs diskgate-unix-direct-full >= 0.9x"));

  asif_results(&r, 0.89, false);
  bench_targets_asif_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_string_equal(rows[0].detail, "890 vs 1000 MB/s");
  assert_int_equal(rows[0].verdict, BENCH_VERDICT_FAIL);
  assert_int_equal(rows[1].verdict, BENCH_VERDICT_FAIL);
  assert_string_equal(rows[1].value, "0.89x");

  for (size_t c = 0; c < r.nconfigs; c++) {
    if (strcmp(r.configs[c]->name, "diskgate-unix-direct-full") == 0) {
      bench_results_cell(&r, c, 0)->runs[0].ok = false;
    }
  }
  bench_stats_results_finish(&r);
  bench_targets_asif_eval(&r, rows, BENCH_TARGETS_MAX_ROWS);
  assert_int_equal(rows[0].verdict + rows[1].verdict,
                   BENCH_VERDICT_MISSING + BENCH_VERDICT_FAIL);
}

static int setup(void **state)
{
  (void)state;
  return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
  char p[256];

  (void)state;
  path_in(p, sizeof(p), "raw");
  unlink(p);
  path_in(p, sizeof(p), "image.asif");
  unlink(p);
  return rmdir(dir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_apple_geometry),
    cmocka_unit_test(test_other_geometries),
    cmocka_unit_test(test_refused),
    cmocka_unit_test(test_profile),
    cmocka_unit_test(test_targets),
  };

  return cmocka_run_group_tests(tests, setup, teardown);
}
