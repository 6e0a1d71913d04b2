/* SPDX-License-Identifier: MIT */
/* Unit tests of the ASIF node (src/backing/asif/) over a small image built in a temporary
 * file (docs/asif.md "Tables, chunk groups, entries", "Bitmap chunk", "What a reader must
 * validate" points 6, 7 and 10): fully written, partly written (stale bytes on disk read as
 * zeroes), unmapped and never written chunks read byte for byte, through an engine worker
 * and then through the fast path; BLOCK_STATUS is merged hole|zero and data extents; a
 * partly written chunk with one block in an unseen bitmap state is refused whole; writes
 * are refused; an ASIF spec is opened read-only, so two servers of it share its lock; a
 * qcow2 image whose backing file has format "asif" reads through it. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backing/asif/asif.h"
#include "backing/format.h"
#include "backing/qcow2/qcow2.h"
#include "io/engine.h"
#include "server/export_open.h"
#include "util/bytes.h"

#define CS (64u << 10)   /* chunk size: C = 3 groups of N = 2048 entries */
#define BS 512u
#define BLOCKS (CS / BS) /* 128 blocks per chunk: 32 bitmap bytes */
#define GUEST_CHUNKS 16u
#define FILE_CHUNKS 7u
#define HOLE_ZERO (BACKING_EXTENT_HOLE | BACKING_EXTENT_ZERO)

static uint8_t img[FILE_CHUNKS * CS];
static char path[] = "/tmp/test-asif-node.XXXXXX";
static struct engine *engine;

static uint64_t entry(unsigned status, uint64_t chunk)
{
  return (uint64_t)status << 62 | chunk;
}

/* The image: chunk 0 header and directories, 1 the table, 2 data of guest chunk 0 (FULL,
 * 0x5A), 3 data of guest chunk 1 (PARTIAL: blocks 0, 1 = 0x11 and 127 = 0x22 written, the
 * rest stale 0xEE), 4 the group's bitmap chunk, 5 data of guest chunk 3 (FULL, 0x33), 6
 * data of guest chunk 4 (PARTIAL, block 0 written, block 100 in state 11). Guest chunk 2 is
 * UNMAPPED, the others never written. */
static void image_build(void)
{
  uint8_t *table = img + 1 * CS, *bitmap = img + 4 * CS;

  memset(img, 0, sizeof img);
  memcpy(img, "shdw", 4);
  bytes_put_be32(img + 0x04, 1);
  bytes_put_be32(img + 0x08, 0x200);
  bytes_put_be64(img + 0x10, 0x200);
  bytes_put_be64(img + 0x18, 0x400);
  bytes_put_be64(img + 0x30, GUEST_CHUNKS * BLOCKS);
  bytes_put_be64(img + 0x38, GUEST_CHUNKS * BLOCKS);
  bytes_put_be32(img + 0x40, CS);
  bytes_put_be16(img + 0x44, BS);
  bytes_put_be64(img + 0x208, 1); /* A: sequence 0, table 0 at chunk 1 */
  bytes_put_be64(img + 0x400, 1); /* B: sequence 1, the same table */
  bytes_put_be64(img + 0x408, 1);
  bytes_put_be64(table + 0, entry(1, 2));
  bytes_put_be64(table + 8, entry(3, 3));
  bytes_put_be64(table + 16, entry(2, 0));
  bytes_put_be64(table + 24, entry(1, 5));
  bytes_put_be64(table + 32, entry(3, 6));
  bytes_put_be64(table + 8 * 2048, 4); /* group 0's bitmap entry: chunk 4 */
  memset(img + 2 * CS, 0x5A, CS);
  memset(img + 3 * CS, 0xEE, CS);
  memset(img + 3 * CS, 0x11, 2 * BS);
  memset(img + 3 * CS + 127 * BS, 0x22, BS);
  bitmap[32] = 0x05; /* data index 1: blocks 0 and 1 written */
  bitmap[63] = 0x40; /* data index 1: block 127 written */
  memset(img + 5 * CS, 0x33, CS);
  memset(img + 6 * CS, 0x44, CS);
  bitmap[128] = 0x01; /* data index 4: block 0 written */
  bitmap[153] = 0x03; /* data index 4: block 100 (k = 612) in state 11 */
}

