/* SPDX-License-Identifier: MIT */
/* main.c: `diskgate SUBCOMMAND ...`: serve (the NBD server) or bench (the lab). */
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "server/ctl.h"
#include "server/serve.h"
#include "util/log.h"
#include "util/stdio_fds.h"

static const char usage[] =
  "Usage: diskgate serve [OPTIONS] PATH     serve a VM disk over NBD\n"
  "       diskgate bench [OPTIONS]          run the benchmark lab\n"
  "       diskgate ctl --control PATH CMD   ask a running server (list, stats)\n"
  "       diskgate --version | --help\n"
  "Run 'diskgate serve --help' or 'diskgate bench --help' for their options.\n";

int main(int argc, char **argv)
{
  /* Before anything is opened: a closed 0, 1 or 2 would be given to the image or a socket,
   * and log lines would be written into it (stdio_fds.h). No stderr to explain a failure
   * on, so only the exit status says it. */
  if (stdio_fds_ensure_open() < 0) {
    return 1;
  }
  if (argc < 2) { /* a bad command line: one line naming the problem, exit 2 */
    fputs("diskgate: missing command (serve, bench, --version, --help)\n", stderr);
    return 2;
  }
  if (strcmp(argv[1], "serve") == 0) {
    return serve_main(argc - 1, argv + 1);
  }
  if (strcmp(argv[1], "ctl") == 0) {
    return ctl_main(argc - 1, argv + 1);
  }
  if (strcmp(argv[1], "bench") == 0) {
    return bench_main(argc - 1, argv + 1);
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("diskgate %s\n", DISKGATE_VERSION);
    return 0;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(usage, stdout);
    return 0;
  }
  char shown[LOG_SHOWN_MAX];
  fprintf(stderr, "diskgate: unknown command '%s' (serve, bench, --version, --help)\n",
          log_escape_str(shown, sizeof shown, argv[1]));
  return 2;
}
