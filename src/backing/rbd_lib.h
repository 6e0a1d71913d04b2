/* SPDX-License-Identifier: MIT */
/* rbd_lib.h: librados and librbd, loaded at run time (dlopen) by the first RBD export.
 *
 * diskgate is built against Ceph's headers but not linked with its libraries, so a
 * server that serves only files never maps them: linked, librbd and librados (with
 * libceph-common and their C++ static initialisers) added about 18 MiB to every server's
 * resident size and about 13 ms to every start, whether or not an export used them
 * (docs/performance.md, T6). qemu does the same with its block-rbd module.
 *
 * The sonames are Debian 12's: librados.so.2 (librados2) and librbd.so.1 (librbd1). The
 * table's members have the names and the types (from <rados/librados.h> and
 * <rbd/librbd.h>) of the functions they point to, so a call reads as the library's own:
 * lib->rbd_open(...). Built only with DISKGATE_HAVE_RBD.
 */
#ifndef DISKGATE_BACKING_RBD_LIB_H
#define DISKGATE_BACKING_RBD_LIB_H

#include <stddef.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

/* Which library holds a function: an index into rbd_lib.c's list of sonames. */
enum rbd_lib_file {
  RBD_LIB_IN_RADOS, /* librados.so.2 */
  RBD_LIB_IN_RBD,   /* librbd.so.1 */
};

/* Every librados/librbd function that backing/rbd.c calls, once: X(FILE, NAME). Both the
 * table below and rbd_lib.c's list of symbols to look up are made from it. */
#define RBD_LIB_FUNCTIONS(X)                     \
  X(RBD_LIB_IN_RADOS, rados_create)              \
  X(RBD_LIB_IN_RADOS, rados_create2)             \
  X(RBD_LIB_IN_RADOS, rados_conf_read_file)      \
  X(RBD_LIB_IN_RADOS, rados_conf_parse_env)      \
  X(RBD_LIB_IN_RADOS, rados_connect)             \
  X(RBD_LIB_IN_RADOS, rados_ioctx_create)        \
  X(RBD_LIB_IN_RADOS, rados_ioctx_set_namespace) \
  X(RBD_LIB_IN_RADOS, rados_ioctx_destroy)       \
  X(RBD_LIB_IN_RADOS, rados_shutdown)            \
  X(RBD_LIB_IN_RBD, rbd_open)                    \
  X(RBD_LIB_IN_RBD, rbd_open_read_only)          \
  X(RBD_LIB_IN_RBD, rbd_close)                   \
  X(RBD_LIB_IN_RBD, rbd_get_size)                \
  X(RBD_LIB_IN_RBD, rbd_get_features)            \
  X(RBD_LIB_IN_RBD, rbd_update_watch)            \
  X(RBD_LIB_IN_RBD, rbd_update_unwatch)          \
  X(RBD_LIB_IN_RBD, rbd_diff_iterate2)           \
  X(RBD_LIB_IN_RBD, rbd_aio_create_completion)   \
  X(RBD_LIB_IN_RBD, rbd_aio_get_return_value)    \
  X(RBD_LIB_IN_RBD, rbd_aio_release)             \
  X(RBD_LIB_IN_RBD, rbd_aio_read)                \
  X(RBD_LIB_IN_RBD, rbd_aio_write2)              \
  X(RBD_LIB_IN_RBD, rbd_aio_flush)               \
  X(RBD_LIB_IN_RBD, rbd_aio_discard)             \
  X(RBD_LIB_IN_RBD, rbd_aio_write_zeroes)

/* One member per function of RBD_LIB_FUNCTIONS, of its type, under its name. */
#define RBD_LIB_MEMBER(file, fn) __typeof__(fn) *fn;
struct rbd_lib {
  RBD_LIB_FUNCTIONS(RBD_LIB_MEMBER)
};
#undef RBD_LIB_MEMBER

/* Loads both libraries and every member of the table, once per process (later calls
 * return the first call's result; the libraries stay loaded until exit). Returns 0 and
 * *out (never NULL; immutable, so any thread may read it), or -ELIBACC when a library
 * cannot be loaded or lacks a function; then *out is NULL and, when why is not NULL,
 * why[0..len) holds one line: the library, the Debian package that provides it or the
 * missing function, and the loader's reason (dlerror), NUL-terminated, not escaped (it
 * may hold a path from LD_LIBRARY_PATH). Any thread. */
int rbd_lib_load(const struct rbd_lib **out, char *why, size_t len);

#endif
