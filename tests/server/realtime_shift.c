/* SPDX-License-Identifier: MIT */
/* realtime_shift.c: an LD_PRELOAD module for server-clock-step. It moves what the process
 * reads from CLOCK_REALTIME through clock_gettime(2) by DG_REALTIME_SHIFT_S seconds (a
 * signed integer; 0 when unset), while the kernel, which times a futex wait against an
 * absolute CLOCK_REALTIME deadline, keeps the true wall clock. A deadline computed from
 * the shifted clock is then as far off as if the wall clock had been stepped by that much
 * between reading it and waiting (NTP, `date -s`). Other clocks are untouched. Test code:
 * any thread. */
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

int clock_gettime(clockid_t id, struct timespec *ts)
{
  static clock_gettime_fn real;
  const char *shift;
  int rc;

  if (real == NULL) {
    real = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
  }
  rc = real(id, ts);
  if (rc == 0 && id == CLOCK_REALTIME && (shift = getenv("DG_REALTIME_SHIFT_S")) != NULL) {
    ts->tv_sec += strtol(shift, NULL, 10);
  }
  return rc;
}
