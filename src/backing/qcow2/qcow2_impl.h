/* SPDX-License-Identifier: MIT */
/* qcow2_impl.h: the qcow2 node's private state and the interfaces between its files
 * (QEMU's docs/interop/qcow2.txt). Not for use outside src/backing/qcow2/.
 *
 *   qcow2_header.c    parsing and validating the header cluster (pure: no I/O)
 *   qcow2.c           open, close, the vtable, dispatch of ops to the fast path or a worker
 *   qcow2_cache.c     the bounded L2 table cache (LRU, dirty tables written back in order)
 *   qcow2_map.c       guest range -> cluster kind and host offset; BLOCK_STATUS over a chain
 *   qcow2_overlap.c   the metadata clusters known at open; L2 tables and entries overlapping them
 *   qcow2_read.c      reads: normal, zero, unallocated (backing node or zeroes), compressed
 *   qcow2_compress.c  inflating compressed clusters (zlib raw deflate, zstd)
 *   qcow2_refcount.c  refcount blocks of every width, cluster allocation, deferred frees
 *   qcow2_write.c     allocating writes with copy-on-write, TRIM, WRITE_ZEROES
 *   qcow2_flush.c     metadata write-back in the order crash consistency needs; FLUSH, FUA
 *
 * Units: bytes for offsets and lengths unless a name says clusters or entries.
 * Errors: -errno. Locking: q->lock guards every field below marked [lock]; functions whose
 * comment says "lock held" are called with it held and may drop nothing. Functions that do
 * I/O (format_pread/format_pwrite/format_flush on q->file or q->backing_node) run on an
 * engine worker (ENGINE_CALL) or at open/close, never on an event loop thread.
 *
 * Crash consistency (qcow2.txt leaves the order to the writer; this is QEMU's):
 *   - data clusters and refcount increments are written to the file at once;
 *   - L2 table changes stay dirty in the cache; qcow2_meta_writeback() first syncs the file
 *     (so every refcount a dirty L2 entry relies on is durable), then writes the dirty L2
 *     tables, then, if L1 entries changed, syncs and writes the L1 table;
 *   - refcount decrements (frees) are deferred until the L2 change that dropped the last
 *     reference is durable (qcow2_refcount_free_deferred, run by the write-back);
 *   - freed clusters are never handed out again while the node is open (allocation only
 *     extends the file at q->alloc_end), so an in-flight fast-path write to a cluster a TRIM
 *     just freed can never land on another guest offset's data;
 *   - a new refcount block or refcount table is written and synced before the pointer to it.
 * So a crash at any point leaves an image `qemu-img check` passes with at most leaked
 * clusters; what FLUSH or FUA acknowledged is on disk with the metadata that reaches it.
 */
#ifndef DISKGATE_BACKING_QCOW2_IMPL_H
#define DISKGATE_BACKING_QCOW2_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backing/backing.h"
#include "backing/qcow2/qcow2.h"

/* ---- header (qcow2_header.c) ---------------------------------------------------------- */

#define QCOW2_MAGIC 0x514649fbu
#define QCOW2_MIN_CLUSTER_BITS 9u
#define QCOW2_MAX_CLUSTER_BITS 21u
#define QCOW2_BACKING_NAME_MAX 1023u
#define QCOW2_FORMAT_NAME_MAX 31u

/* incompatible_features bits */
#define QCOW2_INCOMPAT_DIRTY (1ull << 0)
#define QCOW2_INCOMPAT_CORRUPT (1ull << 1)
#define QCOW2_INCOMPAT_DATA_FILE (1ull << 2)
#define QCOW2_INCOMPAT_COMPRESSION (1ull << 3)
#define QCOW2_INCOMPAT_EXTL2 (1ull << 4)
#define QCOW2_INCOMPAT_KNOWN (QCOW2_INCOMPAT_DIRTY | QCOW2_INCOMPAT_CORRUPT | \
                              QCOW2_INCOMPAT_DATA_FILE | QCOW2_INCOMPAT_COMPRESSION | \
                              QCOW2_INCOMPAT_EXTL2)
