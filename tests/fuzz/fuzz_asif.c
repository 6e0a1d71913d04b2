/* SPDX-License-Identifier: MIT */
/* fuzz_asif.c: libFuzzer harness for the ASIF parser (src/backing/asif/asif_header.c and
 * asif_entry.c; docs/asif.md): asif_header_parse, asif_directory_parse and _pick,
 * asif_locate, asif_entry_decode, asif_bitmap_entry_decode and asif_bitmap_state. The
 * functions are pure: no I/O, no allocation, any thread.
 *
 * Input: an image file in memory.
 *   byte 0        knobs: bits 0-1 choose the room for the reason (1, 24, 256 bytes or
 *                 none); bit 2 takes the file size from bytes 1-8 as is (else it is at most
 *                 FILE_MAX bytes, so that most files are held whole); bit 3 gives the header
 *                 parser only ASIF_HEADER_MIN bytes (else min(file size, ASIF_HEADER_READ))
 *   bytes 1-8     the image file's size, little-endian
 *   bytes 9-16    a guest offset to walk, little-endian (taken modulo the export's size)
 *   next 0x80     the header: file bytes [0, 0x80)
 *   then          records, each a file offset (4 bytes, little-endian), a length (2 bytes,
 *                 little-endian) and that many bytes, written into the file at that offset
 *                 (cut at FILE_MAX): the directories, tables, bitmap chunks
 * Every other byte of the file is zero; bytes past FILE_MAX (a file size given as is) read
 * as zeros, as the holes of a sparse host file do.
 *
 * The harness does what the node does at open and on a read: it parses the header, reads
 * both directories, parses and picks one, then walks the mapping for a few guest offsets
 * (0, the last byte, the input's offset, the start of the last chunk, and the metadata's
 * logical offset) through the table group, the data entry, the bitmap entry and the bitmap
 * slice to the data bytes. Every range it reads is first checked to lie inside the file,
 * then copied into a buffer of exactly its length (ASan sees any read past it). Every result
 * is checked against an independent reading of the bytes and against the contract of
 * asif_impl.h: an accepted header is version 1 with sizes in range and both directories
 * inside the file past the header; a header, a directory entry, a data entry and a bitmap
 * entry are refused exactly when docs/asif.md says they must be, with -EINVAL and a
 * one-line, NUL-terminated reason. The same bytes parse the same way twice. A broken
 * invariant aborts.
 *
 * Built by tests/fuzz/run.sh (clang -fsanitize=fuzzer,address,undefined, with
 * asif_header.c and asif_entry.c alone) and, with replay_main.c, by tests/fuzz/meson.build as
 * the regression test fuzz-replay-asif over the seeds (tests/fuzz/make_asif_corpus.py) and
 * the crashes found so far (tests/fuzz/crashes/asif/). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backing/asif/asif_impl.h"

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "fuzz_asif: invariant failed at line %d: %s\n", __LINE__, #cond);   \
      abort();                                                                             \
    }                                                                                      \
  } while (0)

#define FILE_MAX (8u << 20)     /* bytes of the file held in memory */
#define HEADER_IN 0x80u         /* header bytes taken from the input */
#define DIR_WALK_MAX (2u << 20) /* larger directories are left to the header checks */
#define DIR_TWICE_MAX (64u << 10) /* larger directories are parsed once (speed) */
#define READ_MAX 4096u          /* bytes of data read per walked offset */
#define PREFIX 17u              /* knobs, file size, guest offset */

static uint8_t file_bytes[FILE_MAX]; /* zero outside the records of the current input */

struct image {
  uint64_t size;    /* the file's size */
  uint64_t held;    /* min(size, FILE_MAX): bytes in file_bytes */
  size_t room;      /* bytes of why[]; 0: no reason wanted */
};

