/* SPDX-License-Identifier: MIT */
/* export_open.c: see export_open.h. */
#include "server/export_open.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backing/qcow2/qcow2.h"
#include "util/log.h"

/* Names tried for the overlay before giving up (each one is created with O_EXCL). */
#define OVERLAY_NAME_TRIES 16

int export_stack_base_options(const struct backing_options *opts, bool snapshot,
                              const char *spec, enum image_format format,
                              struct backing_options *out)
{
  bool only_read = false;
  int rc = 0;

  *out = *opts;
  if (!out->read_only && !snapshot) {
    rc = format_spec_read_only(spec, format, &only_read);
  }
  if (snapshot || only_read) {
    out->read_only = true;
  }
  return rc;
}

/* The one line for a format_open_node failure `rc` on a->spec, opened as `fmt` (the format
 * named or probed); `detail` is the engine's reason ("" for none). */
static void format_refusal(const struct export_stack_args *a, enum image_format fmt, int rc,
                           const char *detail, char *why, size_t size)
{
  char shown[LOG_SHOWN_MAX];
  const char *d = log_escape_str(shown, sizeof shown, detail);
  const char *open = d[0] != '\0' ? ": " : "";

  switch (rc) {
  case -EINVAL:
    if (fmt == IMAGE_FORMAT_ASIF) {
      snprintf(why, size, "%s: not a valid ASIF image (malformed, or in a state no known reader "
               "has seen)%s%s; refused", a->spec_shown, open, d);
      break;
    }
    snprintf(why, size, "%s: not a valid qcow2 image (malformed header or tables)%s%s; refused",
             a->spec_shown, open, d);
    break;
  case -ENOTSUP:
    snprintf(why, size, "%s: the qcow2 image uses a feature this diskgate does not serve%s%s; "
             "refused", a->spec_shown, open, d);
    break;
  case -ELOOP:
    snprintf(why, size, "%s: its backing chain loops or is deeper than %u images%s%s; refused",
             a->spec_shown, FORMAT_CHAIN_MAX, open, d);
    break;
  case -EUCLEAN:
    snprintf(why, size, "%s: the qcow2 image is marked dirty (it was not closed cleanly)%s%s; "
             "repair it with `qemu-img check -r all` first", a->spec_shown, open, d);
    break;
  default:
    snprintf(why, size, "%s: cannot open the image%s%s: %s", a->spec_shown, open, d,
             strerror(-rc));
    break;
  }
}

/* The name the overlay's header gives its backing file: the base's absolute path for a
 * file, else the spec itself (rbd:POOL/IMAGE is QEMU's name for an RBD image too). */
static void overlay_backing_name(const char *spec, char *name, size_t size)
{
  char abs[PATH_MAX];

  if (strncmp(spec, "rbd:", 4) != 0 && strncmp(spec, "faulty:", 7) != 0 &&
      realpath(spec, abs) != NULL) {
    snprintf(name, size, "%s", abs);
  } else {
    snprintf(name, size, "%s", spec);
  }
}

/* Creates the overlay file (O_EXCL, a random name in $TMPDIR or /var/tmp) over `base` of
 * format `fmt`; its path goes to path[0..size). Returns 0 or -errno. */
static int overlay_create(const struct export_stack_args *a, const struct backing *base,
                          enum image_format fmt, char *path, size_t size)
{
  const char *dir = getenv("TMPDIR");
  char backing_name[PATH_MAX];
  int rc = -EEXIST;

  if (dir == NULL || dir[0] == '\0') {
    dir = "/var/tmp";
  }
  overlay_backing_name(a->spec, backing_name, sizeof backing_name);
  for (int i = 0; i < OVERLAY_NAME_TRIES && rc == -EEXIST; i++) {
    unsigned char r[6];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
      return -errno;
    }
    if (snprintf(path, size, "%s/diskgate-snapshot.%02x%02x%02x%02x%02x%02x.qcow2", dir, r[0],
                 r[1], r[2], r[3], r[4], r[5]) >= (int)size) {
      return -ENAMETOOLONG;
    }
    rc = qcow2_create(path, base->geo.size, backing_name, image_format_name(fmt));
  }
  return rc;
}

