/* cli.c: see cli.h. */
#include "util/cli.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

char *cli_option_error(const struct option *longopts, const char *arg, int short_opt, char *msg,
                       size_t size)
{
  const struct option *found = NULL;
  char shown[256];
  const char *eq;
  size_t len;
  int matches = 0;

  assert(longopts != NULL && msg != NULL && size > 0);
  if (short_opt != 0 && short_opt < 256) {
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
  log_escape(shown, sizeof shown, arg, strlen(arg)); /* one line, whatever its bytes */
  if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
    snprintf(msg, size, "unknown option '%s'", shown);
    return msg;
  }
  eq = strchr(arg + 2, '=');
  len = eq != NULL ? (size_t)(eq - (arg + 2)) : strlen(arg + 2);
  log_escape(shown, sizeof shown, arg, len + 2); /* the option without its value */
  for (const struct option *o = longopts; o->name != NULL; o++) {
    if (strncmp(o->name, arg + 2, len) != 0) {
      continue;
    }
    if (o->name[len] == '\0') { /* an exact match wins over abbreviations */
      found = o;
      matches = 1;
      break;
    }
    found = o;
    matches++;
  }
  if (matches == 0) {
    snprintf(msg, size, "unknown option '%s'", shown);
  } else if (matches > 1) {
    int n = snprintf(msg, size, "option '%s' is ambiguous (", shown);
    const char *sep = "";
    for (const struct option *o = longopts; o->name != NULL && n >= 0 && (size_t)n < size; o++) {
      if (strncmp(o->name, arg + 2, len) == 0) {
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
