/* SPDX-License-Identifier: MIT */
/* ctl.h: `diskgate ctl --control PATH [--json] list | stats [NAME]`: a client of the control
 * socket (control.h). Main thread. */
#ifndef DISKGATE_SERVER_CTL_H
#define DISKGATE_SERVER_CTL_H

/* Runs `diskgate ctl ARGS...` (argv[0] is "ctl"). Returns the exit status: 0 done, 1 the
 * server refused the request or could not be reached (one line on stderr), 2 a bad
 * command line. */
int ctl_main(int argc, char **argv);

#endif
