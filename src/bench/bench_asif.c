/* SPDX-License-Identifier: MIT */
/* bench_asif.c: the ASIF row's image, written from shared/asif.md §2-6, and the --format
 * asif check (see bench_asif.h). */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench/bench_asif.h"
#include "bench/bench_proc.h"
#include "bench/bench_util.h"
#include "bench/bench_variants.h"

#define IMAGE_NAME "diskgate-bench.asif"

/* Header fields (asif.md §3), byte offsets. */
#define HDR_MAGIC 0x00
#define HDR_VERSION 0x04
#define HDR_SIZE 0x08
#define HDR_DIR_A 0x10
#define HDR_DIR_B 0x18
#define HDR_GUID 0x20
#define HDR_SECTORS 0x30
#define HDR_MAX_SECTORS 0x38
#define HDR_CHUNK 0x40
#define HDR_BLOCK 0x44
#define HDR_METADATA 0x48
#define HEADER_BYTES 0x200u /* header_size, and the directories' alignment */
#define DIR_BYTES_MAX (64u << 20)
#define STATUS_FULL (1ull << 62) /* data entry status 01: every block written */

/* The layout of one image: the geometry of asif.md §2 and where everything goes. */
struct layout {
  uint32_t bs, cs;
  uint64_t n;          /* N: data entries per group */
  uint64_t s;          /* S: bytes per group */
  uint64_t c;          /* C: groups per table */
  uint64_t d;          /* D: bytes a table maps */
  uint64_t t;          /* T: directory entries */
  uint64_t dir_bytes;  /* 8 (T + 1) */
  uint64_t dir_b;      /* byte offset of directory B (A is at HEADER_BYTES) */
  uint64_t size;       /* guest bytes */
  uint64_t tables;     /* tables that map [0, size) */
  uint64_t chunks;     /* data chunks that hold [0, size) */
  uint64_t first_table; /* physical chunk of table 0; the data chunks follow the tables */
};

static void put_be(uint8_t *p, uint64_t v, unsigned bytes)
{
  for (unsigned i = 0; i < bytes; i++) {
    p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
  }
}

/* splitmix64: the shuffle and the GUID, reproducible from the seed. */
static uint64_t next_random(uint64_t *state)
{
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Fills *l for g and a guest size; the checks of asif.md §10 points 2-3 that a writer can
 * break. Returns 0 or -EINVAL with why. */
static int layout_plan(const struct bench_asif_geometry *g, uint64_t size, struct layout *l,
                       char *why, size_t len)
{
  memset(l, 0, sizeof(*l));
  l->bs = g->block_size;
  l->cs = g->chunk_size;
  if (l->bs < 512 || l->bs > 4096 || l->bs % 512 != 0 || l->cs == 0 || l->cs % l->bs != 0 ||
      l->cs > (64u << 20)) {
    bench_fmt(why, len, "ASIF geometry: block %u, chunk %u bytes", l->bs, l->cs);
    return -EINVAL;
  }
  l->n = 4ull * l->bs;
  l->s = 8 * (l->n + 1);
  l->c = l->cs / l->s;
  l->d = l->c * l->n * l->cs; /* at most 16 * 2^26 * 2^14: no overflow */
  if (l->c == 0 || size % l->bs != 0 || size / l->bs > g->max_sector_count ||
      g->max_sector_count > UINT64_MAX / l->bs) {
    bench_fmt(why, len, "ASIF geometry: %u-byte chunks hold no table, or %llu bytes do not "
              "fit the directory in %u-byte blocks", l->cs, (unsigned long long)size, l->bs);
    return -EINVAL;
  }
  l->t = (g->max_sector_count * l->bs + l->d - 1) / l->d;
  if (l->t >= DIR_BYTES_MAX / 8) {
    bench_fmt(why, len, "ASIF geometry: a directory of %llu entries",
              (unsigned long long)l->t);
    return -EINVAL;
  }
  l->dir_bytes = 8 * (l->t + 1);
  l->dir_b = (HEADER_BYTES + l->dir_bytes + HEADER_BYTES - 1) / HEADER_BYTES * HEADER_BYTES;
  l->size = size;
  l->tables = (size + l->d - 1) / l->d;
  l->chunks = (size + l->cs - 1) / l->cs;
  l->first_table = (l->dir_b + l->dir_bytes + l->cs - 1) / l->cs;
  return 0;
}

/* Writes len bytes of buf at off; returns 0 or -errno (-EIO for a short write). */
static int write_at(int fd, const void *buf, size_t len, uint64_t off)
{
  size_t done = 0;

  while (done < len) {
    ssize_t w = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));

    if (w < 0 && errno == EINTR) {
      continue;
    }
    if (w <= 0) {
      return w < 0 ? -errno : -EIO;
    }
    done += (size_t)w;
  }
  return 0;
}