/* compatible_features bits */
#define QCOW2_COMPAT_LAZY_REFCOUNTS (1ull << 0)

#define QCOW2_COMPRESSION_ZLIB 0u
#define QCOW2_COMPRESSION_ZSTD 1u

/* What the header cluster says, validated. */
struct qcow2_header {
  uint32_t version;             /* 2 or 3 */
  uint32_t cluster_bits;        /* 9..21 */
  uint64_t size;                /* virtual disk size */
  uint32_t crypt_method;        /* 0 only (else refused) */
  uint32_t l1_size;             /* entries */
  uint64_t l1_table_offset;     /* cluster aligned */
  uint64_t refcount_table_offset; /* cluster aligned */
  uint32_t refcount_table_clusters;
  uint32_t nb_snapshots;
  uint64_t snapshots_offset;
  uint64_t incompatible_features;
  uint64_t compatible_features;
  uint64_t autoclear_features;
  uint32_t refcount_order;      /* 0..6: refcount_bits = 1 << refcount_order */
  uint32_t header_length;       /* 72 for v2 */
  uint32_t compression_type;    /* QCOW2_COMPRESSION_* */
  bool has_backing;             /* a backing file name is recorded */
  char backing_file[QCOW2_BACKING_NAME_MAX + 1];
  bool has_backing_format;      /* the backing format extension is present */
  char backing_format[QCOW2_FORMAT_NAME_MAX + 1];
  uint64_t header_ext_end;      /* bytes of cluster 0 the header and extensions use */
};

/* Validates and decodes the header cluster `buf` (the first min(len, cluster) bytes of the
 * image; len >= 72) of an image file of `file_size` bytes. Every offset is checked to lie
 * inside the file and every table's span against overflow. Refuses (-ENOTSUP) encryption,
 * an external data file, unknown incompatible bits and unknown compression types; the
 * dirty and corrupt bits are returned for the caller to act on. On error writes one line
 * (no newline) naming the field to why[0..why_len). Returns 0, -EINVAL or -ENOTSUP.
 * Pure: any thread; the fuzz harness calls it on arbitrary bytes. */
int qcow2_header_parse(const uint8_t *buf, size_t len, uint64_t file_size,
                       struct qcow2_header *out, char *why, size_t why_len);

/* ---- L2/L1 entries ----------------------------------------------------------------------- */

#define QCOW2_OFLAG_COPIED (1ull << 63)     /* L1/L2: refcount is exactly 1 */
#define QCOW2_OFLAG_COMPRESSED (1ull << 62) /* L2: compressed cluster */
#define QCOW2_OFLAG_ZERO (1ull << 0)        /* L2 (v3, no extended L2): reads as zeroes */
#define QCOW2_L1E_OFFSET_MASK 0x00fffffffffffe00ull
#define QCOW2_L2E_OFFSET_MASK 0x00fffffffffffe00ull
#define QCOW2_SUBCLUSTERS 32u               /* per cluster with extended L2 entries */

/* ---- the node ---------------------------------------------------------------------------- */

struct qcow2_l2_table;
struct qcow2_refblock_cache;
struct qcow2_write_state;
struct qcow2_meta_map;

struct qcow2_l2_cache {
  struct qcow2_l2_table *head; /* most recently used first [lock] */
  struct qcow2_l2_table *tail; /* [lock] */
  uint32_t count;              /* tables held [lock] */
  uint32_t max;                /* tables the byte bound allows (>= 2) */
  uint32_t dirty;              /* dirty tables held [lock] */
  struct qcow2_l2_table **buckets; /* hash of host_offset -> table, nbuckets heads [lock] */
  uint32_t nbuckets;           /* a power of two */
};

