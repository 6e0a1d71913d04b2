/* SPDX-License-Identifier: MIT */
/* stall_budget.h: how long event loops may be blocked by the page-cache writes they do
 * themselves (file_io.c, write_inline) before those writes go back to io_uring's workers.
 *
 * A 4K page-cache pwrite is a copy of about 2 us, but one can block: on ext4's journal (a
 * timestamp update while jbd2 commits), on a page under
 * writeback, on dirty-page throttling. While it blocks, every connection of that loop
 * waits. The budget lets the loops that write to one backing be blocked for at most
 * STALL_BUDGET_NS of wall time in a window of STALL_WINDOW_NS; a write that overspends it
 * turns inline writes off for STALL_BACKOFF_NS.
 *
 * The charge is the union of the slow writes' intervals, not their sum: when N loops wait
 * at once (on the file's write lock, the inode rwsem, held by a writer that blocked or was
 * preempted), the wall time is charged once, not N times. A sum grew with the number of
 * loops writing to the file, so many connections tripped the budget where few did not, and
 * io-wq's workers cure no lock contention: they contend on the same lock, with two context
 * switches more per write (4 connections 619K IOPS, 32 connections 131K on 16 cores). A
 * stall that io-wq does cure (dirty-page throttling, a slow journal) still adds up: while
 * it lasts some loop is blocked, so the wall time it blocks is charged.
 *
 * Only writes slower than STALL_COUNT_NS are charged: the time is wall-clock, and a loop
 * preempted in the middle of a 4K copy looks the same as one that blocked. On this shared
 * 2-core machine, under the T4 load, writes took 150-400 us many times a second; under 4
 * connections x QD32 of writes (both cores busy), some took 0.6-2.1 ms, and a 0.5 ms
 * threshold turned inline writes off in some 10 s runs of that load. So blocking in pieces
 * shorter than STALL_COUNT_NS is not caught.
 *
 * Before, one write slower than 2 ms turned them off for 5 s. Under 4 connections of 4K
 * random writes with an fsync after each (the peers profile's T4) such a write came every few
 * seconds (one took 4.1 ms), so most of the run paid two context switches per write on
 * io-wq (docs/performance.md, "What each change bought").
 *
 * Times are CLOCK_MONOTONIC nanoseconds, passed in (the tests drive the clock). Relaxed
 * atomics, no lock. Under races the accounting is approximate: a charge that races with
 * the start of a new window may be dropped, or added to the old window's total and so
 * start a back-off one write early. The budget is a heuristic; nothing relies on it for
 * correctness. */
#ifndef DISKGATE_BACKING_STALL_BUDGET_H
#define DISKGATE_BACKING_STALL_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>

#define STALL_COUNT_NS 1000000LL       /* 1 ms: a write slower than this stalled the loop */
#define STALL_WINDOW_NS 1000000000LL   /* 1 s */
#define STALL_BUDGET_NS 10000000LL     /* 10 ms of stalls per window, overlaps counted once */
#define STALL_BACKOFF_NS 5000000000LL  /* 5 s off once overspent */

struct stall_budget {
  _Atomic long long window_start_ns; /* start of the current window */
  _Atomic long long spent_ns;        /* stalled time charged in it */
  _Atomic long long off_until_ns;    /* inline writes are off before this time */
  _Atomic long long charged_until_ns; /* slow writes' time before this is charged */
};

/* Makes b a budget with nothing spent and inline writes on (an all-zero struct is the
 * same). Before b is shared with other threads. Cannot fail. */
void stall_budget_init(struct stall_budget *b);

/* True when inline writes are allowed at now_ns (CLOCK_MONOTONIC ns): not within a
 * back-off. Any thread. Cannot fail. */
bool stall_budget_allows(struct stall_budget *b, long long now_ns);

/* Charges a write that started at start_ns and took took_ns (>= 0; CLOCK_MONOTONIC ns):
 * the part of [start_ns, start_ns + took_ns) after the end of the slow writes charged
 * before (charges come in about the order the writes end, so overlapping writes are
 * charged their union). Returns true when this write overspent the window's budget: inline writes are then off
 * until start_ns + took_ns + STALL_BACKOFF_NS, the spent time restarts from zero, and the
 * first charge after the back-off opens a new window; false otherwise. Any thread. Cannot
 * fail. */
bool stall_budget_charge(struct stall_budget *b, long long start_ns, long long took_ns);

#endif