/* The guest byte at `off` as the image says (guest chunk 4 is refused). */
static uint8_t expected(uint64_t off)
{
  uint64_t c = off / CS, b = off % CS / BS;

  switch (c) {
  case 0:
    return 0x5A;
  case 1:
    return b < 2 ? 0x11 : b == 127 ? 0x22 : 0;
  case 3:
    return 0x33;
  default:
    return 0;
  }
}

static int setup(void **state)
{
  int fd = mkstemp(path);

  (void)state;
  image_build();
  if (fd < 0 || write(fd, img, sizeof img) != (ssize_t)sizeof img) {
    return -1;
  }
  close(fd);
  return engine_create(ENGINE_THREADS, 2, &engine);
}

static int teardown(void **state)
{
  (void)state;
  unlink(path);
  engine_destroy(engine);
  return 0;
}

static struct backing *node_open(void)
{
  struct backing_options opts = {.engine = engine, .read_only = true};
  struct backing *file, *node = NULL;
  char why[256] = "";

  assert_int_equal(backing_open(path, &opts, &file), 0);
  struct asif_open_args args = {
      .file = file, .path = path, .opts = &opts, .why = why, .why_size = sizeof why};
  if (backing_asif_open(&args, &node) != 0) {
    fail_msg("open: %s", why);
  }
  return node;
}

static void read_check(struct backing *node, uint64_t off, uint64_t len)
{
  static uint8_t buf[4 * CS];

  assert_true(len <= sizeof buf);
  memset(buf, 0xC3, len);
  assert_int_equal(format_pread(node, buf, len, off), 0);
  for (uint64_t i = 0; i < len; i++) {
    if (buf[i] != expected(off + i)) {
      fail_msg("guest byte %llu: 0x%02x, expected 0x%02x", (unsigned long long)(off + i),
               buf[i], expected(off + i));
    }
  }
}

/* Each read twice: the first maps through a worker (cache misses), the second through the
 * fast path (cached entries). */
static void test_reads(void **state)
{
  static const uint64_t reads[][2] = {
      {0, CS},           {CS, CS},           {CS - 512, 2048},   {CS + 1000, 100},
      {2 * CS - 700, 1400}, {2 * CS, CS},     {3 * CS + 7, 333},  {0, 4 * CS},
      {5 * CS, 4 * CS},     {16 * CS - 512, 512},
  };
  struct backing *node = node_open();

  (void)state;
  assert_int_equal(node->geo.size, (uint64_t)GUEST_CHUNKS * CS);
  assert_int_equal(node->geo.logical_block_size, BS);
  assert_true(node->opts.read_only);
  for (int round = 0; round < 2; round++) {
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
      read_check(node, reads[i][0], reads[i][1]);
    }
  }
  backing_close(node);
}

/* Guest chunk 4 has block 100 in state 11: every read of it fails, though block 0 and
 * block 64 have well-known states; its neighbours still read. */
static void test_unseen_state_refused(void **state)
{
  static uint8_t buf[2 * CS];
  struct backing *node = node_open();

  (void)state;
  for (int round = 0; round < 2; round++) {
    assert_int_equal(format_pread(node, buf, BS, 4 * CS), -EIO);
    assert_int_equal(format_pread(node, buf, BS, 4 * CS + 64 * BS), -EIO);
    assert_int_equal(format_pread(node, buf, 2 * CS, 3 * CS), -EIO);
    read_check(node, 3 * CS, CS);
    read_check(node, 5 * CS, CS);
  }
  struct backing_op w = {.type = BACKING_OP_WRITE, .offset = 0, .length = BS, .buf = buf};
  assert_int_equal(backing_submit(node, &w), -EROFS);
  w.type = BACKING_OP_TRIM;
  assert_int_equal(backing_submit(node, &w), -EROFS);
  backing_close(node);
}

