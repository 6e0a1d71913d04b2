/* SPDX-License-Identifier: MIT */
/* accept_guard.h: what the accepting thread does when it cannot take connections: out of
 * file descriptors (accept(2) fails with EMFILE or ENFILE), or out of threads or memory for
 * a new connection (server_conn_start fails with -EAGAIN or -ENOMEM), or at the operator's
 * --max-connections (-EUSERS, -ETIMEDOUT).
 *
 * One descriptor is kept in reserve (/dev/null) so that, out of descriptors, a waiting
 * client can still be taken off the listen queue and closed at once: it sees its connection
 * close before the greeting instead of waiting in the queue until its own timeout. Such a
 * spell is logged once when it starts (naming the limit and what to raise) and once when
 * it is over: no failure for ACCEPT_GUARD_QUIET_S seconds, or the server stopping; with the
 * count of connections closed at once meanwhile. A server held at its limit, where each
 * connection that ends lets one more in, stays in one spell instead of logging two lines
 * per connection. ENFILE (the system's table is full) competes with other processes for a
 * freed slot, so there the reserve helps less.
 * Threads: the accepting (main) thread only, which owns the struct. Units: seconds. */
#ifndef DISKGATE_SERVER_ACCEPT_GUARD_H
#define DISKGATE_SERVER_ACCEPT_GUARD_H

#include "util/log_spell.h"

#define ACCEPT_GUARD_QUIET_S 5

struct accept_guard {
  int reserve;            /* the reserve descriptor, or -1 (in use, or not to be had) */
  int err;                /* the errno that started the current spell; 0: none */
  unsigned long refused;  /* connections closed at once in the current spell */
  struct log_spell spell; /* the failures of the current spell */
};

/* The descriptors the guard holds while it runs: its reserve. */
#define ACCEPT_GUARD_FDS 1

/* Opens the reserve (a failure only loses the turning away). */
void accept_guard_init(struct accept_guard *g);

/* accept(2) on the listening socket `lfd` failed with `err` (EMFILE or ENFILE): starts or
 * extends the spell, and takes one waiting client off the queue with the reserve and closes
 * it. Without a reserve (another thread took the slot, and accept_guard_tick, which runs
 * before the accepts of each pass, could not take it again), waits 100 ms for connections
 * to end instead. */
void accept_guard_refuse(struct accept_guard *g, int lfd, int err);

/* server_conn_start failed with `rc` (-errno) for an accepted connection, which it closed:
 * -EAGAIN, -ENOMEM, -EUSERS or -ETIMEDOUT (admit.h) start or extend the spell; -ESHUTDOWN
 * and others are ignored. */
void accept_guard_start_failed(struct accept_guard *g, int rc);

/* Each pass of the accept loop (at least once a second), before its accepts: takes the
 * reserve again if it was lost, and ends the spell after ACCEPT_GUARD_QUIET_S seconds
 * without a failure. */
void accept_guard_tick(struct accept_guard *g);

/* The accept loop ends: logs the end of a spell still going on, closes the reserve. */
void accept_guard_finish(struct accept_guard *g);

#endif
