/* SPDX-License-Identifier: MIT */
/* Unit tests of the ASIF parser's pure functions (src/backing/asif/asif_header.c and
 * asif_entry.c) on headers and directories built in memory (docs/asif.md, "Geometry",
 * "Header", "Directories", "What a reader must validate", test groups B1-B3 and B5): the
 * geometry of Apple's samples and of other block and chunk sizes is derived exactly; each
 * malformed field is refused with a reason that names it; the locate arithmetic, entry and
 * bitmap decoding match the sample's metadata mapping; arbitrary bytes never crash. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backing/asif/asif_impl.h"
#include "util/bytes.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define SAMPLE_FILE (4 * MIB)            /* every Apple-made sample is 4 chunks of 1 MiB */
#define SAMPLE_SECTORS 195312500ull      /* 100 GB / 512 */
#define SAMPLE_MAX (1ull << 43)
#define SAMPLE_DIR_A 0x200u
#define SAMPLE_DIR_B 0x41400u
#define SAMPLE_T 33289u

static uint8_t img[ASIF_HEADER_READ];

/* A header like the 100 GB sample's: bs 512, cs 1 MiB, directories at 0x200 and 0x41400,
 * metadata at logical chunk 0xFFFFFFFF. */
static void build(void)
{
  memset(img, 0, sizeof img);
  bytes_put_be32(img + 0x00, ASIF_MAGIC);
  bytes_put_be32(img + 0x04, 1);
  bytes_put_be32(img + 0x08, 0x200);
  bytes_put_be64(img + 0x10, SAMPLE_DIR_A);
  bytes_put_be64(img + 0x18, SAMPLE_DIR_B);
  for (unsigned i = 0; i < 16; i++) {
    img[0x20 + i] = (uint8_t)(0xA0 + i);
  }
  bytes_put_be64(img + 0x30, SAMPLE_SECTORS);
  bytes_put_be64(img + 0x38, SAMPLE_MAX);
  bytes_put_be32(img + 0x40, (uint32_t)MIB);
  bytes_put_be16(img + 0x44, 512);
  bytes_put_be64(img + 0x48, 0xFFFFFFFFull);
}

static int parse_sized(struct asif_header *h, uint64_t file_size, char *why)
{
  return asif_header_parse(img, sizeof img, file_size, h, why, 256);
}

/* Requires the current img to be refused for a file of `file_size` bytes with a reason
 * containing `word`. */
#define REFUSED_SIZED(file_size, word)                                                        \
  do {                                                                                        \
    struct asif_header h_;                                                                    \
    char why_[256] = "";                                                                      \
    assert_int_equal(parse_sized(&h_, (file_size), why_), -EINVAL);                           \
    if (strstr(why_, (word)) == NULL) {                                                       \
      fail_msg("reason \"%s\" does not name \"%s\"", why_, (word));                          \
    }                                                                                         \
  } while (0)
#define REFUSED(word) REFUSED_SIZED(SAMPLE_FILE, word)

static void test_sample_geometry(void **state)
{
  struct asif_header h;
  char why[256] = "";

  (void)state;
  build();
  assert_int_equal(parse_sized(&h, SAMPLE_FILE, why), 0);
  assert_int_equal(h.version, 1);
  assert_int_equal(h.header_size, 0x200);
  assert_int_equal(h.block_size, 512);
  assert_int_equal(h.chunk_size, MIB);
  assert_int_equal(h.group_entries, 2048);
  assert_int_equal(h.group_bytes, 16392);
  assert_int_equal(h.table_groups, 63);
  assert_int_equal(h.table_bytes, 63 * 16392);
  assert_int_equal(h.table_span, 126 * GIB);
  assert_int_equal(h.table_span, 0x1F80000000ull);
  assert_int_equal(h.dir_entries, SAMPLE_T);
  assert_int_equal(h.dir_bytes, 8ull * (SAMPLE_T + 1));
  assert_int_equal(h.size, 100000000000ull);
  assert_int_equal(h.sector_count, SAMPLE_SECTORS);
  assert_int_equal(h.max_sector_count, SAMPLE_MAX);
  assert_int_equal(h.dir_offset[0], SAMPLE_DIR_A);
  assert_int_equal(h.dir_offset[1], SAMPLE_DIR_B);
  assert_int_equal(h.metadata_chunk, 0xFFFFFFFFull);
  assert_int_equal(h.guid[0], 0xA0);
  assert_int_equal(h.guid[15], 0xAF);
  /* B = align_up(A + 8 (T + 1), 0x200), and B ends inside chunk 0 */
  assert_int_equal((SAMPLE_DIR_A + h.dir_bytes + 0x1FF) & ~0x1FFull, SAMPLE_DIR_B);
  assert_int_equal(SAMPLE_DIR_B + h.dir_bytes, 0x82450);
  /* the smallest file that holds both directories */
  assert_int_equal(parse_sized(&h, 0x82450, why), 0);
}

