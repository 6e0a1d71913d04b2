/* SPDX-License-Identifier: MIT */
/* bench_gateway.h: the gateway rows (bench_config.kind BENCH_CFG_GATEWAY) of
 * `diskgate bench --profile gateway`: BENCH_GATEWAY_EXPORTS files in --dir, each a copy of
 * the test file's first bench_gateway_file_size() bytes, made once per lab; and their
 * servers, started per round: one `diskgate serve --config` exporting every file on one Unix
 * socket (diskgate-gateway), or one qemu-nbd per file, each on its own Unix socket
 * (qemu-nbd-gateway). Export i is named "gwNNN" (i in three digits) by either. A diskgate row
 * takes its binary from --diskgate but not its ARGS: with --config, `serve` takes no other
 * option. Main thread only. */
#ifndef DISKGATE_BENCH_GATEWAY_H
#define DISKGATE_BENCH_GATEWAY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench/bench_env.h"
#include "bench/bench_server.h"
#include "bench/bench_types.h"

/* The exports of a gateway row. */
#define BENCH_GATEWAY_EXPORTS 100

/* The largest export file: 100 of them fit a small --dir. */
#define BENCH_GATEWAY_FILE_MAX (64ull << 20)

/* The servers of one gateway row, live for the cells of one round. */
struct bench_gateway {
  size_t nsrv;                                    /* servers running: 1, or one per export */
  struct bench_server srv[BENCH_GATEWAY_EXPORTS];
  pid_t pids[BENCH_GATEWAY_EXPORTS];              /* srv[i].pid, for bench_fio_run */
  char uri[BENCH_GATEWAY_EXPORTS][256];           /* export i's NBD URI */
  const char *uris[BENCH_GATEWAY_EXPORTS];        /* uri[i], for bench_fio_target.uris */
  char conf[PATH_MAX];                            /* diskgate: its config file, "" for peers */
};

/* The bytes of each export file: the test file's size, at most BENCH_GATEWAY_FILE_MAX. */
uint64_t bench_gateway_file_size(const struct bench_opts *opts);

/* Makes the export files in --dir from the test file (copy_file_range, then fdatasync), once
 * per lab; a note on stderr says so. Returns 0, -ENOSPC (one line: no room in --dir), -EINTR
 * when the lab was interrupted, or another -errno after one line naming the file. */
int bench_gateway_files(struct bench_env *env);

/* Removes the export files the lab made, unless --keep. */
void bench_gateway_cleanup(struct bench_env *env);

/* Starts the servers of gateway row cfg over the export files, named for the run `tag`
 * (<out>/logs/server-<tag>.log holds every one's output), and waits until each is ready
 * (bench_server_wait_ready). Sets *out to the running set (free it with
 * bench_gateway_down). Returns 0, -EINVAL for a row that is no gateway row, -ENOMEM, or the
 * -errno of the server that did not start (the others are then stopped, *out is NULL). */
int bench_gateway_up(const struct bench_env *env, const struct bench_config *cfg,
                     const char *tag, struct bench_gateway **out);

/* Stops every server of gw (SIGTERM to all, then bench_server_stop each), removes the
 * config file and frees gw (NULL is fine). Returns 0, or -EIO when some server did not exit
 * with status 0. */
int bench_gateway_down(struct bench_gateway *gw);

#endif
