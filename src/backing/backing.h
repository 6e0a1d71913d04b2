/* SPDX-License-Identifier: MIT */
/* backing.h: where an export's bytes live. One vtable, one file per kind
 * (file.c: regular files, block and character devices; rbd.c: Ceph RBD images).
 * In the spirit of SQLite's VFS: a backing declares what it can do in its geometry and
 * capabilities; the server (server/durability.c, server/rmw.c) emulates the rest.
 *
 * Units: all offsets and lengths in bytes. Errors: -errno.
 * Threads: backing_submit may be called from any thread, concurrently; op->done runs on a
 * backing or engine thread, exactly once per op that backing_submit accepted.
 */
#ifndef DISKGATE_BACKING_H
#define DISKGATE_BACKING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/engine.h"

enum backing_op_type {
  BACKING_OP_READ,
  BACKING_OP_WRITE,
  BACKING_OP_FLUSH,        /* make every completed write durable, per the sync mode */
  BACKING_OP_TRIM,         /* discard: the range may read back as anything afterwards */
  BACKING_OP_WRITE_ZEROES, /* the range reads back as zero */
  BACKING_OP_BLOCK_STATUS, /* fill op->buf with struct backing_extent (allocation map) */
  BACKING_OP_CACHE,        /* prefetch the range (a hint: success does not promise speed) */
};

/* One extent of the allocation map, for BACKING_OP_BLOCK_STATUS. The flag values are
 * base:allocation's NBD_STATE_HOLE and NBD_STATE_ZERO. */
struct backing_extent {
  uint64_t length; /* bytes, > 0 */
  uint32_t flags;  /* BACKING_EXTENT_* */
  /* qemu:allocation-depth (QEMU's docs/interop/nbd.txt), set only by backings whose
   * geometry says can_depth: 0 unallocated in the whole chain, 1 this image, 2 its backing
   * file, and so on. Without can_depth the server reports 1 for every extent. */
  uint32_t depth;
};
#define BACKING_EXTENT_HOLE (1u << 0) /* not allocated */
#define BACKING_EXTENT_ZERO (1u << 1) /* reads as zeroes */

/* op->flags */
#define BACKING_FLAG_FUA     (1u << 0) /* WRITE/WRITE_ZEROES: durable before done() */
#define BACKING_FLAG_NO_HOLE (1u << 1) /* WRITE_ZEROES: keep the range allocated */
#define BACKING_FLAG_FAST_ZERO (1u << 2) /* WRITE_ZEROES: fail with -ENOTSUP, changing
                                            nothing, unless zeroing is faster than writing */

/* How FLUSH and FUA reach stable storage (the export's --sync). */
enum sync_mode {
  SYNC_FULL,  /* fdatasync on Linux (F_FULLFSYNC on macOS); FUA as RWF_DSYNC */
  SYNC_FSYNC, /* plain fsync; FUA as RWF_SYNC */
  SYNC_NONE,  /* FLUSH and FUA acknowledged without syncing: unsafe after a host crash */
};

/* QEMU's cache modes, by its names and meanings (qemu-nbd --cache): whether I/O bypasses the
 * page cache (O_DIRECT), and whether every write, trim and zeroing is durable under the
 * export's sync mode before it is acknowledged (write-through: server/durability.c adds a
 * group-committed sync, as for FUA), or only once the client sends FLUSH or FUA. */
enum cache_mode {
  CACHE_DIRECT,       /* O_DIRECT; durable at FLUSH/FUA (QEMU: none) */
  CACHE_WRITEBACK,    /* the page cache; durable at FLUSH/FUA */
  CACHE_WRITETHROUGH, /* the page cache; every write durable before its reply */
  CACHE_DIRECTSYNC,   /* O_DIRECT; every write durable before its reply */
};

/* True when the mode opens the image with O_DIRECT. Any thread. */
static inline bool cache_mode_is_direct(enum cache_mode mode)
{
  return mode == CACHE_DIRECT || mode == CACHE_DIRECTSYNC;
}

