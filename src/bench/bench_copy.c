/* SPDX-License-Identifier: MIT */
/* bench_copy.c: the copy test's tree and runs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_blockdev.h"
#include "bench/bench_copy.h"
#include "bench/bench_env.h"
#include "bench/bench_proc.h"
#include "bench/bench_util.h"

#define FILES_PER_DIR 100
#define MIN_FILE 512.0
#define MAX_FILE (4.0 * 1024 * 1024)

static uint64_t next_random(uint64_t *s)
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

static int write_file(const char *path, size_t size, uint64_t *seed, uint64_t *buf, size_t cap)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  size_t done = 0;

  if (fd < 0) {
    return -errno;
  }
  while (done < size) {
    size_t len = size - done < cap ? size - done : cap;

    for (size_t i = 0; i < (len + 7) / 8; i++) {
      buf[i] = next_random(seed);
    }
    ssize_t w = write(fd, buf, len);

    if (w < 0) {
      int err = -errno;

      close(fd);
      return err;
    }
    done += (size_t)w;
  }
  return close(fd) < 0 ? -errno : 0;
}

static int read_manifest(const char *path, uint64_t *bytes, unsigned *files, uint64_t *want)
{
  unsigned long long b, w;
  FILE *f = fopen(path, "r");
  int n;

  if (f == NULL) {
    return -errno;
  }
  n = fscanf(f, "%llu %u %llu", &b, files, &w);
  fclose(f);
  if (n != 3) {
    return -EINVAL;
  }
  *bytes = b;
  *want = w;
  return 0;
}

int bench_copy_make_tree(struct bench_env *env)
{
  const size_t cap = 1u << 20;
  uint64_t want = env->opts->copy_size, bytes = 0, have_want = 0, seed = 0x243f6a8885a308d3ull;
  const char *manifest = env->tree_manifest;
  char path[PATH_MAX + 64];
  unsigned files = 0;
  uint64_t *buf;
  FILE *f;
  int rc = 0;

  struct stat st;

  /* A manifest describes a tree that --keep kept; without the tree it is stale. */
  if (read_manifest(manifest, &bytes, &files, &have_want) == 0 && have_want == want &&
      stat(env->tree, &st) == 0 && S_ISDIR(st.st_mode)) {
    env->tree_bytes = bytes;
    env->tree_files = files;
    return 0;
  }
  bench_env_remove_tree(env->tree);
  unlink(manifest);
  if (mkdir(env->tree, 0755) < 0) {
    return -errno;
  }
  buf = malloc(cap);
  if (buf == NULL) {
    return -ENOMEM;
  }
  bytes = 0;
  files = 0;
  while (bytes < want && rc == 0) {
    if (bench_proc_interrupted()) {
      rc = -EINTR;
      break;
    }
    double u = (double)(next_random(&seed) >> 11) / 9007199254740992.0;
    size_t size = (size_t)(MIN_FILE * pow(MAX_FILE / MIN_FILE, u));

    if (size > want - bytes) {
      size = (size_t)(want - bytes);
    }
    if (files % FILES_PER_DIR == 0) {
      bench_fmt(path, sizeof(path), "%s/d%03u", env->tree, files / FILES_PER_DIR);
      if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        rc = -errno;
        break;
      }
    }
    bench_fmt(path, sizeof(path), "%s/d%03u/f%05u.bin", env->tree, files / FILES_PER_DIR, files);
    rc = write_file(path, size, &seed, buf, cap);
    bytes += size;
    files++;
  }
  free(buf);
  if (rc < 0) {
    return rc;
  }
  sync();
  f = fopen(manifest, "w");
  if (f == NULL) {
    return -errno;
  }
  fprintf(f, "%llu %u %llu\n", (unsigned long long)bytes, files, (unsigned long long)want);
  if (fclose(f) != 0) {
    return -EIO;
  }
  env->tree_bytes = bytes;
  env->tree_files = files;
  return 0;
}

static char warm_buf[1 << 20];

static int warm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
  int fd;

  (void)sb;
  (void)ftw;
  if (flag != FTW_F) {
    return 0;
  }
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return 0;
  }
  while (read(fd, warm_buf, sizeof(warm_buf)) > 0) {
  }
  close(fd);
  return 0;
}

int bench_copy_run(const struct bench_env *env, const char *dev, pid_t server_pid,
                   pid_t helper_pid, const char *tag, struct bench_sample *s)
{
  char mnt[PATH_MAX], log[PATH_MAX], name[160];
  char *cp_argv[] = { "cp", "-a", (char *)env->tree, mnt, NULL };
  double srv0 = 0, srv1 = 0, hlp0 = 0, hlp1 = 0, cp_cpu = 0, t0, t1;
  int rc, fd;

  memset(s, 0, sizeof(*s));
  bench_fmt(name, sizeof(name), "mnt-%s", tag);
  bench_env_work_path(env, name, mnt, sizeof(mnt));
  bench_env_out_path(env, "logs", "copy.log", log, sizeof(log));
  if (bench_blockdev_mkfs(dev, log) < 0) {
    fprintf(stderr, "diskgate bench: mkfs.ext4 on %s failed (see %s)\n", dev, log);
    return -EIO;
  }
  if (bench_blockdev_mount(dev, mnt, log) < 0) {
    fprintf(stderr, "diskgate bench: mounting %s failed (see %s)\n", dev, log);
    return -EIO;
  }
  nftw(env->tree, warm_entry, 16, FTW_PHYS);
  if (server_pid > 0) {
    bench_proc_cpu(server_pid, &srv0);
  }
  if (helper_pid > 0) {
    bench_proc_cpu(helper_pid, &hlp0);
  }
  t0 = bench_proc_now();
  rc = bench_proc_run_measured(cp_argv, log, 3600.0, &cp_cpu);
  if (rc == 0) {
    fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || syncfs(fd) < 0) {
      rc = -errno;
    }
    if (fd >= 0) {
      close(fd);
    }
  } else if (rc == -EINTR && bench_proc_interrupted()) {
    /* interrupted (Ctrl-C): cp was stopped; the run is marked so */
  } else if (rc == -EINTR) {
    fprintf(stderr, "diskgate bench: cp -a onto %s was killed by a signal (see %s)\n", dev, log);
    rc = -EIO;
  } else {
    if (rc > 0) {
      fprintf(stderr, "diskgate bench: cp -a onto %s failed (exit status %d, see %s)\n", dev, rc,
              log);
    } else {
      fprintf(stderr, "diskgate bench: cp -a onto %s failed (%s, see %s)\n", dev, strerror(-rc),
              log);
    }
    rc = -EIO;
  }
  t1 = bench_proc_now();
  if (server_pid > 0) {
    bench_proc_cpu(server_pid, &srv1);
  }
  if (helper_pid > 0) {
    bench_proc_cpu(helper_pid, &hlp1);
  }
  if (bench_blockdev_umount(mnt, log) < 0 && rc == 0) {
    rc = -EIO;
  }
  rmdir(mnt);
  if (rc < 0) {
    return rc;
  }
  s->seconds = t1 - t0;
  s->value = (double)env->tree_bytes / (1024.0 * 1024.0) / s->seconds;
  s->mbps = (double)env->tree_bytes / 1e6 / s->seconds;
  s->cpu_server_s = srv1 - srv0;
  s->cpu_client_s = cp_cpu + (hlp1 - hlp0);
  s->cpu_per_kio = (s->cpu_server_s + s->cpu_client_s) /
                   ((double)env->tree_bytes / (1024.0 * 1024.0 * 1024.0));
  s->ok = s->value > 0;
  return 0;
}