static uint32_t be32(const uint8_t *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
  return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static uint64_t le(const uint8_t *p, unsigned n)
{
  uint64_t v = 0;

  for (unsigned i = 0; i < n; i++) {
    v |= (uint64_t)p[i] << (8 * i);
  }
  return v;
}

/* [off, off + len) inside [0, size), without overflow. */
static bool inside(uint64_t off, uint64_t len, uint64_t size)
{
  return off <= size && len <= size - off;
}

/* [a, a + alen) and [b, b + blen) share a byte (both ranges known not to wrap). */
static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
  return a < b + blen && b < a + alen;
}

/* Buffers of POOL_MIN bytes or more are kept between inputs, each allocated at exactly the
 * length asked (so ASan still sees a read past it): directories of thousands of entries
 * would otherwise cost a fresh mapping and its page faults on every input. */
#define POOL_MIN 4096u
static struct {
  void *p;
  size_t len;
  bool used;
} pool[16];

/* A buffer of exactly len bytes (at least 1), contents undefined; give it back with
 * buf_put. */
static void *buf_get(size_t len)
{
  static size_t next; /* the slot to evict first once every slot holds a buffer */
  size_t n = sizeof pool / sizeof pool[0], victim = n;
  void *p;

  if (len >= POOL_MIN) {
    for (size_t i = 0; i < n; i++) {
      if (!pool[i].used && pool[i].len == len) {
        pool[i].used = true;
        return pool[i].p;
      }
    }
    for (size_t i = 0; i < n && victim == n; i++) {
      if (pool[i].p == NULL) {
        victim = i;
      }
    }
    for (size_t k = 0; k < n && victim == n; k++) {
      if (!pool[(next + k) % n].used) {
        victim = (next + k) % n;
        next = (victim + 1) % n;
      }
    }
    if (victim < n) {
      free(pool[victim].p);
      pool[victim].p = malloc(len);
      CHECK(pool[victim].p != NULL);
      pool[victim].len = len;
      pool[victim].used = true;
      return pool[victim].p;
    }
  }
  p = malloc(len > 0 ? len : 1);
  CHECK(p != NULL);
  return p;
}

static void buf_put(void *p)
{
  for (size_t i = 0; i < sizeof pool / sizeof pool[0]; i++) {
    if (pool[i].used && pool[i].p == p) {
      pool[i].used = false;
      return;
    }
  }
  free(p);
}

/* The file's bytes [off, off + len), which must lie inside the file, in a buffer of exactly
 * len bytes (give it back with buf_put). */
static uint8_t *file_read(const struct image *img, uint64_t off, uint64_t len)
{
  uint64_t n;
  uint8_t *buf;

  CHECK(inside(off, len, img->size));
  CHECK(len <= 64u << 20);
  buf = buf_get(len);
  n = off < img->held ? img->held - off : 0;
  n = n < len ? n : len;
  if (n > 0) {
    memcpy(buf, file_bytes + off, n);
  }
  memset(buf + n, 0, len - n);
  return buf;
}

/* A refusal: -EINVAL with a reason that is one line, terminated inside its room (and not
 * empty when it fits). */
static void check_refusal(int rc, const char *why, size_t room)
{
  CHECK(rc == -EINVAL);
  if (room > 0) {
    size_t n = strnlen(why, room);
    CHECK(n < room);
    CHECK(room == 1 || n > 0);
    CHECK(memchr(why, '\n', n) == NULL);
  }
}

/* The geometry docs/asif.md derives from the header fields; false when a product overflows
 * or a bound fails. */
struct geometry {
  uint64_t n, s, c, d, t, dir_bytes, size;
};

static bool geometry_derive(uint64_t bs, uint64_t cs, uint64_t sectors, uint64_t max,
                            struct geometry *g)
{
  unsigned __int128 span, max_bytes;

