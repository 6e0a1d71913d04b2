/* SPDX-License-Identifier: MIT */
/* cli.c: see cli.h. */
#include "util/cli.h"

#include <assert.h>
#include <errno.h>
#include <iconv.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "util/log.h"

/* Looks up "--NAME" or "--NAME=VALUE" (arg) by NAME in longopts, as getopt_long does: an
 * exact name wins, else every option NAME abbreviates counts. Sets *shown to the bytes of
 * arg without "=VALUE" ("--NAME", or all of arg when it is not a long option) and *eq to
 * the '=' (or NULL); returns the number of matches (0 when arg is not "--NAME"), and
 * *found to the exact or only match. */
static int long_lookup(const struct option *longopts, const char *arg, size_t *shown,
                       const char **eq, const struct option **found)
{
  bool is_long = strncmp(arg, "--", 2) == 0 && arg[2] != '\0';
  size_t len; /* NAME's */
  int matches = 0;

  *eq = is_long ? strchr(arg + 2, '=') : NULL;
  len = *eq != NULL ? (size_t)(*eq - (arg + 2)) : strlen(arg) - (is_long ? 2 : 0);
  *shown = (is_long ? 2 : 0) + len;
  *found = NULL;
  for (const struct option *o = longopts; is_long && o->name != NULL; o++) {
    if (strncmp(o->name, arg + 2, len) != 0) {
      continue;
    }
    *found = o;
    if (o->name[len] == '\0') { /* an exact match wins over abbreviations */
      return 1;
    }
    matches++;
  }
  return matches;
}

char *cli_option_error(const struct option *longopts, const char *arg, int short_opt, char *msg,
                       size_t size)
{
  const struct option *found;
  char shown[256];
  const char *eq;
  size_t len;
  int matches;

  assert(longopts != NULL && msg != NULL && size > 0);
  if (short_opt != 0 && short_opt < 256) { /* values of 256 and up are long options' */
    /* glibc keeps the option character in a (signed) char: a byte above 0x7f is negative */
    unsigned char ch = (unsigned char)short_opt;
    if (ch > 0x20 && ch < 0x7f) {
      snprintf(msg, size, "unknown option '-%c' (the options are long ones, --NAME)", ch);
    } else {
      snprintf(msg, size, "unknown option '-\\x%02x' (the options are long ones, --NAME)", ch);
    }
    return msg;
  }
  if (arg == NULL) {
    arg = "";
  }
  /* "--NAME" or "--NAME=VALUE" is looked up by NAME; anything else matches no option */
  matches = long_lookup(longopts, arg, &len, &eq, &found);
  log_escape(shown, sizeof shown, arg, len); /* one line, no value */
  if (matches == 0) {
    snprintf(msg, size, "unknown option '%s'", shown);
  } else if (matches > 1) {
    int n = snprintf(msg, size, "option '%s' is ambiguous (", shown);
    const char *sep = "";
    for (const struct option *o = longopts; o->name != NULL && n >= 0 && (size_t)n < size; o++) {
      if (strncmp(o->name, arg + 2, len - 2) == 0) { /* matches > 1: arg is "--NAME" */
        n += snprintf(msg + n, size - (size_t)n, "%s--%s", sep, o->name);
        sep = ", ";
      }
    }
    if (n >= 0 && (size_t)n < size) {
      snprintf(msg + n, size - (size_t)n, ")");
    }
  } else if (found->has_arg == no_argument && eq != NULL) {
    snprintf(msg, size, "option '--%s' takes no value", found->name);
  } else if (found->has_arg == required_argument && eq == NULL) {
    snprintf(msg, size, "option '--%s' needs a value", found->name);
  } else {
    snprintf(msg, size, "option '%s' was refused", shown); /* not a case getopt_long refuses */
  }
  return msg;
}

char *cli_value_option_error(const struct option *longopts, char *const argv[], int next,
                             const char *value, int opt, char *msg, size_t size)
{
  const struct option *named, *self = NULL;
  const char *eq;
  char shown[256], whole[256], full[128] = "";
  size_t len;
  int matches;

  assert(longopts != NULL && argv != NULL && msg != NULL && size > 0);
  /* only a value that getopt_long took from the next argument ("--NAME VALUE") */
  if (value == NULL || next < 1 || argv[next - 1] != value) {
    return NULL;
  }
  matches = long_lookup(longopts, value, &len, &eq, &named);
  if (matches == 0) {
    return NULL; /* not the name of an option, nor an abbreviation of one */
  }
  for (const struct option *o = longopts; o->name != NULL; o++) {
    if (o->val == opt) {
      self = o;
      break;
    }
  }
  assert(self != NULL);
  if (matches > 1) {
    snprintf(full, sizeof full, " (an abbreviation of options)");
  } else if (named->name[len - 2] != '\0') { /* matches > 0: value is "--NAME" */
    snprintf(full, sizeof full, " (--%s)", named->name);
  }
  log_escape(shown, sizeof shown, value, len);
  log_escape_str(whole, sizeof whole, value);
  snprintf(msg, size, "option '--%s' needs a value, not the option '%s'%s; write --%s=%s if "
           "that is the value", self->name, shown, full, self->name, whole);
  return msg;
}

int cli_parse_unsigned(const char *text, unsigned min, unsigned max, unsigned *out)
{
  unsigned long v;
  char *end;

  if (text[0] < '0' || text[0] > '9') {
    return -EINVAL; /* strtoul would skip spaces and take a sign: "-1" wraps around */
  }
  errno = 0;
  v = strtoul(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) {
    return -EINVAL;
  }
  *out = (unsigned)v;
  return 0;
}

int cli_utf8_check(const char *text)
{
  iconv_t cd = iconv_open("UTF-32LE", "UTF-8");
  char *in = (char *)text;
  size_t in_left = strlen(text);
  int rc = 0;

  if (cd == (iconv_t)-1) {
    return -errno;
  }
  while (in_left > 0 && rc == 0) {
    char buf[1024];
    char *out = buf;
    size_t out_left = sizeof buf;
    if (iconv(cd, &in, &in_left, &out, &out_left) == (size_t)-1 && errno != E2BIG) {
      rc = -EILSEQ; /* EILSEQ: an invalid sequence; EINVAL: one cut short at the end */
    }
  }
  iconv_close(cd);
  return rc;
}

int cli_startup_status(int err)
{
  return err == -EMFILE || err == -ENFILE || err == -ENOMEM || err == -ENOBUFS ? 1 : 2;
}

const char *cli_startup_error(int err, char *buf, size_t size)
{
  struct rlimit rl;

  if (err == -EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    snprintf(buf, size, "%s (the open-files limit, ulimit -Hn, is %llu)", strerror(EMFILE),
             (unsigned long long)rl.rlim_cur);
    return buf;
  }
  return strerror(-err);
}
