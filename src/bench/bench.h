/* SPDX-License-Identifier: MIT */
/* bench.h: `diskgate bench`, the lab (see docs/lab.md).
 * Main thread only. */
#ifndef DISKGATE_BENCH_H
#define DISKGATE_BENCH_H

/* Runs `diskgate bench ARGS...` (argv[0] is "bench"). Returns the process exit status:
 * 0 on success, 1 when a run failed, 2 for a bad command line or a missing tool. */
int bench_main(int argc, char **argv);

#endif