/* One cached L2 table. entries[] are in host byte order: l2_entries uint64_t for standard
 * entries, 2 * l2_entries for extended ones (entry i at [2i], its subcluster bitmap at
 * [2i + 1]). */
struct qcow2_l2_table {
  uint64_t host_offset;        /* where the table lives in the file */
  uint64_t *entries;
  bool dirty;                  /* changed since written */
  uint32_t pins;               /* users holding it across an unlock; pinned: never evicted */
  uint64_t *bad;               /* NULL, or a bitmap of l2_entries bits: entries whose host
                                  clusters overlap the image's metadata (qcow2_overlap.c);
                                  a table with one is never written through */
  struct qcow2_l2_table *prev, *next;
  struct qcow2_l2_table *hnext; /* next in its hash bucket */
};

struct qcow2 {
  struct backing base;          /* vtable kind "qcow2"; base.geo.size is h.size */
  struct backing *file;         /* the image's bytes, owned */
  struct backing *backing_node; /* the backing file's node, owned; NULL: unallocated reads 0 */
  struct engine *engine;        /* opts.engine: workers for ENGINE_CALL */
  char *name;                   /* the image's path escaped for log lines, owned */
  struct qcow2_header h;
  bool writable;                /* opened for writing (not read_only, not corrupt) */

  /* derived from h */
  uint64_t cluster_size;
  uint32_t cluster_bits;
  uint32_t l2_bits;             /* log2(entries per L2 table) */
  uint32_t l2_entries;          /* guest clusters per L2 table */
  bool extended_l2;             /* 16-byte L2 entries, 32 subclusters per cluster */
  uint64_t subcluster_size;     /* cluster_size / 32 with extended L2, else cluster_size */
  uint32_t refcount_bits;       /* 1..64 */
  uint64_t refblock_entries;    /* refcounts per refcount block */

  pthread_mutex_t lock;
  uint64_t *l1;                 /* l1_size entries, host byte order [lock] */
  bool l1_dirty;                /* [lock] */
  uint64_t *reftable;           /* reftable_entries, host byte order [lock] */
  uint64_t reftable_entries;    /* [lock] */
  uint64_t alloc_end;           /* next cluster-aligned host offset to allocate [lock] */
  uint64_t *deferred_free;      /* host offsets (with cluster counts) to decrement once the
                                   L2 change dropping them is durable [lock] */
  size_t deferred_len, deferred_cap; /* entries used/allocated in deferred_free (pairs) */
  struct qcow2_l2_cache cache;  /* [lock] */
  /* fast-path child ops in flight; atomic, not [lock]: their completions run on engine
   * threads that must never wait for a lock whose holder waits for file I/O */
  _Atomic uint64_t fast_inflight;
  bool meta_corrupt;            /* a metadata entry broke the spec: writes refused [lock] */
  struct qcow2_refblock_cache *refblocks; /* recently used refcount blocks, qcow2_refcount.c
                                             [lock] */
  struct qcow2_write_state *wstate; /* writes in flight, qcow2_inflight.c [lock] */
  struct qcow2_meta_map *meta;  /* the metadata clusters at open, qcow2_overlap.c; read-only
                                   after open */
};

/* ---- dispatch (qcow2_submit.c) ---------------------------------------------------------- */

/* The node's submit (backing.h): READ and WRITE over cached, allocated clusters go to the
 * image file at once; everything else runs on an engine worker. Any thread. */
int qcow2_submit(struct backing *b, struct backing_op *op);

/* ---- L2 cache (qcow2_cache.c) ---------------------------------------------------------- */

/* Sizes the cache for `bytes` (0: QCOW2_L2_CACHE_DEFAULT) of tables of q's table size.
 * Returns 0 or -ENOMEM. Open only. */
int qcow2_cache_init(struct qcow2 *q, uint64_t bytes);

/* Frees every table (dirty ones must have been written: asserts). Close only. */
void qcow2_cache_destroy(struct qcow2 *q);

