/* SPDX-License-Identifier: MIT */
/* qcow2_inflight.c: the guest ranges whose writes are in flight with q->lock dropped (their
 * data being written, their L2 entries not yet changed), so that no other op changes those
 * entries meanwhile: an op over a range in flight waits for its end. */
#include "backing/qcow2/qcow2_impl.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

/* Guest ranges [start, end) whose writes are in flight, and the condition their ends
 * signal. Allocated at the first write; freed by qcow2_write_close. */
struct qcow2_write_state {
  pthread_cond_t cond;
  uint64_t (*range)[2];
  size_t n, cap;
};

int qcow2_inflight_enter(struct qcow2 *q, uint64_t start, uint64_t end)
{
  struct qcow2_write_state *ws = q->wstate;
  bool busy = true;

  if (ws == NULL) {
    ws = calloc(1, sizeof *ws);
    if (ws == NULL) {
      return -ENOMEM;
    }
    pthread_cond_init(&ws->cond, NULL);
    q->wstate = ws;
  }
  while (busy) {
    busy = false;
    for (size_t i = 0; i < ws->n && !busy; i++) {
      busy = ws->range[i][0] < end && start < ws->range[i][1];
    }
    if (busy) {
      engine_wait_begin();
      pthread_cond_wait(&ws->cond, &q->lock);
      engine_wait_end();
    }
  }
  if (ws->n == ws->cap) {
    size_t cap = ws->cap ? ws->cap * 2 : 16;
    uint64_t (*r)[2] = realloc(ws->range, cap * sizeof *r);
    if (r == NULL) {
      return -ENOMEM;
    }
    ws->range = r;
    ws->cap = cap;
  }
  ws->range[ws->n][0] = start;
  ws->range[ws->n][1] = end;
  ws->n++;
  return 0;
}

void qcow2_inflight_leave(struct qcow2 *q, uint64_t start, uint64_t end)
{
  struct qcow2_write_state *ws = q->wstate;

  for (size_t i = 0; i < ws->n; i++) {
    if (ws->range[i][0] == start && ws->range[i][1] == end) {
      ws->range[i][0] = ws->range[ws->n - 1][0];
      ws->range[i][1] = ws->range[ws->n - 1][1];
      ws->n--;
      break;
    }
  }
  pthread_cond_broadcast(&ws->cond);
}

void qcow2_write_close(struct qcow2 *q)
{
  if (q->wstate != NULL) {
    assert(q->wstate->n == 0);
    pthread_cond_destroy(&q->wstate->cond);
    free(q->wstate->range);
    free(q->wstate);
    q->wstate = NULL;
  }
}
