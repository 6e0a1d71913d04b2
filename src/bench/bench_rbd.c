/* SPDX-License-Identifier: MIT */
/* bench_rbd.c: the cluster and the image behind the RBD rows. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backing/backing.h"
#include "bench/bench_guest.h"
#include "bench/bench_proc.h"
#include "bench/bench_rbd.h"
#include "bench/bench_util.h"

#define CLUSTER_SCRIPT "scripts/ceph-cluster.sh"

/* What the throw-away cluster needs (scripts/ceph-cluster.sh checks the same list). */
static const char *const cluster_tools[] = {
  "ceph-mon", "ceph-osd", "ceph", "ceph-authtool", "monmaptool", "uuidgen", "python3", "timeout",
};

bool bench_rbd_is_row(const struct bench_config *cfg)
{
  return cfg->kind == BENCH_CFG_RBD;
}

/* Returns true when QEMU was built with (or has the module of) its rbd block driver. */
static bool qemu_has_rbd(void)
{
  char *argv[] = { "qemu-img", "--help", NULL };
  char out[8192];
  const char *formats;

  if (bench_proc_capture(argv, out, sizeof(out), 10.0) < 0) {
    return false;
  }
  formats = strstr(out, "Supported formats:");
  return formats != NULL && strstr(formats, " rbd") != NULL;
}

int bench_rbd_check(const struct bench_env *env, const struct bench_config *cfg, char *why,
                    size_t len)
{
  const struct bench_opts *o = env->opts;
  char script[PATH_MAX];

#ifndef DISKGATE_HAVE_RBD
  bench_fmt(why, len, "this diskgate was built without librbd (install librbd-dev and "
                      "librados-dev, then meson setup --reconfigure)");
  return -ENOTSUP;
#endif
  if (!bench_proc_have_tool("rbd")) {
    bench_fmt(why, len, "the rbd CLI is not installed (apt-get install ceph-common, or "
                        "scripts/deps.sh ceph)");
    return -ENOTSUP;
  }
  if (o->ceph_conf != NULL) {
    if (access(o->ceph_conf, R_OK) != 0) {
      bench_fmt(why, len, "--ceph-conf %s: %s", o->ceph_conf, strerror(errno));
      return -ENOTSUP;
    }
  } else {
    for (size_t i = 0; i < sizeof(cluster_tools) / sizeof(cluster_tools[0]); i++) {
      if (!bench_proc_have_tool(cluster_tools[i])) {
        bench_fmt(why, len, "no Ceph cluster: %s is not installed (scripts/deps.sh ceph), and "
                            "no --ceph-conf names an existing cluster", cluster_tools[i]);
        return -ENOTSUP;
      }
    }
    if (bench_guest_script(env, CLUSTER_SCRIPT, script, sizeof(script)) < 0) {
      bench_fmt(why, len, "no Ceph cluster: %s of the source tree not found (set "
                          "DISKGATE_SRCDIR), and no --ceph-conf", CLUSTER_SCRIPT);
      return -ENOTSUP;
    }
  }
  /* diskgate's rows: librados and librbd are loaded at run time (backing/rbd_lib.h) */
  char load_why[512];
  if (cfg->server == BENCH_SERVER_DISKGATE &&
      backing_spec_load("rbd:", load_why, sizeof load_why) < 0) {
    bench_fmt(why, len, "%s", load_why);
    return -ENOTSUP;
  }
  if (cfg->server == BENCH_SERVER_QEMU_NBD && bench_proc_have_tool("qemu-img") &&
      !qemu_has_rbd()) {
    bench_fmt(why, len, "QEMU has no rbd block driver (apt-get install qemu-block-extra)");
    return -ENOTSUP;
  }
  return 0;
}

/* Runs the rbd CLI on the cluster with the arguments in args (NULL-terminated, at most 16),
 * logging into <out>/logs/ceph.log. Returns its exit status or -errno. */
