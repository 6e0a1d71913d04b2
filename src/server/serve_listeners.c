/* SPDX-License-Identifier: MIT */
/* serve_listeners.c: the listeners of `diskgate serve`: see serve_listeners.h. */
#include "server/serve_listeners.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/reexec.h"
#include "server/service.h"
#include "util/cli.h"
#include "util/log.h"

/* Why a TCP listener on HOST:PORT could not be opened (listen_open_tcp's -errno). */
static const char *tcp_error(int rc, char *text, size_t size)
{
  return rc == -ENOENT   ? "no such host"
         : rc == -EAGAIN ? "the host name could not be resolved now; try again"
                         : cli_startup_error(rc, text, size);
}

int serve_listeners_open(const struct serve_config *cfg, struct listener *ls, size_t *n)
{
  char host[256], abs[PATH_MAX];
  int inherited[LISTEN_MAX];
  int ninherited = reexec_inherited(inherited, LISTEN_MAX); /* a takeover (reexec.h) */
  unsigned port;
  int rc;

  *n = 0;
  if (ninherited < 0) {
    fprintf(stderr, "diskgate serve: %s does not name listening sockets\n", REEXEC_FDS_ENV);
    return 2;
  }
  /* systemd's sockets, passed by socket activation or through a restart of a server that
   * had them: served instead of --listen and --socket (service.h) */
  rc = ninherited > 0 ? service_listeners_adopt_restart(inherited, (size_t)ninherited, ls)
                      : service_listeners_take_all(ls, LISTEN_MAX, n);
  if (rc < 0) {
    return 2;
  }
  if (rc > 0) {
    *n = (size_t)ninherited;
    return 0;
  }
  if (*n > 0) {
    return 0;
  }
  if (cfg->listen_addr != NULL || cfg->socket_path == NULL) {
    const char *addr = cfg->listen_addr != NULL ? cfg->listen_addr : "127.0.0.1:10809";
    rc = listen_parse_address(addr, host, sizeof host, &port);
    if (rc == 0 && ninherited > 0) {
      rc = (int)*n < ninherited ? listen_adopt(&ls[*n], inherited[*n], host, NULL) : -EINVAL;
    } else if (rc == 0) {
      rc = listen_open_tcp(&ls[*n], host, port);
    }
    if (rc < 0) {
      char shown[LOG_SHOWN_MAX], text[128];
      fprintf(stderr, "diskgate serve: cannot listen on %s: %s\n",
              log_escape_str(shown, sizeof shown, addr), tcp_error(rc, text, sizeof text));
      return cli_startup_status(rc);
    }
    (*n)++;
  }
  if (cfg->socket_path != NULL) {
    if (cfg->socket_path[0] != '/') {
      if (getcwd(abs, sizeof abs) == NULL ||
          strlen(abs) + 1 + strlen(cfg->socket_path) >= sizeof abs) {
        char shown[LOG_SHOWN_MAX];
        fprintf(stderr, "diskgate serve: socket path %s too long\n",
                log_escape_str(shown, sizeof shown, cfg->socket_path));
        rc = -ENAMETOOLONG;
      } else {
        strcat(abs, "/");
        strcat(abs, cfg->socket_path);
        rc = 0;
      }
    } else {
      rc = snprintf(abs, sizeof abs, "%s", cfg->socket_path) >= (int)sizeof abs ? -ENAMETOOLONG : 0;
    }
    if (rc == 0 && ninherited > 0) {
      rc = (int)*n < ninherited ? listen_adopt(&ls[*n], inherited[*n], NULL, abs) : -EINVAL;
      if (rc < 0) {
        fprintf(stderr, "diskgate serve: %s does not match --listen and --socket\n",
                REEXEC_FDS_ENV);
      }
    } else if (rc == 0) {
      rc = listen_open_unix(&ls[*n], abs);
      if (rc < 0) {
        char shown[LOG_SHOWN_MAX], text[128];
        fprintf(stderr, "diskgate serve: cannot listen on %s: %s\n",
                log_escape_str(shown, sizeof shown, abs),
                rc == -EADDRINUSE ? "another server is accepting there"
                : rc == -EEXIST   ? "the path exists and is not a socket (it is left alone)"
                                  : cli_startup_error(rc, text, sizeof text));
      }
    }
    if (rc < 0) {
      for (size_t i = 0; i < *n; i++) {
        listen_close(&ls[i]);
      }
      *n = 0;
      return cli_startup_status(rc);
    }
    (*n)++;
  }
  return 0;
}

int serve_metrics_listener_open(const struct serve_config *cfg, struct listener *ml)
{
  char host[256];
  unsigned port;
  int rc;

  ml->fd = -1;
  if (cfg->metrics_addr == NULL) {
    return 0;
  }
  rc = listen_parse_address(cfg->metrics_addr, host, sizeof host, &port); /* checked */
  if (rc == 0) {
    rc = listen_open_tcp(ml, host, port);
  }
  if (rc < 0) {
    char shown[LOG_SHOWN_MAX], text[128];
    fprintf(stderr, "diskgate serve: cannot serve metrics on %s: %s\n",
            log_escape_str(shown, sizeof shown, cfg->metrics_addr),
            tcp_error(rc, text, sizeof text));
    ml->fd = -1;
    return cli_startup_status(rc);
  }
  return 0;
}
