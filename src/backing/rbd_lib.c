/* rbd_lib.c: loads librados and librbd with dlopen and fills struct rbd_lib (rbd_lib.h). */
#include "backing/rbd_lib.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <assert.h>

/* The sonames, and the Debian packages that provide them. */
#define RBD_LIB_RADOS     "librados.so.2"
#define RBD_LIB_RADOS_PKG "librados2"
#define RBD_LIB_RBD       "librbd.so.1"
#define RBD_LIB_RBD_PKG   "librbd1"

/* One function of the table: its name in the library and its member's offset. */
struct rbd_lib_sym {
  const char *name;
  size_t offset;
  bool rados; /* in librados (else librbd) */
};

#define RBD_LIB_SYM(lib, fn) { #fn, offsetof(struct rbd_lib, fn), (lib) }
static const struct rbd_lib_sym rbd_lib_syms[] = {
    RBD_LIB_SYM(true, rados_create),
    RBD_LIB_SYM(true, rados_create2),
    RBD_LIB_SYM(true, rados_conf_read_file),
    RBD_LIB_SYM(true, rados_conf_parse_env),
    RBD_LIB_SYM(true, rados_connect),
    RBD_LIB_SYM(true, rados_ioctx_create),
    RBD_LIB_SYM(true, rados_ioctx_set_namespace),
    RBD_LIB_SYM(true, rados_ioctx_destroy),
    RBD_LIB_SYM(true, rados_shutdown),
    RBD_LIB_SYM(false, rbd_open),
    RBD_LIB_SYM(false, rbd_open_read_only),
    RBD_LIB_SYM(false, rbd_close),
    RBD_LIB_SYM(false, rbd_get_size),
    RBD_LIB_SYM(false, rbd_get_features),
    RBD_LIB_SYM(false, rbd_update_watch),
    RBD_LIB_SYM(false, rbd_update_unwatch),
    RBD_LIB_SYM(false, rbd_diff_iterate2),
    RBD_LIB_SYM(false, rbd_aio_create_completion),
    RBD_LIB_SYM(false, rbd_aio_get_return_value),
    RBD_LIB_SYM(false, rbd_aio_release),
    RBD_LIB_SYM(false, rbd_aio_read),
    RBD_LIB_SYM(false, rbd_aio_write2),
    RBD_LIB_SYM(false, rbd_aio_flush),
    RBD_LIB_SYM(false, rbd_aio_discard),
    RBD_LIB_SYM(false, rbd_aio_write_zeroes),
};

/* Every member is one function pointer, filled from dlsym's void * by memcpy. */
_Static_assert(sizeof(struct rbd_lib) ==
                   sizeof rbd_lib_syms / sizeof rbd_lib_syms[0] * sizeof(void *),
               "struct rbd_lib and rbd_lib_syms list the same functions");
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
  /* RTLD_LOCAL: their symbols stay out of the global scope; RTLD_NOW: a library that
   * cannot be resolved fails here, once, not in the middle of a request. */
  void *rados = dlopen(RBD_LIB_RADOS, RTLD_NOW | RTLD_LOCAL);
  if (rados == NULL) {
    rbd_lib_fail("cannot load " RBD_LIB_RADOS " (Debian's package " RBD_LIB_RADOS_PKG ")");
    return;
  }
  void *rbd = dlopen(RBD_LIB_RBD, RTLD_NOW | RTLD_LOCAL);
  if (rbd == NULL) {
    rbd_lib_fail("cannot load " RBD_LIB_RBD " (Debian's package " RBD_LIB_RBD_PKG ")");
    return;
  }
  for (size_t i = 0; i < sizeof rbd_lib_syms / sizeof rbd_lib_syms[0]; i++) {
    const struct rbd_lib_sym *s = &rbd_lib_syms[i];
    (void)dlerror();
    void *p = dlsym(s->rados ? rados : rbd, s->name);
    if (p == NULL) {
      char what[160];
      snprintf(what, sizeof what, "%s has no %s (older than the Ceph headers diskgate was "
               "built with)", s->rados ? RBD_LIB_RADOS : RBD_LIB_RBD, s->name);
      rbd_lib_fail(what);
      return;
    }
    memcpy((char *)&rbd_lib_table + s->offset, &p, sizeof p);
  }
  /* Every member filled: rbd_lib_syms names each one once (the size assert counts them). */
  for (size_t off = 0; off < sizeof rbd_lib_table; off += sizeof(void *)) {
    void *p;
    memcpy(&p, (const char *)&rbd_lib_table + off, sizeof p);
    assert(p != NULL);
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
