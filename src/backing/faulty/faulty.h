/* SPDX-License-Identifier: MIT */
/* faulty.h: a fault-injecting backing for tests. Spec `faulty:PATH` wraps the file backing
 * of PATH (a regular file); it opens only when the environment variable DISKGATE_TEST_FAULTS
 * is set (to the path of its control socket), and refuses with -ENOTSUP otherwise, so a
 * production server can never be made to inject faults.
 *
 * What it does to the operations that reach it:
 *   - rules choose operations (by type, byte range, and which matches: skip N, then count N)
 *     and stall them (held until released), delay them (held for MS), or fail them (done
 *     with an errno without reaching the file: EIO, ENOSPC, ...). A stalled or delayed
 *     operation has not started: a held FLUSH has not begun its sync, a held WRITE has not
 *     touched the file. stall-done and delay-done let the operation run and hold its
 *     completion instead: a FLUSH whose sync started (and finished) but whose caller has not
 *     heard of it yet.
 *   - it declares no native FUA (geo.can_fua = false), so the server's durability policy
 *     (server/durability.c) makes every FUA write durable by a FLUSH it can observe.
 *   - simulated power loss. Model: a WRITE/TRIM/WRITE_ZEROES is durable once a FLUSH that was
 *     submitted to the file after the write had completed has completed successfully, under
 *     --sync full or fsync (under --sync none the file backing does not sync) (or,
 *     were a FUA write to reach it, when that write completed). On a crash every write not
 *     durable is dropped, in-flight ones included: the image becomes the image at open plus
 *     the durable writes, applied in completion order (a TRIM or WRITE_ZEROES as zeroes).
 *     The model keeps the image as it was at open in PATH.faulty-base and folds writes into
 *     it as they become durable (unless recording); every write not yet folded is kept in
 *     memory with its data.
 *   - an event log, while recording: every operation submitted to the file ('S'), every
 *     completion ('D', injected failures included), and test marks ('M'), each with an
 *     index (seq) and a CLOCK_MONOTONIC time in ns. From it, `image K` builds the image a
 *     power loss right after the first K events would leave, for any K since `record`
 *     (crash-point enumeration, as crash-consistency checkers do). READ, BLOCK_STATUS and
 *     CACHE are not logged.
 *
 * Control protocol: a Unix stream socket at $DISKGATE_TEST_FAULTS, made at open (an old
 * socket file is replaced). One client at a time; one command per line; one reply line
 * per command, "ok[ VALUES]" or "err MESSAGE" (`events` adds N lines after "ok N").
 *   rule ACTION TYPES [off=N] [len=N] [skip=N] [count=N] [ms=N] [jitter=1] [err=NAME]
 *        ACTION: stall | delay | fail | stall-done | delay-done. TYPES: a comma list of
 *        read, write, flush, trim, zero, status (BLOCK_STATUS), cache, or any. An op matches
 *        when its type is listed and (with off=/len=) it overlaps [off, off+len). The rule
 *        acts on matches skip+1 .. skip+count (count=0, the default: every later match).
 *        delay, delay-done: ms=N (default 1000); with jitter=1 a uniform random delay in
 *        [0, ms]. fail: err=EIO (default), ENOSPC, EROFS, EDQUOT, ENOMEM, EINVAL, EPERM,
 *        ENOTSUP or a number. The first rule that matches (in the order added) and is not
 *        used up decides; its match counter advances (a rule still skipping takes the match
 *        too). -> "ok RULE_ID"
 *   clear                  removes every rule (held operations stay held) -> "ok"
 *   stalled                -> "ok N ID:TYPE:OFF:LEN[:done] ..." the stalled operations
 *                          (":done": the file backing completed it; stall-done)
 *   wait-stalled N [MS]    waits (default 10000 ms) until N operations are stalled
 *                          -> "ok COUNT", or "err timeout COUNT"
 *   release all|ID [err=NAME]  lets stalled operations proceed (or, stall-done, complete);
 *                          with err=, they fail with that errno instead (without reaching
 *                          the file; a stall-done one reports it in place of its result)
 *                          -> "ok COUNT"
 *   record                 starts the event log afresh (and stops folding) -> "ok SEQ"
 *   seq                    -> "ok SEQ" the number of events so far
 *   mark VALUE             logs a test mark -> "ok SEQ"
 *   events                 -> "ok N", then N lines "SEQ T_NS KIND ID TYPE FLAGS OFF LEN RESULT
 *                          AUX" (KIND S/D/M; TYPE read/write/flush/trim/zero/mark; RESULT
 *                          0 or -errno; AUX: for a FLUSH's D, the seq of its S, else 0;
 *                          for M, the value; ID: the operation, counted from 1)
 *   image K PATH           writes to PATH the image a power loss after the first K events
 *                          would leave (K >= the seq at `record`) -> "ok"
 *   crash [keep=P] [seed=N]  simulated power loss now: nothing completes any more, the
 *                          image file is replaced by its durable state, "ok" is sent, then
 *                          the process kills itself with SIGKILL (no shutdown sync). With
 *                          keep=P each completed write that is not durable survives with
 *                          probability P% (a disk may have written any subset of what it
 *                          was not told to make durable); default 0: all are dropped.
 *   stats                  -> "ok ops=N held=N syncs=N syncs_ok=N pending=N pending_bytes=N"
 *
 * Threads: backing_submit from any thread; a pump thread issues held operations when they
 * are due; a control thread serves the socket. The functions below are for in-process tests
 * (tests/durability) and take the struct backing that backing_open returned for the spec. */
#ifndef DISKGATE_BACKING_FAULTY_H
#define DISKGATE_BACKING_FAULTY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backing/backing.h"

/* Opens the file backing of `path` wrapped as above. Returns 0 and *out, or -errno:
 * -ENOTSUP when DISKGATE_TEST_FAULTS is not set, -EINVAL (not a regular file), the file
 * backing's errors, -EADDRINUSE
 * (cannot make the control socket), -ENOMEM. Main thread. */
int backing_faulty_open(const char *path, const struct backing_options *opts,
                        struct backing **out);

/* True when b is a faulty backing. */
bool backing_is_faulty(const struct backing *b);

/* Runs one control command (a line as in the protocol, without the newline). Returns the
 * reply (malloc'd, without a final newline; the caller frees) or NULL when out of memory.
 * `crash` here does not kill the process: it freezes the backing and rewrites the image. */
char *faulty_command(struct backing *b, const char *line);

enum faulty_event_kind { FAULTY_EV_SUBMIT = 'S', FAULTY_EV_DONE = 'D', FAULTY_EV_MARK = 'M' };

struct faulty_event {
  uint64_t seq;
  uint64_t t_ns;     /* CLOCK_MONOTONIC */
  char kind;         /* enum faulty_event_kind */
  enum backing_op_type type; /* meaningless for marks */
  uint64_t id;       /* the operation (from 1), 0 for marks */
  uint32_t flags;
  uint64_t offset, length;
  int result;        /* 0 or -errno (D) */
  uint64_t aux;      /* D of a FLUSH: the seq of its S; M: the value */
};

/* Logs a mark with `value` (recording or not, it takes a seq). Returns its seq. */
uint64_t faulty_mark(struct backing *b, uint64_t value);

/* A copy of the events recorded since `record` (caller frees *out). Returns 0 or -ENOMEM. */
int faulty_events(struct backing *b, struct faulty_event **out, size_t *count);

/* Writes the image a power loss after the first k events would leave to `path`.
 * Returns 0, -EINVAL (k outside what was recorded) or -errno. */
int faulty_image_at(struct backing *b, uint64_t k, const char *path);

#endif
