/* SPDX-License-Identifier: MIT */
/* bench_env.h: the lab's working environment: a private temporary directory (sockets, job
 * files), the output directory, the test file, and where the diskgate binary and the source
 * tree are. Main thread only. */
#ifndef DISKGATE_BENCH_ENV_H
#define DISKGATE_BENCH_ENV_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench/bench_types.h"

struct bench_env {
  const struct bench_opts *opts;
  char work[256];          /* private directory for sockets, pid files and job files */
  char out[PATH_MAX];      /* --out, absolute */
  char dir[PATH_MAX];      /* --dir, absolute */
  char file[PATH_MAX];     /* the test file, in dir */
  char tree[PATH_MAX];     /* the copy test's source tree, in dir */
  char tree_manifest[PATH_MAX + 16]; /* tree + ".manifest": what the kept tree holds */
  char self[PATH_MAX];     /* the diskgate binary (for `diskgate serve`) */
  int dir_lock;            /* --dir open with flock(LOCK_EX) while the lab uses it, or -1 */
  char srcdir[PATH_MAX];   /* the source tree (for the guest scripts), "" if unknown */
  char accel[16];          /* the guest accelerator seen so far, "" before any guest run */
  char guest_image[PATH_MAX]; /* kernel + initramfs directory (guest-image.sh), "" until made */
  uint64_t tree_bytes;     /* bytes in the copy tree, 0 before it is made */
  unsigned tree_files;     /* files in the copy tree */
  bool need_file;          /* some selected row reads the test file (all but the RBD rows) */
  char ceph_dir[128];      /* rbd rows: the throw-away cluster's directory, "" when not ours */
  char ceph_conf[PATH_MAX]; /* rbd rows: the cluster's ceph.conf, "" before bench_rbd_setup */
  char ceph_version[96];   /* rbd rows: `rbd --version`, "" when unknown */
  bool rbd_created;        /* rbd rows: the lab created opts->rbd_image and removes it */
  bool rbd_ready;          /* rbd rows: the image is created and filled */
  unsigned qcow2_made;     /* qcow2 rows: one bit per image file of bench_qcow2.c in dir */
  bool asif_made;          /* ASIF rows: bench_asif.c's image is in dir */
  unsigned gateway_made;   /* gateway rows: export files bench_gateway.c began in dir */
};

/* Fills *env for opts without touching anything: checks that --dir is a directory with room
 * for the test file (when need_file: some selected row reads it) and the copy tree (when
 * need_tree: the copy test runs), names those, and finds the diskgate binary and the source
 * tree. Prints one line and returns -errno (-ENOTDIR, -ENOSPC) when --dir is unusable. */
int bench_env_locate(struct bench_env *env, const struct bench_opts *opts, bool need_file,
                     bool need_tree);

/* Takes an exclusive flock(2) on --dir for the life of the process (released by
 * bench_env_cleanup), so that two labs never write and delete the same test file. Returns
 * 0 (also, after a note, when the file system cannot lock it), -EBUSY after one line on
 * stderr when another lab holds it, or -errno when --dir cannot be opened. Main thread,
 * after bench_env_locate. */
int bench_env_lock_dir(struct bench_env *env);

/* Makes --out (env->opts->out, with its parents) if it is missing, checks that it is a
 * directory this process can write, and sets env->out to its absolute path. The lab calls
 * it before anything runs (an --out that cannot be made is a bad command line: exit 2),
 * --render before it writes. Returns 0 or -errno (-ENOTDIR for a file) after one line on
 * stderr. Main thread. */
int bench_env_open_out(struct bench_env *env);

/* Creates the private directory (under $TMPDIR or /tmp) and the raw/ and logs/
 * subdirectories of env->out. Call after bench_env_locate() and bench_env_open_out().
 * Returns 0 or -errno after printing one line on stderr. */
int bench_env_init(struct bench_env *env);

/* Creates the test file (opts->size bytes of pseudo-random data, written and synced), unless
 * --keep left one of the right size. Returns 0 or -errno. */
int bench_env_make_file(struct bench_env *env);

/* Creates directory `path` and its missing parents (mode 0755). Returns 0 or -errno. */
int bench_env_mkdir_p(const char *path);

/* Writes the path of a file in the private directory into buf: "<work>/<name>". */
void bench_env_work_path(const struct bench_env *env, const char *name, char *buf, size_t len);

/* Writes "<out>/<sub>/<name>" into buf (sub may be NULL). */
void bench_env_out_path(const struct bench_env *env, const char *sub, const char *name,
                        char *buf, size_t len);

/* Removes the private directory, and the test file (when the run needed one) and the tree
 * unless --keep. The RBD side is bench_rbd_cleanup()'s: call that first. */
void bench_env_cleanup(struct bench_env *env);

/* Removes path and everything below it (depth first, not following symlinks); errors are
 * ignored (a missing tree is fine). */
void bench_env_remove_tree(const char *path);

#endif
