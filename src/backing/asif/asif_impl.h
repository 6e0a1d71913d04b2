/* SPDX-License-Identifier: MIT */
/* asif_impl.h: the ASIF node's private state and the interfaces between its files
 * (docs/asif.md, which follows shared/asif.md: the layout reverse engineered, with the
 * checks a reader must make). Not for use outside src/backing/asif/ and its tests.
 *
 *   asif_header.c   the header and the directories: parsing and validation (pure: no I/O)
 *   asif_entry.c    locating a guest offset; decoding table and bitmap entries (pure)
 *   asif_cache.c    the bounded cache of table groups and chunk bitmaps read from the file
 *   asif_map.c      guest range -> runs of host bytes or zeroes; BLOCK_STATUS extents;
 *                   the worker's reads
 *   asif_submit.c   dispatch of ops to the fast path (cached entries) or an engine worker
 *   asif.c          open (header, directories, metadata), close, the vtable
 *
 * Geometry (all integers in the file big-endian), bs = block size, cs = chunk size:
 *   N = 4 bs data entries per group; a group is N data entries then one bitmap entry,
 *   S = 8 (N + 1) bytes; C = floor(cs / S) groups per table; a table maps D = C N cs bytes;
 *   the directory has T = ceil(max_sector_count bs / D) entries after its u64 sequence.
 * Guest offset L: table t = L / D, r = L % D; group g = r / (N cs), q = r % (N cs); data
 * index i = q / cs, offset in chunk o = q % cs. Entry = u64 at table + g S + 8 i; bitmap
 * entry = u64 at table + g S + 8 N. Entry bits 0-54: physical chunk; 55-61: reserved;
 * 62-63: status. The bitmap chunk of a group has 2 bits per block, LSB first: block s of
 * data index i is k = i (cs / bs) + s, byte k / 4, bits (k % 4) * 2.
 *
 * Units: bytes unless a name says blocks, chunks or entries. Errors: -errno.
 * Every product and sum of values from the file is overflow-checked, and every range read
 * from the file is checked against its size: a short read is an error, never zeroes. */
#ifndef DISKGATE_BACKING_ASIF_IMPL_H
#define DISKGATE_BACKING_ASIF_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backing/asif/asif.h"

/* ---- header and directories (asif_header.c) --------------------------------------------- */

#define ASIF_MAGIC 0x73686477u          /* "shdw" */
#define ASIF_VERSION 1u
#define ASIF_HEADER_MIN 0x50u           /* bytes the fixed fields need */
#define ASIF_HEADER_READ 0x200u         /* bytes of the header the parser is given (at most) */
#define ASIF_BLOCK_MAX 4096u
#define ASIF_CHUNK_MAX (64u << 20)
#define ASIF_DIR_BYTES_MAX (64u << 20)  /* 8 (T + 1) bound, checked before any allocation */
#define ASIF_ENTRY_CHUNK_MASK ((1ull << 55) - 1)
#define ASIF_ENTRY_RESERVED_MASK (((1ull << 62) - 1) & ~ASIF_ENTRY_CHUNK_MASK)
#define ASIF_ENTRY_STATUS_SHIFT 62

/* What the header says, validated, with the geometry derived from it. */
struct asif_header {
  uint32_t version;          /* 1 */
  uint32_t header_size;      /* [0x50, min(cs, file size)] */
  uint32_t flags;            /* not interpreted */
  uint64_t dir_offset[2];    /* byte offsets of directory A (0) and B (1) */
  uint8_t guid[16];
  uint64_t sector_count;     /* guest-visible blocks */
  uint64_t max_sector_count; /* blocks the directory can map */
  uint32_t chunk_size;       /* cs, bytes */
  uint32_t block_size;       /* bs, bytes: 512..4096, a multiple of 512 */
  uint64_t metadata_chunk;   /* logical chunk of the metadata; 0: none */
  /* derived */
  uint64_t size;             /* sector_count x bs: the export's size */
  uint32_t group_entries;    /* N */
  uint32_t group_bytes;      /* S */
  uint32_t table_groups;     /* C (>= 1) */
  uint32_t table_bytes;      /* C x S: the bytes of a table chunk that hold groups */
  uint64_t table_span;       /* D */
  uint64_t dir_entries;      /* T */
  uint64_t dir_bytes;        /* 8 (T + 1) <= ASIF_DIR_BYTES_MAX */
};

