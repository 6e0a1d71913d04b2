/* SPDX-License-Identifier: MIT */
/* bench_env.c: directories, the test file, the binary and the source tree. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench/bench_env.h"
#include "bench/bench_paths.h"
#include "bench/bench_proc.h"
#include "bench/bench_util.h"
#include "util/log.h"

/* A path the operator gave, escaped for a one-line message (log_escape_str). The buffer is
 * per thread and reused: one use per message. */
static const char *shown_path(const char *path)
{
  static _Thread_local char buf[LOG_SHOWN_MAX];

  return log_escape_str(buf, sizeof buf, path);
}

int bench_env_mkdir_p(const char *path)
{
  char buf[PATH_MAX];
  size_t len = strlen(path);

  if (len == 0 || len >= sizeof(buf)) {
    return -ENAMETOOLONG;
  }
  memcpy(buf, path, len + 1);
  for (char *p = buf + 1; *p != '\0'; p++) {
    if (*p == '/') {
      *p = '\0';
      if (mkdir(buf, 0755) < 0 && errno != EEXIST) {
        return -errno;
      }
      *p = '/';
    }
  }
  if (mkdir(buf, 0755) < 0 && errno != EEXIST) {
    return -errno;
  }
  return 0;
}

/* Returns true when dir looks like the diskgate source tree. */
static bool is_srcdir(const char *dir)
{
  char p[PATH_MAX];

  bench_fmt(p, sizeof(p), "%s/src/bench/bench.h", dir);
  return access(p, R_OK) == 0;
}

static void find_srcdir(struct bench_env *env)
{
  const char *from_env = getenv("DISKGATE_SRCDIR");
  char guess[PATH_MAX];

  env->srcdir[0] = '\0';
  if (from_env != NULL && is_srcdir(from_env)) {
    bench_fmt(env->srcdir, sizeof(env->srcdir), "%s", from_env);
    return;
  }
  if (is_srcdir(BENCH_SRCDIR)) {
    bench_fmt(env->srcdir, sizeof(env->srcdir), "%s", BENCH_SRCDIR);
    return;
  }
  /* build/diskgate next to the sources */
  bench_fmt(guess, sizeof(guess), "%s", env->self);
  for (int up = 0; up < 3; up++) {
    char *slash = strrchr(guess, '/');

    if (slash == NULL) {
      break;
    }
    *slash = '\0';
    if (is_srcdir(guess)) {
      bench_fmt(env->srcdir, sizeof(env->srcdir), "%s", guess);
      return;
    }
  }
}

