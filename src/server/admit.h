/* SPDX-License-Identifier: MIT */
/* admit.h: admission of new connections under the server-wide limits, --max-handshakes
 * (connections still negotiating) and --max-connections (open connections), and the end
 * of negotiation, after which a connection is no longer closed to make room.
 *
 * At either limit the connection that has been negotiating longest is closed to make room
 * (case C13: clients that never negotiate cannot lock a real client out). At
 * --max-connections the new connection is admitted only once a connection leaving has
 * ended, so open connections never exceed the limit (the accepting thread holds the new
 * socket meanwhile, one more). Leaving: closed to make room or by the deadline, or past
 * its last request (admit_ending), which is waited for only ADMIT_GRACE_MS before a
 * negotiating connection is closed instead (its client may never read its replies). When
 * every open connection is past negotiation and none is leaving after ADMIT_GRACE_MS, the
 * new connection is refused, and so it is when those leaving have not ended within
 * ADMIT_WAIT_MS (clients that do not read their last replies, or a thread stuck opening a
 * backing that does not answer). The accepting thread
 * waits meanwhile: it reads no signal and accepts nothing else. Closing to make room is logged once per spell (a flood would otherwise log a
 * line per connection): the first closure with its details, then, once none has happened
 * for ADMIT_QUIET_S seconds or the server stops, how many there were.
 *
 * Threads: admit_make_room, admit_tick and admit_finish on the main (accepting) thread;
 * admit_commit on connection threads. All take or expect server->lock as each says.
 * Units: seconds and milliseconds as named. */
#ifndef DISKGATE_SERVER_ADMIT_H
#define DISKGATE_SERVER_ADMIT_H

#include "server/conn.h"
#include "server/server.h"

#define ADMIT_WAIT_MS 1000
#define ADMIT_GRACE_MS 200
#define ADMIT_QUIET_S 5

/* Makes room for the connection from `peer` that has just been accepted, closing
 * negotiating connections as the limits require and, at --max-connections, waiting (up to
 * ADMIT_WAIT_MS, s->lock released meanwhile) for those leaving to end. Returns 0 when the
 * new connection may start, or -errno when it must be refused: -EUSERS (every open
 * connection is past negotiation and none left within ADMIT_GRACE_MS), -ETIMEDOUT (those
 * leaving did not end within ADMIT_WAIT_MS). Main thread, with s->lock held. */
int admit_make_room(struct server *s, const char *peer);

/* The connection `c` in transmission reads no more requests (NBD_CMD_DISC, the peer
 * closed, an error, shutdown) and will end once its replies are out: a connection waiting
 * at --max-connections may wait for it instead of being refused (a client that reconnects
 * at once after NBD_CMD_DISC). Connection or loop thread; takes s->lock; any number of
 * times. */
void admit_ending(struct conn *c);

/* The connection `c` has negotiated successfully and is about to send the reply that
 * enters transmission (NBD_OPT_GO's final NBD_REP_ACK, NBD_OPT_EXPORT_NAME's reply): it no
 * longer counts as negotiating and can no longer be closed to make room or by the
 * handshake deadline. Returns 0, or -ECONNABORTED when it has already been told to close
 * (the reply must not be sent: the client would think it was served). Connection thread;
 * takes s->lock. */
int admit_commit(struct conn *c);

/* About once a second: ends a spell of closures after ADMIT_QUIET_S quiet seconds, logging
 * how many there were. Main thread; takes s->lock. */
void admit_tick(struct server *s);

/* The server stops accepting: logs the end of a spell still going on. Main thread; takes
 * s->lock. */
void admit_finish(struct server *s);

#endif
