/* SPDX-License-Identifier: MIT */
/* asif_header.c: decoding and validating the header and the two directories of an ASIF
 * image (docs/asif.md "Header", "Directories", "What a reader must validate" points 1-5).
 * Pure: no I/O, no allocation, no global state, so the fuzz harness may call it on any
 * bytes. Every product of values from the file is overflow-checked. */
#include "backing/asif/asif_impl.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/bytes.h"

/* Field offsets in the header (big-endian). */
#define OFF_MAGIC 0x00u
#define OFF_VERSION 0x04u
#define OFF_HEADER_SIZE 0x08u
#define OFF_FLAGS 0x0Cu
#define OFF_DIR_A 0x10u
#define OFF_DIR_B 0x18u
#define OFF_GUID 0x20u
#define OFF_SECTOR_COUNT 0x30u
#define OFF_MAX_SECTOR_COUNT 0x38u
#define OFF_CHUNK_SIZE 0x40u
#define OFF_BLOCK_SIZE 0x44u
#define OFF_TOTAL_SEGMENTS 0x46u
#define OFF_METADATA_CHUNK 0x48u
#define BLOCK_UNIT 512u

int asif_refuse(char *why, size_t why_len, const char *fmt, ...)
{
  va_list ap;

  if (why != NULL && why_len > 0) {
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
  }
  return -EINVAL;
}

/* Checks and decodes magic, version, block and chunk sizes, header_size and
 * total_segments (point 1 and 2), deriving N, S and C. */
static int parse_sizes(const uint8_t *buf, uint64_t file_size, struct asif_header *h,
                       char *why, size_t why_len)
{
  if (bytes_get_be32(buf + OFF_MAGIC) != ASIF_MAGIC) {
    return asif_refuse(why, why_len, "magic is not \"shdw\"");
  }
  h->version = bytes_get_be32(buf + OFF_VERSION);
  if (h->version != ASIF_VERSION) {
    return asif_refuse(why, why_len, "version %u (only 1 is known)", h->version);
  }
  h->block_size = bytes_get_be16(buf + OFF_BLOCK_SIZE);
  if (h->block_size == 0 || h->block_size % BLOCK_UNIT != 0 || h->block_size > ASIF_BLOCK_MAX) {
    return asif_refuse(why, why_len, "block_size %u is not a multiple of 512 in 512-%u", h->block_size,
                  ASIF_BLOCK_MAX);
  }
  h->chunk_size = bytes_get_be32(buf + OFF_CHUNK_SIZE);
  if (h->chunk_size == 0 || h->chunk_size % h->block_size != 0 ||
      h->chunk_size > ASIF_CHUNK_MAX) {
    return asif_refuse(why, why_len, "chunk_size %u is not a multiple of block_size %u up to %u",
                  h->chunk_size, h->block_size, ASIF_CHUNK_MAX);
  }
  h->group_entries = 4u * h->block_size;
  h->group_bytes = 8u * (h->group_entries + 1u);
  h->table_groups = h->chunk_size / h->group_bytes;
  if (h->table_groups == 0) {
    return asif_refuse(why, why_len, "chunk_size %u holds no group of %u bytes (block_size %u)",
                  h->chunk_size, h->group_bytes, h->block_size);
  }
  h->table_bytes = h->table_groups * h->group_bytes;
  h->header_size = bytes_get_be32(buf + OFF_HEADER_SIZE);
  if (h->header_size < ASIF_HEADER_MIN || h->header_size > h->chunk_size ||
      h->header_size > file_size) {
    return asif_refuse(why, why_len, "header_size %u outside 0x%x..min(chunk_size %u, file size %llu)",
                  h->header_size, ASIF_HEADER_MIN, h->chunk_size, (unsigned long long)file_size);
  }
  uint16_t segments = bytes_get_be16(buf + OFF_TOTAL_SEGMENTS);
  if (segments != 0) {
    return asif_refuse(why, why_len, "total_segments %u (only 0 is known)", segments);
  }
  return 0;
}

