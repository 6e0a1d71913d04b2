/* SPDX-License-Identifier: MIT */
/* bench_qcow2.c: the qcow2 rows' images and the --format check (see bench_qcow2.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_proc.h"
#include "bench/bench_qcow2.h"
#include "bench/bench_util.h"
#include "bench/bench_variants.h"

/* The image files in --dir; their index is their bit in env->qcow2_made. */
enum image_file {
  FILE_FULL_DISKGATE,
  FILE_FULL_QEMU_NBD,
  FILE_FRESH,
  FILE_1T,
  FILE_COUNT,
};

static const char *const file_names[FILE_COUNT] = {
  [FILE_FULL_DISKGATE] = "diskgate-bench-full.qcow2",
  [FILE_FULL_QEMU_NBD] = "diskgate-bench-full-copy.qcow2",
  [FILE_FRESH] = "diskgate-bench-fresh.qcow2",
  [FILE_1T] = "diskgate-bench-1t.qcow2",
};

/* Every qemu-img or cp run gets this long; converting a few GiB takes seconds. */
#define IMAGE_TOOL_TIMEOUT_S 600.0

uint64_t bench_qcow2_size(const struct bench_config *cfg, uint64_t test_size)
{
  switch (cfg->image) {
  case BENCH_IMAGE_QCOW2_FRESH:
    return BENCH_QCOW2_FRESH_SIZE;
  case BENCH_IMAGE_QCOW2_1T:
    return BENCH_QCOW2_1T_SIZE;
  case BENCH_IMAGE_QCOW2_FULL:
  case BENCH_IMAGE_ASIF_FULL:
  case BENCH_IMAGE_NONE:
    break;
  }
  return test_size;
}

/* The file of row cfg's image. */
static enum image_file file_of(const struct bench_config *cfg)
{
  switch (cfg->image) {
  case BENCH_IMAGE_QCOW2_FRESH:
    return FILE_FRESH;
  case BENCH_IMAGE_QCOW2_1T:
    return FILE_1T;
  case BENCH_IMAGE_QCOW2_FULL:
  case BENCH_IMAGE_ASIF_FULL:
  case BENCH_IMAGE_NONE:
    break;
  }
  return cfg->server == BENCH_SERVER_QEMU_NBD ? FILE_FULL_QEMU_NBD : FILE_FULL_DISKGATE;
}

static void file_path(const struct bench_env *env, enum image_file which, char *buf, size_t len)
{
  bench_fmt(buf, len, "%s/%s", env->dir, file_names[which]);
}

/* Runs argv (qemu-img or cp) with its output in <out>/logs/qemu-img.log. Returns 0 or -EIO
 * after one line naming what failed. */
static int run_tool(const struct bench_env *env, char *const argv[], const char *what)
{
  char log[PATH_MAX];
  int rc;

  bench_env_out_path(env, "logs", "qemu-img.log", log, sizeof(log));
  rc = bench_proc_run(argv, log, IMAGE_TOOL_TIMEOUT_S, NULL);
  if (rc != 0) {
    fprintf(stderr, "diskgate bench: cannot make %s (see %s)\n", what, log);
    return rc == -EINTR ? -EINTR : -EIO;
  }
  return 0;
}

/* Makes file `which` of --dir; the full copy needs the full image first. */
static int file_make(struct bench_env *env, enum image_file which)
{
  char path[PATH_MAX], src[PATH_MAX], size[32];
  int rc;

  file_path(env, which, path, sizeof(path));
  unlink(path);
  switch (which) {
  case FILE_FULL_DISKGATE: {
    char *argv[] = { "qemu-img", "convert", "-q", "-f", "raw", "-O", "qcow2", env->file, path,
                     NULL };
    fprintf(stderr, "diskgate bench: writing the test file's data as a qcow2 image %s\n", path);
    rc = run_tool(env, argv, path);
    break;
  }
  case FILE_FULL_QEMU_NBD: {
    char *argv[] = { "cp", src, path, NULL };
    file_path(env, FILE_FULL_DISKGATE, src, sizeof(src));
    rc = run_tool(env, argv, path);
    break;
  }
  case FILE_FRESH: {
    char *argv[] = { "qemu-img", "create", "-q", "-f", "qcow2", path, size, NULL };
    bench_fmt(size, sizeof(size), "%llu", (unsigned long long)BENCH_QCOW2_FRESH_SIZE);
    rc = run_tool(env, argv, path); /* no preallocation: every cluster waits for a write */
    break;
  }
  case FILE_1T: {
    char *argv[] = { "qemu-img", "create", "-q", "-f", "qcow2", "-o", "preallocation=metadata",
                     path, size, NULL };
    bench_fmt(size, sizeof(size), "%llu", (unsigned long long)BENCH_QCOW2_1T_SIZE);
    fprintf(stderr, "diskgate bench: making the 1 TiB qcow2 image %s\n", path);
    rc = run_tool(env, argv, path);
    break;
  }
  case FILE_COUNT:
  default:
    rc = -EINVAL;
    break;
  }
  if (rc == 0) {
    env->qcow2_made |= 1u << which;
  } else {
    unlink(path);
  }
  return rc;
}

