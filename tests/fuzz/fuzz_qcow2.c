/* SPDX-License-Identifier: MIT */
/* fuzz_qcow2.c: libFuzzer harness for the qcow2 header parser, qcow2_header_parse
 * (src/backing/qcow2/qcow2_header.c; QEMU's docs/interop/qcow2.txt, "Header" and "Header
 * extensions"). The parser is pure: no I/O, no allocation, any thread.
 *
 * Input:
 *   byte 0        knobs: bits 0-1 choose the room for the reason (1, 24, 256 bytes or
 *                 none), bit 2 a file size taken from bytes 1-8 as is (else it is
 *                 clamped to 1 TiB, so that most inputs reach the table checks)
 *   bytes 1-8     the image file's size, little-endian
 *   then          the header cluster's first bytes (the `buf` of the parser)
 * The header bytes are copied into a buffer of exactly their length, so ASan sees any read
 * past it. Every result is checked against the spec and against an independent reading of
 * the fixed header fields: an accepted header is version 2 or 3, its cluster size, tables
 * and backing file name are where the spec and the file size allow, it uses no feature the
 * parser must refuse; a refusal is -EINVAL or -ENOTSUP with a one-line, NUL-terminated
 * reason. Parsing twice gives the same answer. A broken invariant aborts.
 *
 * Built by tests/fuzz/run.sh (clang -fsanitize=fuzzer,address,undefined, with
 * qcow2_header.c alone) and, with replay_main.c, by tests/fuzz/meson.build as the
 * regression test fuzz-replay-qcow2 over the seeds (tests/fuzz/make_qcow2_corpus.py) and
 * the crashes found so far (tests/fuzz/crashes/qcow2/). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backing/qcow2/qcow2_impl.h"

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "fuzz_qcow2: invariant failed at line %d: %s\n", __LINE__, #cond);  \
      abort();                                                                             \
    }                                                                                      \
  } while (0)

static uint32_t be32(const uint8_t *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
  return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/* [off, off + len) inside a file of `size` bytes, without overflow. */
static bool inside(uint64_t off, uint64_t len, uint64_t size)
{
  return off <= size && len <= size - off;
}

