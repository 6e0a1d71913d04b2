/* SPDX-License-Identifier: MIT */
/* config_file.c: the config file reader: see config_file.h. libinih parses; its reader
 * callback here counts lines (the handler gets none) and notes where sections start, so
 * that every error names FILE:LINE and the key, and an export without keys is seen. */
#include "server/config_file.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server/export_allow.h"
#include "util/cli.h"
#include "util/log.h"

#define CONFIG_KEYS_MAX 64 /* distinct keys a section may hold */

struct config_read {
  FILE *f;
  const char *file;
  struct serve_config *server;
  struct config_file *cf;
  unsigned line;                 /* lines read so far: the line inih works on */
  struct serve_config *current;  /* the export section open, or NULL */
  bool in_server;                /* in [server] */
  bool server_seen;
  char *keys[CONFIG_KEYS_MAX];   /* the current section's keys so far (not owned) */
  size_t nkeys;
  char error[LOG_SHOWN_MAX * 2 + 512]; /* the first error, "" while none */
};

/* Records the first error: "FILE:LINE: KEY: text". */
static void read_error(struct config_read *r, unsigned line, const char *key, const char *text)
{
  char file[LOG_SHOWN_MAX], shown[LOG_SHOWN_MAX];

  if (r->error[0] != '\0') {
    return;
  }
  if (r->file == NULL) { /* not a file: a ctl add request */
    snprintf(r->error, sizeof r->error, "%s: %s", log_escape_str(shown, sizeof shown, key), text);
    return;
  }
  snprintf(r->error, sizeof r->error, "%s:%u: %s: %s", log_escape_str(file, sizeof file, r->file),
           line, log_escape_str(shown, sizeof shown, key), text);
}

/* Keeps a copy of s for as long as the config. Returns it, or NULL (no memory). */
static char *keep(struct config_file *cf, const char *s)
{
  if (cf->nstrings == cf->cap_strings) {
    size_t cap = cf->cap_strings ? 2 * cf->cap_strings : 64;
    char **n = realloc(cf->strings, cap * sizeof *n);
    if (n == NULL) {
      return NULL;
    }
    cf->strings = n;
    cf->cap_strings = cap;
  }
  char *copy = strdup(s);
  if (copy != NULL) {
    cf->strings[cf->nstrings++] = copy;
  }
  return copy;
}

/* The end of a section: an export's cross-option checks and its path. */
static void section_end(struct config_read *r)
{
  struct serve_config *e = r->current;
  char why[LOG_SHOWN_MAX + 256];

  r->current = NULL;
  r->in_server = false;
  r->nkeys = 0;
  if (e == NULL) {
    return;
  }
  if (e->path == NULL) {
    read_error(r, e->line, "path", "missing: each [export NAME] needs path =");
    return;
  }
  if (serve_args_check_export(e, e->path, why, sizeof why) >= 0) {
    read_error(r, e->line, e->export_name, why);
  }
}

/* A new export section named `name` at the current line. */
static void export_begin(struct config_read *r, const char *name)
{
  struct config_file *cf = r->cf;
  char *kept;

  if (*name == '\0' || strlen(name) > 4096 || cli_utf8_check(name) < 0) {
    read_error(r, r->line, "[export]", "needs a name of 1 to 4096 bytes of UTF-8");
    return;
  }
  for (size_t i = 0; i < cf->nexports; i++) {
    if (strcmp(cf->exports[i].export_name, name) == 0) {
      char text[64];
      snprintf(text, sizeof text, "export named twice (first at line %u)", cf->exports[i].line);
      read_error(r, r->line, name, text);
      return;
    }
  }
  if (cf->nexports == cf->cap_exports) {
    size_t cap = cf->cap_exports ? 2 * cf->cap_exports : 16;
    struct serve_config *n = realloc(cf->exports, cap * sizeof *n);
    if (n == NULL) {
      read_error(r, r->line, name, "out of memory");
      return;
    }
    cf->exports = n;
    cf->cap_exports = cap;
  }
  kept = keep(cf, name);
  if (kept == NULL) {
    read_error(r, r->line, name, "out of memory");
    return;
  }
  r->current = &cf->exports[cf->nexports++];
  memset(r->current, 0, sizeof *r->current);
  serve_args_defaults(r->current);
  r->current->export_name = kept;
  r->current->line = r->line;
}

