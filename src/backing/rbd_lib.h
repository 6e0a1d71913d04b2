/* rbd_lib.h: librados and librbd, loaded at run time (dlopen) by the first RBD export.
 *
 * diskgate is built against Ceph's headers but not linked with its libraries, so a
 * server that serves only files never maps them: linked, librbd and librados (with
 * libceph-common and their C++ static initialisers) added about 18 MiB to every server's
 * resident size and about 13 ms to every start, whether or not an export used them
 * (docs/performance.md, T6). qemu does the same with its block-rbd module.
 *
 * The sonames are Debian 12's (package librbd1): librados.so.2 and librbd.so.1. The
 * table's members have the names and the types (from <rados/librados.h> and
 * <rbd/librbd.h>) of the functions they point to, so a call reads as the library's own:
 * lib->rbd_open(...). Built only with DISKGATE_HAVE_RBD.
 */
#ifndef DISKGATE_BACKING_RBD_LIB_H
#define DISKGATE_BACKING_RBD_LIB_H

#include <stddef.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

/* One member per librados/librbd function that backing/rbd.c calls. */
struct rbd_lib {
  __typeof__(rados_create) *rados_create;
  __typeof__(rados_create2) *rados_create2;
  __typeof__(rados_conf_read_file) *rados_conf_read_file;
  __typeof__(rados_conf_parse_env) *rados_conf_parse_env;
  __typeof__(rados_connect) *rados_connect;
  __typeof__(rados_ioctx_create) *rados_ioctx_create;
  __typeof__(rados_ioctx_set_namespace) *rados_ioctx_set_namespace;
  __typeof__(rados_ioctx_destroy) *rados_ioctx_destroy;
  __typeof__(rados_shutdown) *rados_shutdown;
  __typeof__(rbd_open) *rbd_open;
  __typeof__(rbd_open_read_only) *rbd_open_read_only;
  __typeof__(rbd_close) *rbd_close;
  __typeof__(rbd_get_size) *rbd_get_size;
  __typeof__(rbd_get_features) *rbd_get_features;
  __typeof__(rbd_update_watch) *rbd_update_watch;
  __typeof__(rbd_update_unwatch) *rbd_update_unwatch;
  __typeof__(rbd_diff_iterate2) *rbd_diff_iterate2;
  __typeof__(rbd_aio_create_completion) *rbd_aio_create_completion;
  __typeof__(rbd_aio_get_return_value) *rbd_aio_get_return_value;
  __typeof__(rbd_aio_release) *rbd_aio_release;
  __typeof__(rbd_aio_read) *rbd_aio_read;
  __typeof__(rbd_aio_write2) *rbd_aio_write2;
  __typeof__(rbd_aio_flush) *rbd_aio_flush;
  __typeof__(rbd_aio_discard) *rbd_aio_discard;
  __typeof__(rbd_aio_write_zeroes) *rbd_aio_write_zeroes;
};

/* Loads both libraries and every member of the table, once per process (later calls
 * return the first call's result; the libraries stay loaded until exit). Returns 0 and
 * *out (never NULL; immutable, so any thread may read it), or -ELIBACC when a library
 * cannot be loaded or lacks a function; then *out is NULL and, when why is not NULL,
 * why[0..len) holds one line: the library, the Debian package that provides it or the
 * missing function, and the loader's reason (dlerror), NUL-terminated, not escaped (it
 * may hold a path from LD_LIBRARY_PATH). Any thread. */
int rbd_lib_load(const struct rbd_lib **out, char *why, size_t len);

#endif
