/* SPDX-License-Identifier: MIT */
/* dur_harness.h: the harness of the durability unit tests (test_durability.c,
 * test_crash_points.c). It drives server/durability.c through the fault-injecting backing
 * (backing/faulty/faulty.h), whose event log records the order of write completions and syncs as
 * the file backing saw them; requests add marks to the same log when they are submitted
 * and when they are acknowledged, so that one total order holds both. A test owns one
 * struct ctx (cmocka's state): a 4 MiB image of 1024 slots of BLOCK bytes in a fresh
 * directory under /tmp, its faulty backing (recording from the start) and an export with
 * --sync full. Units: bytes, slots of BLOCK bytes, log sequence numbers (seq).
 * Threads: the harness_submit_* requests complete on the engine's threads; every other
 * function on the test's thread. Failures end the test through cmocka's assertions. */
#ifndef DISKGATE_TESTS_DUR_HARNESS_H
#define DISKGATE_TESTS_DUR_HARNESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backing/faulty/faulty.h"
#include "io/engine.h"
#include "server/durability.h"
#include "server/export.h"

#define BLOCK 4096u
#define IMAGE_SIZE (4u << 20) /* 1024 slots of BLOCK bytes */
#define SLOTS (IMAGE_SIZE / BLOCK)

/* Marks: kind in the top byte, the request id in the low 32 bits. */
enum { M_WSUB = 1, M_WACK, M_FSUB, M_FACK, M_FUAACK, M_FAIL };
#define MARK(kind, id) (((uint64_t)(kind) << 56) | (uint32_t)(id))
#define MARK_KIND(v) ((int)((v) >> 56))
#define MARK_ID(v) ((uint32_t)(v))

struct ctx {
  char dir[64], img[96], ctl[96];
  struct engine *engine;
  struct backing *b;
  struct export *e;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  unsigned next_id;
  bool write_through; /* --cache writethrough or directsync: every write durable at its ack */
};

struct treq {
  struct backing_op op; /* first */
  struct ctx *c;
  unsigned id;
  bool fua;
  bool done;
  int result;
};

/* The faulty backing's event log (faulty_events), owned by the caller (free ev). */
struct log {
  struct faulty_event *ev;
  size_t n;
};

/* Writes of the log, one per slot (the tests never write a slot twice). */
struct wrec {
  unsigned id;
  uint64_t slot;
  uint64_t done;    /* D seq in the backing */
  uint64_t ack;     /* ack mark seq, or UINT64_MAX */
  bool fua;
  bool ok;
};

/* The writes and FLUSHes of a log, as harness_model_build and harness_check_invariant
 * read them. */
struct model {
  struct wrec w[SLOTS];
  size_t nw;
  struct frec {
    unsigned id;
    uint64_t sub, ack;
    bool ok;
  } f[4096];
  size_t nf;
};

/* The invariant, for writes whose slots are known: see test_durability.c's file comment.
 * `writes` lists (id, slot, fua) of every write request; their D seq comes from the log by
 * offset. */
struct wdesc {
  unsigned id;
  uint64_t slot;
  bool fua; /* durable at its acknowledgement: FUA, or any write under write-through */
};

/* cmocka set-up and tear-down of a struct ctx (see the file comment); the engine is the
 * suite's (DG_ENGINE), or worker threads when io_uring is missing. Return 0. harness_setup
 * opens the image with --cache writeback; _writethrough and _directsync (O_DIRECT) with
 * those modes, _cache with any. */
int harness_setup(void **state);
int harness_setup_writethrough(void **state);
int harness_setup_directsync(void **state);
int harness_setup_cache(void **state, enum cache_mode cache);
int harness_teardown(void **state);

/* A cmocka test entry with the harness's set-up and tear-down. */
#define HARNESS_TEST(fn) cmocka_unit_test_setup_teardown(fn, harness_setup, harness_teardown)

/* Runs a control command of the faulty backing (printf-style) and requires "ok". */
void harness_ctl(struct ctx *c, const char *fmt, ...);

/* The export's backing runs at most n syncs at once (n <= BACKING_SYNC_CHANNELS). */
void harness_channels_set(struct ctx *c, uint32_t n);

/* The faulty backing's id of the oldest stalled operation (one must be stalled). */
uint64_t harness_stalled_oldest(struct ctx *c);

/* The completion callback of the harness's requests through the durability policy: marks
 * the acknowledgement (or failure) in the log, then sets the treq's result and done. */
void harness_req_done(struct backing_op *op, int result);

/* A completion callback for a FLUSH sent straight to a backing: sets the treq's result
 * and done (no marks: the backing may not be the faulty one). */
void harness_flush_channel_done(struct backing_op *op, int result);

/* The content of request id's write, BLOCK bytes at buf: its id in every 8 bytes. */
void harness_fill(void *buf, unsigned id);

/* A WRITE of one slot (with FUA when fua) or a FLUSH, submitted through the durability
 * policy with a fresh id and marked in the log; the caller waits for and frees it. */
struct treq *harness_submit_write(struct ctx *c, uint64_t slot, bool fua);
struct treq *harness_submit_flush(struct ctx *c);

/* Waits until r completes and returns its result (0 or -errno); _free also frees it. */
int harness_wait_req(struct treq *r);
int harness_wait_free(struct treq *r);

/* Whether r has completed, without waiting. */
bool harness_is_done(struct treq *r);

/* Frees r and its buffer (it must have completed). */
void harness_req_free(struct treq *r);

/* The event log so far (the caller frees l.ev). */
struct log harness_log_get(struct ctx *c);

/* Events of one kind (FAULTY_EV_*) and type in the log. */
size_t harness_count_events(const struct log *l, char kind, enum backing_op_type type);

/* m(k): the largest S seq of a sync whose successful D is before seq k; 0 when none. */
uint64_t harness_durable_mark(const struct log *l, uint64_t k);

/* The FLUSH requests of the log (their submit and acknowledgement marks) into m. */
void harness_model_build(const struct log *l, struct model *m);

/* Fails the test unless every acknowledged FUA write and every write acknowledged before
 * an acknowledged FLUSH was submitted is covered by a sync that started after the write
 * completed and completed before the acknowledgement (test_durability.c's invariant). */
void harness_check_invariant(const struct log *l, const struct wdesc *writes, size_t nwrites);

/* Fails the test unless slot `slot` of the image at path holds request id's data (or
 * zeroes when id is 0). */
void harness_assert_slot(const char *path, uint64_t slot, unsigned id);

#endif
