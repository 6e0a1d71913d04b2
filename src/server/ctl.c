/* SPDX-License-Identifier: MIT */
/* ctl.c: `diskgate ctl`: sends one request to the control socket and prints the reply,
 * as a table or (--json) as the server's JSON object: see ctl.h and control.h. */
#include "server/ctl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/control.h"
#include "server/serve_args.h"
#include "util/log.h"

static const char ctl_usage[] =
  "Usage: diskgate ctl --control PATH [--json] COMMAND\n"
  "Ask a running diskgate serve (started with --control PATH) about its exports, or\n"
  "change them.\n"
  "\n"
  "  list            the exports: name, path, description, flags\n"
  "  stats [NAME]    per export: open connections, whether its backing is open\n"
  "  add NAME PATH [--OPTION [VALUE]]...\n"
  "                  serve PATH as export NAME; the options are those of an\n"
  "                  [export NAME] section (diskgate.conf(5)): --read-only, --sync MODE,\n"
  "                  --cache MODE, --format FMT, --snapshot, --description TEXT,\n"
  "                  --allow LIST, --default, ...\n"
  "  remove NAME [--force]\n"
  "                  stop serving NAME: its clients get the replies of requests in\n"
  "                  flight, then NBD_ESHUTDOWN and a close; --force closes them at once\n"
  "\n"
  "  --control PATH  the server's control socket\n"
  "  --json          print the server's JSON reply as it is, for scripts\n"
  "  --help          this text\n";

/* Connects to `path`, sends `request` as one line, reads the one-line reply. Returns the
 * parsed reply, or NULL after one line on stderr. */
static cJSON *ctl_exchange(const char *path, const char *request)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  size_t cap = 1 << 20, have = 0;
  char *buf;
  int fd;

  if (strlen(path) >= sizeof sa.sun_path) {
    fprintf(stderr, "diskgate ctl: control socket path too long\n");
    return NULL;
  }
  strcpy(sa.sun_path, path);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    char shown[LOG_SHOWN_MAX];
    fprintf(stderr, "diskgate ctl: cannot reach %s: %s\n",
            log_escape_str(shown, sizeof shown, path), strerror(errno));
    if (fd >= 0) {
      close(fd);
    }
    return NULL;
  }
  buf = malloc(cap);
  if (buf == NULL || send(fd, request, strlen(request), MSG_NOSIGNAL) < 0) {
    fprintf(stderr, "diskgate ctl: %s\n", buf == NULL ? "out of memory" : strerror(errno));
    free(buf);
    close(fd);
    return NULL;
  }
  for (;;) {
    ssize_t n = have + 1 < cap ? recv(fd, buf + have, cap - 1 - have, 0) : 0;
    if (n <= 0) {
      break;
    }
    have += (size_t)n;
    if (memchr(buf, '\n', have) != NULL) {
      break;
    }
  }
  close(fd);
  buf[have] = '\0';
  cJSON *reply = cJSON_Parse(buf);
  free(buf);
  if (reply == NULL) {
    fprintf(stderr, "diskgate ctl: the server's reply is not JSON\n");
  }
  return reply;
}

/* Prints " R W F T Z B\n": an export's request counts by command from its "metrics"
 * member (metrics_stats_json), or "\n" alone without one. */
static void ctl_print_requests(const cJSON *metrics)
{
  static const char *const ops[] = {"read", "write", "flush", "trim", "zero", "block_status"};
  const cJSON *by_op = cJSON_GetObjectItemCaseSensitive(metrics, "ops");

  for (size_t i = 0; by_op != NULL && i < sizeof ops / sizeof ops[0]; i++) {
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(by_op, ops[i]);
    printf(" %.0f", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(op, "requests")));
  }
  putchar('\n');
}

/* Prints a list or stats reply as a table. */
static void ctl_print_table(const cJSON *reply, bool stats)
{
  const cJSON *e;

  if (stats) {
    printf("%-24s %11s %-4s %s\n", "EXPORT", "CONNECTIONS", "OPEN",
           "REQUESTS (read write flush trim zero block_status; with --metrics)");
  } else {
    printf("%-24s %-40s %s\n", "EXPORT", "PATH", "DESCRIPTION");
  }
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(reply, "exports")) {
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
    if (stats) {
      printf("%-24s %11.0f %-4s", name != NULL ? name : "?",
             cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "connections")),
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "attached")) ? "yes" : "no");
      ctl_print_requests(cJSON_GetObjectItemCaseSensitive(e, "metrics"));
      continue;
    }
    const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "path"));
    const char *desc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "description"));
    printf("%-24s %-40s %s%s\n", name != NULL ? name : "?", path != NULL ? path : "",
           desc != NULL ? desc : "",
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "default")) ? " (default)" : "");
  }
}

/* The request object's text as one "\n"-terminated line; frees req. NULL when memory ran
 * out. */
static char *ctl_request_line(cJSON *req)
{
  char *text = req != NULL ? cJSON_PrintUnformatted(req) : NULL;

  cJSON_Delete(req);
  size_t len = text != NULL ? strlen(text) : 0;
  char *line = text != NULL ? realloc(text, len + 2) : NULL;
  if (line == NULL) {
    free(text);
    return NULL;
  }
  memcpy(line + len, "\n", 2);
  return line;
}

/* `add NAME PATH [--OPTION [VALUE]]...` (argv[0] is "add") into req's "name", "path" and
 * "options". Returns 0, or 2 after one line on stderr. */
