/* SPDX-License-Identifier: MIT */
/* engine.h: the disk I/O engine that the file backing submits to.
 *
 * Two engines, chosen at start-up (`--engine uring|threads`):
 *   - uring:   liburing; one ring per engine thread, submissions under a per-ring mutex,
 *              one reaper thread per ring that runs the completion callbacks.
 *   - threads: the portable engine; worker threads run pread/pwrite/fdatasync/fsync.
 * Both engines also run ENGINE_CALL requests (a blocking function such as an ioctl or an
 * fallocate) on worker threads, so the caller never blocks on the disk.
 *
 * Units: offsets and lengths in bytes. Results: bytes transferred (>= 0) or -errno.
 * Threads: engine_submit may be called from any thread, concurrently. The completion
 * callback runs on an engine thread; it must not block for long and may call
 * engine_submit again. Model: liburing's examples and Redis's ae.c (one file per engine).
 */
#ifndef DISKGATE_IO_ENGINE_H
#define DISKGATE_IO_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum engine_kind { ENGINE_URING, ENGINE_THREADS };

enum engine_opcode {
  ENGINE_READ,      /* pread(fd, buf, len, offset) */
  ENGINE_WRITE,     /* pwritev2(fd, buf, len, offset, rw_flags): RWF_DSYNC gives FUA */
  ENGINE_FDATASYNC, /* fdatasync(fd) */
  ENGINE_FSYNC,     /* fsync(fd) */
  ENGINE_CALL,      /* result = call(arg), run on a worker thread */
};

struct engine_req {
  enum engine_opcode opcode;
  int fd;
  void *buf;
  uint64_t offset;
  size_t len;
  int rw_flags;               /* RWF_* for ENGINE_WRITE, else 0 */
  /* READ/WRITE: buf lies in the buffer registered in slot fixed_buf - 1 of the ring engine's
   * ring (io/loop_bufs.h), so the ring engine uses READ_FIXED/WRITE_FIXED and the
   * kernel does not pin the pages again; 0: not registered. Other engines ignore it, and
   * the ring engine too when it hands the request to its fallback. */
  unsigned fixed_buf;
  ssize_t (*call)(void *arg); /* ENGINE_CALL: returns >= 0 or -errno */
  void *arg;
  /* Called once per successful engine_submit with bytes done or -errno. A short read
   * or write is reported as a short count; the caller decides whether to resubmit. */
  void (*complete)(struct engine_req *req, ssize_t result);
  struct engine_req *next; /* private to the engine (queues) */
};

struct engine;

/* Creates an engine with `threads` rings or workers (1..64).
 * Returns 0 and sets *out, or -EINVAL (bad arguments), -ENOMEM, -ENOSYS (io_uring not
 * available in this kernel: the caller may fall back to ENGINE_THREADS) or another -errno. */
int engine_create(enum engine_kind kind, unsigned threads, struct engine **out);

/* Queues req. Returns 0 (req->complete will be called exactly once, on an engine thread)
 * or -ESHUTDOWN when the engine is being destroyed (complete is not called). */
int engine_submit(struct engine *engine, struct engine_req *req);

/* Waits for every submitted request to complete, then frees the engine.
 * Call from one thread, after the last engine_submit. */
void engine_destroy(struct engine *engine);

/* A worker of an engine is about to wait for something another request must do first (a
 * gate, a fence: backing/file_io.c, server/fence.c): between engine_wait_begin and
 * engine_wait_end it does not count as free to run requests, and when it was the last one
 * the engine starts another worker (bounded), so a request queued behind the waiters still
 * runs. On any other thread both do nothing. Call them in pairs, on the same thread,
 * around the wait only. */
void engine_wait_begin(void);
void engine_wait_end(void);

/* "uring" or "threads". */
const char *engine_kind_name(enum engine_kind kind);

/* Parses "uring" or "threads". Returns 0 or -EINVAL. */
int engine_kind_parse(const char *text, enum engine_kind *out);

#endif
