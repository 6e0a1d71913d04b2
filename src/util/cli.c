/* cli.c: see cli.h. */
#include "util/cli.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

char *cli_option_error(const struct option *longopts, const char *arg, int short_opt, char *msg,
                       size_t size)
{
  const struct option *found = NULL;
  char shown[256];
  const char *eq;
  bool is_long;
  size_t len;
  int matches = 0;

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
  is_long = strncmp(arg, "--", 2) == 0 && arg[2] != '\0';
  eq = is_long ? strchr(arg + 2, '=') : NULL;
  len = eq != NULL ? (size_t)(eq - (arg + 2)) : strlen(arg) - (is_long ? 2 : 0);
  log_escape(shown, sizeof shown, arg, (is_long ? 2 : 0) + len); /* one line, no value */
  for (const struct option *o = longopts; is_long && o->name != NULL; o++) {
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