/* Reads len bytes at off into buf; a short read (the file shrank) is -EIO. */
static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
  size_t done = 0;

  while (done < len) {
    ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r <= 0) {
      return r < 0 ? -errno : -EIO;
    }
    done += (size_t)r;
  }
  return 0;
}

/* Chunk 0: the header, then directories A (sequence 0) and B (sequence 1), both naming
 * tables first_table .. first_table + tables - 1 as entries 0 .. tables - 1. */
static int write_chunk0(int fd, const struct layout *l, const struct bench_asif_geometry *g)
{
  uint64_t bytes = l->first_table * l->cs, seed = g->seed ^ 0x61736966ull; /* "asif" */
  uint8_t *buf = calloc(1, bytes);
  int rc;

  if (buf == NULL) {
    return -ENOMEM;
  }
  put_be(buf + HDR_MAGIC, 0x73686477u, 4); /* "shdw" */
  put_be(buf + HDR_VERSION, 1, 4);
  put_be(buf + HDR_SIZE, HEADER_BYTES, 4);
  put_be(buf + HDR_DIR_A, HEADER_BYTES, 8);
  put_be(buf + HDR_DIR_B, l->dir_b, 8);
  put_be(buf + HDR_GUID, next_random(&seed), 8);
  put_be(buf + HDR_GUID + 8, next_random(&seed), 8);
  put_be(buf + HDR_SECTORS, l->size / l->bs, 8);
  put_be(buf + HDR_MAX_SECTORS, g->max_sector_count, 8);
  put_be(buf + HDR_CHUNK, l->cs, 4);
  put_be(buf + HDR_BLOCK, l->bs, 2);
  put_be(buf + HDR_METADATA, 0, 8); /* no metadata chunk: none is needed to serve */
  for (unsigned k = 0; k < 2; k++) {
    uint8_t *dir = buf + (k == 0 ? HEADER_BYTES : l->dir_b);

    put_be(dir, k, 8);
    for (uint64_t t = 0; t < l->tables; t++) {
      put_be(dir + 8 * (t + 1), l->first_table + t, 8);
    }
  }
  rc = write_at(fd, buf, bytes, 0);
  free(buf);
  return rc;
}

/* The tables: logical chunk j (table j / (C N), group (j / N) % C, index j % N) maps to
 * physical chunk first_table + tables + perm[j], status 01; bitmap entries stay 0. */
static int write_tables(int fd, const struct layout *l, const uint64_t *perm)
{
  uint8_t *buf = malloc(l->cs);
  uint64_t per_table = l->c * l->n;
  int rc = 0;

  if (buf == NULL) {
    return -ENOMEM;
  }
  for (uint64_t t = 0; t < l->tables && rc == 0; t++) {
    memset(buf, 0, l->cs);
    for (uint64_t j = t * per_table; j < l->chunks && j < (t + 1) * per_table; j++) {
      uint64_t k = j - t * per_table, g = k / l->n, i = k % l->n;

      put_be(buf + g * l->s + 8 * i, STATUS_FULL | (l->first_table + l->tables + perm[j]), 8);
    }
    rc = write_at(fd, buf, l->cs, (l->first_table + t) * l->cs);
  }
  free(buf);
  return rc;
}

/* The data chunks in physical order: physical data chunk p holds logical chunk inv[p]. */
static int write_data(int raw, int fd, const struct layout *l, const uint64_t *inv)
{
  uint8_t *buf = malloc(l->cs);
  uint64_t base = (l->first_table + l->tables) * l->cs;
  int rc = 0;

  if (buf == NULL) {
    return -ENOMEM;
  }
  for (uint64_t p = 0; p < l->chunks && rc == 0; p++) {
    uint64_t off = inv[p] * l->cs;
    size_t n = l->size - off < l->cs ? (size_t)(l->size - off) : l->cs;

    if (bench_proc_interrupted()) {
      rc = -EINTR;
      break;
    }
    memset(buf + n, 0, l->cs - n);
    rc = read_at(raw, buf, n, off);
    if (rc == 0) {
      rc = write_at(fd, buf, l->cs, base + p * l->cs);
    }
  }
  free(buf);
  return rc;
}

/* Shuffles perm = 0 .. n-1 (Fisher-Yates) and sets inv to its inverse. */
static void shuffle(uint64_t *perm, uint64_t *inv, uint64_t n, uint64_t seed)
{
  for (uint64_t i = 0; i < n; i++) {
    perm[i] = i;
  }
  for (uint64_t i = n; i > 1; i--) {
    uint64_t j = next_random(&seed) % i, tmp = perm[i - 1];

    perm[i - 1] = perm[j];
    perm[j] = tmp;
  }
  for (uint64_t i = 0; i < n; i++) {
    inv[perm[i]] = i;
  }
}

