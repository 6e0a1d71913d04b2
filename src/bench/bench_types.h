/* SPDX-License-Identifier: MIT */
/* bench_types.h: the lab's data model, shared by every src/bench/ file.
 *
 * A "cell" is one (configuration, workload) pair of the final table; a "sample" is one run of a
 * cell. Everything here is plain data: no function owns a lock, and the whole lab runs on the
 * main thread. */
#ifndef DISKGATE_BENCH_TYPES_H
#define DISKGATE_BENCH_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_RUNS 50
#define BENCH_MAX_CONFIGS 64
#define BENCH_MAX_WORKLOADS 48
#define BENCH_MAX_VARIANTS 8 /* --diskgate given more than once (an A/B) */

/* How a workload's headline figure is expressed. */
enum bench_unit {
  BENCH_UNIT_IOPS,  /* I/O operations per second (read + write) */
  BENCH_UNIT_MBPS,  /* 10^6 bytes per second (read + write) */
  BENCH_UNIT_MIBPS, /* 2^20 bytes per second (the copy test) */
};

enum bench_wl_kind {
  BENCH_WL_FIO,  /* one fio job */
  BENCH_WL_COPY, /* a generated file tree copied onto a file system on the disk, then synced */
};

/* One workload (a column of the table). Static data, see bench_workloads.c. */
struct bench_workload {
  const char *name;  /* command-line name, e.g. "randread-4k" */
  const char *title; /* column header, e.g. "4K randread QD32" */
  const char *suite; /* "seeds" or "sync" */
  enum bench_wl_kind kind;
  const char *rw;     /* fio rw= (read, write, randread, randwrite, randrw) */
  unsigned bs;        /* block size, bytes */
  unsigned iodepth;   /* fio iodepth */
  unsigned rwmixread; /* percentage of reads for randrw, 0 otherwise */
  bool fsync;         /* fio fsync=1: a flush after every write */
  bool large_seq;     /* a large sequential job (the only ones the 9p row runs) */
  enum bench_unit unit;
  unsigned numjobs;   /* fio numjobs (for the nbd engine, one connection each); 0 means 1;
                       * with exports, the connections to each export */
  unsigned exports;   /* gateway workloads: the exports the jobs spread over, one fio job
                       * section (its own group) per export; 0 for every other workload */
};

enum bench_cfg_kind {
  BENCH_CFG_HOST,     /* fio's io_uring engine on the test file */
  BENCH_CFG_HOST_DEV, /* fio's io_uring engine on a loop device over the test file */
  BENCH_CFG_NBD,      /* fio's nbd engine against an NBD server on this host */
  BENCH_CFG_GUEST,    /* fio inside a QEMU guest */
  BENCH_CFG_RBD,      /* fio's nbd engine against an NBD server exporting a Ceph RBD image */
  BENCH_CFG_QCOW2,    /* fio's nbd engine against an NBD server of a qcow2 image (`image`) */
  BENCH_CFG_ASIF,     /* fio's nbd engine against diskgate serving an ASIF image (`image`) of
                       * the test file's bytes; reported with the host rows */
  BENCH_CFG_GATEWAY,  /* fio's nbd engine against many exports (bench_gateway.h): one diskgate
                       * serving them all from a config file, or one qemu-nbd per export */
};

/* The groups of rows a report shows apart, each with its own baseline row: host-side rows
 * (% of `host`), RBD rows (% of `qemu-nbd-rbd`), guest rows (% of `guest-virtio-file`),
 * qcow2 rows (% of `qemu-nbd-qcow2`). */
enum bench_group {
  BENCH_GROUP_HOST,
  BENCH_GROUP_RBD,
  BENCH_GROUP_GUEST,
  BENCH_GROUP_QCOW2,
  BENCH_GROUP_COUNT,
};

