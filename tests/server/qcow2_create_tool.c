/* SPDX-License-Identifier: MIT */
/* qcow2_create_tool: `qcow2_create_tool PATH SIZE [BACKING_FILE BACKING_FMT]` runs
 * qcow2_create (backing/qcow2/qcow2.h) once, so a shell test can check the image with
 * qemu-img. Exit 0 on success, else 1 with strerror on stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backing/qcow2/qcow2.h"

int main(int argc, char **argv)
{
  char *end;
  unsigned long long size;
  int rc;

  if (argc != 3 && argc != 5) {
    fprintf(stderr, "usage: %s PATH SIZE [BACKING_FILE BACKING_FMT]\n", argv[0]);
    return 2;
  }
  errno = 0;
  size = strtoull(argv[2], &end, 10);
  if (errno != 0 || *end != '\0') {
    fprintf(stderr, "%s: bad size '%s'\n", argv[0], argv[2]);
    return 2;
  }
  rc = qcow2_create(argv[1], size, argc == 5 ? argv[3] : NULL, argc == 5 ? argv[4] : NULL);
  if (rc < 0) {
    fprintf(stderr, "qcow2_create: %s\n", strerror(-rc));
    return 1;
  }
  return 0;
}
