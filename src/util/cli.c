/* cli.c: see cli.h. */
#include "util/cli.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

char *cli_option_error(const struct option *longopts, const char *arg, int short_opt, char *msg,
                       size_t size)
{
  const struct option *found = NULL;
  const char *eq;
  size_t len;
  int matches = 0;

  assert(longopts != NULL && msg != NULL && size > 0);
  if (short_opt > 0 && short_opt < 256) {
    snprintf(msg, size, "unknown option '-%c' (the options are long ones, --NAME)", short_opt);
    return msg;
  }
  if (arg == NULL || strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
    snprintf(msg, size, "unknown option '%s'", arg != NULL ? arg : "");
    return msg;
  }
  eq = strchr(arg + 2, '=');
  len = eq != NULL ? (size_t)(eq - (arg + 2)) : strlen(arg + 2);
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
    snprintf(msg, size, "unknown option '%.*s'", (int)(len + 2), arg);
  } else if (matches > 1) {
    int n = snprintf(msg, size, "option '%.*s' is ambiguous (", (int)(len + 2), arg);
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
    snprintf(msg, size, "option '%s' was refused", arg); /* not a case getopt_long refuses */
  }
  return msg;
}