static void test_block_4096(void **state)
{
  struct asif_header h;
  char why[256] = "";

  (void)state;
  build();
  bytes_put_be16(img + 0x44, 4096);
  bytes_put_be64(img + 0x30, 100000000000ull / 4096);
  bytes_put_be64(img + 0x38, 1ull << 40); /* 4 PiB */
  bytes_put_be64(img + 0x18, 0x49600);    /* past A's 8 x 37451 bytes */
  assert_int_equal(parse_sized(&h, SAMPLE_FILE, why), 0);
  assert_int_equal(h.group_entries, 16384);
  assert_int_equal(h.group_bytes, 131080);
  assert_int_equal(h.table_groups, 7);
  assert_int_equal(h.table_span, 112 * GIB);
  assert_int_equal(h.dir_entries, 37450);
  assert_int_equal(h.size, (100000000000ull / 4096) * 4096);
}

static void test_chunk_64k(void **state)
{
  struct asif_header h;
  char why[256] = "";

  (void)state;
  build();
  bytes_put_be32(img + 0x40, 64u << 10);
  bytes_put_be64(img + 0x30, 2 * GIB / 512);
  bytes_put_be64(img + 0x38, 2 * GIB / 512);
  bytes_put_be64(img + 0x48, 0);
  assert_int_equal(parse_sized(&h, SAMPLE_FILE, why), 0);
  assert_int_equal(h.table_groups, 3);
  assert_int_equal(h.table_bytes, 3 * 16392);
  assert_int_equal(h.table_span, 3ull * 2048 * (64u << 10)); /* 384 MiB */
  assert_int_equal(h.dir_entries, 6);                        /* ceil(2 GiB / 384 MiB) */
  assert_int_equal(h.metadata_chunk, 0);
}

/* B1: magic, version, block and chunk sizes, total_segments, header_size. */
static void test_b1_fields(void **state)
{
  (void)state;
  build();
  img[0] = 'S';
  REFUSED("magic");
  build();
  bytes_put_be32(img + 0x04, 2);
  REFUSED("version 2");
  build();
  bytes_put_be16(img + 0x44, 0);
  REFUSED("block_size 0");
  build();
  bytes_put_be16(img + 0x44, 1000);
  REFUSED("block_size 1000");
  build();
  bytes_put_be16(img + 0x44, 8192);
  REFUSED("block_size 8192");
  build();
  bytes_put_be32(img + 0x40, 0);
  REFUSED("chunk_size 0");
  build();
  bytes_put_be32(img + 0x40, 1000);
  REFUSED("chunk_size 1000");
  build();
  bytes_put_be32(img + 0x40, 128u << 20);
  REFUSED("chunk_size 134217728");
  build();
  bytes_put_be32(img + 0x40, 8192);
  REFUSED("chunk_size 8192 holds no group");
  build();
  bytes_put_be16(img + 0x46, 1);
  REFUSED("total_segments 1");
  build();
  bytes_put_be32(img + 0x08, 0x10);
  REFUSED("header_size 16");
  build();
  bytes_put_be32(img + 0x08, (uint32_t)MIB + 1);
  REFUSED("header_size 1048577");
  build();
  REFUSED_SIZED(0x1F0, "header_size 512");
  REFUSED_SIZED(0x40, "shorter");
}

/* B2: sector counts and the directory size. */
static void test_b2_counts(void **state)
{
  (void)state;
  build();
  bytes_put_be64(img + 0x30, SAMPLE_MAX + 1);
  REFUSED("sector_count");
  build();
  bytes_put_be64(img + 0x38, 0);
  bytes_put_be64(img + 0x30, 0);
  REFUSED("max_sector_count is 0");
  build();
  bytes_put_be64(img + 0x38, 1ull << 62);
  REFUSED("overflows");
  build();
  bytes_put_be64(img + 0x38, UINT64_MAX);
  REFUSED("overflows");
  build();
  bytes_put_be64(img + 0x38, 1ull << 54); /* 2^63 bytes: 68 M entries */
  REFUSED("directory entries");
  build();
  bytes_put_be64(img + 0x48, 1000); /* logical chunk 1000 < 100 GB */
  REFUSED("metadata_chunk");
}

