/* SPDX-License-Identifier: MIT */
/* log_spell.c: see log_spell.h. */
#include "util/log_spell.h"

bool log_spell_note(struct log_spell *sp)
{
  clock_gettime(CLOCK_MONOTONIC, &sp->last);
  return sp->count++ == 0;
}

bool log_spell_quiet(const struct log_spell *sp, int quiet_s)
{
  struct timespec now;

  if (sp->count == 0) {
    return false;
  }
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec - sp->last.tv_sec >= quiet_s;
}

unsigned long log_spell_end(struct log_spell *sp)
{
  unsigned long n = sp->count;

  sp->count = 0;
  return n;
}