/* Puts the --snapshot overlay over `base` (owned: closed on failure). Returns 0 and *out,
 * or -errno with why[] filled. */
static int overlay_open(const struct export_stack_args *a, struct backing *base,
                        enum image_format fmt, struct backing **out, char *describe,
                        char *why, size_t size)
{
  char path[PATH_MAX], shown[LOG_SHOWN_MAX], detail[EXPORT_STACK_TEXT_MAX / 2];
  struct backing_options oo = *a->opts;
  struct backing *file;
  int rc;

  detail[0] = '\0';
  oo.read_only = false;
  oo.force_share = false;
  oo.allow_busy = false;
  rc = overlay_create(a, base, fmt, path, sizeof path);
  if (rc < 0) {
    snprintf(why, size, "--snapshot: cannot create the overlay in %s: %s",
             getenv("TMPDIR") != NULL && getenv("TMPDIR")[0] != '\0' ? "$TMPDIR" : "/var/tmp",
             strerror(-rc));
    backing_close(base);
    return rc;
  }
  log_escape_str(shown, sizeof shown, path);
  rc = backing_open(path, &oo, &file);
  if (rc == 0) {
    struct qcow2_open_args args = {.file = file,
                                   .path = path,
                                   .backing_node = base,
                                   .depth = 0,
                                   .l2_cache_size = oo.l2_cache_size,
                                   .opts = &oo,
                                   .why = detail,
                                   .why_size = sizeof detail};
    rc = backing_qcow2_open(&args, out);
    if (rc < 0) {
      backing_close(file);
    }
  }
  unlink(path); /* open or not: nothing stays behind, even after kill -9 */
  if (rc < 0) {
    char d[LOG_SHOWN_MAX];
    snprintf(why, size, "--snapshot: cannot open the overlay %s: %s%s%s", shown, strerror(-rc),
             detail[0] != '\0' ? ": " : "", log_escape_str(d, sizeof d, detail));
    backing_close(base);
    return rc;
  }
  size_t n = strlen(describe);
  snprintf(describe + n, size - n, ", writes to the temporary overlay %s (deleted)", shown);
  return 0;
}

int export_stack_open(const struct export_stack_args *a, struct backing *child,
                      struct backing **out, bool *probed_raw, char *describe, char *why,
                      size_t size)
{
  struct backing_options base_opts;
  struct backing *node;
  char detail[EXPORT_STACK_TEXT_MAX / 2];
  enum image_format fmt;
  int rc;

  describe[0] = '\0';
  why[0] = '\0';
  rc = export_stack_base_options(a->opts, a->snapshot, a->spec, a->format, &base_opts);
  if (rc < 0) {
    snprintf(why, size, "%s was replaced between its check and its open; not served",
             a->spec_shown);
    backing_close(child);
    return rc;
  }
  rc = format_open_node(child, a->spec, a->format, &base_opts, 0, &node, probed_raw, detail,
                        sizeof detail);
  if (rc < 0) {
    fmt = a->format;
    if (fmt == IMAGE_FORMAT_AUTO && (!format_spec_probed(a->spec) ||
                                     format_probe(child, &fmt) < 0)) {
      fmt = IMAGE_FORMAT_RAW;
    }
    format_refusal(a, fmt, rc, detail, why, size);
    backing_close(child);
    return rc;
  }
  fmt = format_of_node(node);
  snprintf(describe, size, "%s image%s", image_format_name(fmt),
           a->format == IMAGE_FORMAT_AUTO && format_spec_probed(a->spec) ? " (probed)" : "");
  if (!a->snapshot) {
    *out = node;
    return 0;
  }
  *probed_raw = false; /* the base is read-only: nothing reaches its sector 0 */
  return overlay_open(a, node, fmt, out, describe, why, size);
}
