/* SPDX-License-Identifier: MIT */
/* Unit tests of the format layer (src/backing/format.c): --format's names, the probed-raw
 * guard's test of a write (QEMU's rule against CVE-2008-2004: no write may leave sector 0
 * starting with qcow2's or ASIF's magic), which specs AUTO probes, probing by magic, and
 * opening an ASIF image as a read-only node (docs/asif.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "backing/format.h"
#include "io/engine.h"
#include "util/bytes.h"

static void test_format_names(void **state)
{
  enum image_format f = IMAGE_FORMAT_RAW;

  (void)state;
  assert_int_equal(image_format_parse("qcow2", &f), 0);
  assert_int_equal(f, IMAGE_FORMAT_QCOW2);
  assert_int_equal(image_format_parse("auto", &f), 0);
  assert_int_equal(f, IMAGE_FORMAT_AUTO);
  assert_int_equal(image_format_parse("raw", &f), 0);
  assert_int_equal(f, IMAGE_FORMAT_RAW);
  assert_int_equal(image_format_parse("asif", &f), 0);
  assert_int_equal(f, IMAGE_FORMAT_ASIF);
  assert_int_equal(image_format_parse("QCOW2", &f), -22);
  assert_int_equal(image_format_parse("ASIF", &f), -22);
  assert_int_equal(image_format_parse("", &f), -22);
  assert_string_equal(image_format_name(IMAGE_FORMAT_QCOW2), "qcow2");
  assert_string_equal(image_format_name(IMAGE_FORMAT_ASIF), "asif");
}

/* Writes that would put the magic at 0, whole or a piece at a time, are caught; writes of
 * other bytes, or past the magic's four bytes, are not. */
static void test_guard_write(void **state)
{
  static const uint8_t magic[4] = {'Q', 'F', 'I', 0xfb};
  uint8_t header[512] = {'Q', 'F', 'I', 0xfb, 0, 0, 0, 3};
  uint8_t other[512] = {0xeb, 0x63, 0x90};

  (void)state;
  assert_true(format_write_makes_header(0, header, sizeof header));
  assert_true(format_write_makes_header(0, magic, 4));
  assert_true(format_write_makes_header(0, magic, 1));     /* a piece: 'Q' at 0 */
  assert_true(format_write_makes_header(2, magic + 2, 2)); /* "I\xfb" at 2 */
  assert_true(format_write_makes_header(3, magic + 3, 100));
  assert_false(format_write_makes_header(0, other, sizeof other));
  assert_false(format_write_makes_header(1, magic, 4));    /* 'Q' at 1: no magic */
  assert_false(format_write_makes_header(4, magic, 4));    /* past the magic */
  assert_false(format_write_makes_header(512, magic, 4));
  assert_false(format_write_makes_header(0, magic, 0));
  header[3] = 0xfa;
  assert_false(format_write_makes_header(0, header, sizeof header));
}

/* The same guard for ASIF's magic "shdw", whole or in pieces; the header test knows it. */
static void test_guard_write_asif(void **state)
{
  static const uint8_t magic[4] = {'s', 'h', 'd', 'w'};
  uint8_t header[512] = {'s', 'h', 'd', 'w', 0, 0, 0, 1};

  (void)state;
  assert_true(format_header_known(header, sizeof header));
  assert_true(format_header_known(magic, 4));
  assert_false(format_header_known(magic, 3));
  assert_true(format_write_makes_header(0, header, sizeof header));
  assert_true(format_write_makes_header(0, magic, 2));     /* "sh" at 0 */
  assert_true(format_write_makes_header(3, magic + 3, 1)); /* 'w' at 3 */
  assert_false(format_write_makes_header(1, magic, 4));    /* "shdw" at 1: no magic */
  assert_false(format_write_makes_header(4, magic, 4));
  header[2] = 'D';
  assert_false(format_header_known(header, sizeof header));
  assert_false(format_write_makes_header(0, header, sizeof header));
}

#define ASIF_TEST_FILE (1u << 20)

/* Writes a minimal ASIF image to `path`: bs 512, cs 1 MiB, 1 GiB guest size, both
 * directories of T = 1 entry (no table): every byte reads as zero. `version` goes to the
 * header (1 is valid). */
