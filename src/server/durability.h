/* durability.h: the export's durability policy for writes, FUA and FLUSH.
 *
 * Rules (doc/proto.md "Ordering of messages and writes"; spec rules 26-27):
 *   - FLUSH is replied to only after a sync that started after every write already replied
 *     to had completed; under --sync none it succeeds without syncing.
 *   - A FUA write is replied to only once its own data is durable: natively (RWF_DSYNC in
 *     the file backing) or, for backings without native FUA, by a flush after the write.
 *   - A failed sync is sticky: that FLUSH and every later one on the export fail with EIO
 *     (the page cache may have dropped the dirty data), until restart.
 * Any thread. Completion runs op->chain... see each function. */
#ifndef DISKGATE_SERVER_DURABILITY_H
#define DISKGATE_SERVER_DURABILITY_H

#include "backing/backing.h"
#include "server/export.h"

/* Submits op (READ, WRITE, TRIM, WRITE_ZEROES or FLUSH) to the export's backing with the
 * policy above. `done` is called exactly once with 0 or -errno when this returns 0;
 * on a -errno return `done` is not called. op->done and op->chain are used internally. */
int durability_submit(struct export *e, struct backing_op *op,
                      void (*done)(struct backing_op *op, int result));

#endif