static int rbd_cli(const struct bench_env *env, char *const *args, double timeout_s)
{
  char log[PATH_MAX], *argv[24];
  int argc = 0;

  bench_env_out_path(env, "logs", "ceph.log", log, sizeof(log));
  argv[argc++] = "rbd";
  argv[argc++] = "-c";
  argv[argc++] = (char *)env->ceph_conf;
  for (size_t i = 0; args[i] != NULL && argc < 23; i++) {
    argv[argc++] = args[i];
  }
  argv[argc] = NULL;
  return bench_proc_run(argv, log, timeout_s, NULL);
}

/* Starts the throw-away cluster in <work>/ceph; sets env->ceph_dir and env->ceph_conf. */
static int cluster_start(struct bench_env *env)
{
  char script[PATH_MAX], log[PATH_MAX];
  char *argv[] = { script, "start", env->ceph_dir, "--store", "bluestore", NULL };
  int rc;

  rc = bench_guest_script(env, CLUSTER_SCRIPT, script, sizeof(script));
  if (rc < 0) {
    return rc;
  }
  bench_env_out_path(env, "logs", "ceph.log", log, sizeof(log));
  bench_env_work_path(env, "ceph", env->ceph_dir, sizeof(env->ceph_dir));
  fprintf(stderr, "diskgate bench: starting a throw-away Ceph cluster in %s (one mon, one OSD "
                  "on bluestore)\n", env->ceph_dir);
  rc = bench_proc_run(argv, log, 300.0, NULL);
  if (rc != 0) {
    /* a failed start removes what it made */
    env->ceph_dir[0] = '\0';
    fprintf(stderr, "diskgate bench: the Ceph cluster did not start (see %s)\n", log);
    return rc < 0 ? rc : -EIO;
  }
  bench_fmt(env->ceph_conf, sizeof(env->ceph_conf), "%s/ceph.conf", env->ceph_dir);
  return 0;
}

/* Writes "ceph version X.Y.Z" (the first three words of `rbd --version`) into env. */
static void read_version(struct bench_env *env)
{
  char *argv[] = { "rbd", "--version", NULL };
  char out[256];
  char *p = out;

  env->ceph_version[0] = '\0';
  if (bench_proc_capture(argv, out, sizeof(out), 10.0) != 0) {
    return;
  }
  for (int words = 0; *p != '\0'; p++) {
    if (*p == ' ' && ++words == 3) {
      break;
    }
  }
  *p = '\0';
  bench_fmt(env->ceph_version, sizeof(env->ceph_version), "%s", out);
}

int bench_rbd_setup(struct bench_env *env, char *desc, size_t len)
{
  const struct bench_opts *o = env->opts;
  char size_k[32], log[PATH_MAX];
  char *info[] = { "info", (char *)o->rbd_image, NULL };
  char *create[] = { "create", "--size", size_k, "--image-feature", "layering",
                     (char *)o->rbd_image, NULL };
  char *fill[] = { "bench", "--io-type", "write", "--io-pattern", "seq", "--io-size", "4M",
                   "--io-threads", "4", "--io-total", size_k, (char *)o->rbd_image, NULL };
  double t0 = bench_proc_now();
  int rc;

  bench_env_out_path(env, "logs", "ceph.log", log, sizeof(log));
  read_version(env);
  if (o->ceph_conf != NULL) {
    bench_fmt(env->ceph_conf, sizeof(env->ceph_conf), "%s", o->ceph_conf);
  } else {
    rc = cluster_start(env);
    if (rc < 0) {
      return rc;
    }
  }
  bench_fmt(size_k, sizeof(size_k), "%lluK", (unsigned long long)(o->size >> 10));
  rc = rbd_cli(env, info, 60.0);
  if (rc == 0) {
    fprintf(stderr, "diskgate bench: the image %s exists; the lab writes over its image, so it "
                    "makes its own: name a new one with --rbd-image (or `rbd rm` it)\n",
            o->rbd_image);
    return -EEXIST;
  }
  rc = rbd_cli(env, create, 120.0);
  if (rc != 0) {
    fprintf(stderr, "diskgate bench: cannot create the image %s (see %s)\n", o->rbd_image, log);
    return rc < 0 ? rc : -EIO;
  }
  env->rbd_created = true;
  fprintf(stderr, "diskgate bench: filling the image %s (%llu MiB)\n", o->rbd_image,
          (unsigned long long)(o->size >> 20));
  rc = rbd_cli(env, fill, 1800.0);
  if (rc != 0) {
    fprintf(stderr, "diskgate bench: cannot fill the image %s (see %s)\n", o->rbd_image, log);
    return rc < 0 ? rc : -EIO;
  }
  env->rbd_ready = true;
  fprintf(stderr, "diskgate bench: the image is ready (%.0f s)\n", bench_proc_now() - t0);
  if (env->ceph_dir[0] != '\0') {
    bench_fmt(desc, len, "image %s (%llu MiB, feature layering, filled by `rbd bench` before the "
              "first run) on a throw-away single-node cluster on this machine "
              "(scripts/ceph-cluster.sh: one mon, one OSD on bluestore in a sparse file); %s; "
              "CPU is the NBD server's and fio's, not the OSD's",
              o->rbd_image, (unsigned long long)(o->size >> 20),
              env->ceph_version[0] != '\0' ? env->ceph_version : "ceph version unknown");
  } else {
    bench_fmt(desc, len, "image %s (%llu MiB, feature layering, filled by `rbd bench` before the "
              "first run) on the cluster of %s; %s; CPU is the NBD server's and fio's, not the "
              "cluster's", o->rbd_image, (unsigned long long)(o->size >> 20), env->ceph_conf,
              env->ceph_version[0] != '\0' ? env->ceph_version : "ceph version unknown");
  }
  return 0;
}

