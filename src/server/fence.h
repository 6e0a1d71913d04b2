/* fence.h: ordering of overlapping writes across connections of one export (case C12).
 *
 * Every WRITE, TRIM and WRITE_ZEROES in flight on an export is registered here with its byte
 * range and connection. A new one waits, before it reaches the backing, until every
 * overlapping write that another connection started earlier has completed. So when a client
 * drops a connection whose write is stalled in the backing and repeats or supersedes that
 * write on a new connection, the stale write lands first and the newer one wins: a dead
 * connection's in-flight I/O is fenced before newer overlapping writes are acknowledged.
 * Writes of one connection are not ordered here (NBD gives no order within a connection).
 *
 * Threads: fence_begin blocks (connection reader threads); fence_end runs on completion
 * threads. Units: bytes. */
#ifndef DISKGATE_SERVER_FENCE_H
#define DISKGATE_SERVER_FENCE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct fence_entry {
  uint64_t offset;
  uint64_t length;
  const void *owner;        /* the connection */
  uint64_t seq;             /* arrival order on the export */
  struct fence_entry *prev, *next;
};

struct fence {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct fence_entry *head;
  uint64_t next_seq;
};

void fence_init(struct fence *f);
void fence_destroy(struct fence *f);

/* Waits until no write from another owner that overlaps [offset, offset+length) is in
 * flight, then registers `entry` (caller-owned until fence_end). */
void fence_begin(struct fence *f, struct fence_entry *entry, const void *owner,
                 uint64_t offset, uint64_t length);

/* As fence_begin, without waiting: returns true when registered, false when an overlapping
 * write of another owner is in flight (the caller retries after some write ends). For event
 * loops, which must not block. */
bool fence_try_begin(struct fence *f, struct fence_entry *entry, const void *owner,
                     uint64_t offset, uint64_t length);

/* Unregisters `entry` and wakes waiters. */
void fence_end(struct fence *f, struct fence_entry *entry);

#endif
