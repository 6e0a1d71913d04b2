/* SPDX-License-Identifier: MIT */
/* control.c: the control socket and its control-plane thread: see control.h. One client at
 * a time: each request is answered from the server's state without blocking the data
 * plane (the export table and the connection list are read under the server's lock, held
 * only to copy them; `remove` waits for its export's clients, not for the lock). */
#include "server/control.h"
#include "server/metrics.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/config_file.h"
#include "server/conn.h"
#include "server/export.h"
#include "server/export_table.h"
#include "server/listen.h"
#include "server/serve_exports.h"
#include "server/server.h"
#include "util/log.h"

struct control {
  int listen_fd;         /* the listening Unix socket, the caller's */
  struct server *server;
  struct engine *engine; /* what exports `add` makes use */
  int stop_pipe[2];  /* written by control_stop: the thread exits */
  pthread_t thread;
  char line[CONTROL_LINE_MAX + 1];
};

/* Sends the reply object `reply` as one line and frees it. */
static void reply_send(int fd, cJSON *reply)
{
  char *text = reply != NULL ? cJSON_PrintUnformatted(reply) : NULL;
  static const char oom[] = "{\"ok\":false,\"error\":\"out of memory\"}\n";

  if (text == NULL) {
    (void)send(fd, oom, sizeof oom - 1, MSG_NOSIGNAL);
  } else {
    size_t len = strlen(text);
    text[len] = '\n'; /* replaces the NUL: sent as one line */
    for (size_t off = 0; off <= len;) {
      ssize_t n = send(fd, text + off, len + 1 - off, MSG_NOSIGNAL);
      if (n <= 0) {
        break;
      }
      off += (size_t)n;
    }
    free(text);
  }
  cJSON_Delete(reply);
}

/* An error reply, with one log line. */
static void reply_error(int fd, const char *text)
{
  cJSON *r = cJSON_CreateObject();

  log_info("control socket: %s", text);
  cJSON_AddFalseToObject(r, "ok");
  cJSON_AddStringToObject(r, "error", text);
  reply_send(fd, r);
}

/* The connections open on each export: counts[i] for s->exports[i]. Under s->lock. */
static void export_conn_counts(struct server *s, unsigned *counts)
{
  memset(counts, 0, s->nexports * sizeof *counts);
  for (struct conn *c = s->conns; c != NULL; c = c->next) {
    for (size_t i = 0; c->export != NULL && i < s->nexports; i++) {
      counts[i] += c->export == s->exports[i];
    }
  }
}

/* The statistics of export i, into the object o: every counter `stats` shows is added
 * here (connections; the metrics' counters join them). Under s->lock. */
static void control_export_stats(struct server *s, size_t i, const unsigned *counts,
                                 cJSON *metrics, cJSON *o)
{
  const struct export *e = s->exports[i];
  cJSON *m = metrics != NULL ? cJSON_DetachItemFromObjectCaseSensitive(metrics, e->name) : NULL;

  cJSON_AddStringToObject(o, "name", e->name);
  cJSON_AddNumberToObject(o, "connections", counts[i]);
  cJSON_AddBoolToObject(o, "attached", export_is_attached(e));
  if (m != NULL) {
    cJSON_AddItemToObject(o, "metrics", m); /* metrics_stats_json's numbers (--metrics) */
  }
}

/* Export i's line of `list`, into the object o. Under s->lock. */
static void control_export_list(struct server *s, size_t i, cJSON *o)
{
  const struct export *e = s->exports[i];

  cJSON_AddStringToObject(o, "name", e->name);
  cJSON_AddStringToObject(o, "path", e->spec);
  cJSON_AddStringToObject(o, "description", export_description(e));
  cJSON_AddBoolToObject(o, "read_only", e->read_only);
  cJSON_AddBoolToObject(o, "default", e == s->default_export);
  cJSON_AddBoolToObject(o, "attached", export_is_attached(e));
  cJSON_AddBoolToObject(o, "allow", e->allow != NULL);
}

/* {"command":"list"} and {"command":"stats","name":NAME?}. The table is read under the
 * server's lock (exports come and go: export_table.h). */
