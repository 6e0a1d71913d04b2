/* SPDX-License-Identifier: MIT */
/* txn_split.h: a large READ answered in parts. The request's buffer is read as several
 * backing READs of TXN_SPLIT_PART bytes, each answered by its own structured-reply chunk
 * (NBD_REPLY_TYPE_OFFSET_DATA, or OFFSET_HOLE when it read as zeroes; a part that fails
 * gives NBD_REPLY_TYPE_ERROR_OFFSET at its first byte) as soon as it completes, so the
 * socket copy of the first parts overlaps the disk's work on the rest. The chunk queued
 * last carries NBD_REPLY_FLAG_DONE. The cost: more chunks than one per READ (a 32 MiB READ
 * of zeroes is 128 hole chunks instead of one), which the spec allows and every client
 * must reassemble.
 * Source: doc/proto.md "Structured replies" under NBD_CMD_READ (the server MAY split the
 * reply into any number of content chunks, in any order, not overlapping, covering the
 * range when no error is reported; ERROR_OFFSET MAY appear several times, ERROR SHOULD be
 * the only error chunk; DF forbids fragmenting); spec rules 16 (the extended header
 * echoes the request's offset), 20 and 31.
 * Both transmission paths use it (server/conn_loop.c, server/conn.c). Threads:
 * txn_split_start where the connection reads requests; txn_split_queue_reply where it
 * queues replies (its event loop's thread, or under conn->lock on the thread path);
 * txn_split_release_reply where it sends them. A part's backing completion may run on any
 * thread and reaches the connection through conn->reply_ready, like any reply. */
#ifndef DISKGATE_SERVER_TXN_SPLIT_H
#define DISKGATE_SERVER_TXN_SPLIT_H

#include <stdbool.h>

struct conn;
struct conn_req;
struct engine;

/* READs of at least this many bytes (aligned to 4096 at both ends) are split. */
#define TXN_SPLIT_MIN (512u * 1024u)
/* Bytes of each part but the last, a multiple of 4096. */
#define TXN_SPLIT_PART (256u * 1024u)

/* Starts r (a checked, allocated request of c, not yet submitted) as parts when it is a
 * READ to answer in parts: structured replies negotiated, no DF flag, at least
 * TXN_SPLIT_MIN bytes, offset and length multiples of 4096. The parts (one allocation,
 * owned by r) are submitted with txn_submit(part, nonblocking), `engine` as their op's
 * engine (NULL: the backing's); r itself is never submitted, and is freed by the caller
 * once txn_split_release_reply hands it back with its last part. Every part exists
 * before the first is submitted, since a part may complete during its own submission.
 * Returns false, with nothing started, when r is not to be split or the parts cannot be
 * allocated: the caller then submits r whole. */
bool txn_split_start(struct conn *c, struct conn_req *r, struct engine *engine,
                     bool nonblocking);

/* Called for every reply when it is queued for sending (no-op for a request that is not a
 * part): counts a part against its parent and clears NBD_REPLY_FLAG_DONE unless it is the
 * parent's last, so DONE is on the chunk queued last. */
void txn_split_queue_reply(struct conn_req *r);

/* Called when r's reply was sent or dropped. Returns the request r completes, which the
 * caller accounts for and frees (txn_free): r itself when it is not a part; for a part,
 * its parent when it was the last part (the parts are freed then), else NULL. Neither r
 * nor any part may be used after this call. */
struct conn_req *txn_split_release_reply(struct conn_req *r);

#endif
