/* SPDX-License-Identifier: MIT */
/* qcow2_header.c: decoding and validating the header cluster of a qcow2 image (QEMU's
 * docs/interop/qcow2.txt, "Header", "Header extensions", "Feature name table"). Pure: no
 * I/O, no allocation, no global state, so the fuzz harness may call it on any bytes. */
#include "backing/qcow2/qcow2_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define HEADER_V2_LENGTH 72u
#define HEADER_V3_MIN_LENGTH 104u
#define HEADER_COMPRESSION_TYPE_OFFSET 104u
#define EXT_END 0x00000000u
#define EXT_BACKING_FORMAT 0xe2792acau
#define EXT_FEATURE_TABLE 0x6803f857u
#define EXT_DATA_FILE 0x44415441u
#define FEATURE_ENTRY_SIZE 48u
#define FEATURE_NAME_SIZE 46u
#define EXTL2_MIN_CLUSTER_BITS 14u
/* QEMU's implementation limits: 32 MiB of L1 table, 8 MiB of refcount table. */
#define L1_MAX_BYTES (32ull << 20)
#define REFTABLE_MAX_BYTES (8ull << 20)
/* Host offsets are 56-bit in L1/L2 entries (bits 9-55). */
#define HOST_OFFSET_LIMIT (1ull << 56)