static void command_list_stats(struct control *ctl, int fd, bool stats, const char *name)
{
  struct server *s = ctl->server;
  cJSON *r = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(r, "exports");
  cJSON *metrics = stats && s->metrics_on ? cJSON_CreateObject() : NULL;
  bool found = name == NULL;

  if (metrics != NULL && metrics_stats_json(s, metrics) < 0) { /* takes the lock itself */
    cJSON_Delete(metrics);
    metrics = NULL;
  }
  pthread_mutex_lock(&s->lock);
  unsigned *counts = calloc(s->nexports + 1, sizeof *counts);
  for (size_t i = 0; counts != NULL && arr != NULL && i < s->nexports; i++) {
    if (i == 0) {
      export_conn_counts(s, counts);
    }
    if (name != NULL && strcmp(name, s->exports[i]->name) != 0) {
      continue;
    }
    found = true;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, o);
    if (stats) {
      control_export_stats(s, i, counts, metrics, o);
    } else {
      control_export_list(s, i, o);
    }
  }
  pthread_mutex_unlock(&s->lock);
  cJSON_Delete(metrics);
  if (counts == NULL || arr == NULL) {
    free(counts);
    cJSON_Delete(r);
    reply_error(fd, "out of memory");
    return;
  }
  free(counts);
  if (!found) {
    cJSON_Delete(r);
    reply_error(fd, "no such export");
    return;
  }
  cJSON_AddTrueToObject(r, "ok");
  reply_send(fd, r);
}

/* An option's value as text: a string as it is, true/false, or an integer. Returns false
 * for anything else (objects, arrays, null, fractions). */
static bool option_text(const cJSON *v, char *buf, size_t size, const char **out)
{
  if (cJSON_IsString(v)) {
    *out = v->valuestring;
  } else if (cJSON_IsBool(v)) {
    *out = cJSON_IsTrue(v) ? "true" : "false";
  } else if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e18 &&
             (double)(long long)v->valuedouble == v->valuedouble) {
    snprintf(buf, size, "%lld", (long long)v->valuedouble);
    *out = buf;
  } else {
    return false;
  }
  return true;
}

/* {"command":"add","name":N,"path":P,"options":{KEY:VALUE...}}: an export made as an
 * [export NAME] section with those keys would be (config_file_export), then published. */
static void command_add(struct control *ctl, int fd, const cJSON *req, const char *name)
{
  const cJSON *path = cJSON_GetObjectItemCaseSensitive(req, "path");
  const cJSON *opts = cJSON_GetObjectItemCaseSensitive(req, "options"), *o;
  const char *keys[CONTROL_ADD_KEYS_MAX + 1], *values[CONTROL_ADD_KEYS_MAX + 1];
  char numbers[CONTROL_ADD_KEYS_MAX][24], err[CONFIG_ERROR_MAX], shown[EXPORT_LOG_NAME_MAX];
  struct config_file cf = {0};
  struct export *e = NULL;
  size_t n = 1;

  if (name == NULL || !cJSON_IsString(path) || (opts != NULL && !cJSON_IsObject(opts))) {
    reply_error(fd, "add needs \"name\" and \"path\" strings (and \"options\", an object)");
    return;
  }
  keys[0] = "path";
  values[0] = path->valuestring;
  cJSON_ArrayForEach(o, opts) {
    if (n > CONTROL_ADD_KEYS_MAX || o->string == NULL ||
        !option_text(o, numbers[n - 1], sizeof numbers[0], &values[n])) {
      reply_error(fd, n > CONTROL_ADD_KEYS_MAX ? "too many options"
                                               : "an option's value is not a string, "
                                                 "boolean or whole number");
      return;
    }
    keys[n++] = o->string;
  }
  int status = config_file_export(name, keys, values, n, &cf, err, sizeof err);
  if (status == 0) {
    status = serve_export_make(&cf.exports[0], ctl->engine, &e, err, sizeof err);
  }
  if (status == 0 && export_table_add(ctl->server, e, cf.exports[0].is_default, err,
                                      sizeof err) < 0) {
    export_destroy(e);
    status = 1;
  }
  if (status != 0) {
    char text[CONFIG_ERROR_MAX + 64];
    snprintf(text, sizeof text, "add '%s': %s",
             log_escape_str(shown, sizeof shown, name), err);
    config_file_free(&cf);
    reply_error(fd, text);
    return;
  }
  log_info("control socket: export '%s' added: %s", e->log_name, cf.exports[0].path_shown);
  config_file_free(&cf);
  cJSON *r = cJSON_CreateObject();
  cJSON_AddTrueToObject(r, "ok");
  reply_send(fd, r);
}

/* {"command":"remove","name":N,"force":BOOL?}: replied once the export's backing is
 * closed (export_table_remove waits), with what the removal did. */
static void command_remove(struct control *ctl, int fd, const cJSON *req, const char *name)
{
  const cJSON *force = cJSON_GetObjectItemCaseSensitive(req, "force");
  struct export_removal done = {0};
  int rc;

  if (name == NULL || (force != NULL && !cJSON_IsBool(force))) {
    reply_error(fd, "remove needs a \"name\" string (and \"force\", a boolean)");
    return;
  }
  rc = export_table_remove(ctl->server, name, cJSON_IsTrue(force), true, &done);
  if (rc < 0) {
    reply_error(fd, rc == -ENOENT ? "no such export" : strerror(-rc));
    return;
  }
  cJSON *r = cJSON_CreateObject();
  cJSON_AddTrueToObject(r, "ok");
  cJSON_AddNumberToObject(r, "connections", done.connections);
  cJSON_AddNumberToObject(r, "cut", done.cut);
  cJSON_AddNumberToObject(r, "ms", (double)done.ms);
  reply_send(fd, r);
}

