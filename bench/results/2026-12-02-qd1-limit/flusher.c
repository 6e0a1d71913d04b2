/* flusher.c: starts writeback of the whole file every N us (sync_file_range SYNC_FILE_RANGE_WRITE, no wait),
 * beside a server: a stand-in for a server that starts writeback of its page-cache writes early, so
 * that a FLUSH's fdatasync finds less to write. usage: flusher FILE N (see eager-writeback.txt) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int fd = open(argv[1], O_RDONLY);
  useconds_t us = (useconds_t)atoi(argv[2]);
  for (;;) {
    sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    if (us) usleep(us);
  }
}
