/* SPDX-License-Identifier: MIT */
/* fence.c: see fence.h. A list under one mutex: entries are few (in-flight writes), and the
 * common case, one connection, never waits. */
#include "server/fence.h"

#include <assert.h>
#include <stdbool.h>

void fence_init(struct fence *f)
{
  pthread_mutex_init(&f->lock, NULL);
  pthread_cond_init(&f->cond, NULL);
  f->head = NULL;
  f->waiters = NULL;
  f->waiters_tail = NULL;
  f->next_seq = 0;
}

void fence_destroy(struct fence *f)
{
  assert(f->head == NULL && f->waiters == NULL);
  pthread_mutex_destroy(&f->lock);
  pthread_cond_destroy(&f->cond);
}

static bool overlaps(const struct fence_entry *e, uint64_t offset, uint64_t length)
{
  /* [a, a+la) and [b, b+lb) overlap iff a < b+lb and b < a+la; lengths are > 0 and the
   * ranges were bounds-checked against the export size, so the sums do not overflow. */
  return e->offset < offset + length && offset < e->offset + e->length;
}

/* True when an entry that arrived before `entry` (it is linked after it: the list is newest
 * first) from another owner overlaps it: running or still waiting, it must end first.
 * Waiting for the waiting ones too keeps overlapping writes of different connections in
 * arrival order: a write parked behind a stalled one (a dead connection's, say) must not
 * land after a newer overlapping write is acknowledged. Waits only ever go to
 * older entries, so they form no cycle. `entry` is linked. Caller holds f->lock. */
static bool blocked_by_older(const struct fence_entry *entry)
{
  for (const struct fence_entry *e = entry->next; e != NULL; e = e->next) {
    assert(e->seq < entry->seq);
    if (e->owner != entry->owner && overlaps(e, entry->offset, entry->length)) {
      return true;
    }
  }
  return false;
}

/* Links entry in, as the newest. Caller holds f->lock. */
static void fence_link(struct fence *f, struct fence_entry *entry)
{
  entry->seq = f->next_seq++;
  entry->prev = NULL;
  entry->next = f->head;
  if (f->head != NULL) {
    f->head->prev = entry;
  }
  f->head = entry;
}

/* Fills in what the entry covers. */
static void entry_set(struct fence_entry *entry, const void *owner, uint64_t offset,
                      uint64_t length, void (*ready)(struct fence_entry *))
{
  entry->offset = offset;
  entry->length = length;
  entry->owner = owner;
  entry->ready = ready;
  entry->wait_next = NULL;
}

/* Appends entry to the singly linked list *head .. *tail (through wait_next). */
static void list_append(struct fence_entry **head, struct fence_entry **tail,
                        struct fence_entry *entry)
{
  entry->wait_next = NULL;
  if (*tail != NULL) {
    (*tail)->wait_next = entry;
  } else {
    *head = entry;
  }
  *tail = entry;
}

/* The granted entries of this thread whose ready callbacks have not run yet, linked through
 * wait_next (free once an entry has left the fence's parked list), and whether a
 * grant_run further up this thread's stack is already running them. */
static _Thread_local struct fence_entry *grant_head, *grant_tail;
static _Thread_local bool grant_running;

/* Runs the ready callbacks of the granted entries go .. go_tail, in order, after those of
 * entries granted before them on this thread. A ready callback whose write completes at
 * once ends its entry inside the callback, and that fence_end may grant more: those are
 * queued here and run by the outermost call when the callback has returned, so the stack
 * stays flat however long the chain of connections (case C12's fence: a recursion per
 * link would overflow the stack with thousands of connections). */
static void grant_run(struct fence_entry *go, struct fence_entry *go_tail)
{
  struct fence_entry *w;

  if (go == NULL) {
    return;
  }
  if (grant_tail != NULL) {
    grant_tail->wait_next = go;
  } else {
    grant_head = go;
  }
  grant_tail = go_tail;
  if (grant_running) {
    return;
  }
  grant_running = true;
  while ((w = grant_head) != NULL) {
    /* Unlinked first: ready() may end the request and reuse the entry. */
    grant_head = w->wait_next;
    if (grant_head == NULL) {
      grant_tail = NULL;
    }
    w->wait_next = NULL;
    w->ready(w);
  }
  grant_running = false;
}

void fence_begin(struct fence *f, struct fence_entry *entry, const void *owner,
                 uint64_t offset, uint64_t length)
{
  entry_set(entry, owner, offset, length, NULL);
  pthread_mutex_lock(&f->lock);
  fence_link(f, entry); /* linked while it waits: later overlapping writes wait for it */
  while (blocked_by_older(entry)) {
    pthread_cond_wait(&f->cond, &f->lock);
  }
  pthread_mutex_unlock(&f->lock);
}

bool fence_begin_async(struct fence *f, struct fence_entry *entry, const void *owner,
                       uint64_t offset, uint64_t length, void (*ready)(struct fence_entry *))
{
  bool ok;

  entry_set(entry, owner, offset, length, ready);
  pthread_mutex_lock(&f->lock);
  fence_link(f, entry); /* linked even when parked: later overlapping writes wait for it */
  ok = !blocked_by_older(entry);
  if (!ok) {
    list_append(&f->waiters, &f->waiters_tail, entry);
  }
  pthread_mutex_unlock(&f->lock);
  return ok;
}

void fence_end(struct fence *f, struct fence_entry *entry)
{
  struct fence_entry *go = NULL, *go_tail = NULL, *prev = NULL, *w, *next;

  pthread_mutex_lock(&f->lock);
  if (entry->prev != NULL) {
    entry->prev->next = entry->next;
  } else {
    f->head = entry->next;
  }
  if (entry->next != NULL) {
    entry->next->prev = entry->prev;
  }
  /* Parked entries that nothing older blocks now are granted, in arrival order (each
   * stays linked until its own fence_end, so it still blocks the newer ones it overlaps).
   * Only those that `entry` blocked can have become free: any other is still blocked by
   * whatever blocked it, so the list of older entries is scanned for those alone (scanning
   * it for every parked entry at every end would cost time in the square of the parked
   * writes, under the lock every loop takes). */
  for (w = f->waiters; w != NULL; w = next) {
    next = w->wait_next;
    bool was_blocker = entry->seq < w->seq && entry->owner != w->owner &&
                       overlaps(entry, w->offset, w->length);
    if (!was_blocker || blocked_by_older(w)) {
      prev = w;
      continue;
    }
    if (prev != NULL) {
      prev->wait_next = next;
    } else {
      f->waiters = next;
    }
    if (f->waiters_tail == w) {
      f->waiters_tail = prev;
    }
    list_append(&go, &go_tail, w);
  }
  pthread_cond_broadcast(&f->cond);
  pthread_mutex_unlock(&f->lock);
  grant_run(go, go_tail);
}
