/* SPDX-License-Identifier: MIT */
/* replay_main.c: runs a fuzz harness (fuzz_option.c or fuzz_request.c) over files, without
 * libFuzzer: the regression test of tests/fuzz/meson.build. Every argument is a file or a
 * directory of files (the seed corpus, tests/fuzz/crashes/NAME/: every crash the fuzzers
 * ever found). A broken invariant aborts, which fails the test. Exit 0 when all inputs ran. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  uint8_t *buf;
  long n;

  if (f == NULL) {
    perror(path);
    return -1;
  }
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return -1;
  }
  buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    fclose(f);
    return -1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 0;
}

int main(int argc, char **argv)
{
  unsigned count = 0;

  for (int i = 1; i < argc; i++) {
    struct stat st;
    DIR *d;
    struct dirent *e;

    if (stat(argv[i], &st) != 0) {
      continue; /* an empty crash directory may not exist in a checkout */
    }
    if (!S_ISDIR(st.st_mode)) {
      if (run_file(argv[i]) != 0) {
        return 1;
      }
      count++;
      continue;
    }
    d = opendir(argv[i]);
    if (d == NULL) {
      perror(argv[i]);
      return 1;
    }
    while ((e = readdir(d)) != NULL) {
      char path[4096];
      if (e->d_name[0] == '.') {
        continue;
      }
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      if (run_file(path) != 0) {
        closedir(d);
        return 1;
      }
      count++;
    }
    closedir(d);
  }
  printf("%u inputs replayed\n", count);
  return count > 0 ? 0 : 1;
}
