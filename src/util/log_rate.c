/* SPDX-License-Identifier: MIT */
/* log_rate.c: see log_rate.h. */
#include "util/log_rate.h"

#include <stdio.h>

bool log_rate_allows(atomic_uint *count, const char *what, const char **suffix)
{
  static _Thread_local char note[96];
  unsigned n = atomic_fetch_add(count, 1) + 1;

  *suffix = "";
  if (n == LOG_RATE_FIRST) {
    snprintf(note, sizeof note, " (further %s are logged once per %u)", what, LOG_RATE_EVERY);
    *suffix = note;
  } else if (n > LOG_RATE_FIRST) {
    snprintf(note, sizeof note, " (%u more %s)", LOG_RATE_EVERY, what);
    *suffix = note;
  }
  return n <= LOG_RATE_FIRST || n % LOG_RATE_EVERY == 0;
}