/* The cached table at `l2_offset`, moved to the front, or NULL. No I/O. Lock held. */
struct qcow2_l2_table *qcow2_cache_find(struct qcow2 *q, uint64_t l2_offset);

/* The table at `l2_offset` (cluster aligned, inside the file), read on a miss; evicting
 * the least recently used unpinned table first when full, writing it back (through
 * qcow2_meta_writeback) if dirty. A table read is checked against the image's metadata
 * (qcow2_overlap_check_table). For writers: a table overlapping other metadata, or holding
 * an entry that does (t->bad), is -EIO (the image is marked corrupt, one log line).
 * Returns 0 and *out, -EIO/-EINVAL (offset outside the file), -ENOMEM. Lock held; worker
 * thread (may do I/O with the lock held). */
int qcow2_cache_load(struct qcow2 *q, uint64_t l2_offset, struct qcow2_l2_table **out);

/* As qcow2_cache_load for readers: a table with entries overlapping metadata is returned
 * (its other entries still map; the mapping refuses the bad ones through t->bad). */
int qcow2_cache_load_read(struct qcow2 *q, uint64_t l2_offset, struct qcow2_l2_table **out);

/* A new all-zero table for `l2_offset`, cached and dirty (a freshly allocated L2 table).
 * Returns 0 and *out or -ENOMEM. Lock held; worker thread. */
int qcow2_cache_new(struct qcow2 *q, uint64_t l2_offset, struct qcow2_l2_table **out);

void qcow2_cache_mark_dirty(struct qcow2 *q, struct qcow2_l2_table *t);

/* Marks every table clean without writing it, for the close of a node whose write-back
 * failed (what was not written is lost, as after a crash). Close only. */
void qcow2_cache_drop_dirty(struct qcow2 *q);

/* Writes every dirty table (big-endian on disk) and marks it clean. The caller has synced
 * the file first (qcow2_meta_writeback does). Returns 0 or -errno. Lock held; worker. */
int qcow2_cache_write_dirty(struct qcow2 *q);

/* ---- mapping (qcow2_map.c) ------------------------------------------------------------- */

enum qcow2_kind {
  QCOW2_UNALLOC,    /* read from the backing node, or zeroes without one */
  QCOW2_ZERO,       /* reads as zeroes (zero flag, or zero subcluster bits) */
  QCOW2_NORMAL,     /* data at host_offset */
  QCOW2_COMPRESSED, /* compressed cluster: l2_entry describes it */
};

struct qcow2_map {
  enum qcow2_kind kind;
  uint64_t length;      /* bytes from the queried offset with this kind (and, for NORMAL,
                           contiguous host bytes), within one L2 table; > 0 */
  uint64_t host_offset; /* NORMAL: host byte of the queried guest offset */
  bool copied;          /* NORMAL: the L2 entry has COPIED (refcount 1: writable in place) */
  uint64_t l2_entry;    /* the raw L2 entry (COMPRESSED: its descriptor) */
  bool cached_only_miss; /* set by qcow2_map_cached: the L2 table was not cached */
  bool l2_dirty;        /* the L2 table holding the entry is dirty in the cache (or the L1
                           entry pointing to it is not yet written): not durable yet */
};

/* Maps [offset, offset + len) (inside the disk, len > 0) starting at offset: the first run
 * of one kind. Loads the L2 table through the cache. An L2 or data offset outside the
 * file, unaligned, or an entry the spec forbids (zero flag with extended L2, a compressed
 * entry in a v2 image with bad sizes...) is -EIO with one log line per image (the image is
 * then treated as corrupt for writes). Returns 0 or -errno. Lock held; worker thread. */
int qcow2_map_range(struct qcow2 *q, uint64_t offset, uint64_t len, struct qcow2_map *out);

/* As qcow2_map_range without I/O: a table not in the cache gives out->cached_only_miss.
 * Lock held; any thread (the fast path). */
int qcow2_map_cached(struct qcow2 *q, uint64_t offset, uint64_t len, struct qcow2_map *out);

