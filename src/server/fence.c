/* SPDX-License-Identifier: MIT */
/* fence.c: see fence.h. A list of the entries in flight and its granule index, under one
 * mutex; the common case, one connection, never waits. */
#include "server/fence.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>

void fence_init(struct fence *f)
{
  pthread_mutex_init(&f->lock, NULL);
  pthread_cond_init(&f->cond, NULL);
  f->head = NULL;
  f->waiters = NULL;
  f->waiters_tail = NULL;
  f->next_seq = 0;
  f->buckets = NULL;
  f->long_entries = NULL;
}

void fence_destroy(struct fence *f)
{
  assert(f->head == NULL && f->waiters == NULL && f->long_entries == NULL);
  free(f->buckets);
  f->buckets = NULL;
  pthread_mutex_destroy(&f->lock);
  pthread_cond_destroy(&f->cond);
}

/* The first and last granule [offset, offset+length) touches (a zero length: its offset's);
 * returns true for a long entry (more than FENCE_ENTRY_GRANULES granules: on the long list). */
static bool granule_span(const struct fence_entry *e, uint64_t *first, uint64_t *last)
{
  *first = e->offset >> FENCE_GRANULE_SHIFT;
  *last = (e->offset + (e->length > 0 ? e->length - 1 : 0)) >> FENCE_GRANULE_SHIFT;
  return *last - *first >= FENCE_ENTRY_GRANULES;
}

/* The bucket of granule g: Fibonacci hashing, so that the granules of one region spread. */
static struct fence_node **bucket_of(const struct fence *f, uint64_t g)
{
  return &f->buckets[((g * 0x9E3779B97F4A7C15ull) >> 32) % FENCE_BUCKETS];
}

static void node_push(struct fence_node **head, struct fence_node *n, struct fence_entry *e)
{
  n->entry = e;
  n->prev = NULL;
  n->next = *head;
  if (*head != NULL) {
    (*head)->prev = n;
  }
  *head = n;
}

static void node_remove(struct fence_node **head, struct fence_node *n)
{
  if (n->prev != NULL) {
    n->prev->next = n->next;
  } else {
    *head = n->next;
  }
  if (n->next != NULL) {
    n->next->prev = n->prev;
  }
}

/* Links entry into the index: into its granules' buckets, or onto the long list. Caller
 * holds f->lock; f->buckets is set. */
static void index_add(struct fence *f, struct fence_entry *entry)
{
  uint64_t first, last;

  if (granule_span(entry, &first, &last)) {
    node_push(&f->long_entries, &entry->nodes[0], entry);
    return;
  }
  for (uint64_t g = first; g <= last; g++) {
    node_push(bucket_of(f, g), &entry->nodes[g - first], entry);
  }
}

/* Unlinks entry from the index (index_add linked it). Caller holds f->lock. */
static void index_remove(struct fence *f, struct fence_entry *entry)
{
  uint64_t first, last;

  if (granule_span(entry, &first, &last)) {
    node_remove(&f->long_entries, &entry->nodes[0]);
    return;
  }
  for (uint64_t g = first; g <= last; g++) {
    node_remove(bucket_of(f, g), &entry->nodes[g - first]);
  }
}

static bool overlaps(const struct fence_entry *e, uint64_t offset, uint64_t length)
{
  /* [a, a+la) and [b, b+lb) overlap iff a < b+lb and b < a+la; lengths are > 0 and the
   * ranges were bounds-checked against the export size, so the sums do not overflow. */
  return e->offset < offset + length && offset < e->offset + e->length;
}

/* True when e arrived before `entry`, from another owner, and overlaps it: running or
 * still waiting, it must end first. Waiting for the waiting ones too keeps overlapping
 * writes of different connections in arrival order: a write parked behind a stalled one (a
 * dead connection's, say) must not land after a newer overlapping write is acknowledged.
 * Waits only ever go to older entries, so they form no cycle. */
static bool blocks(const struct fence_entry *e, const struct fence_entry *entry)
{
  return e->seq < entry->seq && e->owner != entry->owner &&
         overlaps(e, entry->offset, entry->length);
}

/* True when some entry blocks `entry` (which is linked). An older entry that overlaps it
 * shares a granule with it, so it is in one of the buckets of entry's granules, or on the
 * long list, after entry's own node there (lists are newest first); without an index, or
 * for an entry over more than FENCE_SCAN_GRANULES granules, the older entries (after it in
 * the list of every entry) are scanned. Caller holds f->lock. */
static bool blocked_by_older(const struct fence *f, const struct fence_entry *entry)
{
  uint64_t first, last;
  bool long_entry = granule_span(entry, &first, &last);

  if (f->buckets == NULL || last - first >= FENCE_SCAN_GRANULES) {
    for (const struct fence_entry *e = entry->next; e != NULL; e = e->next) {
      assert(e->seq < entry->seq);
      if (blocks(e, entry)) {
        return true;
      }
    }
    return false;
  }
  /* Lists are newest first: from entry's own node on, only older entries follow */
  for (uint64_t g = first; g <= last; g++) {
    const struct fence_node *n = long_entry ? *bucket_of(f, g) : entry->nodes[g - first].next;
    for (; n != NULL; n = n->next) {
      if (blocks(n->entry, entry)) {
        return true;
      }
    }
  }
  for (const struct fence_node *n = long_entry ? entry->nodes[0].next : f->long_entries;
       n != NULL; n = n->next) {
    if (blocks(n->entry, entry)) {
      return true;
    }
  }
  return false;
}

/* Links entry in, as the newest, and into the index. The index is made when nothing is in
 * flight (so every entry linked while it exists is in it); while it cannot be, checks scan
 * every entry. Caller holds f->lock. */
static void fence_link(struct fence *f, struct fence_entry *entry)
{
  if (f->buckets == NULL && f->head == NULL) {
    f->buckets = calloc(FENCE_BUCKETS, sizeof *f->buckets);
  }
  entry->seq = f->next_seq++;
  entry->prev = NULL;
  entry->next = f->head;
  if (f->head != NULL) {
    f->head->prev = entry;
  }
  f->head = entry;
  if (f->buckets != NULL) {
    index_add(f, entry);
  }
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
  while (blocked_by_older(f, entry)) {
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
  ok = !blocked_by_older(f, entry);
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
  if (f->buckets != NULL) {
    index_remove(f, entry);
  }
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
    if (!was_blocker || blocked_by_older(f, w)) {
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