static void asif_write(const char *path, uint32_t version)
{
  static uint8_t img[ASIF_TEST_FILE];
  int fd;

  memset(img, 0, sizeof img);
  memcpy(img, "shdw", 4);
  bytes_put_be32(img + 0x04, version);
  bytes_put_be32(img + 0x08, 0x200);
  bytes_put_be64(img + 0x10, 0x200);
  bytes_put_be64(img + 0x18, 0x400);
  bytes_put_be64(img + 0x30, 1u << 21);
  bytes_put_be64(img + 0x38, 1u << 21);
  bytes_put_be32(img + 0x40, 1u << 20);
  bytes_put_be16(img + 0x44, 512);
  bytes_put_be64(img + 0x400, 1); /* B's sequence: B is the newer */
  fd = open(path, O_WRONLY | O_TRUNC);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, img, sizeof img), (ssize_t)sizeof img);
  close(fd);
}

/* AUTO probes "shdw" as ASIF and opens a read-only node of the image's geometry; a write
 * is refused; a malformed header is -EINVAL with a reason naming the field. */
static void test_asif_probe_open(void **state)
{
  char path[] = "/tmp/test-format-asif.XXXXXX";
  char why[256];
  struct engine *e = NULL;
  struct backing *child, *node;
  enum image_format f = IMAGE_FORMAT_AUTO;
  bool probed_raw = true;
  static uint8_t buf[8192];
  int fd = mkstemp(path);

  (void)state;
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(engine_create(ENGINE_THREADS, 1, &e), 0);
  struct backing_options opts = {.engine = e, .sync = SYNC_FULL, .cache = CACHE_WRITEBACK};
  asif_write(path, 1);
  assert_int_equal(backing_open(path, &opts, &child), 0);
  assert_int_equal(format_probe(child, &f), 0);
  assert_int_equal(f, IMAGE_FORMAT_ASIF);
  assert_int_equal(format_open_node(child, path, IMAGE_FORMAT_AUTO, &opts, 0, &node,
                                    &probed_raw, why, sizeof why),
                   0);
  assert_false(probed_raw);
  assert_int_equal(format_of_node(node), IMAGE_FORMAT_ASIF);
  assert_int_equal(node->geo.size, 1ull << 30);
  assert_int_equal(node->geo.logical_block_size, 512);
  assert_true(node->opts.read_only);
  assert_true(node->geo.can_extents);
  assert_false(node->geo.can_trim || node->geo.can_zero);
  assert_non_null(strstr(node->start_note, "served read-only"));
  assert_non_null(strstr(node->start_note, "directory B"));
  memset(buf, 0xAA, sizeof buf);
  assert_int_equal(format_pread(node, buf, sizeof buf, (1ull << 30) - sizeof buf), 0);
  for (size_t i = 0; i < sizeof buf; i++) {
    assert_int_equal(buf[i], 0);
  }
  struct backing_op w = {.type = BACKING_OP_WRITE, .offset = 0, .length = 512, .buf = buf};
  assert_int_equal(backing_submit(node, &w), -EROFS);
  backing_close(node);

  asif_write(path, 2);
  assert_int_equal(backing_open(path, &opts, &child), 0);
  assert_int_equal(format_open_node(child, path, IMAGE_FORMAT_AUTO, &opts, 0, &node,
                                    &probed_raw, why, sizeof why),
                   -EINVAL);
  assert_non_null(strstr(why, "version 2"));
  backing_close(child);
  unlink(path);
  engine_destroy(e);
}

/* AUTO reads the magic of regular files (and faulty: over one) only. */
static void test_spec_probed(void **state)
{
  char path[] = "/tmp/test-format.XXXXXX";
  char faulty[sizeof path + 8];
  int fd = mkstemp(path);

  (void)state;
  assert_true(fd >= 0);
  close(fd);
  snprintf(faulty, sizeof faulty, "faulty:%s", path);
  assert_true(format_spec_probed(path));
  assert_true(format_spec_probed(faulty));
  assert_false(format_spec_probed("/dev/null"));
  assert_false(format_spec_probed("/tmp"));
  assert_false(format_spec_probed("rbd:pool/image"));
  unlink(path);
  assert_false(format_spec_probed(path)); /* missing: nothing to probe */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_format_names),
      cmocka_unit_test(test_guard_write),
      cmocka_unit_test(test_guard_write_asif),
      cmocka_unit_test(test_spec_probed),
      cmocka_unit_test(test_asif_probe_open),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