/* Host clusters a compressed L2 entry's data spans: [*host_offset, + *host_len) bytes
 * (host_len <= cluster_size + 512). Returns 0 or -EIO (outside the file). Any thread. */
int qcow2_compressed_extent(const struct qcow2 *q, uint64_t l2_entry, uint64_t *host_offset,
                            uint64_t *host_len);

/* Marks the image's metadata corrupt (writes refused from now on) and logs the line
 * formatted from fmt once per image. Returns -EIO. Lock held (or open). */
int qcow2_corrupt(struct qcow2 *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- metadata overlap checks (qcow2_overlap.c) ------------------------------------------ */

/* Records the host clusters holding the image's metadata (qcow2.txt, "Host cluster
 * management"; QEMU's overlap-check=cached): the header cluster, the refcount table, the
 * refcount blocks, the active L1 table, the snapshot table, the snapshots' L1 tables and
 * the active L2 tables the L1 entries name. Clusters allocated later lie at or past
 * q->alloc_end, past all of these, so the map taken at open stays the one hostile entries
 * can hit. Refuses (-EINVAL, one line in why[0..why_len)) an image whose header-level
 * metadata (everything but L2 tables) overlaps itself: writing one would destroy another.
 * Returns 0, -EINVAL, -ENOMEM or the read error of the snapshot table. Open only, after
 * qcow2_refcount_open. */
int qcow2_overlap_open(struct qcow2 *q, char *why, size_t why_len);

/* Frees the map. Close only. */
void qcow2_overlap_close(struct qcow2 *q);

/* When the L2 table cluster at `l2_offset` is also other metadata (header, refcount table
 * or block, an L1 table, the snapshot table) or is named by two L1 entries: the name of what
 * it overlaps; else NULL. Any thread (the map is read-only). */
const char *qcow2_overlap_l2_table(const struct qcow2 *q, uint64_t l2_offset);

/* Checks every entry of the table t just read: an entry whose host cluster (a compressed
 * one's host bytes) overlaps metadata, or an active L2 table, sets its bit in t->bad
 * (allocated then) and the image corrupt (one log line). Entries unaligned or past the end
 * of the file are left to the mapping's own checks. Returns 0 or -ENOMEM. Lock held. */
int qcow2_overlap_check_table(struct qcow2 *q, struct qcow2_l2_table *t);

/* ---- compressed clusters (qcow2_compress.c) --------------------------------------------- */

/* Inflates `in` (in_len bytes read from the host) into exactly q->cluster_size bytes at
 * `out` with the image's compression type. Returns 0 or -EIO (corrupt stream). Any thread. */
int qcow2_decompress(const struct qcow2 *q, const void *in, size_t in_len, void *out);

/* ---- refcounts and allocation (qcow2_refcount.c) ----------------------------------------- */

/* Reads the refcount table; sets q->alloc_end past every cluster the file holds. Returns
 * 0 or -errno (-EINVAL: a table entry outside the file). Open only. */
int qcow2_refcount_open(struct qcow2 *q);

/* The refcount of the host cluster holding `host_offset`. Returns 0 and *out or -errno.
 * Lock held; worker. */
int qcow2_refcount_get(struct qcow2 *q, uint64_t host_offset, uint64_t *out);

/* Allocates `n` contiguous new clusters at q->alloc_end and sets their refcounts to 1 (in
 * the cached refcount blocks, written by qcow2_refcount_write_dirty before the sync every
 * L2 change relies on), allocating refcount blocks and growing the refcount table as
 * needed, each written and synced before what points to it. The data clusters are not
 * written: never written before, they read as zeroes. Returns 0 and *host_offset, or -ENOSPC, -EIO, -EFBIG (past the 56-bit limit).
 * Lock held; worker. */
int qcow2_alloc_clusters(struct qcow2 *q, uint64_t n, uint64_t *host_offset);

/* Adds `delta` (+1/-1) to the refcount of each host cluster in [host_offset, +len) in the
 * cached refcount blocks. Returns 0 or -errno (-EIO on overflow or underflow: corrupt).
 * Lock held; worker. */
int qcow2_refcount_update(struct qcow2 *q, uint64_t host_offset, uint64_t len, int delta);

/* Queues a decrement of [host_offset, +len) for after the next L2 write-back.
 * Returns 0 or -ENOMEM. Lock held. */
int qcow2_refcount_free_deferred(struct qcow2 *q, uint64_t host_offset, uint64_t len);

/* Runs the queued decrements (the L2 changes are durable); punches the host file for
 * clusters whose refcount reaches 0. Returns 0 or -errno. Lock held; worker. */
int qcow2_refcount_run_deferred(struct qcow2 *q);

/* Writes the changed bytes of the cached refcount blocks (increments and decrements not
 * yet in the file; qcow2_meta_writeback calls it before its first sync, and after the
 * deferred frees). Returns 0 or -errno. Lock held; worker. */
int qcow2_refcount_write_dirty(struct qcow2 *q);

/* True when cached refcount blocks hold changes not yet written. Lock held. */
bool qcow2_refcount_dirty(const struct qcow2 *q);

/* Runs one op of `type` (BACKING_OP_TRIM, BACKING_OP_WRITE_ZEROES) on the image file over
 * host bytes [offset, + len) and waits for it. Returns 0 or -errno. Worker thread. */
int qcow2_file_op(struct qcow2 *q, enum backing_op_type type, uint64_t offset, uint64_t len);

void qcow2_refcount_close(struct qcow2 *q);

/* ---- reads, writes, flush (qcow2_read.c, qcow2_write.c, qcow2_flush.c) ------------------- */

/* Each runs one op to completion on a worker (synchronous child I/O) and returns its
 * result (0 or -errno); the dispatcher calls op->done. Take q->lock as they need. */
int qcow2_read_slow(struct qcow2 *q, struct backing_op *op);
int qcow2_write_slow(struct qcow2 *q, struct backing_op *op);
int qcow2_discard(struct qcow2 *q, struct backing_op *op);      /* TRIM */
int qcow2_write_zeroes(struct qcow2 *q, struct backing_op *op); /* WRITE_ZEROES */
int qcow2_block_status(struct qcow2 *q, struct backing_op *op);

/* ---- writes in flight (qcow2_inflight.c) ------------------------------------------------ */

/* Waits until no op is in flight over guest bytes [start, end), then marks them in flight
 * (qcow2_write.c drops the lock while writing their data). Returns 0 or -ENOMEM. Lock held
 * (dropped while waiting); worker. */
int qcow2_inflight_enter(struct qcow2 *q, uint64_t start, uint64_t end);

/* Ends the in-flight mark [start, end) qcow2_inflight_enter set and wakes the ops waiting.
 * Lock held. */
void qcow2_inflight_leave(struct qcow2 *q, uint64_t start, uint64_t end);

/* Frees the in-flight state (no op may be in flight). Close only (qcow2_refcount_close
 * calls it). */
void qcow2_write_close(struct qcow2 *q);

/* Writes dirty metadata in the crash-consistent order above (sync, L2 tables, sync, L1,
 * deferred frees); does not sync at the end. Returns 0 or -errno. Lock held; worker. */
int qcow2_meta_writeback(struct qcow2 *q);

/* Takes q->lock. A worker that has to wait for it says so first (engine_wait_begin), as
 * for any blocking wait: the holder may be waiting for file I/O that needs a worker of the
 * same pool (the threads engine). Any thread; every worker path takes the lock this way. */
void qcow2_lock(struct qcow2 *q);

/* FLUSH: qcow2_meta_writeback, then a sync of the file under the export's sync mode.
 * Returns 0 or -errno. Takes the lock; worker. */
int qcow2_flush(struct qcow2 *q);

#endif