  g->n = 4 * bs;
  g->s = 8 * (g->n + 1);
  g->c = cs / g->s;
  if (g->c == 0) {
    return false;
  }
  span = (unsigned __int128)g->c * g->n * cs;
  max_bytes = (unsigned __int128)max * bs;
  if (span > UINT64_MAX || max_bytes > UINT64_MAX ||
      (unsigned __int128)sectors * bs > UINT64_MAX) {
    return false;
  }
  g->d = (uint64_t)span;
  g->t = (uint64_t)(max_bytes / span) + (max_bytes % span != 0);
  if (g->t > ASIF_DIR_BYTES_MAX / 8) {
    return false;
  }
  g->dir_bytes = 8 * (g->t + 1);
  g->size = sectors * bs;
  return g->dir_bytes <= ASIF_DIR_BYTES_MAX;
}

/* Whether a header must be accepted: an independent reading of the raw bytes against
 * docs/asif.md "What a reader must validate" points 1-4, and point 8's rule that a
 * metadata chunk lies past the guest range. */
static bool header_valid(const uint8_t *buf, size_t len, uint64_t file_size)
{
  uint32_t hs, cs, bs;
  uint64_t dir[2], sectors, max, meta_chunk;
  struct geometry g;

  if (len < ASIF_HEADER_MIN || file_size < ASIF_HEADER_MIN || be32(buf) != ASIF_MAGIC ||
      be32(buf + 4) != ASIF_VERSION) {
    return false;
  }
  hs = be32(buf + 8);
  cs = be32(buf + 0x40);
  bs = (uint32_t)buf[0x44] << 8 | buf[0x45];
  sectors = be64(buf + 0x30);
  max = be64(buf + 0x38);
  if (bs == 0 || bs % 512 != 0 || bs > ASIF_BLOCK_MAX || cs == 0 || cs % bs != 0 ||
      cs > ASIF_CHUNK_MAX || hs < ASIF_HEADER_MIN || hs > cs || hs > file_size ||
      buf[0x46] != 0 || buf[0x47] != 0 || max == 0 || sectors > max ||
      !geometry_derive(bs, cs, sectors, max, &g)) {
    return false;
  }
  for (int i = 0; i < 2; i++) {
    dir[i] = be64(buf + 0x10 + 8 * i);
    if (dir[i] < hs || !inside(dir[i], g.dir_bytes, file_size)) {
      return false;
    }
  }
  if (overlap(dir[0], g.dir_bytes, dir[1], g.dir_bytes)) {
    return false;
  }
  meta_chunk = be64(buf + 0x48);
  return meta_chunk == 0 || (unsigned __int128)meta_chunk * cs >= g.size;
}

/* An accepted header against the raw bytes and docs/asif.md "What a reader must validate"
 * points 1-4. */
static void check_header(const uint8_t *buf, size_t len, uint64_t file_size,
                         const struct asif_header *h)
{
  struct geometry g;
  uint32_t bs, cs;

  CHECK(len >= ASIF_HEADER_MIN && be32(buf) == ASIF_MAGIC);
  CHECK(h->version == be32(buf + 4) && h->version == ASIF_VERSION);
  CHECK(h->header_size == be32(buf + 8) && h->header_size >= ASIF_HEADER_MIN);
  CHECK(h->header_size <= h->chunk_size && h->header_size <= file_size);
  CHECK(h->flags == be32(buf + 12));
  CHECK(h->dir_offset[0] == be64(buf + 0x10) && h->dir_offset[1] == be64(buf + 0x18));
  CHECK(memcmp(h->guid, buf + 0x20, 16) == 0);
  CHECK(h->sector_count == be64(buf + 0x30) && h->max_sector_count == be64(buf + 0x38));
  CHECK(h->chunk_size == be32(buf + 0x40));
  CHECK(h->block_size == ((uint32_t)buf[0x44] << 8 | buf[0x45]));
  CHECK(buf[0x46] == 0 && buf[0x47] == 0); /* total_segments */
  CHECK(h->metadata_chunk == be64(buf + 0x48));
  bs = h->block_size;
  cs = h->chunk_size;
  CHECK(bs >= 512 && bs <= ASIF_BLOCK_MAX && bs % 512 == 0);
  CHECK(cs > 0 && cs <= ASIF_CHUNK_MAX && cs % bs == 0);
  CHECK(h->max_sector_count > 0 && h->sector_count <= h->max_sector_count);
  CHECK(geometry_derive(bs, cs, h->sector_count, h->max_sector_count, &g));
  CHECK(h->group_entries == g.n && h->group_bytes == g.s && h->table_groups == g.c);
  CHECK(h->table_groups >= 1 && h->table_bytes == g.c * g.s && h->table_bytes <= cs);
  CHECK(h->table_span == g.d && h->dir_entries == g.t && h->dir_bytes == g.dir_bytes);
  CHECK(h->size == g.size);
  CHECK(h->dir_entries >= 1);
  for (int i = 0; i < 2; i++) {
    CHECK(h->dir_offset[i] >= h->header_size);
    CHECK(inside(h->dir_offset[i], h->dir_bytes, file_size));
  }
  CHECK(!overlap(h->dir_offset[0], h->dir_bytes, h->dir_offset[1], h->dir_bytes));
}

