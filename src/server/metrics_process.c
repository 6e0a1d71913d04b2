/* SPDX-License-Identifier: MIT */
/* metrics_process.c: see metrics_process.h. Sources: proc(5) for /proc/self/stat (fields
 * utime 14, stime 15, num_threads 20, starttime 22, vsize 23, rss 24) and /proc/stat's
 * btime. */
#include "server/metrics_process.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void gauge(FILE *f, const char *name, const char *type, const char *help, double v)
{
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

/* Boot time in seconds since the epoch (/proc/stat btime), or -1. */
static long long boot_time(void)
{
  FILE *f = fopen("/proc/stat", "re");
  char line[256];
  long long bt = -1;

  if (f == NULL) {
    return -1;
  }
  while (fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "btime %lld", &bt) == 1) {
      break;
    }
  }
  fclose(f);
  return bt;
}

static long open_fds(void)
{
  DIR *d = opendir("/proc/self/fd");
  struct dirent *de;
  long n = 0;

  if (d == NULL) {
    return -1;
  }
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] != '.') {
      n++;
    }
  }
  closedir(d);
  return n - 1; /* not the directory's own descriptor */
}

void metrics_process_render(FILE *f)
{
  char buf[1024];
  FILE *st = fopen("/proc/self/stat", "re");
  size_t n = st != NULL ? fread(buf, 1, sizeof buf - 1, st) : 0;
  double tick = (double)sysconf(_SC_CLK_TCK);
  double page = (double)sysconf(_SC_PAGESIZE);
  struct rlimit rl;
  long fds = open_fds();

  if (st != NULL) {
    fclose(st);
  }
  buf[n] = '\0';
  /* the fields after the command name, which may hold spaces: from the last ')' */
  char *p = strrchr(buf, ')');
  unsigned long long utime, stime, start, vsize;
  long long threads, rss;
  if (p != NULL && tick > 0 &&
      sscanf(p + 2, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu %*s %*s %*s %*s "
                    "%lld %*s %llu %llu %lld",
             &utime, &stime, &threads, &start, &vsize, &rss) == 6) {
    gauge(f, "process_cpu_seconds_total", "counter",
          "Total user and system CPU time spent in seconds.", (double)(utime + stime) / tick);
    gauge(f, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
          (double)rss * page);
    gauge(f, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
          (double)vsize);
    gauge(f, "process_threads", "gauge", "Number of OS threads in the process.",
          (double)threads);
    long long bt = boot_time();
    if (bt >= 0) {
      gauge(f, "process_start_time_seconds", "gauge",
            "Start time of the process since unix epoch in seconds.",
            (double)bt + (double)start / tick);
    }
  }
  if (fds >= 0) {
    gauge(f, "process_open_fds", "gauge", "Number of open file descriptors.", (double)fds);
  }
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    gauge(f, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
          (double)rl.rlim_cur);
  }
}