/* True when every write must be durable before its reply (writethrough, directsync). */
static inline bool cache_mode_writes_through(enum cache_mode mode)
{
  return mode == CACHE_WRITETHROUGH || mode == CACHE_DIRECTSYNC;
}

struct backing_options {
  bool read_only;
  bool force_share; /* files: with read_only, share the image with writers (file.c; QEMU -U) */
  bool allow_busy;  /* block devices: serve one writable although it is in use (file.c) */
  enum sync_mode sync;
  enum cache_mode cache;
  struct engine *engine; /* for backings that do file I/O; not owned */
  const char *ceph_conf; /* rbd: NULL for the default search */
  const char *ceph_id;   /* rbd: NULL for "admin" */
  uint64_t l2_cache_size; /* format nodes (qcow2): bytes of L2 table cache; 0: the default */
};

struct backing_geometry {
  uint64_t size;                 /* bytes */
  uint32_t logical_block_size;   /* bytes: smallest unit the backing accepts directly */
  uint32_t physical_block_size;  /* bytes: preferred unit (>= logical) */
  uint32_t direct_alignment;     /* bytes: offset/length/buffer alignment I/O needs; 1 = any */
  bool rotational;
  bool can_trim;
  bool can_zero;      /* WRITE_ZEROES supported natively or by the backing's own fallback */
  bool can_fua;       /* FUA done natively; else the server writes then flushes */
  bool can_multi_conn;/* a FLUSH through one connection covers writes of all of them */
  bool can_extents;   /* BLOCK_STATUS supported; else the server reports all data */
  bool can_cache;     /* CACHE supported; else the server acknowledges it as a no-op */
  bool can_fast_zero; /* FAST_ZERO honoured */
  bool can_depth;     /* BLOCK_STATUS fills backing_extent.depth (a format node's chain) */
  /* FLUSHes that may run at once, each on its own sync_channel 0..sync_channels-1, with
   * every channel reporting a writeback error to its own next sync (Linux errseq is per
   * open file description). 0 or 1: one FLUSH at a time. At most BACKING_SYNC_CHANNELS. */
  uint32_t sync_channels;
};

/* The most sync channels a backing offers (server/durability.c runs that many syncs). */
#define BACKING_SYNC_CHANNELS 4

struct backing_op {
  enum backing_op_type type;
  uint32_t flags;     /* BACKING_FLAG_* */
  uint64_t offset;    /* bytes */
  uint64_t length;    /* bytes; READ/WRITE at most DG_MAX_PAYLOAD */
  void *buf;          /* READ: filled; WRITE: source. Aligned to 4096 bytes.
                         BLOCK_STATUS: room for extent_max struct backing_extent. */
  uint32_t extent_max;   /* BLOCK_STATUS: entries buf holds (>= 1) */
  uint32_t extent_count; /* BLOCK_STATUS: entries filled (>= 1 on success); extents are
                            consecutive from offset and end at or before offset+length */
  /* result: 0, or -errno (EIO, ENOSPC, EPERM, EINVAL, ENOTSUP, ...). Never a short count. */
  void (*done)(struct backing_op *op, int result);
  void *opaque;       /* the caller's */
  /* The engine to submit file I/O to (NULL: the backing's). A caller running an event
   * loop (io/loop.c) passes its ring's engine and sets `nonblocking`: then submit never
   * waits (work that must wait, such as a read-modify-write's gate, moves to a worker). */
  struct engine *engine;
  bool nonblocking;
  /* READ/WRITE with `engine` set: buf lies in the buffer registered in slot fixed_buf - 1
   * of that engine's ring (io/loop_bufs.h); 0: not registered. Backings that do not
   * submit to `engine` ignore it. */
  unsigned fixed_buf;
  /* For a layer between the caller and the backing (server/durability.c): the callback
   * to run after its own step. Backings never touch it. */
  void (*chain)(struct backing_op *op, int result);
  /* Private to the backing from submit until done. */
  struct engine_req ereq;
  uint64_t progress;
  struct backing *owner;
  uint32_t gate;      /* file backing: which gate the op holds (file_io.c) */
  /* FLUSH: the channel to sync on, < geo.sync_channels (or 0). The caller runs at most one
   * FLUSH per channel at a time (see geo.sync_channels). */
  uint32_t sync_channel;
};