/* Whether a table chunk number `raw` (a directory entry) is one a reader may use: no bits
 * 55-63, its groups inside the file, clear of the header and both directories. */
static bool table_usable(const struct asif_header *h, uint64_t raw, uint64_t file_size)
{
  unsigned __int128 off = (unsigned __int128)raw * h->chunk_size;

  if ((raw & ~ASIF_ENTRY_CHUNK_MASK) != 0 || off > UINT64_MAX ||
      !inside((uint64_t)off, h->table_bytes, file_size)) {
    return false;
  }
  if (overlap((uint64_t)off, h->table_bytes, 0, h->header_size)) {
    return false;
  }
  for (int i = 0; i < 2; i++) {
    if (overlap((uint64_t)off, h->table_bytes, h->dir_offset[i], h->dir_bytes)) {
      return false;
    }
  }
  return true;
}

/* Parses directory `which` of an accepted header, checks the result against the raw
 * entries, and returns 0 with *entries (malloc'd; the caller frees) and *sequence, or the
 * parser's refusal. */
static int directory_load(const struct image *img, const struct asif_header *h, int which,
                          uint64_t **entries, uint64_t *sequence)
{
  uint8_t *raw = file_read(img, h->dir_offset[which], h->dir_bytes);
  uint64_t *e = buf_get(h->dir_entries * 8);
  bool refuse = false;
  char why[256];
  int rc;

  memset(e, 0xa5, h->dir_entries * 8); /* what the parser does not write shows */
  memset(why, 0x55, sizeof why);
  rc = asif_directory_parse(h, raw, img->size, sequence, e, img->room ? why : NULL, img->room);
  /* tables [0, guest) map part of the guest range */
  uint64_t guest = h->size / h->table_span + (h->size % h->table_span != 0);
  for (uint64_t t = 0; t < h->dir_entries; t++) {
    uint64_t v = be64(raw + 8 + 8 * t);
    bool usable;

    if (v == 0) {
      CHECK(rc != 0 || e[t] == 0);
      continue;
    }
    usable = table_usable(h, v, img->size);
    if (!usable && t < guest) {
      refuse = true;
    }
    if (rc == 0) {
      CHECK(e[t] == (usable ? v : ASIF_DIR_ENTRY_BAD));
    }
  }
  if (rc == 0) {
    CHECK(!refuse && *sequence == be64(raw));
    *entries = e;
  } else {
    CHECK(refuse);
    check_refusal(rc, why, img->room);
    buf_put(e);
  }
  buf_put(raw);
  return rc;
}