bool bench_rbd_ready(const struct bench_env *env)
{
  return env->rbd_ready;
}

void bench_rbd_spec(const struct bench_env *env, enum bench_server_kind kind, char *buf,
                    size_t len)
{
  if (kind == BENCH_SERVER_QEMU_NBD) {
    bench_fmt(buf, len, "rbd:%s:conf=%s", env->opts->rbd_image, env->ceph_conf);
  } else {
    bench_fmt(buf, len, "rbd:%s", env->opts->rbd_image);
  }
}

int bench_rbd_warm(const struct bench_env *env, const char *uri)
{
  char log[PATH_MAX], uri_arg[320];
  char *argv[] = { "fio", "--name=warmup", "--ioengine=nbd", uri_arg, "--rw=read", "--bs=1M",
                   "--iodepth=4", "--size=4M", NULL };
  int rc;

  bench_env_out_path(env, "logs", "warmup.log", log, sizeof(log));
  if (!bench_fmt(uri_arg, sizeof(uri_arg), "--uri=%s", uri)) {
    return -ENAMETOOLONG;
  }
  rc = bench_proc_run(argv, log, 120.0, NULL);
  if (rc != 0) {
    fprintf(stderr, "diskgate bench: the warm-up read of %s failed (see %s)\n", uri, log);
    return rc < 0 ? rc : -EIO;
  }
  return 0;
}

void bench_rbd_cleanup(struct bench_env *env)
{
  char script[PATH_MAX], log[PATH_MAX];

  if (env->rbd_created && env->ceph_dir[0] == '\0') {
    /* an existing cluster: remove only the image the lab made */
    char *rm[] = { "rm", "--no-progress", (char *)env->opts->rbd_image, NULL };

    if (rbd_cli(env, rm, 300.0) != 0) {
      fprintf(stderr, "diskgate bench: could not remove the image %s: remove it with `rbd -c %s "
                      "rm %s`\n", env->opts->rbd_image, env->ceph_conf, env->opts->rbd_image);
    }
  }
  env->rbd_created = false;
  env->rbd_ready = false;
  if (env->ceph_dir[0] != '\0') {
    char *argv[] = { script, "stop", env->ceph_dir, NULL };

    bench_env_out_path(env, "logs", "ceph.log", log, sizeof(log));
    if (bench_guest_script(env, CLUSTER_SCRIPT, script, sizeof(script)) < 0 ||
        bench_proc_run(argv, log, 120.0, NULL) != 0) {
      fprintf(stderr, "diskgate bench: could not stop the Ceph cluster in %s (see %s)\n",
              env->ceph_dir, log);
    }
    env->ceph_dir[0] = '\0';
  }
}
