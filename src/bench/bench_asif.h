/* SPDX-License-Identifier: MIT */
/* bench_asif.h: the ASIF row's image (bench_config.image BENCH_IMAGE_ASIF_FULL): the test
 * file's bytes as a fully written ASIF v1 image (Apple Sparse Image Format, layout in
 * shared/asif.md §2-6), made in --dir once per lab; and the check that a diskgate binary
 * can serve ASIF at all. Main thread only. */
#ifndef DISKGATE_BENCH_ASIF_H
#define DISKGATE_BENCH_ASIF_H

#include <stddef.h>
#include <stdint.h>

#include "bench/bench_env.h"
#include "bench/bench_types.h"

/* The geometry of Apple's images (shared/asif.md §1-2): 512-byte blocks, 1 MiB chunks, a
 * directory sized for 2^43 blocks (4 PiB). */
#define BENCH_ASIF_BLOCK 512u
#define BENCH_ASIF_CHUNK (1u << 20)
#define BENCH_ASIF_MAX_SECTORS (1ull << 43)

/* What bench_asif_write makes. */
struct bench_asif_geometry {
  uint32_t block_size;       /* bs: 512..4096, a multiple of 512 */
  uint32_t chunk_size;       /* cs: a multiple of bs, at most 64 MiB, at least 8 (4 bs + 1) */
  uint64_t max_sector_count; /* blocks the directory maps (sizes T) */
  uint64_t seed;             /* the data chunks' physical order and the GUID */
};

/* Writes `image`, an ASIF v1 image of the raw file `raw`'s bytes (its size a multiple of
 * g->block_size: sector_count = size / bs): the header at byte 0 (magic "shdw", version 1,
 * header_size 0x200, directories A at 0x200 and B 512-aligned after it, sector_count,
 * max_sector_count, chunk and block sizes, no metadata); directory A with sequence 0 and B
 * with sequence 1 holding the same entries; one table per ceil(size / D) in the chunks
 * after the directories; then one data chunk per cs of the file, every data entry status 01
 * (fully written, no bitmap), the chunks in a shuffled physical order (Fisher-Yates from
 * g->seed), the last one padded with zeroes. The file is synced. Returns 0, -EINVAL (a
 * geometry asif.md §10 refuses, or a size not a multiple of bs), -EINTR (the lab was
 * interrupted; the image is removed) or another -errno; on failure writes one line naming
 * the cause to why (len bytes). Main thread (it reads bench_proc_interrupted). */
int bench_asif_write(const char *raw, const char *image, const struct bench_asif_geometry *g,
                     char *why, size_t len);

/* Writes the path of the ASIF image of row cfg into buf (len bytes), making it from the
 * test file first (bench_asif_write with Apple's geometry) when this lab has not. Returns
 * 0, or -errno after one line on stderr. */
int bench_asif_image(struct bench_env *env, const struct bench_config *cfg, char *buf,
                     size_t len);

/* Removes the image the lab made in --dir, unless --keep. */
void bench_asif_cleanup(struct bench_env *env);

/* For a diskgate ASIF row: checks that its binary's `serve --help` offers --format asif.
 * Returns 0 (also for any other row), or -ENOTSUP with a one-line reason in why (len
 * bytes). */
int bench_asif_check(const struct bench_env *env, const struct bench_config *cfg, char *why,
                     size_t len);

#endif