static uint32_t get_be32(const uint8_t *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
  return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* Writes the refusal line and returns rc. */
static int refuse(int rc, char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int refuse(int rc, char *why, size_t why_len, const char *fmt, ...)
{
  va_list ap;

  if (why != NULL && why_len > 0) {
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
  }
  return rc;
}

/* True when [offset, offset + len) lies inside a file of file_size bytes. */
static bool span_inside(uint64_t offset, uint64_t len, uint64_t file_size)
{
  return offset <= file_size && len <= file_size - offset;
}

/* The feature name table's name for incompatible bit `bit`, or "" (name[] has room for
 * FEATURE_NAME_SIZE + 1 bytes). `table` holds `len` bytes of entries. */
static void feature_name(const uint8_t *table, uint32_t len, unsigned bit, char *name)
{
  name[0] = '\0';
  for (uint32_t i = 0; table != NULL && i + FEATURE_ENTRY_SIZE <= len; i += FEATURE_ENTRY_SIZE) {
    if (table[i] == 0 && table[i + 1] == bit) {
      size_t n = 0;
      while (n < FEATURE_NAME_SIZE && table[i + 2 + n] >= 0x20 && table[i + 2 + n] < 0x7f) {
        name[n] = (char)table[i + 2 + n];
        n++;
      }
      name[n] = '\0';
      return;
    }
  }
}

/* Decodes the fixed fields (both versions). Returns 0, -EINVAL or -ENOTSUP. */
static int parse_fixed(const uint8_t *buf, size_t len, struct qcow2_header *h, char *why,
                       size_t why_len)
{
  memset(h, 0, sizeof *h);
  if (len < HEADER_V2_LENGTH) {
    return refuse(-EINVAL, why, why_len, "header shorter than %u bytes", HEADER_V2_LENGTH);
  }
  if (get_be32(buf) != QCOW2_MAGIC) {
    return refuse(-EINVAL, why, why_len, "magic is not QFI\\xfb");
  }
  h->version = get_be32(buf + 4);
  if (h->version != 2 && h->version != 3) {
    return refuse(-ENOTSUP, why, why_len, "version %u (only 2 and 3 are served)", h->version);
  }
  h->cluster_bits = get_be32(buf + 20);
  if (h->cluster_bits < QCOW2_MIN_CLUSTER_BITS || h->cluster_bits > QCOW2_MAX_CLUSTER_BITS) {
    return refuse(-EINVAL, why, why_len, "cluster_bits %u out of range %u-%u", h->cluster_bits,
                  QCOW2_MIN_CLUSTER_BITS, QCOW2_MAX_CLUSTER_BITS);
  }
  h->size = get_be64(buf + 24);
  h->crypt_method = get_be32(buf + 32);
  h->l1_size = get_be32(buf + 36);
  h->l1_table_offset = get_be64(buf + 40);
  h->refcount_table_offset = get_be64(buf + 48);
  h->refcount_table_clusters = get_be32(buf + 56);
  h->nb_snapshots = get_be32(buf + 60);
  h->snapshots_offset = get_be64(buf + 64);
  h->refcount_order = 4;
  h->header_length = HEADER_V2_LENGTH;
  if (h->version == 2) {
    return 0;
  }
  if (len < HEADER_V3_MIN_LENGTH) {
    return refuse(-EINVAL, why, why_len, "version 3 header shorter than %u bytes",
                  HEADER_V3_MIN_LENGTH);
  }
  h->incompatible_features = get_be64(buf + 72);
  h->compatible_features = get_be64(buf + 80);
  h->autoclear_features = get_be64(buf + 88);
  h->refcount_order = get_be32(buf + 96);
  h->header_length = get_be32(buf + 100);
  if (h->header_length < HEADER_V3_MIN_LENGTH || h->header_length % 8 != 0 ||
      h->header_length > (1u << h->cluster_bits) || h->header_length > len) {
    return refuse(-EINVAL, why, why_len,
                  "header_length %u (at least %u, a multiple of 8, inside the header cluster)",
                  h->header_length, HEADER_V3_MIN_LENGTH);
  }
  if (h->header_length > HEADER_COMPRESSION_TYPE_OFFSET) {
    h->compression_type = buf[HEADER_COMPRESSION_TYPE_OFFSET];
  }
  return 0;
}

/* Checks the feature bits, encryption and the compression type. */
static int check_features(const struct qcow2_header *h, const uint8_t *ftable, uint32_t flen,
                          char *why, size_t why_len)
{
  uint64_t unknown = h->incompatible_features & ~QCOW2_INCOMPAT_KNOWN;

  if (unknown != 0) {
    char name[FEATURE_NAME_SIZE + 1];
    unsigned bit = (unsigned)__builtin_ctzll(unknown);
    feature_name(ftable, flen, bit, name);
    return refuse(-ENOTSUP, why, why_len, "unknown incompatible feature bit %u%s%s%s", bit,
                  name[0] != '\0' ? " (\"" : "", name, name[0] != '\0' ? "\")" : "");
  }
  if (h->incompatible_features & QCOW2_INCOMPAT_DATA_FILE) {
    return refuse(-ENOTSUP, why, why_len, "an external data file (incompatible bit 2)");
  }
  if (h->crypt_method != 0) {
    return refuse(-ENOTSUP, why, why_len, "encryption (crypt_method %u)", h->crypt_method);
  }
  if (h->refcount_order > 6) {
    return refuse(-EINVAL, why, why_len, "refcount_order %u out of range 0-6",
                  h->refcount_order);
  }
  if ((h->incompatible_features & QCOW2_INCOMPAT_EXTL2) &&
      h->cluster_bits < EXTL2_MIN_CLUSTER_BITS) {
    return refuse(-EINVAL, why, why_len, "extended L2 entries with cluster_bits %u (at least %u)",
                  h->cluster_bits, EXTL2_MIN_CLUSTER_BITS);
  }
  if ((h->incompatible_features & QCOW2_INCOMPAT_COMPRESSION) != 0) {
    if (h->compression_type == QCOW2_COMPRESSION_ZLIB) {
      return refuse(-EINVAL, why, why_len, "compression type bit set with compression_type 0");
    }
  } else if (h->compression_type != QCOW2_COMPRESSION_ZLIB) {
    return refuse(-EINVAL, why, why_len, "compression_type %u without the compression type bit",
                  h->compression_type);
  }
  if (h->compression_type > QCOW2_COMPRESSION_ZSTD) {
    return refuse(-ENOTSUP, why, why_len, "compression_type %u (only zlib 0 and zstd 1)",
                  h->compression_type);
  }
  return 0;
}

/* Checks the tables' offsets and sizes against the cluster size and the file. */
static int check_tables(const struct qcow2_header *h, uint64_t file_size, char *why,
                        size_t why_len)
{
  uint64_t cluster = 1ull << h->cluster_bits;
  uint32_t entry_bits = (h->incompatible_features & QCOW2_INCOMPAT_EXTL2) ? 4 : 3;
  uint64_t per_l1 = cluster << (h->cluster_bits - entry_bits); /* guest bytes per L1 entry */
  uint64_t l1_needed = h->size / per_l1 + (h->size % per_l1 != 0);
  uint64_t reftable_bytes = (uint64_t)h->refcount_table_clusters << h->cluster_bits;

  if (h->size > (1ull << 62)) {
    return refuse(-EINVAL, why, why_len, "size %llu larger than 2^62 bytes",
                  (unsigned long long)h->size);
  }
  if ((uint64_t)h->l1_size * 8 > L1_MAX_BYTES) {
    return refuse(-EINVAL, why, why_len, "l1_size %u over the 32 MiB limit", h->l1_size);
  }
  if (h->l1_size < l1_needed) {
    return refuse(-EINVAL, why, why_len, "l1_size %u too small for size %llu (needs %llu)",
                  h->l1_size, (unsigned long long)h->size, (unsigned long long)l1_needed);
  }
  if (h->l1_size > 0 && (h->l1_table_offset == 0 || h->l1_table_offset % cluster != 0 ||
                         !span_inside(h->l1_table_offset, (uint64_t)h->l1_size * 8, file_size))) {
    return refuse(-EINVAL, why, why_len,
                  "l1_table_offset %#llx unaligned, over the header or past the end of the file",
                  (unsigned long long)h->l1_table_offset);
  }
  if (h->refcount_table_clusters == 0 || reftable_bytes > REFTABLE_MAX_BYTES) {
    return refuse(-EINVAL, why, why_len, "refcount_table_clusters %u out of range",
                  h->refcount_table_clusters);
  }
  if (h->refcount_table_offset == 0 || h->refcount_table_offset % cluster != 0 ||
      !span_inside(h->refcount_table_offset, reftable_bytes, file_size)) {
    return refuse(-EINVAL, why, why_len,
                  "refcount_table_offset %#llx unaligned, over the header or past the end of "
                  "the file", (unsigned long long)h->refcount_table_offset);
  }
  if (h->nb_snapshots > 0 &&
      (h->snapshots_offset == 0 || h->snapshots_offset % cluster != 0 ||
       h->snapshots_offset >= file_size)) {
    return refuse(-EINVAL, why, why_len,
                  "snapshots_offset %#llx unaligned or past the end of the file",
                  (unsigned long long)h->snapshots_offset);
  }
  if (file_size >= HOST_OFFSET_LIMIT) {
    return refuse(-EINVAL, why, why_len, "image file larger than 2^56 bytes");
  }
  return 0;
}

/* Copies the `n`-byte string at p into out (room for max + 1). Returns false when it holds
 * a NUL byte. */
static bool copy_name(char *out, const uint8_t *p, uint32_t n)
{
  if (memchr(p, '\0', n) != NULL) {
    return false;
  }
  memcpy(out, p, n);
  out[n] = '\0';
  return true;
}

/* Walks the header extensions in buf[header_length, limit). Fills the backing format and
 * header_ext_end; returns the feature name table through *ftable, *flen. */
static int walk_extensions(const uint8_t *buf, uint32_t limit, struct qcow2_header *h,
                           const uint8_t **ftable, uint32_t *flen, char *why, size_t why_len)
{
  uint32_t off = h->header_length;

  *ftable = NULL;
  *flen = 0;
  while (off < limit) {
    uint32_t type, elen;
    if (limit - off < 8) {
      return refuse(-EINVAL, why, why_len, "header extension at %u overruns the header", off);
    }
    type = get_be32(buf + off);
    elen = get_be32(buf + off + 4);
    if (type == EXT_END) {
      off += 8;
      break;
    }
    if (elen > limit - off - 8) {
      return refuse(-EINVAL, why, why_len,
                    "header extension %#x at %u: length %u overruns the header", type, off, elen);
    }
    if (type == EXT_BACKING_FORMAT) {
      if (elen > QCOW2_FORMAT_NAME_MAX || !copy_name(h->backing_format, buf + off + 8, elen)) {
        return refuse(-EINVAL, why, why_len, "backing format extension: length %u or NUL byte",
                      elen);
      }
      h->has_backing_format = true;
    } else if (type == EXT_FEATURE_TABLE) {
      *ftable = buf + off + 8;
      *flen = elen;
    } else if (type == EXT_DATA_FILE) {
      return refuse(-ENOTSUP, why, why_len, "an external data file (header extension)");
    }
    off += 8;
    off += (elen + 7u) & ~7u;
    if (off > limit) {
      off = limit; /* the last extension's padding is cut by the backing file name */
    }
  }
  h->header_ext_end = off;
  return 0;
}

int qcow2_header_parse(const uint8_t *buf, size_t len, uint64_t file_size,
                       struct qcow2_header *out, char *why, size_t why_len)
{
  struct qcow2_header *h = out;
  const uint8_t *ftable;
  uint64_t backing_offset;
  uint32_t backing_size, limit, flen;
  int rc;

  if (why != NULL && why_len > 0) {
    why[0] = '\0';
  }
  rc = parse_fixed(buf, len, h, why, why_len);
  if (rc < 0) {
    return rc;
  }
  if (len > (1u << h->cluster_bits)) {
    len = 1u << h->cluster_bits;
  }
  limit = (uint32_t)len;
  backing_offset = get_be64(buf + 8);
  backing_size = get_be32(buf + 16);
  if (backing_offset != 0 && backing_size > 0) {
    if (backing_size > QCOW2_BACKING_NAME_MAX || backing_offset < h->header_length ||
        backing_offset > limit || backing_size > limit - backing_offset) {
      return refuse(-EINVAL, why, why_len,
                    "backing file name (offset %llu, length %u) outside the header cluster or "
                    "longer than %u bytes", (unsigned long long)backing_offset, backing_size,
                    QCOW2_BACKING_NAME_MAX);
    }
    if (!copy_name(h->backing_file, buf + backing_offset, backing_size)) {
      return refuse(-EINVAL, why, why_len, "backing file name holds a NUL byte");
    }
    h->has_backing = true;
    limit = (uint32_t)backing_offset;
  }
  if (h->version == 2) {
    h->header_ext_end = HEADER_V2_LENGTH;
  }
  rc = walk_extensions(buf, limit, h, &ftable, &flen, why, why_len);
  if (rc < 0) {
    return rc;
  }
  rc = check_features(h, ftable, flen, why, why_len);
  if (rc < 0) {
    return rc;
  }
  return check_tables(h, file_size, why, why_len);
}