/* Writes every part of the image to fd from raw; returns 0 or -errno with why. */
static int write_image(int raw, int fd, const struct layout *l,
                       const struct bench_asif_geometry *g, char *why, size_t len)
{
  uint64_t *perm = calloc(l->chunks ? l->chunks : 1, sizeof(*perm));
  uint64_t *inv = calloc(l->chunks ? l->chunks : 1, sizeof(*inv));
  int rc = -ENOMEM;

  if (perm != NULL && inv != NULL) {
    shuffle(perm, inv, l->chunks, g->seed);
    rc = write_chunk0(fd, l, g);
    rc = rc < 0 ? rc : write_tables(fd, l, perm);
    rc = rc < 0 ? rc : write_data(raw, fd, l, inv);
    if (rc == 0 && fdatasync(fd) < 0) {
      rc = -errno;
    }
  }
  if (rc < 0 && rc != -EINTR) {
    bench_fmt(why, len, "writing the ASIF image: %s", strerror(-rc));
  }
  free(perm);
  free(inv);
  return rc;
}

int bench_asif_write(const char *raw, const char *image, const struct bench_asif_geometry *g,
                     char *why, size_t len)
{
  struct layout l;
  struct stat sb;
  int in, out, rc;

  assert(g != NULL && why != NULL);
  why[0] = '\0';
  in = open(raw, O_RDONLY | O_CLOEXEC);
  if (in < 0 || fstat(in, &sb) < 0) {
    rc = -errno;
    bench_fmt(why, len, "cannot read %s: %s", raw, strerror(-rc));
    if (in >= 0) {
      close(in);
    }
    return rc;
  }
  rc = layout_plan(g, (uint64_t)sb.st_size, &l, why, len);
  if (rc < 0) {
    close(in);
    return rc;
  }
  out = open(image, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    rc = -errno;
    bench_fmt(why, len, "cannot create %s: %s", image, strerror(-rc));
    close(in);
    return rc;
  }
  rc = write_image(in, out, &l, g, why, len);
  if (close(out) < 0 && rc == 0) {
    rc = -errno;
    bench_fmt(why, len, "writing the ASIF image: %s", strerror(-rc));
  }
  close(in);
  if (rc < 0) {
    unlink(image);
  }
  return rc;
}

static void image_path(const struct bench_env *env, char *buf, size_t len)
{
  bench_fmt(buf, len, "%s/%s", env->dir, IMAGE_NAME);
}

/* Returns 0 when --dir has room for an image of the test file's size plus its metadata,
 * or -ENOSPC after one line. */
static int check_room(const struct bench_env *env)
{
  struct statvfs vfs;
  uint64_t need = env->opts->size + (16ull << 20);

  if (statvfs(env->dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < need) {
    fprintf(stderr, "diskgate bench: no room in %s for the ASIF image (%llu MiB)\n", env->dir,
            (unsigned long long)(need >> 20));
    return -ENOSPC;
  }
  return 0;
}

int bench_asif_image(struct bench_env *env, const struct bench_config *cfg, char *buf,
                     size_t len)
{
  const struct bench_asif_geometry g = { BENCH_ASIF_BLOCK, BENCH_ASIF_CHUNK,
                                         BENCH_ASIF_MAX_SECTORS, 0x6469736b67617465ull };
  char why[PATH_MAX + 64];
  int rc;

  if (cfg->image != BENCH_IMAGE_ASIF_FULL) {
    return -EINVAL;
  }
  image_path(env, buf, len);
  if (env->asif_made) {
    return 0;
  }
  rc = check_room(env);
  if (rc < 0) {
    return rc;
  }
  fprintf(stderr, "diskgate bench: writing the test file's data as an ASIF image %s\n", buf);
  rc = bench_asif_write(env->file, buf, &g, why, sizeof(why));
  if (rc < 0) {
    if (rc != -EINTR) {
      fprintf(stderr, "diskgate bench: cannot make %s: %s\n", buf, why);
    }
    return rc;
  }
  env->asif_made = true;
  return 0;
}

void bench_asif_cleanup(struct bench_env *env)
{
  if (env->asif_made && !env->opts->keep) {
    char path[PATH_MAX];

    image_path(env, path, sizeof(path));
    unlink(path);
  }
  env->asif_made = false;
}

int bench_asif_check(const struct bench_env *env, const struct bench_config *cfg, char *why,
                     size_t len)
{
  static char help[16384];
  char *argv[] = { (char *)bench_variants_binary(cfg, env->self), "serve", "--help", NULL };

  if (cfg->kind != BENCH_CFG_ASIF || cfg->server != BENCH_SERVER_DISKGATE) {
    return 0;
  }
  if (bench_proc_capture(argv, help, sizeof(help), 10.0) != 0 || strstr(help, "asif") == NULL) {
    bench_fmt(why, len, "%s cannot serve ASIF images (its `serve --help` has no --format asif)",
              argv[0]);
    return -ENOTSUP;
  }
  return 0;
}
