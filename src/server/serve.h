/* SPDX-License-Identifier: MIT */
/* serve.h: `diskgate serve`, the NBD server's command line and life cycle. Main thread. */
#ifndef DISKGATE_SERVER_SERVE_H
#define DISKGATE_SERVER_SERVE_H

/* Runs `diskgate serve ARGS...` (argv[0] is "serve", argv[-1] the program's name: SIGUSR2
 * runs argv - 1 again, reexec.h). Returns the exit status: 0 after a
 * clean shutdown on SIGINT/SIGTERM/SIGHUP, 1 on a runtime failure (also when it could no
 * longer wait for connections, after finishing the requests in flight, and when requests
 * still in the backing SERVER_SHUTDOWN_DRAIN_S after the signal were left without their
 * replies), 2 for a bad command line, a
 * missing file, or a file already served by another process (one line on stderr). */
int serve_main(int argc, char **argv);

#endif