int bench_qcow2_image(struct bench_env *env, const struct bench_config *cfg, char *buf,
                      size_t len)
{
  enum image_file which = file_of(cfg);
  int rc = 0;

  if (cfg->image == BENCH_IMAGE_NONE) {
    return -EINVAL;
  }
  if (which == FILE_FULL_DISKGATE || which == FILE_FULL_QEMU_NBD) {
    /* both at once, before either server writes to its own */
    if (!(env->qcow2_made & (1u << FILE_FULL_DISKGATE))) {
      rc = file_make(env, FILE_FULL_DISKGATE);
    }
    if (rc == 0 && !(env->qcow2_made & (1u << FILE_FULL_QEMU_NBD))) {
      rc = file_make(env, FILE_FULL_QEMU_NBD);
    }
  } else if (which == FILE_FRESH || !(env->qcow2_made & (1u << which))) {
    rc = file_make(env, which);
  }
  if (rc < 0) {
    return rc;
  }
  file_path(env, which, buf, len);
  return 0;
}

void bench_qcow2_release(const struct bench_config *cfg, const char *path)
{
  if (cfg->image == BENCH_IMAGE_QCOW2_FRESH && path[0] != '\0') {
    unlink(path);
  }
}

void bench_qcow2_cleanup(struct bench_env *env)
{
  for (unsigned i = 0; i < FILE_COUNT; i++) {
    if (env->qcow2_made & (1u << i)) {
      char path[PATH_MAX];

      file_path(env, (enum image_file)i, path, sizeof(path));
      unlink(path);
    }
  }
  env->qcow2_made = 0;
}

/* Runs argv with its stdout and stderr into buf (len bytes, NUL-terminated, cut when
 * longer). Returns 0 when it ran and exited, or -errno. */
static int run_capture(char *const argv[], char *buf, size_t len)
{
  int fds[2], rc, st;
  size_t n = 0;
  pid_t pid;

  buf[0] = '\0';
  if (pipe2(fds, O_CLOEXEC) < 0) {
    return -errno;
  }
  rc = bench_proc_spawn_io(argv, fds[1], fds[1], &pid);
  close(fds[1]);
  if (rc < 0) {
    close(fds[0]);
    return rc;
  }
  for (;;) {
    char sink[512];
    ssize_t got = n + 1 < len ? read(fds[0], buf + n, len - 1 - n) : read(fds[0], sink, 512);

    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;
    }
    n += n + 1 < len ? (size_t)got : 0;
  }
  buf[n] = '\0';
  close(fds[0]);
  return bench_proc_wait(pid, 10.0, &st, NULL);
}

int bench_qcow2_check(const struct bench_env *env, const struct bench_config *cfg, char *why,
                      size_t len)
{
  static char help[16384];
  char *argv[] = { (char *)bench_variants_binary(cfg, env->self), "serve", "--help", NULL };

  if (cfg->kind != BENCH_CFG_QCOW2 || cfg->server != BENCH_SERVER_DISKGATE) {
    return 0;
  }
  if (run_capture(argv, help, sizeof(help)) < 0 || strstr(help, "--format") == NULL) {
    bench_fmt(why, len, "%s serves raw images only (its `serve --help` has no --format)",
              argv[0]);
    return -ENOTSUP;
  }
  return 0;
}