/* asif_locate against the arithmetic of docs/asif.md "Tables, chunk groups, entries". */
static void check_locate(const struct asif_header *h, uint64_t off, struct asif_loc *loc)
{
  uint64_t cs = h->chunk_size, n = h->group_entries, r, q;

  asif_locate(h, off, loc);
  r = off % h->table_span;
  q = r % (n * cs);
  CHECK(loc->table == off / h->table_span);
  CHECK(loc->group == r / (n * cs) && loc->group < h->table_groups);
  CHECK(loc->index == q / cs && loc->index < n);
  CHECK(loc->in_chunk == q % cs);
  CHECK(loc->entry_off == (uint64_t)loc->group * h->group_bytes + 8 * loc->index);
  CHECK(loc->bitmap_entry_off == (uint64_t)loc->group * h->group_bytes + 8 * n);
  CHECK(loc->bitmap_entry_off + 8 <= h->table_bytes);
}

/* Whether a data chunk number `chunk` lies in the file without overflow. */
static bool chunk_in_file(const struct asif_header *h, uint64_t chunk, uint64_t file_size,
                          uint64_t *host)
{
  unsigned __int128 off = (unsigned __int128)chunk * h->chunk_size;

  *host = (uint64_t)off;
  return off <= UINT64_MAX && inside((uint64_t)off, h->chunk_size, file_size);
}

/* Reads blocks [first, last] of a PARTIAL chunk through the group's bitmap, as a reader
 * does: the slice of the bitmap chunk that holds them, then each written block's bytes. */
static void walk_bitmap(const struct image *img, const struct asif_header *h,
                        const struct asif_loc *loc, uint64_t data_host, uint64_t bitmap_host,
                        uint64_t first, uint64_t last)
{
  uint64_t per_chunk = h->chunk_size / h->block_size;
  uint64_t k0 = loc->index * per_chunk + first, k1 = loc->index * per_chunk + last;
  uint64_t slice_off = k0 / 4, slice_len = k1 / 4 - k0 / 4 + 1;
  uint8_t *slice;

  CHECK(slice_off + slice_len <= h->chunk_size);
  slice = file_read(img, bitmap_host + slice_off, slice_len);
  for (uint64_t s = first; s <= last; s++) {
    uint64_t k = loc->index * per_chunk + s;
    unsigned want = (slice[k / 4 - slice_off] >> ((k % 4) * 2)) & 3;
    int st = asif_bitmap_state(h, slice, slice_off, loc->index, s);

    if (want <= 1) {
      CHECK(st == (int)want);
    } else {
      CHECK(st == -EINVAL);
    }
    if (st == 1) {
      buf_put(file_read(img, data_host + s * h->block_size, h->block_size));
    }
  }
  buf_put(slice);
}

/* Walks guest (or metadata) offset `off` through an accepted image's active directory to
 * at most `len` bytes of data, checking each step. */
