/* SPDX-License-Identifier: MIT */
/* bench_machine.c: CPU, kernel, file system and tool versions. */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench/bench_machine.h"
#include "bench/bench_proc.h"
#include "bench/bench_util.h"

static void cpu_model(char *buf, size_t len)
{
  char line[512];
  FILE *f = fopen("/proc/cpuinfo", "r");

  buf[0] = '\0';
  if (f == NULL) {
    return;
  }
  while (fgets(line, sizeof(line), f) != NULL) {
    if (strncmp(line, "model name", 10) == 0) {
      const char *p = strchr(line, ':');

      if (p != NULL) {
        p++;
        while (*p == ' ' || *p == '\t') {
          p++;
        }
        bench_fmt(buf, len, "%s", p);
        buf[strcspn(buf, "\n")] = '\0';
      }
      break;
    }
  }
  fclose(f);
}

/* Finds the mount holding `dir` (longest mount point that prefixes it). */
static void dir_fs(const char *dir, char *fs, size_t fslen, char *dev, size_t devlen)
{
  char line[4096], best_fs[64] = "", best_dev[128] = "";
  size_t best = 0;
  FILE *f = fopen("/proc/self/mountinfo", "r");

  fs[0] = '\0';
  dev[0] = '\0';
  if (f == NULL) {
    return;
  }
  while (fgets(line, sizeof(line), f) != NULL) {
    char mnt[1024], type[64], source[128];
    const char *sep = strstr(line, " - ");
    size_t n;

    /* id parent major:minor root mount-point options ... - type source super-options */
    if (sep == NULL || sscanf(line, "%*s %*s %*s %*s %1023s", mnt) != 1 ||
        sscanf(sep + 3, "%63s %127s", type, source) != 2) {
      continue;
    }
    n = strlen(mnt);
    if (strncmp(dir, mnt, n) == 0 && (dir[n] == '/' || dir[n] == '\0' || n == 1) && n >= best) {
      best = n;
      bench_fmt(best_fs, sizeof(best_fs), "%s", type);
      bench_fmt(best_dev, sizeof(best_dev), "%s", source);
    }
  }
  fclose(f);
  bench_fmt(fs, fslen, "%s", best_fs);
  bench_fmt(dev, devlen, "%s", best_dev);
}

/* Runs `tool --version` and keeps the first line (or the part after "version "). */
static void tool_version(const char *tool, char *buf, size_t len)
{
  char out[512];
  char *argv[] = { (char *)tool, "--version", NULL };

  buf[0] = '\0';
  if (!bench_proc_have_tool(tool) || bench_proc_capture(argv, out, sizeof(out), 10.0) != 0) {
    return;
  }
  out[strcspn(out, "\n")] = '\0';
  bench_fmt(buf, len, "%s", out);
}

void bench_machine_describe(struct bench_machine *m, const char *dir)
{
  struct utsname u;
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

  memset(m, 0, sizeof(*m));
  cpu_model(m->cpu_model, sizeof(m->cpu_model));
  m->cores = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
  m->mem_bytes = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
  if (uname(&u) == 0) {
    bench_fmt(m->kernel, sizeof(m->kernel), "%s %s %s", u.sysname, u.release, u.machine);
  }
  dir_fs(dir, m->dir_fs, sizeof(m->dir_fs), m->dir_dev, sizeof(m->dir_dev));
  tool_version("fio", m->fio_version, sizeof(m->fio_version));
  tool_version("qemu-system-x86_64", m->qemu_version, sizeof(m->qemu_version));
  tool_version("qemu-nbd", m->qemu_nbd_version, sizeof(m->qemu_nbd_version));
  tool_version("nbdkit", m->nbdkit_version, sizeof(m->nbdkit_version));
#ifdef DISKGATE_VERSION
  bench_fmt(m->diskgate_version, sizeof(m->diskgate_version), "diskgate %s", DISKGATE_VERSION);
#endif
}