/* Checks the sector counts and derives size, D, T and the directory bytes (point 3). */
static int parse_counts(const uint8_t *buf, struct asif_header *h, char *why, size_t why_len)
{
  uint64_t max_bytes;
  uint64_t group_span;

  h->sector_count = bytes_get_be64(buf + OFF_SECTOR_COUNT);
  h->max_sector_count = bytes_get_be64(buf + OFF_MAX_SECTOR_COUNT);
  if (h->max_sector_count == 0) {
    return asif_refuse(why, why_len, "max_sector_count is 0");
  }
  if (h->sector_count > h->max_sector_count) {
    return asif_refuse(why, why_len, "sector_count %llu above max_sector_count %llu",
                  (unsigned long long)h->sector_count, (unsigned long long)h->max_sector_count);
  }
  if (__builtin_mul_overflow(h->max_sector_count, (uint64_t)h->block_size, &max_bytes)) {
    return asif_refuse(why, why_len, "max_sector_count %llu x block_size %u overflows 64 bits",
                  (unsigned long long)h->max_sector_count, h->block_size);
  }
  /* sector_count <= max_sector_count, so this product cannot overflow either. */
  h->size = h->sector_count * h->block_size;
  if (__builtin_mul_overflow((uint64_t)h->group_entries, (uint64_t)h->chunk_size, &group_span) ||
      __builtin_mul_overflow(group_span, (uint64_t)h->table_groups, &h->table_span)) {
    return asif_refuse(why, why_len, "table span of chunk_size %u overflows 64 bits", h->chunk_size);
  }
  h->dir_entries = max_bytes / h->table_span + (max_bytes % h->table_span != 0 ? 1u : 0u);
  if (h->dir_entries >= ASIF_DIR_BYTES_MAX / 8u) {
    return asif_refuse(why, why_len,
                  "max_sector_count %llu needs %llu directory entries (more than %u bytes)",
                  (unsigned long long)h->max_sector_count, (unsigned long long)h->dir_entries,
                  ASIF_DIR_BYTES_MAX);
  }
  h->dir_bytes = 8u * (h->dir_entries + 1u);
  return 0;
}

/* Checks both directory ranges (point 4) and the metadata chunk (point 8). */
static int parse_places(const uint8_t *buf, uint64_t file_size, struct asif_header *h,
                        char *why, size_t why_len)
{
  static const char *const names[2] = {"A", "B"};
  uint64_t meta;

  h->dir_offset[0] = bytes_get_be64(buf + OFF_DIR_A);
  h->dir_offset[1] = bytes_get_be64(buf + OFF_DIR_B);
  for (unsigned k = 0; k < 2; k++) {
    if (h->dir_offset[k] < h->header_size) {
      return asif_refuse(why, why_len, "directory %s offset %llu inside the header (header_size %u)",
                    names[k], (unsigned long long)h->dir_offset[k], h->header_size);
    }
    if (!bytes_range_within(h->dir_offset[k], h->dir_bytes, file_size)) {
      return asif_refuse(why, why_len,
                    "directory %s at %llu (%llu bytes) runs past the end of the file (%llu bytes)",
                    names[k], (unsigned long long)h->dir_offset[k],
                    (unsigned long long)h->dir_bytes, (unsigned long long)file_size);
    }
  }
  if (h->dir_offset[0] < h->dir_offset[1] + h->dir_bytes &&
      h->dir_offset[1] < h->dir_offset[0] + h->dir_bytes) {
    return asif_refuse(why, why_len, "directories A at %llu and B at %llu overlap (%llu bytes each)",
                  (unsigned long long)h->dir_offset[0], (unsigned long long)h->dir_offset[1],
                  (unsigned long long)h->dir_bytes);
  }
  h->metadata_chunk = bytes_get_be64(buf + OFF_METADATA_CHUNK);
  if (h->metadata_chunk != 0 &&
      !__builtin_mul_overflow(h->metadata_chunk, (uint64_t)h->chunk_size, &meta) &&
      meta < h->size) {
    return asif_refuse(why, why_len, "metadata_chunk %llu lies inside the guest range",
                  (unsigned long long)h->metadata_chunk);
  }
  return 0;
}