/* B3: directory places. */
static void test_b3_directories(void **state)
{
  (void)state;
  build();
  bytes_put_be64(img + 0x18, SAMPLE_FILE);
  REFUSED("directory B");
  build();
  bytes_put_be64(img + 0x10, 0x100);
  REFUSED("directory A offset 256 inside the header");
  build();
  bytes_put_be64(img + 0x10, UINT64_MAX - 7);
  REFUSED("directory A");
  build();
  bytes_put_be64(img + 0x18, UINT64_MAX - 7);
  REFUSED("past the end");
  build();
  REFUSED_SIZED(0x41000, "runs past the end of the file (266240 bytes)");
  REFUSED_SIZED(0x82000, "directory B");
  build();
  bytes_put_be64(img + 0x18, SAMPLE_DIR_A + 8);
  REFUSED("overlap");
}

static uint8_t dir[8 * (SAMPLE_T + 1)];
static uint64_t entries[SAMPLE_T];

static void dir_set(uint64_t t, uint64_t v)
{
  bytes_put_be64(dir + 8 * (t + 1), v);
}

static void test_directory(void **state)
{
  struct asif_header h;
  uint64_t seq = 0;
  char why[256] = "";

  (void)state;
  build();
  assert_int_equal(parse_sized(&h, SAMPLE_FILE, why), 0);
  memset(dir, 0, sizeof dir);
  bytes_put_be64(dir, 7);
  dir_set(SAMPLE_T - 1, 1);
  assert_int_equal(asif_directory_parse(&h, dir, SAMPLE_FILE, &seq, entries, why, sizeof why), 0);
  assert_int_equal(seq, 7);
  assert_int_equal(entries[0], 0);
  assert_int_equal(entries[SAMPLE_T - 1], 1);
  /* B4: the metadata's table broken: kept as BAD, the guest range still served */
  dir_set(SAMPLE_T - 1, (1ull << 55) - 1);
  assert_int_equal(asif_directory_parse(&h, dir, SAMPLE_FILE, &seq, entries, why, sizeof why), 0);
  assert_int_equal(entries[SAMPLE_T - 1], ASIF_DIR_ENTRY_BAD);
  dir_set(SAMPLE_T - 1, 4); /* past the 4 MiB file */
  assert_int_equal(asif_directory_parse(&h, dir, SAMPLE_FILE, &seq, entries, why, sizeof why), 0);
  assert_int_equal(entries[SAMPLE_T - 1], ASIF_DIR_ENTRY_BAD);
  /* a guest table that leaves the file, carries flags, or overlaps a directory */
  dir_set(SAMPLE_T - 1, 1);
  dir_set(0, 4);
  assert_int_equal(asif_directory_parse(&h, dir, SAMPLE_FILE, &seq, entries, why, sizeof why),
                   -EINVAL);
  assert_non_null(strstr(why, "directory entry 0"));
  dir_set(0, 1ull << 55 | 1);
  assert_int_equal(asif_directory_parse(&h, dir, SAMPLE_FILE, &seq, entries, why, sizeof why),
                   -EINVAL);
  assert_non_null(strstr(why, "bits 55-63"));
  dir_set(0, (1ull << 55) - 1); /* chunk x cs overflows */
  assert_int_equal(asif_directory_parse(&h, dir, SAMPLE_FILE, &seq, entries, why, sizeof why),
                   -EINVAL);
  bytes_put_be64(img + 0x18, MIB + 0x1000); /* B inside chunk 1 */
  assert_int_equal(parse_sized(&h, SAMPLE_FILE, why), 0);
  dir_set(0, 1);
  assert_int_equal(asif_directory_parse(&h, dir, SAMPLE_FILE, &seq, entries, why, sizeof why),
                   -EINVAL);
  assert_non_null(strstr(why, "overlaps"));
  /* table 0 exactly at the file's end is inside; one more byte is not */
  build();
  assert_int_equal(parse_sized(&h, SAMPLE_FILE, why), 0);
  dir_set(0, 3);
  assert_int_equal(
      asif_directory_parse(&h, dir, 3 * MIB + h.table_bytes, &seq, entries, why, sizeof why), 0);
  assert_int_equal(entries[0], 3);
  assert_int_equal(asif_directory_parse(&h, dir, 3 * MIB + h.table_bytes - 1, &seq, entries,
                                        why, sizeof why),
                   -EINVAL);
  assert_int_equal(asif_directory_pick(0, 1), 1);
  assert_int_equal(asif_directory_pick(2, 1), 0);
  assert_int_equal(asif_directory_pick(5, 5), 0);
}