int bench_env_locate(struct bench_env *env, const struct bench_opts *opts, bool need_file,
                     bool need_tree)
{
  struct statvfs vfs;
  struct stat sb;
  uint64_t need;
  ssize_t n;

  memset(env, 0, sizeof(*env));
  env->dir_lock = -1;
  env->opts = opts;
  env->need_file = need_file;
  if (stat(opts->dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
    fprintf(stderr, "diskgate bench: --dir %s is not a directory\n", shown_path(opts->dir));
    return -ENOTDIR;
  }
  if (realpath(opts->dir, env->dir) == NULL) {
    int rc = -errno;

    fprintf(stderr, "diskgate bench: --dir %s: %s\n", shown_path(opts->dir), strerror(-rc));
    return rc;
  }
  bench_fmt(env->file, sizeof(env->file), "%s/diskgate-bench.img", env->dir);
  bench_fmt(env->tree, sizeof(env->tree), "%s/diskgate-bench-tree", env->dir);
  bench_fmt(env->tree_manifest, sizeof(env->tree_manifest), "%s.manifest", env->tree);
  need = (need_file ? opts->size : 0) + (need_tree ? opts->copy_size : 0);
  if (stat(env->file, &sb) == 0 && S_ISREG(sb.st_mode)) {
    need = need > (uint64_t)sb.st_size ? need - (uint64_t)sb.st_size : 0;
  }
  if (statvfs(env->dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < need) {
    fprintf(stderr, "diskgate bench: --dir %s has %llu MiB free, the lab needs %llu MiB there "
            "(%s)\n", shown_path(opts->dir),
            (unsigned long long)((uint64_t)vfs.f_bavail * vfs.f_frsize >> 20),
            (unsigned long long)(need >> 20),
            need_file && need_tree ? "--size and the copy tree"
            : need_tree            ? "the copy tree"
                                   : "--size");
    return -ENOSPC;
  }
  n = readlink("/proc/self/exe", env->self, sizeof(env->self) - 1);
  if (n <= 0) {
    bench_fmt(env->self, sizeof(env->self), "diskgate");
  } else {
    env->self[n] = '\0';
  }
  find_srcdir(env);
  return 0;
}

int bench_env_lock_dir(struct bench_env *env)
{
  int fd = open(env->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int rc;

  if (fd < 0) {
    rc = -errno;
    fprintf(stderr, "diskgate bench: --dir %s: %s\n", shown_path(env->opts->dir), strerror(-rc));
    return rc;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
    rc = errno;
    close(fd);
    if (rc == EWOULDBLOCK) {
      fprintf(stderr, "diskgate bench: another diskgate bench is using --dir %s (its test file "
              "would be shared): give each run its own --dir\n", shown_path(env->opts->dir));
      return -EBUSY;
    }
    /* A file system that cannot lock a directory (NFS may refuse a read-only fd): run
     * without the lock, as before it existed. */
    fprintf(stderr, "diskgate bench: note: cannot lock --dir %s (%s); not checking for "
            "another lab there\n", shown_path(env->opts->dir), strerror(rc));
    return 0;
  }
  env->dir_lock = fd;
  return 0;
}

int bench_env_init(struct bench_env *env)
{
  const char *tmp = getenv("TMPDIR");
  char sub[PATH_MAX];
  int rc;

  if (tmp == NULL || *tmp == '\0' || strlen(tmp) > 64) {
    tmp = "/tmp";
  }
  bench_fmt(env->work, sizeof(env->work), "%s/diskgate-bench.XXXXXX", tmp);
  if (mkdtemp(env->work) == NULL) {
    rc = -errno;
    fprintf(stderr, "diskgate bench: cannot create a directory in %s: %s\n", shown_path(tmp),
            strerror(-rc));
    env->work[0] = '\0';
    return rc;
  }
  assert(env->out[0] == '/'); /* bench_env_open_out ran */
  bench_fmt(sub, sizeof(sub), "%s/raw", env->out);
  rc = bench_env_mkdir_p(sub);
  if (rc == 0) {
    bench_fmt(sub, sizeof(sub), "%s/logs", env->out);
    rc = bench_env_mkdir_p(sub);
  }
  if (rc < 0) {
    fprintf(stderr, "diskgate bench: cannot create %s: %s\n", shown_path(sub), strerror(-rc));
    return rc;
  }
  return 0;
}

int bench_env_open_out(struct bench_env *env)
{
  const char *out = env->opts->out;
  struct stat st;
  int rc = bench_env_mkdir_p(out);

  if (rc == 0 && stat(out, &st) != 0) {
    rc = -errno;
  }
  if (rc == 0 && !S_ISDIR(st.st_mode)) {
    rc = -ENOTDIR;
  }
  if (rc == 0 && access(out, W_OK) != 0) {
    rc = -errno;
  }
  if (rc == 0 && realpath(out, env->out) == NULL) {
    rc = -errno;
  }
  if (rc < 0) {
    fprintf(stderr, "diskgate bench: cannot create --out %s: %s\n", shown_path(out),
            strerror(-rc));
  }
  return rc;
}

/* xorshift64*: fast pseudo-random bytes, so no file system or device can compress them. */
static uint64_t next_random(uint64_t *s)
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

int bench_env_make_file(struct bench_env *env)
{
  const size_t chunk = 1u << 20;
  uint64_t size = env->opts->size;
  uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
  uint64_t *buf;
  struct stat sb;
  int fd, rc = 0;

  if (env->opts->keep && stat(env->file, &sb) == 0 && S_ISREG(sb.st_mode) &&
      (uint64_t)sb.st_size == size) {
    return 0;
  }
  buf = malloc(chunk);
  if (buf == NULL) {
    return -ENOMEM;
  }
  fd = open(env->file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = -errno;
    free(buf);
    return rc;
  }
  for (uint64_t off = 0; off < size && rc == 0; off += chunk) {
    size_t len = size - off < chunk ? (size_t)(size - off) : chunk;
    size_t done = 0;

    if (bench_proc_interrupted()) {
      rc = -EINTR; /* Ctrl-C: do not write (and sync) the rest of a large file first */
      break;
    }
    for (size_t i = 0; i < chunk / sizeof(uint64_t); i++) {
      buf[i] = next_random(&seed);
    }
    while (done < len) {
      ssize_t w = write(fd, (char *)buf + done, len - done);

      if (w < 0) {
        if (errno == EINTR) {
          continue;
        }
        rc = -errno;
        break;
      }
      done += (size_t)w;
    }
  }
  if (rc == 0 && fdatasync(fd) < 0) {
    rc = -errno;
  }
  close(fd);
  free(buf);
  if (rc < 0) {
    unlink(env->file);
  }
  return rc;
}

void bench_env_work_path(const struct bench_env *env, const char *name, char *buf, size_t len)
{
  bench_fmt(buf, len, "%s/%s", env->work, name);
}

void bench_env_out_path(const struct bench_env *env, const char *sub, const char *name,
                        char *buf, size_t len)
{
  if (sub != NULL) {
    bench_fmt(buf, len, "%s/%s/%s", env->out, sub, name);
  } else {
    bench_fmt(buf, len, "%s/%s", env->out, name);
  }
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

void bench_env_remove_tree(const char *path)
{
  nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void bench_env_cleanup(struct bench_env *env)
{
  if (env->work[0] != '\0') {
    bench_env_remove_tree(env->work);
    env->work[0] = '\0';
  }
  if (!env->opts->keep) {
    if (env->need_file) {
      unlink(env->file);
    }
    bench_env_remove_tree(env->tree);
    if (env->tree_manifest[0] != '\0') {
      unlink(env->tree_manifest); /* without its tree it would be stale */
    }
  }
  if (env->dir_lock >= 0) {
    close(env->dir_lock); /* releases the flock: another lab may use --dir now */
    env->dir_lock = -1;
  }
}