int asif_header_parse(const uint8_t *buf, size_t len, uint64_t file_size,
                      struct asif_header *out, char *why, size_t why_len)
{
  struct asif_header h;
  int rc;

  assert(buf != NULL || len == 0);
  assert(out != NULL);
  memset(&h, 0, sizeof h);
  if (len < ASIF_HEADER_MIN || file_size < ASIF_HEADER_MIN) {
    return asif_refuse(why, why_len, "header shorter than %u bytes", ASIF_HEADER_MIN);
  }
  rc = parse_sizes(buf, file_size, &h, why, why_len);
  if (rc == 0) {
    rc = parse_counts(buf, &h, why, why_len);
  }
  if (rc == 0) {
    rc = parse_places(buf, file_size, &h, why, why_len);
  }
  if (rc != 0) {
    return rc;
  }
  h.flags = bytes_get_be32(buf + OFF_FLAGS);
  memcpy(h.guid, buf + OFF_GUID, sizeof h.guid);
  *out = h;
  return 0;
}

/* True when [a, a + alen) and [b, b + blen) share a byte (no sum wraps: callers bound). */
static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
  return a < b + blen && b < a + alen;
}

/* Checks directory entry `raw` of table t; 0 and *chunk set, or -EINVAL with why[]. */
static int entry_check(const struct asif_header *h, uint64_t t, uint64_t raw,
                       uint64_t file_size, char *why, size_t why_len)
{
  uint64_t off;

  if ((raw & ~ASIF_ENTRY_CHUNK_MASK) != 0) {
    return asif_refuse(why, why_len, "directory entry %llu (0x%016llx) has bits 55-63 set",
                  (unsigned long long)t, (unsigned long long)raw);
  }
  if (__builtin_mul_overflow(raw, (uint64_t)h->chunk_size, &off) ||
      !bytes_range_within(off, h->table_bytes, file_size)) {
    return asif_refuse(why, why_len,
                  "directory entry %llu: table chunk %llu runs past the end of the file "
                  "(%llu bytes)",
                  (unsigned long long)t, (unsigned long long)raw,
                  (unsigned long long)file_size);
  }
  /* Both directories lie inside the file (asif_header_parse), so no sum below wraps. */
  if (ranges_overlap(off, h->table_bytes, 0, h->header_size) ||
      ranges_overlap(off, h->table_bytes, h->dir_offset[0], h->dir_bytes) ||
      ranges_overlap(off, h->table_bytes, h->dir_offset[1], h->dir_bytes)) {
    return asif_refuse(why, why_len,
                  "directory entry %llu: table chunk %llu overlaps the header or a directory",
                  (unsigned long long)t, (unsigned long long)raw);
  }
  return 0;
}

int asif_directory_parse(const struct asif_header *h, const uint8_t *raw, uint64_t file_size,
                         uint64_t *sequence, uint64_t *entries, char *why, size_t why_len)
{
  assert(h != NULL && raw != NULL && sequence != NULL && entries != NULL);
  assert(h->dir_bytes == 8u * (h->dir_entries + 1u));
  *sequence = bytes_get_be64(raw);
  for (uint64_t t = 0; t < h->dir_entries; t++) {
    uint64_t e = bytes_get_be64(raw + 8u * (t + 1u));
    entries[t] = e;
    if (e == 0) {
      continue;
    }
    char line[160];
    int rc = entry_check(h, t, e, file_size, line, sizeof line);
    if (rc == 0) {
      continue;
    }
    /* t D < size: the table maps part of the guest range (t < T, and T D fits 64 bits
     * rounded up from max bytes, so t D does not overflow). */
    if (t * h->table_span < h->size) {
      return asif_refuse(why, why_len, "%s", line);
    }
    entries[t] = ASIF_DIR_ENTRY_BAD;
  }
  return 0;
}

unsigned asif_directory_pick(uint64_t sequence_a, uint64_t sequence_b)
{
  return sequence_b > sequence_a ? 1u : 0u;
}