/* The image a qcow2 or ASIF row's server opens (bench_qcow2.h, bench_asif.h make them). */
enum bench_image {
  BENCH_IMAGE_NONE,        /* not a qcow2 or ASIF row */
  BENCH_IMAGE_QCOW2_FULL,  /* the test file's data as a fully allocated qcow2 image; each
                            * server kind its own copy */
  BENCH_IMAGE_QCOW2_FRESH, /* an empty qcow2 image made for each run: every write allocates */
  BENCH_IMAGE_QCOW2_1T,    /* a 1 TiB qcow2 image with every L2 table allocated
                            * (preallocation=metadata), for the memory bound */
  BENCH_IMAGE_ASIF_FULL,   /* the test file's bytes as a fully written ASIF image, its data
                            * chunks in a shuffled physical order */
};

enum bench_server_kind {
  BENCH_SERVER_NONE,
  BENCH_SERVER_DISKGATE,
  BENCH_SERVER_QEMU_NBD,
  BENCH_SERVER_NBDKIT,
};

enum bench_transport {
  BENCH_TRANSPORT_UNIX,
  BENCH_TRANSPORT_TCP,
};

/* What a guest row's disk is backed by. */
enum bench_guest_backing {
  BENCH_GUEST_FILE,   /* the raw test file */
  BENCH_GUEST_LOOP,   /* a loop device over the test file */
  BENCH_GUEST_NBD,    /* the export of `server` (Unix socket) */
  BENCH_GUEST_9P,     /* the test file's directory shared with virtio-9p */
};

/* One configuration (a row of the table). Static data, see bench_configs.c. */
struct bench_config {
  const char *name;  /* command-line name, e.g. "diskgate-unix-direct-full" */
  const char *title; /* one-line description for the legend */
  enum bench_cfg_kind kind;
  enum bench_server_kind server;     /* NBD rows, and guest rows backed by NBD */
  enum bench_transport transport;    /* NBD rows */
  const char *sync_mode;             /* diskgate --sync (full, fsync, none) or NULL */
  const char *cache_mode;            /* diskgate --cache (direct, writeback, writethrough,
                                      * directsync) or NULL; qemu-nbd rows: its --cache
                                      * (NULL: none); host
                                      * rows: NULL (O_DIRECT, one I/O per submit), "batched"
                                      * (O_DIRECT, whole queue per submit) or "writeback"
                                      * (the page cache, fio direct=0) */
  unsigned sector;                   /* host-dev rows, and NBD rows over a loop device: the
                                        loop device's logical sector size; 0 = on the file */
  enum bench_guest_backing backing;  /* guest rows */
  bool nvme;                         /* guest rows: emulated NVMe instead of virtio-blk */
  const char *qemu_cache;            /* guest rows on the file: QEMU -drive cache options */
  enum bench_image image;            /* qcow2 and ASIF rows: the image served */
};

/* One run of one cell. Figures are 0 when not applicable. */
struct bench_sample {
  bool ok;              /* the run completed and was parsed */
  double value;         /* the headline figure, in the workload's unit */
  double iops;          /* read + write I/Os per second */
  double mbps;          /* read + write, 10^6 bytes per second */
  double ios;           /* I/Os completed after the ramp (read + write) */
  double p99_us;        /* p99 completion latency, µs (the worse of read and write) */
  double fsync_p99_us;  /* p99 fsync (NBD flush) latency, µs; 0 without fsync */
  double p50_us;        /* p50 completion latency, µs (the worse of read and write) */
  double client_sys_us; /* fio's own kernel (system) CPU per I/O, µs, from its JSON */
  double rss_max_kib;   /* the server's largest VmRSS during the run, KiB; 0 without one;
                         * a row of many server processes: the largest sum of theirs */
  double rss_growth_kib; /* its VmRSS at the end minus a quarter into the measured window */
  double hwm_kib;       /* the server's VmHWM (peak resident set since it started) when fio
                         * ended, KiB; 0 without one */
  double cpu_server_s;  /* CPU-seconds of the server process (processes: their sum) during
                         * the measured window */
  double cpu_client_s;  /* CPU-seconds of the client (fio, cp, or the QEMU process) */
  double cpu_per_kio;   /* (server + client) CPU-seconds per 1000 I/Os; per GiB for copy */
  double seconds;       /* wall-clock length of the run */
  double export_min_iops;    /* gateway workloads: the least IOPS of one export (the sum of
                              * its connections'), 0 otherwise */
  double export_median_iops; /* and the median over the exports */
  double export_max_iops;    /* and the most */
  char raw[160];        /* output file of this run, relative to --out ("" if none) */
};