static void test_block_status(void **state)
{
  struct backing_extent ext[16];
  uint32_t n = 0;
  struct backing *node = node_open();
  static const struct backing_extent want[] = {
      {CS + 2 * BS, 0, 1},       /* chunk 0, and blocks 0-1 of chunk 1 */
      {125 * BS, HOLE_ZERO, 0},  /* chunk 1's unwritten blocks (stale bytes) */
      {BS, 0, 1},                /* chunk 1's block 127 */
      {CS, HOLE_ZERO, 0},        /* chunk 2 unmapped */
      {CS, 0, 1},                /* chunk 3 */
  };

  (void)state;
  assert_int_equal(format_block_status(node, 0, 4 * CS, ext, 16, &n), 0);
  assert_int_equal(n, sizeof want / sizeof want[0]);
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(ext[i].length, want[i].length);
    assert_int_equal(ext[i].flags, want[i].flags);
    assert_int_equal(ext[i].depth, want[i].depth);
  }
  /* at most 2 extents: the second ends where the extents run out */
  assert_int_equal(format_block_status(node, 0, 4 * CS, ext, 2, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(ext[1].length, 125 * BS);
  /* the refused chunk: an error from its start; the extents before it from before */
  assert_int_equal(format_block_status(node, 4 * CS, CS, ext, 16, &n), -EIO);
  assert_int_equal(format_block_status(node, 3 * CS, 2 * CS, ext, 16, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(ext[0].length, CS);
  /* never written to the end */
  assert_int_equal(format_block_status(node, 5 * CS, 11 * CS, ext, 16, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(ext[0].length, 11 * CS);
  assert_int_equal(ext[0].flags, HOLE_ZERO);
  backing_close(node);
}

/* An ASIF spec is opened read-only even when the export is writable, so a second reader
 * opens beside it (the one-server lock is a reader's). */
static void test_reader_lock(void **state)
{
  struct backing_options opts = {.engine = engine};
  struct backing_options base, other;
  struct backing_options ro = {.engine = engine, .read_only = true};
  struct backing *a, *b;
  bool only_read;

  (void)state;
  assert_int_equal(export_stack_base_options(&opts, false, path, IMAGE_FORMAT_AUTO, &base), 0);
  assert_true(base.read_only);
  assert_int_equal(export_stack_base_options(&opts, false, path, IMAGE_FORMAT_ASIF, &other), 0);
  assert_true(other.read_only);
  assert_int_equal(export_stack_base_options(&opts, false, path, IMAGE_FORMAT_RAW, &other), 0);
  assert_false(other.read_only);
  assert_int_equal(
      export_stack_base_options(&opts, false, "/dev/null", IMAGE_FORMAT_AUTO, &other), 0);
  assert_false(other.read_only);
  assert_int_equal(format_spec_read_only(path, IMAGE_FORMAT_AUTO, &only_read), 0);
  assert_true(only_read);
  assert_int_equal(format_spec_read_only(path, IMAGE_FORMAT_QCOW2, &only_read), 0);
  assert_false(only_read);
  assert_int_equal(format_spec_read_only("/nonexistent/x.asif", IMAGE_FORMAT_AUTO, &only_read),
                   0);
  assert_false(only_read);
  assert_int_equal(backing_open(path, &base, &a), 0);
  assert_int_equal(backing_open(path, &ro, &b), 0);
  backing_close(b);
  backing_close(a);
  /* a writable open still meets the lock: the lock itself is unchanged */
  assert_int_equal(backing_open(path, &ro, &a), 0);
  assert_int_equal(backing_open(path, &opts, &b), -EBUSY);
  backing_close(a);
}

/* A qcow2 overlay (what --snapshot makes) naming the image as its backing file of format
 * "asif": opened by probing, it reads the ASIF bytes where it has no cluster of its own. */
static void test_qcow2_over_asif(void **state)
{
  char overlay[] = "/tmp/test-asif-overlay.XXXXXX";
  struct backing_options opts = {.engine = engine, .read_only = true};
  struct backing *top = NULL;
  bool probed_raw = true;
  char why[512] = "";
  int fd = mkstemp(overlay);

  (void)state;
  assert_true(fd >= 0);
  close(fd);
  unlink(overlay); /* qcow2_create makes it with O_EXCL */
  assert_int_equal(qcow2_create(overlay, (uint64_t)GUEST_CHUNKS * CS, path, "asif"), 0);
  int rc = format_open(overlay, IMAGE_FORMAT_AUTO, &opts, 0, &top, &probed_raw, why,
                       sizeof why);
  unlink(overlay);
  if (rc != 0) {
    fail_msg("open: %s: %s", strerror(-rc), why);
  }
  assert_int_equal(format_of_node(top), IMAGE_FORMAT_QCOW2);
  read_check(top, 0, 4 * CS);
  read_check(top, CS - 512, 2048);
  backing_close(top);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reads),
      cmocka_unit_test(test_unseen_state_refused),
      cmocka_unit_test(test_block_status),
      cmocka_unit_test(test_reader_lock),
      cmocka_unit_test(test_qcow2_over_asif),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