/* A section header line ("[...]"): ends the previous section and starts the next. */
static void section_begin(struct config_read *r, const char *text)
{
  char name[4200];
  const char *close = strchr(text, ']');
  size_t len = close != NULL ? (size_t)(close - text - 1) : 0;

  section_end(r);
  if (close == NULL || len >= sizeof name) {
    return; /* inih reports the syntax error */
  }
  memcpy(name, text + 1, len);
  name[len] = '\0';
  if (strcmp(name, "server") == 0) {
    if (r->server_seen) {
      read_error(r, r->line, "[server]", "section given twice");
    }
    r->server_seen = true;
    r->in_server = true;
  } else if (strncmp(name, "export ", 7) == 0) {
    const char *n = name + 7;
    while (*n == ' ') {
      n++;
    }
    export_begin(r, n);
  } else {
    read_error(r, r->line, name, "unknown section (expected [server] or [export NAME])");
  }
}

/* inih's reader: fgets that counts lines and sees section headers. */
static char *config_reader(char *str, int num, void *stream)
{
  struct config_read *r = stream;
  char *got = fgets(str, num, r->f);
  const char *p = str;

  if (got == NULL) {
    return NULL;
  }
  r->line++;
  while (*p == ' ' || *p == '\t') {
    p++;
  }
  if (*p == '[') {
    section_begin(r, p);
  }
  return got;
}

/* An [export NAME] section's own keys (not options). Returns 1 when `name` was one. */
static int export_key_apply(struct config_read *r, const char *name, const char *value)
{
  struct serve_config *e = r->current;
  char why[LOG_SHOWN_MAX + 128];
  struct stat st;

  if (strcmp(name, "path") == 0) {
    if (*value == '\0') {
      read_error(r, r->line, name, "needs a path");
    } else if (strncmp(value, "rbd:", 4) != 0 && stat(value, &st) < 0) {
      snprintf(why, sizeof why, "cannot use %s: %s",
               log_escape_str((char[LOG_SHOWN_MAX]){0}, LOG_SHOWN_MAX, value), strerror(errno));
      read_error(r, r->line, name, why);
    } else {
      e->path = keep(r->cf, value);
      log_escape_str(e->path_shown, sizeof e->path_shown, value);
    }
  } else if (strcmp(name, "description") == 0) {
    e->description = keep(r->cf, value);
  } else if (strcmp(name, "default") == 0) {
    if (serve_args_parse_bool(value, &e->is_default) < 0) {
      read_error(r, r->line, name, "takes true or false");
    }
  } else if (strcmp(name, "allow") == 0) {
    struct export_allow *a = NULL;
    if (export_allow_parse(value, &a, why, sizeof why) < 0) {
      read_error(r, r->line, name, why);
    }
    export_allow_free(a);
    e->allow = keep(r->cf, value);
  } else {
    return 0;
  }
  return 1;
}