/* The checks of an accepted header against the spec and the raw bytes. */
static void check_accepted(const uint8_t *buf, size_t len, uint64_t file_size,
                           const struct qcow2_header *h)
{
  uint64_t cluster, per_l1, needed;
  uint32_t entry_bits;

  CHECK(len >= 72 && be32(buf) == QCOW2_MAGIC);
  CHECK(h->version == be32(buf + 4) && (h->version == 2 || h->version == 3));
  CHECK(h->cluster_bits == be32(buf + 20));
  CHECK(h->cluster_bits >= QCOW2_MIN_CLUSTER_BITS && h->cluster_bits <= QCOW2_MAX_CLUSTER_BITS);
  cluster = 1ull << h->cluster_bits;
  CHECK(h->size == be64(buf + 24) && h->size <= (1ull << 62));
  CHECK(h->crypt_method == 0 && be32(buf + 32) == 0);
  CHECK(h->l1_size == be32(buf + 36) && h->l1_table_offset == be64(buf + 40));
  CHECK(h->refcount_table_offset == be64(buf + 48));
  CHECK(h->refcount_table_clusters == be32(buf + 56));
  CHECK(h->nb_snapshots == be32(buf + 60) && h->snapshots_offset == be64(buf + 64));
  if (h->version == 2) {
    CHECK(h->header_length == 72 && h->refcount_order == 4);
    CHECK(h->incompatible_features == 0 && h->compatible_features == 0);
    CHECK(h->compression_type == QCOW2_COMPRESSION_ZLIB);
  } else {
    CHECK(len >= 104 && h->incompatible_features == be64(buf + 72));
    CHECK(h->compatible_features == be64(buf + 80) && h->autoclear_features == be64(buf + 88));
    CHECK(h->refcount_order == be32(buf + 96) && h->header_length == be32(buf + 100));
    CHECK(h->header_length >= 104 && h->header_length % 8 == 0);
    CHECK(h->header_length <= cluster && h->header_length <= len);
  }
  CHECK(h->refcount_order <= 6);
  /* features: nothing the parser must refuse */
  CHECK((h->incompatible_features & ~QCOW2_INCOMPAT_KNOWN) == 0);
  CHECK((h->incompatible_features & QCOW2_INCOMPAT_DATA_FILE) == 0);
  CHECK(h->compression_type == QCOW2_COMPRESSION_ZLIB ||
        h->compression_type == QCOW2_COMPRESSION_ZSTD);
  CHECK(((h->incompatible_features & QCOW2_INCOMPAT_COMPRESSION) != 0) ==
        (h->compression_type != QCOW2_COMPRESSION_ZLIB));
  /* tables: aligned, not over the header, inside the file, L1 large enough */
  entry_bits = (h->incompatible_features & QCOW2_INCOMPAT_EXTL2) ? 4 : 3;
  per_l1 = cluster << (h->cluster_bits - entry_bits);
  needed = h->size / per_l1 + (h->size % per_l1 != 0);
  CHECK(h->l1_size >= needed);
  CHECK((uint64_t)h->l1_size * 8 <= (32ull << 20));
  if (h->l1_size > 0) {
    CHECK(h->l1_table_offset >= cluster && h->l1_table_offset % cluster == 0);
    CHECK(inside(h->l1_table_offset, (uint64_t)h->l1_size * 8, file_size));
  }
  CHECK(h->refcount_table_clusters > 0);
  CHECK(h->refcount_table_offset >= cluster && h->refcount_table_offset % cluster == 0);
  CHECK(inside(h->refcount_table_offset, (uint64_t)h->refcount_table_clusters << h->cluster_bits,
               file_size));
  if (h->nb_snapshots > 0) {
    CHECK(h->snapshots_offset >= cluster && h->snapshots_offset % cluster == 0);
    CHECK(h->snapshots_offset < file_size);
  }
  CHECK(file_size < (1ull << 56));
  /* names: terminated, in bounds, and the backing file name is the bytes the header points
   * at, inside the header cluster and the bytes given */
  CHECK(memchr(h->backing_format, '\0', sizeof h->backing_format) != NULL);
  CHECK(memchr(h->backing_file, '\0', sizeof h->backing_file) != NULL);
  if (h->has_backing) {
    uint64_t off = be64(buf + 8);
    uint32_t n = be32(buf + 16);
    uint64_t limit = len < cluster ? len : cluster;
    CHECK(n > 0 && n <= QCOW2_BACKING_NAME_MAX && strlen(h->backing_file) == n);
    CHECK(off >= h->header_length && inside(off, n, limit));
    CHECK(memcmp(h->backing_file, buf + off, n) == 0);
  }
  if (h->has_backing_format) {
    CHECK(strlen(h->backing_format) <= QCOW2_FORMAT_NAME_MAX);
  }
  CHECK(h->header_ext_end >= h->header_length);
  CHECK(h->header_ext_end <= len && h->header_ext_end <= cluster);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const size_t rooms[4] = {1, 24, 256, 0};
  struct qcow2_header h1, h2;
  char why1[256], why2[256];
  uint64_t file_size = 0;
  size_t room, len;
  uint8_t *buf;
  int rc1, rc2;

  if (size < 9) {
    return 0;
  }
  room = rooms[data[0] & 3];
  for (int i = 0; i < 8; i++) {
    file_size |= (uint64_t)data[1 + i] << (8 * i);
  }
  if ((data[0] & 4) == 0) {
    file_size %= 1ull << 40;
  }
  len = size - 9;
  if (len < 72) {
    return 0; /* the parser's precondition: at least the version 2 header */
  }
  buf = malloc(len);
  CHECK(buf != NULL);
  memcpy(buf, data + 9, len);
  memset(why1, 0x55, sizeof why1);
  rc1 = qcow2_header_parse(buf, len, file_size, &h1, room ? why1 : NULL, room);
  if (rc1 == 0) {
    check_accepted(buf, len, file_size, &h1);
  } else {
    CHECK(rc1 == -EINVAL || rc1 == -ENOTSUP);
    if (room > 0) {
      size_t n = strnlen(why1, room);
      CHECK(n < room);                     /* terminated inside the room */
      CHECK(room == 1 || n > 0);           /* a reason is given when it fits */
      CHECK(memchr(why1, '\n', n) == NULL); /* one line */
    }
  }
  /* the same bytes give the same answer */
  rc2 = qcow2_header_parse(buf, len, file_size, &h2, room ? why2 : NULL, room);
  CHECK(rc2 == rc1);
  if (rc1 == 0) {
    CHECK(h2.version == h1.version && h2.size == h1.size && h2.l1_size == h1.l1_size);
    CHECK(h2.header_ext_end == h1.header_ext_end && h2.has_backing == h1.has_backing);
    CHECK(strcmp(h2.backing_file, h1.backing_file) == 0);
    CHECK(strcmp(h2.backing_format, h1.backing_format) == 0);
  } else if (room > 0) {
    CHECK(strcmp(why1, why2) == 0);
  }
  free(buf);
  return 0;
}
