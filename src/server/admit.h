/* admit.h: admission of new connections under the server-wide limits, --max-handshakes
 * (connections still negotiating) and --max-connections (open connections), and the end
 * of negotiation, after which a connection is no longer closed to make room.
 *
 * At either limit the connection that has been negotiating longest is closed to make room
 * (case C13: clients that never negotiate cannot lock a real client out). At
 * --max-connections the new connection is admitted only once the one closed for it has
 * ended, so open connections never exceed the limit; when every open connection is past
 * negotiation, or the one closed does not end within ADMIT_WAIT_MS, the new connection is
 * refused. Closing to make room is logged once per spell (a flood would otherwise log a
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
#define ADMIT_QUIET_S 5

/* Makes room for the connection from `peer` that has just been accepted, closing
 * negotiating connections as the limits require and, at --max-connections, waiting (up to
 * ADMIT_WAIT_MS, s->lock released meanwhile) for them to end. Returns 0 when the new
 * connection may start, -EUSERS when it must be refused (at --max-connections with every
 * open connection past negotiation, or the ones closed did not end in time). Main thread,
 * with s->lock held. */
int admit_make_room(struct server *s, const char *peer);

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