enum bench_cell_state {
  BENCH_CELL_PENDING, /* not run (yet) */
  BENCH_CELL_DONE,    /* at least one run succeeded */
  BENCH_CELL_FAILED,  /* every run failed */
  BENCH_CELL_NA,      /* the workload does not apply to the configuration */
};

/* One (configuration, workload) cell with its runs and their medians. */
struct bench_cell {
  const struct bench_config *cfg;
  const struct bench_workload *wl;
  enum bench_cell_state state;
  size_t nruns;                 /* runs attempted */
  struct bench_sample runs[BENCH_MAX_RUNS];
  /* medians over the successful runs (bench_stats_cell_finish) */
  double value;
  double p99_us;
  double fsync_p99_us;
  double cpu_per_kio;
  double pct;        /* value as a percentage of the baseline row's value */
  bool have_pct;
  char note[96];     /* why a cell failed or does not apply */
};

/* Parsed command line. Sizes in bytes, times in seconds. */
struct bench_opts {
  const char *profile;       /* quick, seeds, sync, all */
  const char *configs;       /* comma-separated names or fnmatch patterns, NULL = profile's */
  const char *workloads;     /* idem */
  unsigned runs;
  unsigned runtime_s;
  double ramp_s;
  uint64_t size;
  uint64_t copy_size;        /* bytes of the copy test's tree */
  const char *dir;
  const char *out;
  bool keep;                 /* keep the test file and the tree */
  bool list;                 /* print the configurations and workloads, then exit */
  const char *render;        /* re-render the reports of this bench.json, run nothing */
  const char *ceph_conf;     /* rbd rows: an existing cluster's ceph.conf, NULL = start one */
  const char *rbd_image;     /* rbd rows: POOL/IMAGE the lab creates and removes */
  const char *variants[BENCH_MAX_VARIANTS]; /* --diskgate PATH[:ARGS], in command-line order */
  unsigned nvariants;
  bool runs_set, runtime_set, size_set; /* given on the command line */
};

/* Where and what the lab ran on. Strings are "" when unknown. */
struct bench_machine {
  char cpu_model[128];
  unsigned cores;
  uint64_t mem_bytes;
  char kernel[128];
  char dir_fs[64];        /* file system type of --dir, e.g. "ext4" */
  char dir_dev[128];      /* its device, e.g. "/dev/vda" */
  char fio_version[64];
  char qemu_version[64];
  char qemu_nbd_version[64];
  char nbdkit_version[64];
  char diskgate_version[64];
  char accel[16];         /* guest accelerator actually used ("tcg", "kvm") or "" */
};

/* Everything the reports need. */
struct bench_results {
  struct bench_opts opts;
  struct bench_machine machine;
  char command[512];     /* the command line, for the report */
  char started[32];      /* ISO 8601 UTC */
  double elapsed_s;
  uint64_t tree_bytes;   /* the copy test's tree (0 when the copy test did not run) */
  unsigned tree_files;
  bool caches_dropped;   /* page caches were dropped before each run (root) */
  char rbd[320];         /* rbd rows: the image and the cluster they ran on, "" without them */
  size_t nconfigs;
  size_t nworkloads;
  const struct bench_config *configs[BENCH_MAX_CONFIGS];
  const struct bench_workload *workloads[BENCH_MAX_WORKLOADS];
  struct bench_cell *cells; /* nconfigs * nworkloads, row-major (config, then workload) */
};

/* The cell of configuration row `c` and workload column `w`. */
static inline struct bench_cell *bench_results_cell(struct bench_results *r, size_t c, size_t w)
{
  return &r->cells[c * r->nworkloads + w];
}

#endif
