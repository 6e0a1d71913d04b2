/* SPDX-License-Identifier: MIT */
/* qcow2_create.c: an empty qcow2 v3 image (QEMU's docs/interop/qcow2.txt): the header and
 * its extensions in cluster 0, the refcount table in cluster 1, one refcount block in
 * cluster 2 and the L1 table from cluster 3 on (none for an empty disk), every L1 entry
 * zero (nothing allocated: reads come from the backing file, or zeroes). */
#include "backing/qcow2/qcow2.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/bytes.h"
#include "util/fdio.h"

#define CREATE_CLUSTER_BITS 16u
#define CREATE_CLUSTER_SIZE (1u << CREATE_CLUSTER_BITS)
#define CREATE_REFCOUNT_ORDER 4u /* refcount_bits 16 */
#define CREATE_HEADER_LENGTH 112u /* v3 fields and the compression type byte, padded to 8 */
#define CREATE_L1_MAX_BYTES (32u << 20) /* QEMU's largest L1 table */
#define CREATE_BACKING_NAME_MAX 1023u /* the spec's bound on backing_file_size */
#define EXT_BACKING_FORMAT 0xe2792acau /* header extension: backing file format name */

/* Clusters in front of the L1 table: header, refcount table, refcount block. */
#define CREATE_META_CLUSTERS 3u

/* Writes the header, its backing format extension, the end marker and the backing file
 * name into cluster0 (CREATE_CLUSTER_SIZE bytes, zeroed). */
static void header_fill(uint8_t *cluster0, uint64_t size, uint32_t l1_entries,
                        const char *backing_file, const char *backing_fmt)
{
  uint8_t *h = cluster0;
  size_t at = CREATE_HEADER_LENGTH;

  memcpy(h, "QFI\xfb", 4);
  bytes_put_be32(h + 4, 3);                      /* version */
  bytes_put_be32(h + 20, CREATE_CLUSTER_BITS);   /* cluster_bits */
  bytes_put_be64(h + 24, size);                  /* size */
  bytes_put_be32(h + 32, 0);                     /* crypt_method: none */
  bytes_put_be32(h + 36, l1_entries);            /* l1_size */
  bytes_put_be64(h + 40, (uint64_t)CREATE_META_CLUSTERS * CREATE_CLUSTER_SIZE);
  bytes_put_be64(h + 48, CREATE_CLUSTER_SIZE);   /* refcount_table_offset: cluster 1 */
  bytes_put_be32(h + 56, 1);                     /* refcount_table_clusters */
  /* nb_snapshots, snapshots_offset, the feature bitmaps: 0 */
  bytes_put_be32(h + 96, CREATE_REFCOUNT_ORDER);
  bytes_put_be32(h + 100, CREATE_HEADER_LENGTH);
  /* byte 104: compression_type 0 (zlib); 105-111: padding */
  if (backing_fmt != NULL) {
    size_t len = strlen(backing_fmt);
    bytes_put_be32(h + at, EXT_BACKING_FORMAT);
    bytes_put_be32(h + at + 4, (uint32_t)len);
    memcpy(h + at + 8, backing_fmt, len);
    at += 8 + (len + 7) / 8 * 8;
  }
  at += 8; /* the end of the extensions: type 0, length 0 */
  if (backing_file != NULL) {
    size_t len = strlen(backing_file);
    bytes_put_be64(h + 8, at);                   /* backing_file_offset */
    bytes_put_be32(h + 16, (uint32_t)len);       /* backing_file_size */
    memcpy(h + at, backing_file, len);
  }
}

/* Fills the new file fd: header, refcount table and block (every metadata cluster counted
 * once), a zeroed L1 of l1_clusters clusters. Returns 0 or -errno. */
static int image_write(int fd, uint64_t size, uint32_t l1_entries, uint32_t l1_clusters,
                       const char *backing_file, const char *backing_fmt)
{
  uint32_t clusters = CREATE_META_CLUSTERS + l1_clusters;
  uint8_t *c = calloc(1, CREATE_CLUSTER_SIZE);
  int rc;

  if (c == NULL) {
    return -ENOMEM;
  }
  assert(clusters <= CREATE_CLUSTER_SIZE / 2); /* one 16-bit refcount block covers them */
  header_fill(c, size, l1_entries, backing_file, backing_fmt);
  rc = fdio_pwrite_full(fd, c, CREATE_CLUSTER_SIZE, 0);
  memset(c, 0, CREATE_CLUSTER_SIZE);
  bytes_put_be64(c, 2ull * CREATE_CLUSTER_SIZE); /* refcount table[0]: the block, cluster 2 */
  if (rc == 0) {
    rc = fdio_pwrite_full(fd, c, CREATE_CLUSTER_SIZE, CREATE_CLUSTER_SIZE);
  }
  memset(c, 0, CREATE_CLUSTER_SIZE);
  for (uint32_t i = 0; i < clusters; i++) {
    bytes_put_be16(c + 2 * i, 1);
  }
  if (rc == 0) {
    rc = fdio_pwrite_full(fd, c, CREATE_CLUSTER_SIZE, 2ull * CREATE_CLUSTER_SIZE);
  }
  if (rc == 0 && ftruncate(fd, (off_t)clusters * CREATE_CLUSTER_SIZE) < 0) {
    rc = -errno; /* the L1 clusters: zeroes */
  }
  if (rc == 0 && fsync(fd) < 0) {
    rc = -errno;
  }
  free(c);
  return rc;
}

int qcow2_create(const char *path, uint64_t size, const char *backing_file,
                 const char *backing_fmt)
{
  uint64_t per_l1 = (uint64_t)CREATE_CLUSTER_SIZE * (CREATE_CLUSTER_SIZE / 8); /* 512 MiB */
  uint64_t l1_entries = size / per_l1 + (size % per_l1 != 0);
  uint64_t l1_bytes = l1_entries * 8;
  uint32_t l1_clusters;
  size_t ext;
  int fd, rc;

  if ((backing_file == NULL) != (backing_fmt == NULL) ||
      (backing_fmt != NULL && backing_fmt[0] == '\0')) {
    return -EINVAL; /* a backing file is followed only with its format (QEMU >= 6.1) */
  }
  if (l1_bytes > CREATE_L1_MAX_BYTES) {
    return -EFBIG;
  }
  l1_clusters = (uint32_t)((l1_bytes + CREATE_CLUSTER_SIZE - 1) / CREATE_CLUSTER_SIZE);
  ext = backing_fmt != NULL ? 8 + (strlen(backing_fmt) + 7) / 8 * 8 : 0;
  if (backing_file != NULL &&
      (strlen(backing_file) == 0 || strlen(backing_file) > CREATE_BACKING_NAME_MAX ||
       strlen(backing_fmt) > 255 || /* a format's name is short (QEMU's are at most 16) */
       CREATE_HEADER_LENGTH + ext + 8 + strlen(backing_file) > CREATE_CLUSTER_SIZE)) {
    return -ENAMETOOLONG;
  }
  fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return -errno;
  }
  rc = image_write(fd, size, (uint32_t)l1_entries, l1_clusters, backing_file, backing_fmt);
  if (close(fd) < 0 && rc == 0) {
    rc = -errno;
  }
  if (rc < 0) {
    unlink(path);
  }
  return rc;
}