/* Answers one request line. */
static void control_request(struct control *ctl, int fd, const char *line)
{
  cJSON *req = cJSON_Parse(line);
  const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(req, "command");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "name");
  char text[160], shown[64];

  if (req == NULL || !cJSON_IsObject(req)) {
    reply_error(fd, "the request is not a JSON object");
  } else if (!cJSON_IsString(cmd)) {
    reply_error(fd, "the request has no \"command\" string");
  } else if (name != NULL && !cJSON_IsString(name)) {
    reply_error(fd, "\"name\" is not a string");
  } else if (strcmp(cmd->valuestring, "list") == 0 || strcmp(cmd->valuestring, "stats") == 0) {
    command_list_stats(ctl, fd, cmd->valuestring[0] == 's',
                       name != NULL ? name->valuestring : NULL);
  } else if (strcmp(cmd->valuestring, "add") == 0) {
    command_add(ctl, fd, req, name != NULL ? name->valuestring : NULL);
  } else if (strcmp(cmd->valuestring, "remove") == 0) {
    command_remove(ctl, fd, req, name != NULL ? name->valuestring : NULL);
  } else {
    snprintf(text, sizeof text, "unknown command '%s' (list, stats, add, remove)",
             log_escape_str(shown, sizeof shown, cmd->valuestring));
    reply_error(fd, text);
  }
  cJSON_Delete(req);
}

/* Serves one client: lines until it closes, goes silent for CONTROL_READ_TIMEOUT_S, or
 * sends a line over CONTROL_LINE_MAX. */
static void control_client(struct control *ctl, int fd)
{
  size_t have = 0;

  for (;;) {
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = ctl->stop_pipe[0], .events = POLLIN}};
    if (poll(p, 2, CONTROL_READ_TIMEOUT_S * 1000) <= 0 || p[1].revents != 0) {
      if (have > 0) {
        reply_error(fd, "request not finished in time (one JSON object per line)");
      }
      return;
    }
    ssize_t n = recv(fd, ctl->line + have, CONTROL_LINE_MAX - have, 0);
    if (n <= 0) {
      if (have > 0) {
        ctl->line[have] = '\0';
        reply_error(fd, "request cut off by the close (one JSON object per line)");
      }
      return;
    }
    have += (size_t)n;
    char *nl;
    while ((nl = memchr(ctl->line, '\n', have)) != NULL) {
      *nl = '\0';
      control_request(ctl, fd, ctl->line);
      have -= (size_t)(nl + 1 - ctl->line);
      memmove(ctl->line, nl + 1, have);
    }
    if (have == CONTROL_LINE_MAX) {
      reply_error(fd, "request line too long");
      return;
    }
  }
}

static void *control_thread(void *arg)
{
  struct control *ctl = arg;

  for (;;) {
    struct pollfd p[2] = {{.fd = ctl->listen_fd, .events = POLLIN},
                          {.fd = ctl->stop_pipe[0], .events = POLLIN}};
    if (poll(p, 2, -1) < 0 && errno != EINTR) {
      return NULL;
    }
    if (p[1].revents != 0) {
      return NULL;
    }
    if (p[0].revents != 0) {
      int fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0) {
        control_client(ctl, fd);
        close(fd);
      }
    }
  }
}

int control_start(int listen_fd, struct server *s, struct engine *engine,
                  struct control **out)
{
  struct control *ctl = calloc(1, sizeof *ctl);
  int rc;

  if (ctl == NULL) {
    return -ENOMEM;
  }
  ctl->listen_fd = listen_fd;
  ctl->server = s;
  ctl->engine = engine;
  if (pipe2(ctl->stop_pipe, O_CLOEXEC) < 0) {
    rc = -errno;
    free(ctl);
    return rc;
  }
  rc = -pthread_create(&ctl->thread, NULL, control_thread, ctl);
  if (rc < 0) {
    close(ctl->stop_pipe[0]);
    close(ctl->stop_pipe[1]);
    free(ctl);
    return rc;
  }
  *out = ctl;
  return 0;
}

void control_stop(struct control *ctl)
{
  if (ctl == NULL) {
    return;
  }
  (void)write(ctl->stop_pipe[1], "x", 1);
  pthread_join(ctl->thread, NULL);
  close(ctl->stop_pipe[0]);
  close(ctl->stop_pipe[1]);
  free(ctl);
}