/* Writes the refusal line (printf format, no newline) to why[0..why_len) (why may be
 * NULL) and returns -EINVAL: the parsers' way to refuse a field. Pure: any thread. */
int asif_refuse(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Validates and decodes the header `buf` (the first min(len, ASIF_HEADER_READ) bytes of
 * the image; len >= ASIF_HEADER_MIN) of an image file of `file_size` bytes: docs/asif.md
 * "What a reader must validate" points 1-4 (magic, version, header_size, block and chunk
 * sizes, C >= 1, total_segments 0, the overflow-checked products, sector_count <= max,
 * both directories inside the file past the header, not overlapping each other). On
 * error writes one line (no newline) naming the field to why[0..why_len) (why may be
 * NULL). Returns 0 or -EINVAL. Pure: any thread; the fuzz harness calls it on any bytes. */
int asif_header_parse(const uint8_t *buf, size_t len, uint64_t file_size,
                      struct asif_header *out, char *why, size_t why_len);

/* Decodes one directory's raw bytes `raw` (h->dir_bytes of them: the sequence number, then
 * T entries) into *sequence and entries[0..T) (physical chunk of table t; 0: no table).
 * An entry whose table range [chunk cs, + table_bytes) would carry bits 55-63, overflow,
 * leave the file, or overlap the header or a directory is refused only when the table maps
 * part of the guest range [0, h->size); such an entry beyond the guest range (the metadata's
 * table) is kept as ASIF_DIR_ENTRY_BAD, so the guest range is still served. Returns 0 or
 * -EINVAL with why[] (as asif_header_parse). Pure: any thread. */
#define ASIF_DIR_ENTRY_BAD UINT64_MAX
int asif_directory_parse(const struct asif_header *h, const uint8_t *raw, uint64_t file_size,
                         uint64_t *sequence, uint64_t *entries, char *why, size_t why_len);

/* 0 or 1: which directory is active, by the higher sequence number (a tie picks 0). Pure. */
unsigned asif_directory_pick(uint64_t sequence_a, uint64_t sequence_b);

/* ---- entries (asif_entry.c) ------------------------------------------------------------- */

enum asif_status {
  ASIF_STATUS_NEVER = 0,    /* 00: never written: zeroes (chunk index must be 0) */
  ASIF_STATUS_FULL = 1,     /* 01: every block written: the whole chunk */
  ASIF_STATUS_UNMAPPED = 2, /* 10: unmapped (DKIOCUNMAP): zeroes (chunk index must be 0) */
  ASIF_STATUS_PARTIAL = 3,  /* 11: per block, from the group's bitmap chunk */
};

/* Where guest offset L lies. */
struct asif_loc {
  uint64_t table;     /* t: directory entry */
  uint32_t group;     /* g: group in the table */
  uint32_t index;     /* i: data entry in the group */
  uint64_t in_chunk;  /* o: byte offset in the data chunk */
  uint64_t entry_off; /* byte offset of the data entry in the table chunk: g S + 8 i */
  uint64_t bitmap_entry_off; /* byte offset of the group's bitmap entry: g S + 8 N */
};

/* Locates guest offset `offset` (any value < 2^64: the caller bounds it). Pure. */
void asif_locate(const struct asif_header *h, uint64_t offset, struct asif_loc *loc);

/* A decoded data entry. */
struct asif_entry {
  enum asif_status status;
  uint64_t host;      /* FULL/PARTIAL: byte offset of the data chunk; else 0 */
};

/* Decodes data entry `raw` for an image file of `file_size` bytes (docs/asif.md "What a
 * reader must validate" point 6): reserved bits set, NEVER/UNMAPPED with a chunk index,
 * FULL/PARTIAL with index 0, a chunk that overflows or leaves the file are -EINVAL with
 * why[]. Pure. */
int asif_entry_decode(const struct asif_header *h, uint64_t raw, uint64_t file_size,
                      struct asif_entry *out, char *why, size_t why_len);

/* Decodes a group's bitmap entry `raw`, needed by a PARTIAL data entry (point 7): zero,
 * any of bits 55-63 set, or a chunk that overflows or leaves the file are -EINVAL with
 * why[]. On success *host is the bitmap chunk's byte offset. Pure. */
int asif_bitmap_entry_decode(const struct asif_header *h, uint64_t raw, uint64_t file_size,
                             uint64_t *host, char *why, size_t why_len);

/* The state of block `block` (0 .. cs/bs - 1) of data index `index` in a group's bitmap
 * chunk `bitmap` (cs bytes, or at least the byte it needs: the caller passes the slice
 * and its first byte's offset `slice_off` in the chunk): 0 never written, 1 written; the
 * states 2 and 3 no source has seen are -EINVAL. Pure. */
int asif_bitmap_state(const struct asif_header *h, const uint8_t *slice, uint64_t slice_off,
                      uint32_t index, uint64_t block);

/* ---- the node --------------------------------------------------------------------------- */

/* What a cache item holds. */
enum asif_item_kind {
  ASIF_ITEM_GROUP = 1,  /* one table group: N data entries and the bitmap entry (S bytes) */
  ASIF_ITEM_BITMAP = 2, /* the bitmap bytes of one data entry's chunk: the bytes holding
                           blocks [i cs/bs, (i + 1) cs/bs) of its group's bitmap chunk */
};

/* One cached item: `len` bytes read from the file at `host`, as on disk (big-endian). */
struct asif_item {
  enum asif_item_kind kind;
  uint64_t host;
  uint32_t len;
  bool bad;                      /* BITMAP: a block of its chunk has state 10 or 11 */
  struct asif_item *prev, *next; /* LRU list, most recent first */
  struct asif_item *hnext;       /* next in its hash bucket */
  uint8_t data[];
};

/* The bounded cache of table groups and chunk bitmaps. The image is never written, so an
 * item never goes stale: the cache only bounds memory. */
struct asif_cache {
  struct asif_item *head, *tail;
  struct asif_item **buckets; /* nbuckets heads, a power of two */
  uint32_t nbuckets;
  uint64_t bytes;             /* held, counting each item's data */
  uint64_t max_bytes;         /* bound; the newest item is always kept */
};

struct asif {
  struct backing base;        /* vtable kind "asif"; base.geo.size is h.size */
  struct backing *file;       /* the image's bytes, owned */
  struct engine *engine;      /* opts.engine: workers for ENGINE_CALL; NULL: run inline */
  char *name;                 /* the image's path escaped for log lines, owned */
  struct asif_header h;
  uint64_t file_size;         /* bytes of the image file at open */
  unsigned active;            /* the directory in use: 0 (A) or 1 (B) */
  uint64_t sequence;          /* its sequence number */
  uint64_t *dir;              /* its h.dir_entries entries: table chunk, 0 or
                                 ASIF_DIR_ENTRY_BAD; read-only after open */
  pthread_mutex_t lock;       /* guards cache */
  struct asif_cache cache;    /* [lock] */
  atomic_bool reported;       /* the one log line about a malformed entry was written */
  char stable_uuid[40];       /* the metadata's stable uuid, or "" */
};

/* ---- cache (asif_cache.c) ---------------------------------------------------------------- */

/* Sizes the cache for `bytes` (0: ASIF_CACHE_DEFAULT). Returns 0 or -ENOMEM. Open only. */
int asif_cache_init(struct asif_cache *c, uint64_t bytes);

/* Frees every item. Close only. */
void asif_cache_destroy(struct asif_cache *c);

/* The cached item (kind, host), moved to the front, or NULL. No I/O, no allocation. The
 * item stays valid until the lock is dropped. Lock held; any thread (the fast path takes
 * the lock with trylock). */
const struct asif_item *asif_cache_find(struct asif_cache *c, enum asif_item_kind kind,
                                        uint64_t host);

/* Reads the item (kind, host, len bytes) from `file` into a new item, without the lock
 * (the caller does not hold it). Returns 0 and *out, -ENOMEM or the read's -errno.
 * Engine worker or main thread (synchronous I/O). */
int asif_cache_read(struct backing *file, enum asif_item_kind kind, uint64_t host,
                    uint32_t len, struct asif_item **out);

/* Adds `item` (from asif_cache_read; owned by the cache from now on: freed at once when an
 * item with its key is already cached), evicting the least recently used items while the
 * cache holds more than its bound. Lock held. */
void asif_cache_insert(struct asif_cache *c, struct asif_item *item);

/* ---- mapping (asif_map.c) ---------------------------------------------------------------- */

/* A run of logical bytes that reads one way. */
struct asif_seg {
  bool data;      /* true: `host` holds the bytes; false: they read as zeroes */
  uint64_t len;   /* bytes, > 0 */
  uint64_t host;  /* data: the file offset of the run's first byte */
};

/* What asif_map_at needs read into the cache first. */
struct asif_need {
  enum asif_item_kind kind;
  uint64_t host;
  uint32_t len;
  uint32_t index;  /* BITMAP: the data entry (0 .. N-1) whose chunk the bytes describe */
  uint64_t first;  /* BITMAP: offset in the bitmap chunk of the first byte (host - chunk) */
};

/* Maps the first run of [offset, offset + len) (len > 0; offset < the directory's span
 * T D): a table absent from the directory, data entries never written or unmapped, and
 * blocks whose bitmap state is 00 read as zeroes; fully written chunks and written blocks
 * of partly written ones as their host bytes. A run ends at the end of a chunk, or where
 * a bitmap state changes. Returns 0 and *seg; -EAGAIN and *need when a group or a chunk's
 * bitmap is not cached; -EIO with why[] (one line naming the entry) for an entry
 * docs/asif.md refuses (points 6, 7: a partly written chunk any of whose blocks has a
 * bitmap state no source has seen is refused whole), or a table the directory check kept
 * as ASIF_DIR_ENTRY_BAD. No I/O. Lock held. */
int asif_map_at(struct asif *a, uint64_t offset, uint64_t len, struct asif_seg *seg,
                struct asif_need *need, char *why, size_t why_len);

/* Reads logical [offset, offset + len) (inside the directory's span) into buf: zeroes
 * where asif_map_at says so, the file's bytes elsewhere, loading groups and chunk bitmaps
 * through the cache. Returns 0, -EIO with why[] (a malformed entry, as asif_map_at), or
 * -ENOMEM or the file's -errno with why[] untouched (the caller clears it first).
 * Lock not held; engine worker or main thread. */
int asif_read_logical(struct asif *a, void *buf, uint64_t offset, uint64_t len, char *why,
                      size_t why_len);

/* BLOCK_STATUS of op (inside h.size): HOLE|ZERO and depth 0 for zero runs, flags 0 and
 * depth 1 for data, merged; op->extent_count set (the extents before a fault, if any).
 * Returns 0 or -errno (as asif_read_logical; a malformed entry is reported through
 * asif_report). Lock not held; engine worker. */
int asif_block_status(struct asif *a, struct backing_op *op);

/* Writes the one log line about a malformed entry (the first one only) and returns -EIO.
 * Any thread. */
int asif_report(struct asif *a, const char *why);

/* ---- dispatch (asif_submit.c) ------------------------------------------------------------ */

/* The node's submit (backing.h): a READ whose groups and chunk bitmaps are cached goes to
 * the image file at once, as child ops on the caller's engine; other READs and
 * BLOCK_STATUS run on an engine worker; CACHE and FLUSH succeed at once (nothing is ever
 * written); WRITE, TRIM and WRITE_ZEROES are -EROFS. Any thread. */
int asif_submit(struct backing *b, struct backing_op *op);

#endif