/* inih's handler: one key. Returns 1 (go on; the first error is kept in r). */
static int config_handler(void *user, const char *section, const char *name, const char *value)
{
  struct config_read *r = user;
  enum serve_key_scope scope = serve_args_key_scope(name);
  char why[LOG_SHOWN_MAX + 256];
  (void)section;

  if (r->error[0] != '\0') {
    return 1;
  }
  if (!r->in_server && r->current == NULL) {
    read_error(r, r->line, name, "outside a section ([server] or [export NAME])");
    return 1;
  }
  for (size_t i = 0; i < r->nkeys; i++) {
    if (strcmp(r->keys[i], name) == 0) {
      read_error(r, r->line, name, "given twice in this section");
      return 1;
    }
  }
  char *kept = keep(r->cf, value);
  char *kname = keep(r->cf, name);
  if (kept == NULL || kname == NULL || r->nkeys == CONFIG_KEYS_MAX) {
    read_error(r, r->line, name, "out of memory");
    return 1;
  }
  r->keys[r->nkeys++] = kname;
  if (r->current != NULL && export_key_apply(r, name, kept)) {
    return 1;
  }
  if (scope != (r->in_server ? SERVE_KEY_SERVER : SERVE_KEY_EXPORT)) {
    read_error(r, r->line, name,
               scope == SERVE_KEY_UNKNOWN ? "unknown key"
               : r->in_server ? "belongs in an [export NAME] section"
                              : "belongs in the [server] section");
    return 1;
  }
  if (serve_args_apply_key(r->in_server ? r->server : r->current, name, kept, why,
                           sizeof why) < 0) {
    read_error(r, r->line, name, why);
  }
  return 1;
}

/* The checks over the whole file: an export at least, one default at most. */
static void config_check_all(struct config_read *r)
{
  const struct serve_config *dflt = NULL;

  for (size_t i = 0; i < r->cf->nexports; i++) {
    const struct serve_config *e = &r->cf->exports[i];
    if (e->is_default && dflt != NULL) {
      char text[64];
      snprintf(text, sizeof text, "a second default export (the first at line %u)", dflt->line);
      read_error(r, e->line, "default", text);
    }
    dflt = e->is_default ? e : dflt;
  }
  if (r->cf->nexports == 0) {
    read_error(r, r->line, "[export]", "no export in the file");
  }
}

int config_file_read(const char *path, struct serve_config *server, struct config_file *out,
                     char *err, size_t errsize)
{
  struct config_read r = {.file = path, .server = server, .cf = out};
  char shown[LOG_SHOWN_MAX];
  int rc;

  r.f = fopen(path, "re");
  if (r.f == NULL) {
    snprintf(err, errsize, "cannot read %s: %s", log_escape_str(shown, sizeof shown, path),
             strerror(errno));
    return 2;
  }
  ini_allow_multiline = false; /* one line per key: the reader's count is the key's line */
  rc = ini_parse_stream(config_reader, &r, config_handler, &r);
  fclose(r.f);
  if (r.error[0] == '\0') {
    section_end(&r);
  }
  if (rc > 0) {
    read_error(&r, (unsigned)rc, "syntax", "not a [section] or key = value line");
  }
  if (r.error[0] == '\0') {
    config_check_all(&r);
  }
  if (r.error[0] != '\0') {
    snprintf(err, errsize, "%s", r.error);
    config_file_free(out);
    return 2;
  }
  if (!server->tls_given && (server->tls_cert_dir != NULL || server->tls_psk_file != NULL)) {
    server->tls = TLS_MODE_REQUIRE; /* as on the command line */
  }
  return 0;
}

int config_file_export(const char *name, const char *const *keys, const char *const *values,
                       size_t n, struct config_file *out, char *err, size_t errsize)
{
  struct config_read r = {.file = NULL, .cf = out};

  r.line = 1;
  export_begin(&r, name);
  for (size_t i = 0; i < n && r.error[0] == '\0'; i++) {
    (void)config_handler(&r, "export", keys[i], values[i]);
  }
  if (r.error[0] == '\0') {
    section_end(&r);
  }
  if (r.error[0] != '\0') {
    snprintf(err, errsize, "%s", r.error);
    config_file_free(out);
    return 2;
  }
  return 0;
}

void config_file_free(struct config_file *cf)
{
  for (size_t i = 0; i < cf->nstrings; i++) {
    free(cf->strings[i]);
  }
  free(cf->strings);
  free(cf->exports);
  memset(cf, 0, sizeof *cf);
}