static int ctl_add_parse(int argc, char **argv, cJSON *req)
{
  enum { OPT_DESCRIPTION = 1, OPT_ALLOW, OPT_DEFAULT };
  struct option opts[48];
  size_t n = serve_args_export_options(opts, sizeof opts / sizeof opts[0] - 3);
  cJSON *o = cJSON_AddObjectToObject(req, "options");
  int c;

  opts[n++] = (struct option){"description", required_argument, NULL, OPT_DESCRIPTION};
  opts[n++] = (struct option){"allow", required_argument, NULL, OPT_ALLOW};
  opts[n++] = (struct option){"default", no_argument, NULL, OPT_DEFAULT};
  memset(&opts[n], 0, sizeof opts[n]);
  opterr = 0;
  optind = 0; /* glibc: start afresh on this argv */
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    const struct option *opt = NULL;
    for (size_t i = 0; i < n; i++) {
      opt = opts[i].val == c ? &opts[i] : opt;
    }
    if (opt == NULL) {
      fprintf(stderr, "diskgate ctl: add: unknown option or missing value at '%s' (see "
              "diskgate ctl --help)\n", argv[optind - 1]);
      return 2;
    }
    cJSON_AddStringToObject(o, opt->name, opt->has_arg == no_argument ? "true" : optarg);
  }
  if (argc - optind != 2) { /* argv[0], "add", is getopt's program name */
    fprintf(stderr, "diskgate ctl: add needs NAME and PATH\n");
    return 2;
  }
  cJSON_AddStringToObject(req, "name", argv[optind]);
  cJSON_AddStringToObject(req, "path", argv[optind + 1]);
  return 0;
}

/* The request for argv[0..argc) (a command and its arguments) into *line. Returns 0, or
 * an exit status after one line on stderr. */
static int ctl_request_make(int argc, char **argv, char **line)
{
  const char *cmd = argv[0];
  cJSON *req = cJSON_CreateObject();
  int status = 0;

  cJSON_AddStringToObject(req, "command", cmd);
  if (strcmp(cmd, "add") == 0) {
    status = ctl_add_parse(argc, argv, req);
  } else if (strcmp(cmd, "remove") == 0 && argc >= 2 && argc <= 3 &&
             (argc == 2 || strcmp(argv[2], "--force") == 0)) {
    cJSON_AddStringToObject(req, "name", argv[1]);
    cJSON_AddBoolToObject(req, "force", argc == 3);
  } else if (strcmp(cmd, "stats") == 0 && argc <= 2) {
    if (argc == 2) {
      cJSON_AddStringToObject(req, "name", argv[1]);
    }
  } else if (strcmp(cmd, "list") != 0 || argc != 1) {
    char shown[LOG_SHOWN_MAX];
    fprintf(stderr, "diskgate ctl: unknown command or wrong arguments at '%s' (list, stats "
            "[NAME], add NAME PATH [--OPTION [VALUE]]..., remove NAME [--force])\n",
            log_escape_str(shown, sizeof shown, cmd));
    status = 2;
  }
  if (status != 0) {
    cJSON_Delete(req);
    return status;
  }
  *line = ctl_request_line(req);
  if (*line == NULL) {
    fprintf(stderr, "diskgate ctl: out of memory\n");
    return 1;
  }
  return 0;
}

/* Prints what add or remove did. */
static void ctl_print_change(const cJSON *reply, const char *cmd, const char *name)
{
  char shown[LOG_SHOWN_MAX];

  log_escape_str(shown, sizeof shown, name);
  if (strcmp(cmd, "add") == 0) {
    printf("export '%s' added\n", shown);
    return;
  }
  printf("export '%s' removed: %.0f connection(s) closed, %.0f before all their replies were "
         "sent, in %.0f ms\n", shown,
         cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(reply, "connections")),
         cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(reply, "cut")),
         cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(reply, "ms")));
}

int ctl_main(int argc, char **argv)
{
  static const struct option opts[] = {
    {"control", required_argument, NULL, 'c'},
    {"json", no_argument, NULL, 'j'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  const char *control = NULL;
  bool json = false;
  int c;

  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
    if (c == 'c') {
      control = optarg;
    } else if (c == 'j') {
      json = true;
    } else if (c == 'h') {
      fputs(ctl_usage, stdout);
      return 0;
    } else {
      fprintf(stderr, "diskgate ctl: unknown option (see diskgate ctl --help)\n");
      return 2;
    }
  }
  if (control == NULL || optind >= argc) {
    fprintf(stderr, "diskgate ctl: needs --control PATH and a command (see diskgate ctl --help)\n");
    return 2;
  }
  const char *cmd = argv[optind];
  char *line = NULL;
  int made = ctl_request_make(argc - optind, argv + optind, &line);
  if (made != 0) {
    return made;
  }
  cJSON *reply = ctl_exchange(control, line);
  if (reply == NULL) {
    free(line);
    return 1;
  }
  int status = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")) ? 0 : 1;
  if (json) {
    char *out = cJSON_PrintUnformatted(reply);
    printf("%s\n", out != NULL ? out : "{}");
    free(out);
  } else if (status != 0) {
    const char *err = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "error"));
    fprintf(stderr, "diskgate ctl: %s\n", err != NULL ? err : "refused");
  } else if (strcmp(cmd, "add") == 0 || strcmp(cmd, "remove") == 0) {
    cJSON *req = cJSON_Parse(line);
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "name"));
    ctl_print_change(reply, cmd, name != NULL ? name : "?");
    cJSON_Delete(req);
  } else {
    ctl_print_table(reply, strcmp(cmd, "stats") == 0);
  }
  cJSON_Delete(reply);
  free(line);
  return status;
}
