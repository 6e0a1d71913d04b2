/* SPDX-License-Identifier: MIT */
/* rbd_lib.c: loads librados and librbd with dlopen and fills struct rbd_lib (rbd_lib.h). */
#include "backing/rbd_lib.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The libraries, by enum rbd_lib_file: soname, and the Debian package that provides it. */
static const struct {
  const char *soname;
  const char *package;
} rbd_lib_files[] = {
    [RBD_LIB_IN_RADOS] = {"librados.so.2", "librados2"},
    [RBD_LIB_IN_RBD] = {"librbd.so.1", "librbd1"},
};

/* One function of the table: its name, its member's offset, and which library holds it. */
struct rbd_lib_sym {
  const char *name;
  size_t offset;
  enum rbd_lib_file file;
};

#define RBD_LIB_SYM(file, fn) {#fn, offsetof(struct rbd_lib, fn), (file)},
static const struct rbd_lib_sym rbd_lib_syms[] = {RBD_LIB_FUNCTIONS(RBD_LIB_SYM)};
#undef RBD_LIB_SYM

/* Every member is one function pointer, filled from dlsym's void * by memcpy. */
_Static_assert(sizeof(void (*)(void)) == sizeof(void *), "dlsym's pointers fit a function's");

/* Written once, by rbd_lib_once under the once-control; read-only after. */
static struct rbd_lib rbd_lib_table;
static int rbd_lib_status;
static char rbd_lib_reason[512];
static pthread_once_t rbd_lib_once_control = PTHREAD_ONCE_INIT;

/* Records a failure: status -ELIBACC and "what: dlerror()". */
static void rbd_lib_fail(const char *what)
{
  const char *err = dlerror();
  snprintf(rbd_lib_reason, sizeof rbd_lib_reason, "%s: %s", what,
           err != NULL ? err : "unknown loader error");
  rbd_lib_status = -ELIBACC;
}

static void rbd_lib_once(void)
{
  char what[160];
  void *handle[sizeof rbd_lib_files / sizeof rbd_lib_files[0]];

  /* librados first (librbd needs it). RTLD_LOCAL: their symbols stay out of the global
   * scope; RTLD_NOW: a library that cannot be resolved fails here, once, not in the middle
   * of a request. */
  for (size_t i = 0; i < sizeof rbd_lib_files / sizeof rbd_lib_files[0]; i++) {
    handle[i] = dlopen(rbd_lib_files[i].soname, RTLD_NOW | RTLD_LOCAL);
    if (handle[i] == NULL) {
      snprintf(what, sizeof what, "cannot load %s (Debian's package %s)",
               rbd_lib_files[i].soname, rbd_lib_files[i].package);
      rbd_lib_fail(what);
      return;
    }
  }
  for (size_t i = 0; i < sizeof rbd_lib_syms / sizeof rbd_lib_syms[0]; i++) {
    const struct rbd_lib_sym *s = &rbd_lib_syms[i];
    (void)dlerror();
    void *p = dlsym(handle[s->file], s->name);
    if (p == NULL) {
      snprintf(what, sizeof what, "%s has no %s (older than the Ceph headers diskgate was "
               "built with)", rbd_lib_files[s->file].soname, s->name);
      rbd_lib_fail(what);
      return;
    }
    memcpy((char *)&rbd_lib_table + s->offset, &p, sizeof p);
  }
  rbd_lib_status = 0;
}

/* See rbd_lib.h. */
int rbd_lib_load(const struct rbd_lib **out, char *why, size_t len)
{
  pthread_once(&rbd_lib_once_control, rbd_lib_once);
  if (rbd_lib_status < 0) {
    *out = NULL;
    if (why != NULL && len > 0) {
      snprintf(why, len, "%s", rbd_lib_reason);
    }
    return rbd_lib_status;
  }
  *out = &rbd_lib_table;
  return 0;
}