static void walk(const struct image *img, const struct asif_header *h, const uint64_t *entries,
                 uint64_t off, uint64_t len)
{
  struct asif_loc loc;
  struct asif_entry e;
  uint64_t table, raw, braw, want_host, bitmap_host;
  bool bad;
  uint8_t *group;
  char why[256];
  int rc;

  check_locate(h, off, &loc);
  if (loc.table >= h->dir_entries) {
    return; /* beyond what the directory maps: only the metadata's offset can be */
  }
  table = entries[loc.table];
  if (table == 0) {
    return; /* no table: zeros */
  }
  if (table == ASIF_DIR_ENTRY_BAD) {
    /* never a table of the guest range */
    CHECK((unsigned __int128)loc.table * h->table_span >= h->size);
    return;
  }
  CHECK(table_usable(h, table, img->size));
  /* the table group, as the cache reads it */
  group = file_read(img, table * h->chunk_size + (uint64_t)loc.group * h->group_bytes,
                    h->group_bytes);
  raw = be64(group + 8 * loc.index);
  braw = be64(group + 8 * h->group_entries);
  buf_put(group);

  memset(why, 0x55, sizeof why);
  rc = asif_entry_decode(h, raw, img->size, &e, img->room ? why : NULL, img->room);
  {
    uint64_t chunk = raw & ASIF_ENTRY_CHUNK_MASK;
    unsigned status = (unsigned)(raw >> ASIF_ENTRY_STATUS_SHIFT);
    bool mapped = status == ASIF_STATUS_FULL || status == ASIF_STATUS_PARTIAL;

    bad = (raw & ASIF_ENTRY_RESERVED_MASK) != 0 || (mapped != (chunk != 0)) ||
          (mapped && !chunk_in_file(h, chunk, img->size, &want_host));
    if (rc != 0) {
      CHECK(bad);
      check_refusal(rc, why, img->room);
      return;
    }
    CHECK(!bad && (unsigned)e.status == status);
    CHECK(e.host == (mapped ? want_host : 0));
  }
  if (e.status == ASIF_STATUS_NEVER || e.status == ASIF_STATUS_UNMAPPED) {
    return; /* zeros */
  }
  if (len > h->chunk_size - loc.in_chunk) {
    len = h->chunk_size - loc.in_chunk;
  }
  if (len == 0) {
    return;
  }
  if (e.status == ASIF_STATUS_FULL) {
    buf_put(file_read(img, e.host + loc.in_chunk, len));
    return;
  }
  memset(why, 0x55, sizeof why);
  rc = asif_bitmap_entry_decode(h, braw, img->size, &bitmap_host, img->room ? why : NULL,
                                img->room);
  bad = braw == 0 || (braw & ~ASIF_ENTRY_CHUNK_MASK) != 0 ||
        !chunk_in_file(h, braw, img->size, &want_host);
  if (rc != 0) {
    CHECK(bad);
    check_refusal(rc, why, img->room);
    return;
  }
  CHECK(!bad && bitmap_host == want_host);
  walk_bitmap(img, h, &loc, e.host, bitmap_host, loc.in_chunk / h->block_size,
              (loc.in_chunk + len - 1) / h->block_size);
}

/* Reads, parses and picks the directories of an accepted header, then walks the offsets a
 * reader would. */
static void open_and_walk(const struct image *img, const struct asif_header *h, uint64_t pick)
{
  uint64_t *entries[2] = {NULL, NULL}, seq[2], *again = NULL, seq_again;
  unsigned active;
  int rc[2];

  if (h->dir_bytes > DIR_WALK_MAX) {
    return;
  }
  for (int i = 0; i < 2; i++) {
    rc[i] = directory_load(img, h, i, &entries[i], &seq[i]);
  }
  if (rc[0] == 0 && rc[1] == 0) {
    active = asif_directory_pick(seq[0], seq[1]);
    CHECK(active == (seq[1] > seq[0] ? 1u : 0u));
    /* the same bytes parse the same way twice */
    if (h->dir_bytes <= DIR_TWICE_MAX) {
      CHECK(directory_load(img, h, (int)active, &again, &seq_again) == 0);
      CHECK(seq_again == seq[active]);
      CHECK(memcmp(again, entries[active], h->dir_entries * 8) == 0);
      buf_put(again);
    }
    if (h->size > 0) {
      uint64_t cs = h->chunk_size;
      walk(img, h, entries[active], 0, READ_MAX);
      walk(img, h, entries[active], h->size - 1, 1);
      walk(img, h, entries[active], pick % h->size, READ_MAX);
      walk(img, h, entries[active], (h->size - 1) / cs * cs, READ_MAX);
    }
    if (h->metadata_chunk != 0 && h->metadata_chunk <= UINT64_MAX / h->chunk_size) {
      walk(img, h, entries[active], h->metadata_chunk * h->chunk_size, READ_MAX);
    }
  }
  if (entries[0] != NULL) {
    buf_put(entries[0]);
  }
  if (entries[1] != NULL) {
    buf_put(entries[1]);
  }
}

