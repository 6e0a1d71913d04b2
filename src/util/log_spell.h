/* SPDX-License-Identifier: MIT */
/* log_spell.h: a spell of repeated events (connections refused, closed to make room) logged
 * as two lines instead of one per event: the caller logs the event that starts a spell,
 * and, once none has come for a quiet period (or when it stops), the count.
 * Threads: the owner's; callers serialise their calls. Units: seconds, CLOCK_MONOTONIC. */
#ifndef DISKGATE_UTIL_LOG_SPELL_H
#define DISKGATE_UTIL_LOG_SPELL_H

#include <stdbool.h>
#include <time.h>

struct log_spell {
  unsigned long count;  /* events in the current spell; 0: no spell */
  struct timespec last; /* the latest event's time */
};

/* An event now. Returns true when it starts a spell (the caller logs its line). */
bool log_spell_note(struct log_spell *sp);

/* True when a spell is going on and no event has come for `quiet_s` seconds. */
bool log_spell_quiet(const struct log_spell *sp, int quiet_s);

/* Ends the spell. Returns how many events it had (0: there was none). */
unsigned long log_spell_end(struct log_spell *sp);

/* The decimal text of a numeric macro, for a log format: LOG_TEXT_OF(5) is "5". */
#define LOG_TEXT_OF_(x) #x
#define LOG_TEXT_OF(x) LOG_TEXT_OF_(x)

#endif
