/* SPDX-License-Identifier: MIT */
/* fence.h: ordering of overlapping writes across connections of one export (case C12).
 *
 * Every WRITE, TRIM and WRITE_ZEROES in flight on an export is registered here with its byte
 * range and connection, in arrival order. A new one waits, before it reaches the backing,
 * until every overlapping write that another connection sent earlier has completed, whether
 * that one is at the backing or itself still waiting here. So when a client drops a
 * connection whose write is stalled in the backing (or waits behind one that is) and repeats
 * or supersedes that write on a new connection, the stale write lands first and the newer
 * one wins: a dead connection's in-flight I/O is fenced before newer overlapping writes are
 * acknowledged. Waits only go to older writes, so they cannot form a cycle. Writes of one
 * connection are not ordered here (NBD gives no order within a connection).
 *
 * The check costs the entries in flight near the write (see the granule index below), not
 * all of them.
 *
 * Threads: fence_begin blocks (connection reader threads); fence_begin_async never blocks
 * (event loops): a write that must wait is parked and started by the fence_end that
 * unblocks it, so no thread (no engine worker either) waits for it; fence_end runs on
 * completion threads. Units: bytes. */
#ifndef DISKGATE_SERVER_FENCE_H
#define DISKGATE_SERVER_FENCE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* The granule index: an entry is found through the 1 MiB granules of the export it covers,
 * so a write is checked against the writes in flight near it, not against every write in
 * flight (at 32 connections x QD32, 1,024 of them, scanned under the lock both event
 * loops take, the check was a quarter of the server's CPU). An entry over at most
 * FENCE_ENTRY_GRANULES granules is linked into each one's bucket; a longer one goes on the
 * fence's list of long entries, which every check scans. A write over more than
 * FENCE_SCAN_GRANULES granules (a TRIM of the whole device) checks every entry instead. */
#define FENCE_GRANULE_SHIFT 20
#define FENCE_BUCKETS 512
#define FENCE_ENTRY_GRANULES 2
#define FENCE_SCAN_GRANULES 64

/* A link of an entry into a bucket's list, or into the long entries' list. */
struct fence_node {
  struct fence_node *prev, *next;
  struct fence_entry *entry;
};

struct fence_entry {
  uint64_t offset;
  uint64_t length;
  const void *owner;        /* the connection */
  uint64_t seq;             /* arrival order on the export */
  struct fence_entry *prev, *next; /* every entry, newest first */
  /* with the index, nodes[i] links it into the bucket of its i-th granule; a long entry
   * (over more than FENCE_ENTRY_GRANULES granules): nodes[0] on the long list */
  struct fence_node nodes[FENCE_ENTRY_GRANULES];
  /* fence_begin_async: called once registered, after a wait */
  void (*ready)(struct fence_entry *entry);
  struct fence_entry *wait_next; /* the fence's parked entries, in arrival order */
};

struct fence {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct fence_entry *head;
  struct fence_entry *waiters, *waiters_tail; /* parked by fence_begin_async */
  uint64_t next_seq;
  /* FENCE_BUCKETS lists by granule, allocated by the first write (an export never
   * written costs none); NULL while none could be: every check scans every entry */
  struct fence_node **buckets;
  struct fence_node *long_entries;
};

void fence_init(struct fence *f);
void fence_destroy(struct fence *f);

/* Registers `entry` (caller-owned until fence_end), then waits until no write from another
 * owner that overlaps [offset, offset+length) and was registered before it is left (in
 * flight or waiting). Connection threads only: never on an engine worker, which may be what
 * the write waited for needs. */
void fence_begin(struct fence *f, struct fence_entry *entry, const void *owner,
                 uint64_t offset, uint64_t length);

/* As fence_begin without waiting (for event loops): `entry` is registered at once; when an
 * older overlapping write blocks it, it is also parked: the fence_end that unblocks it calls
 * ready(entry), on that fence_end's thread, after the fence's lock is released (after the
 * ready callback running further up that thread's stack, if any, has returned). Returns
 * true when it may start at once (ready is not called), false when parked. Any thread;
 * never blocks. */
bool fence_begin_async(struct fence *f, struct fence_entry *entry, const void *owner,
                       uint64_t offset, uint64_t length, void (*ready)(struct fence_entry *));

/* Unregisters `entry`, grants the parked entries it unblocks (in arrival order) by
 * running their ready callbacks, and wakes waiters. Called from inside a ready callback (the
 * granted write completed at once), it only queues the entries it grants: the outermost
 * fence_end on the thread runs them, in order, once that callback has returned, so a chain
 * of such grants never deepens the stack. Any thread; takes the fence's lock, not held
 * while ready callbacks run. */
void fence_end(struct fence *f, struct fence_entry *entry);

#endif