struct backing;

struct backing_vtable {
  const char *kind; /* "file", "rbd", ... */
  /* See the wrappers below for contracts. */
  int (*submit)(struct backing *b, struct backing_op *op);
  int (*refresh_size)(struct backing *b, uint64_t *size);
  void (*close)(struct backing *b);
};

struct backing {
  const struct backing_vtable *vt;
  struct backing_geometry geo;
  struct backing_options opts;
  char *description; /* human text for NBD_INFO_DESCRIPTION, owned */
  /* A remark on how the open went (an optional extra it left out, and why), for the log
   * once start-up has succeeded: a server that cannot start then says only why (one line);
   * "" for none. Set by the open, read by serve.c's start-up. */
  char start_note[320];
};

/* Opens the backing named by `spec`: "rbd:POOL/IMAGE[@SNAP]" for Ceph, "faulty:PATH" for
 * the fault-injecting backing (backing/faulty/faulty.h; built only with the tests), anything
 * else a path (regular file, block or character device). Returns 0 and *out, or -errno:
 * -ENOENT (missing), -EACCES, -EBUSY (already served: the lock is held), -EISDIR,
 * -EINVAL (unsupported kind), -ENOTSUP (backing kind not built in). Any thread, but not
 * concurrently for the same spec (the server opens once: at start-up, or in export_attach
 * under the export's lock). */
int backing_open(const char *spec, const struct backing_options *opts, struct backing **out);

/* What a spec promises before it is opened. */
struct backing_spec_info {
  bool costly;    /* opening it is expensive (connects to a cluster): the server opens it
                     lazily, at the first NBD_OPT_GO (server/export.h, export_attach) */
  bool read_only; /* it can only be read (an RBD snapshot) */
};

/* Checks spec's syntax without opening or touching anything. Returns 0 and *info, or
 * -EINVAL (malformed: the rbd: form is "rbd:POOL[/NAMESPACE]/IMAGE[@SNAP]") or -ENOTSUP
 * (backing kind not built in: rbd: without librbd, faulty: without the tests). A path is
 * not looked at: backing_open reports on it.
 * Any thread. */
int backing_spec_check(const char *spec, struct backing_spec_info *info);

/* Loads what opening spec will need, without opening it: for "rbd:", librados and librbd
 * (backing/rbd_lib.h: loaded at run time, so a server of files never maps them); nothing
 * for the other kinds. Returns 0, -ENOTSUP (backing kind not built in), or -ELIBACC (a
 * library cannot be loaded) with the reason in why[0..len), NUL-terminated (why may be
 * NULL). The server calls it at start-up for a spec it opens lazily, so a missing library
 * fails there rather than at the first NBD_OPT_GO. Any thread. */
int backing_spec_load(const char *spec, char *why, size_t len);

/* Submits op. Returns 0 (op->done will be called once, possibly on the calling thread
 * before this returns) or -errno (done is not called). May block briefly: the file
 * backing waits here while a read-modify-write holds its gate.
 * The caller has validated bounds against geo.size and alignment against
 * geo.direct_alignment (server/rmw.c handles unaligned requests). */
static inline int backing_submit(struct backing *b, struct backing_op *op)
{
  return b->vt->submit(b, op);
}

/* Re-reads the size (bytes) into *size and geo.size. Returns 0 or -errno. Any thread. */
int backing_refresh_size(struct backing *b, uint64_t *size);

/* Closes and frees. Only after every submitted op is done. */
void backing_close(struct backing *b);

/* Parses "full|fsync|none" / "direct|writeback|writethrough|directsync". Return 0 or
 * -EINVAL. */
int sync_mode_parse(const char *text, enum sync_mode *out);
int cache_mode_parse(const char *text, enum cache_mode *out);
const char *sync_mode_name(enum sync_mode mode);
const char *cache_mode_name(enum cache_mode mode);

#endif
