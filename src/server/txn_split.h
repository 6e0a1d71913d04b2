/* txn_split.h: a large READ answered in parts. The request's buffer is read as several
 * backing READs of TXN_SPLIT_PART bytes, each answered by its own structured-reply chunk
 * (NBD_REPLY_TYPE_OFFSET_DATA, or OFFSET_HOLE when it read as zeroes) as soon as it
 * completes, so the socket copy of the first parts overlaps the disk's work on the rest.
 * The chunk queued last carries NBD_REPLY_FLAG_DONE.
 * Source: doc/proto.md "Structured reply chunk message types" (chunks of one READ may come
 * in any order, do not overlap, and cover the range when no error is reported; DF forbids
 * fragmenting); spec rules 16 (the extended header echoes the request's offset) and 20.
 * Both transmission paths use it (server/conn_loop.c, server/conn.c).
 * Threads: txn_split_wanted, _make and _submit where the connection reads requests;
 * txn_split_arrived where it queues replies; txn_split_finished where it sends them. A
 * part's backing completion may run on any thread and reaches the connection through
 * conn->reply_ready, like any reply. */
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

/* True when r (a checked, allocated request of c, not yet submitted) is a READ to answer
 * in parts: structured replies negotiated, no DF flag, at least TXN_SPLIT_MIN bytes,
 * offset and length multiples of 4096. */
bool txn_split_wanted(const struct conn *c, const struct conn_req *r);

/* Makes the parts of r (txn_split_wanted was true): requests of the connection's pool
 * whose buffers lie inside r's, linked through ->next, returned as a list. r becomes their
 * parent; it is never submitted and is freed with its last part (txn_split_release).
 * Returns NULL when out of memory (then r is unchanged and may be submitted whole). */
struct conn_req *txn_split_make(struct conn *c, struct conn_req *r);

/* Submits the parts made by txn_split_make (txn_submit each, with `engine` as their op's
 * engine, NULL for the backing's). Every part exists before the first is submitted, since a
 * part may complete during its own submission. */
void txn_split_submit(struct conn_req *parts, struct engine *engine, bool nonblocking);

/* Called once per part when its reply is ready, where the connection queues replies (its
 * loop thread, or under conn->lock on the thread path): counts it against its parent and
 * clears NBD_REPLY_FLAG_DONE unless it is the parent's last. Returns true for the last. */
bool txn_split_arrived(struct conn_req *part);

/* Called when r's reply was sent or dropped. Returns the request r completes, for the
 * caller to account for and free: r itself, or for a part (which goes back to the pool
 * here) its parent when it was the last part, else NULL. */
struct conn_req *txn_split_finished(struct conn_req *r);

#endif