/* Writes the input's header and records into file_bytes (the input's bytes, or zeros when
 * `clear`: file_bytes is all zero again after the second call). */
static void file_build(const uint8_t *data, size_t size, uint64_t held, bool clear)
{
  size_t pos = PREFIX;
  size_t n = size - PREFIX < HEADER_IN ? size - PREFIX : HEADER_IN;

  if (n > held) {
    n = (size_t)held;
  }
  if (clear) {
    memset(file_bytes, 0, n);
  } else {
    memcpy(file_bytes, data + pos, n);
  }
  pos += HEADER_IN;
  while (pos + 6 <= size) {
    uint64_t off = le(data + pos, 4);
    uint64_t len = le(data + pos + 4, 2);

    pos += 6;
    if (len > size - pos) {
      len = size - pos;
    }
    if (off < held) {
      uint64_t k = held - off < len ? held - off : len;
      if (clear) {
        memset(file_bytes + off, 0, k);
      } else {
        memcpy(file_bytes + off, data + pos, k);
      }
    }
    pos += len;
  }
}

/* Two parses of the same header gave the same fields. */
static bool header_same(const struct asif_header *a, const struct asif_header *b)
{
  return a->version == b->version && a->header_size == b->header_size &&
         a->flags == b->flags && a->dir_offset[0] == b->dir_offset[0] &&
         a->dir_offset[1] == b->dir_offset[1] && memcmp(a->guid, b->guid, 16) == 0 &&
         a->sector_count == b->sector_count && a->max_sector_count == b->max_sector_count &&
         a->chunk_size == b->chunk_size && a->block_size == b->block_size &&
         a->metadata_chunk == b->metadata_chunk && a->size == b->size &&
         a->group_entries == b->group_entries && a->group_bytes == b->group_bytes &&
         a->table_groups == b->table_groups && a->table_bytes == b->table_bytes &&
         a->table_span == b->table_span && a->dir_entries == b->dir_entries &&
         a->dir_bytes == b->dir_bytes;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const size_t rooms[4] = {1, 24, 256, 0};
  struct asif_header h1, h2;
  struct image img;
  char why1[256], why2[256];
  uint64_t pick;
  size_t len;
  uint8_t *buf;
  int rc1, rc2;

  if (size < PREFIX) {
    return 0;
  }
  img.room = rooms[data[0] & 3];
  img.size = le(data + 1, 8);
  if ((data[0] & 4) == 0) {
    img.size %= FILE_MAX + 1ull;
  }
  pick = le(data + 9, 8);
  if (img.size < ASIF_HEADER_MIN) {
    return 0; /* a reader refuses a file this short before parsing */
  }
  img.held = img.size < FILE_MAX ? img.size : FILE_MAX;
  file_build(data, size, img.held, false);

  len = img.size < ASIF_HEADER_READ ? (size_t)img.size : ASIF_HEADER_READ;
  if (data[0] & 8) {
    len = ASIF_HEADER_MIN;
  }
  buf = file_read(&img, 0, len);
  memset(why1, 0x55, sizeof why1);
  rc1 = asif_header_parse(buf, len, img.size, &h1, img.room ? why1 : NULL, img.room);
  CHECK((rc1 == 0) == header_valid(buf, len, img.size));
  if (rc1 == 0) {
    check_header(buf, len, img.size, &h1);
  } else {
    check_refusal(rc1, why1, img.room);
  }
  rc2 = asif_header_parse(buf, len, img.size, &h2, img.room ? why2 : NULL, img.room);
  CHECK(rc2 == rc1);
  if (rc1 == 0) {
    CHECK(header_same(&h1, &h2));
    open_and_walk(&img, &h1, pick);
  } else if (img.room > 0) {
    CHECK(strcmp(why1, why2) == 0);
  }
  buf_put(buf);
  file_build(data, size, img.held, true);
  return 0;
}