static void test_locate(void **state)
{
  struct asif_header h;
  struct asif_loc loc;
  char why[256] = "";

  (void)state;
  build();
  assert_int_equal(parse_sized(&h, SAMPLE_FILE, why), 0);
  asif_locate(&h, 0xFFFFFFFFull * MIB, &loc);
  assert_int_equal(loc.table, 33288);
  assert_int_equal(loc.group, 7);
  assert_int_equal(loc.index, 2047);
  assert_int_equal(loc.in_chunk, 0);
  assert_int_equal(loc.entry_off, 7 * 16392 + 8 * 2047);
  assert_int_equal(loc.bitmap_entry_off, 7 * 16392 + 8 * 2048);
  /* table entry index 16390 and bitmap entry 16391 in u64 units (docs/asif.md) */
  assert_int_equal(loc.entry_off / 8, 16390);
  assert_int_equal(loc.bitmap_entry_off / 8, 16391);
  asif_locate(&h, 126 * GIB, &loc);
  assert_int_equal(loc.table, 1);
  assert_int_equal(loc.group, 0);
  assert_int_equal(loc.index, 0);
  assert_int_equal(loc.in_chunk, 0);
  asif_locate(&h, 126 * GIB - 1, &loc);
  assert_int_equal(loc.table, 0);
  assert_int_equal(loc.group, 62);
  assert_int_equal(loc.index, 2047);
  assert_int_equal(loc.in_chunk, MIB - 1);
  asif_locate(&h, 2 * GIB + 3 * MIB + 12345, &loc);
  assert_int_equal(loc.table, 0);
  assert_int_equal(loc.group, 1);
  assert_int_equal(loc.index, 3);
  assert_int_equal(loc.in_chunk, 12345);
  assert_int_equal(loc.entry_off, 16392 + 24);
}

