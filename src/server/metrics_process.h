/* SPDX-License-Identifier: MIT */
/* metrics_process.h: the process_* metrics of Prometheus' client libraries ("Process
 * metrics" in their writing-exporters guide), read from /proc/self at each scrape. */
#ifndef DISKGATE_SERVER_METRICS_PROCESS_H
#define DISKGATE_SERVER_METRICS_PROCESS_H

#include <stdio.h>

/* Writes process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds,
 * process_start_time_seconds and process_threads, each with HELP and TYPE lines, to f;
 * a value /proc does not give is left out. Any thread. */
void metrics_process_render(FILE *f);

#endif
