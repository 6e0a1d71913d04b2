/* SPDX-License-Identifier: MIT */
/* bench_machine.h: the description of the machine a run was made on. Main thread only (it
 * runs the tools to ask their versions). */
#ifndef DISKGATE_BENCH_MACHINE_H
#define DISKGATE_BENCH_MACHINE_H

#include "bench/bench_types.h"

/* Fills *m: CPU model and cores (/proc/cpuinfo, sysconf), memory, kernel (uname), the file
 * system type and device of `dir` (/proc/self/mountinfo), and the versions of fio, QEMU,
 * qemu-nbd, nbdkit and diskgate (fields stay "" for tools that are not installed). */
void bench_machine_describe(struct bench_machine *m, const char *dir);

#endif