static void test_entries(void **state)
{
  struct asif_header h;
  struct asif_entry e;
  uint64_t host = 0;
  char why[256] = "";

  (void)state;
  build();
  assert_int_equal(parse_sized(&h, SAMPLE_FILE, why), 0);
  assert_int_equal(asif_entry_decode(&h, 0, SAMPLE_FILE, &e, why, sizeof why), 0);
  assert_int_equal(e.status, ASIF_STATUS_NEVER);
  assert_int_equal(e.host, 0);
  assert_int_equal(asif_entry_decode(&h, 0xC000000000000002ull, SAMPLE_FILE, &e, why, sizeof why),
                   0);
  assert_int_equal(e.status, ASIF_STATUS_PARTIAL);
  assert_int_equal(e.host, 2 * MIB);
  assert_int_equal(asif_entry_decode(&h, 0x4000000000000003ull, SAMPLE_FILE, &e, why, sizeof why),
                   0);
  assert_int_equal(e.status, ASIF_STATUS_FULL);
  assert_int_equal(e.host, 3 * MIB);
  assert_int_equal(asif_entry_decode(&h, 0x8000000000000000ull, SAMPLE_FILE, &e, why, sizeof why),
                   0);
  assert_int_equal(e.status, ASIF_STATUS_UNMAPPED);
  /* B5 */
  static const struct {
    uint64_t raw;
    const char *word;
  } bad[] = {
      {0x4000000000000000ull, "status 01 with chunk 0"},
      {0xC000000000000000ull, "status 11 with chunk 0"},
      {5, "status 00 with chunk 5"},
      {0x8000000000000005ull, "status 10 with chunk 5"},
      {0x4000000000000002ull | 1ull << 58, "reserved"},
      {0x0080000000000000ull, "reserved"},
      {0x4000000000000004ull, "past the end"},
      {0x4000000000000000ull | ((1ull << 55) - 1), "past the end"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why[0] = '\0';
    assert_int_equal(asif_entry_decode(&h, bad[i].raw, SAMPLE_FILE, &e, why, sizeof why),
                     -EINVAL);
    if (strstr(why, bad[i].word) == NULL) {
      fail_msg("entry 0x%016llx: reason \"%s\" does not name \"%s\"",
               (unsigned long long)bad[i].raw, why, bad[i].word);
    }
  }
  assert_int_equal(asif_bitmap_entry_decode(&h, 3, SAMPLE_FILE, &host, why, sizeof why), 0);
  assert_int_equal(host, 3 * MIB);
  assert_int_equal(asif_bitmap_entry_decode(&h, 0, SAMPLE_FILE, &host, why, sizeof why), -EINVAL);
  assert_non_null(strstr(why, "bitmap entry is 0"));
  assert_int_equal(
      asif_bitmap_entry_decode(&h, 0x4000000000000003ull, SAMPLE_FILE, &host, why, sizeof why),
      -EINVAL);
  assert_non_null(strstr(why, "bits 55-63"));
  assert_int_equal(asif_bitmap_entry_decode(&h, 4, SAMPLE_FILE, &host, why, sizeof why), -EINVAL);
  assert_non_null(strstr(why, "past the end"));
}

static void test_bitmap_state(void **state)
{
  struct asif_header h;
  char why[256] = "";
  static uint8_t chunk[MIB];

  (void)state;
  build();
  assert_int_equal(parse_sized(&h, SAMPLE_FILE, why), 0);
  memset(chunk, 0, sizeof chunk);
  chunk[0xFFE00] = 0x05; /* the sample: blocks 0 and 1 of data index 2047 written */
  assert_int_equal(asif_bitmap_state(&h, chunk, 0, 2047, 0), 1);
  assert_int_equal(asif_bitmap_state(&h, chunk, 0, 2047, 1), 1);
  assert_int_equal(asif_bitmap_state(&h, chunk, 0, 2047, 2), 0);
  assert_int_equal(asif_bitmap_state(&h, chunk, 0, 2047, 2047), 0);
  assert_int_equal(asif_bitmap_state(&h, chunk, 0, 2046, 2047), 0);
  /* the same through a slice that starts at the byte */
  assert_int_equal(asif_bitmap_state(&h, chunk + 0xFFE00, 0xFFE00, 2047, 1), 1);
  assert_int_equal(asif_bitmap_state(&h, chunk + 0xFFE00, 0xFFE00, 2047, 3), 0);
  /* the last block of the group: k = 2047 x 2048 + 2047, byte 0xFFFFF bits 6-7 */
  chunk[0xFFFFF] = 0x40;
  assert_int_equal(asif_bitmap_state(&h, chunk, 0, 2047, 2047), 1);
  chunk[0xFFFFF] = 0x80;
  assert_int_equal(asif_bitmap_state(&h, chunk, 0, 2047, 2047), -EINVAL);
  chunk[0xFFE00] = 0xFF; /* B5: state 11 */
  assert_int_equal(asif_bitmap_state(&h, chunk, 0, 2047, 0), -EINVAL);
  chunk[0xFFE00] = 0x02; /* state 10 */
  assert_int_equal(asif_bitmap_state(&h, chunk, 0, 2047, 0), -EINVAL);
  chunk[0] = 0x04; /* index 0, block 1 */
  assert_int_equal(asif_bitmap_state(&h, chunk, 0, 0, 0), 0);
  assert_int_equal(asif_bitmap_state(&h, chunk, 0, 0, 1), 1);
}

static void test_random_bytes(void **state)
{
  struct asif_header h;
  char why[256];
  unsigned seed = 4242;

  (void)state;
  for (int round = 0; round < 50000; round++) {
    build();
    for (int i = 0; i < 6; i++) {
      seed = seed * 1103515245u + 12345u;
      img[(seed >> 8) % 0x60] = (uint8_t)(seed >> 24);
    }
    why[0] = '\0';
    int rc = asif_header_parse(img, sizeof img, SAMPLE_FILE, &h, why, sizeof why);
    assert_true(rc == 0 || rc == -EINVAL);
    if (rc < 0) {
      assert_true(why[0] != '\0');
      continue;
    }
    assert_true(h.table_groups >= 1 && h.dir_bytes <= ASIF_DIR_BYTES_MAX);
    assert_true(h.sector_count <= h.max_sector_count);
    assert_true(h.dir_offset[0] + h.dir_bytes <= SAMPLE_FILE);
    assert_true(h.dir_offset[1] + h.dir_bytes <= SAMPLE_FILE);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sample_geometry), cmocka_unit_test(test_block_4096),
      cmocka_unit_test(test_chunk_64k),       cmocka_unit_test(test_b1_fields),
      cmocka_unit_test(test_b2_counts),       cmocka_unit_test(test_b3_directories),
      cmocka_unit_test(test_directory),       cmocka_unit_test(test_locate),
      cmocka_unit_test(test_entries),         cmocka_unit_test(test_bitmap_state),
      cmocka_unit_test(test_random_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
