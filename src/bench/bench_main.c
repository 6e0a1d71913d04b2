/* SPDX-License-Identifier: MIT */
/* bench_main.c: `diskgate bench`: command line, tool checks, the run, the three reports. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_asif.h"
#include "bench/bench_cli.h"
#include "bench/bench_configs.h"
#include "bench/bench_copy.h"
#include "bench/bench_env.h"
#include "bench/bench_gateway.h"
#include "bench/bench_guest.h"
#include "bench/bench_load.h"
#include "bench/bench_machine.h"
#include "bench/bench_proc.h"
#include "bench/bench_profiles.h"
#include "bench/bench_qcow2.h"
#include "bench/bench_rbd.h"
#include "bench/bench_report.h"
#include "bench/bench_report_targets.h"
#include "bench/bench_run.h"
#include "bench/bench_stats.h"
#include "bench/bench_workloads.h"
#include "bench/bench_util.h"
#include "bench/bench_variants.h"
#include "util/log.h"

/* The Debian package that provides a tool. */
static const char *tool_package(const char *tool)
{
  static const struct {
    const char *tool, *pkg;
  } map[] = {
    { "fio", "fio" },
    { "qemu-nbd", "qemu-utils" },
    { "nbdkit", "nbdkit" },
    { "qemu-system-x86_64", "qemu-system-x86" },
    { "nbdfuse", "libnbd-bin" },
    { "losetup", "mount" },
    { "mount", "mount" },
    { "mkfs.ext4", "e2fsprogs" },
  };

  for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
    if (strcmp(map[i].tool, tool) == 0) {
      return map[i].pkg;
    }
  }
  return tool;
}

/* Adds `tool` to the missing list when it is not installed (once). */
static void need_tool(const char *tool, const char **missing, size_t *n)
{
  if (tool == NULL || bench_proc_have_tool(tool)) {
    return;
  }
  for (size_t i = 0; i < *n; i++) {
    if (strcmp(missing[i], tool) == 0) {
      return;
    }
  }
  missing[(*n)++] = tool;
}

/* Returns true when the copy workload is selected. */
static bool copy_selected(const struct bench_results *r)
{
  for (size_t w = 0; w < r->nworkloads; w++) {
    if (r->workloads[w]->kind == BENCH_WL_COPY) {
      return true;
    }
  }
  return false;
}

/* Checks every external program the selected cells need. Prints one line and returns -ENOENT
 * when some are missing. */
static int check_tools(const struct bench_results *r, const struct bench_env *env)
{
  const char *missing[32];
  size_t n = 0;
  bool copy = copy_selected(r), guest = false;

  need_tool("fio", missing, &n);
  for (size_t c = 0; c < r->nconfigs; c++) {
    const struct bench_config *cfg = r->configs[c];

    need_tool(bench_configs_tool(cfg), missing, &n);
    need_tool(bench_configs_tool2(cfg), missing, &n);
    if (bench_configs_needs_root(cfg)) {
      need_tool("losetup", missing, &n);
    }
    if (copy && !bench_configs_is_guest(cfg)) {
      need_tool("losetup", missing, &n);
      need_tool("mkfs.ext4", missing, &n);
      need_tool("mount", missing, &n);
      if (cfg->kind == BENCH_CFG_NBD) {
        need_tool("nbdfuse", missing, &n);
      }
    }
    guest |= bench_configs_is_guest(cfg);
  }
  if (n > 0) {
    fprintf(stderr, "diskgate bench: missing ");
    for (size_t i = 0; i < n; i++) {
      fprintf(stderr, "%s%s", i > 0 ? ", " : "", missing[i]);
    }
    fprintf(stderr, ": install %s with `apt-get install", n > 1 ? "them" : "it");
    for (size_t i = 0; i < n; i++) {
      bool dup = false;

      for (size_t j = 0; j < i; j++) {
        dup |= strcmp(tool_package(missing[j]), tool_package(missing[i])) == 0;
      }
      if (!dup) {
        fprintf(stderr, " %s", tool_package(missing[i]));
      }
    }
    fprintf(stderr, "` (or scripts/deps.sh bench)\n");
    return -ENOENT;
  }
  if (guest) {
    char path[PATH_MAX];

    if (bench_guest_script(env, "tests/guest/run-guest.sh", path, sizeof(path)) < 0 ||
        bench_guest_script(env, "scripts/guest-image.sh", path, sizeof(path)) < 0) {
      fprintf(stderr, "diskgate bench: guest rows need tests/guest/run-guest.sh and "
                      "scripts/guest-image.sh from the source tree: set DISKGATE_SRCDIR\n");
      return -ENOENT;
    }
  }
  return 0;
}

static void list_all(FILE *out)
{
  const struct bench_config *cfgs;
  const struct bench_workload *wls;
  size_t nc = bench_configs_all(&cfgs), nw = bench_workloads_all(&wls);

  fputs("Configurations (--configs):\n", out);
  for (size_t i = 0; i < nc; i++) {
    fprintf(out, "  %-30s %s\n", cfgs[i].name, cfgs[i].title);
  }
  fputs("Workloads (--workloads):\n", out);
  for (size_t i = 0; i < nw; i++) {
    fprintf(out, "  %-30s %s (%s suite, %s)\n", wls[i].name, wls[i].title, wls[i].suite,
            bench_workloads_unit_label(wls[i].unit));
  }
  fputs("Profiles (--profile): quick, seeds, sync, rbd, peers, scaling, collapse, qcow2, asif,\n"
        "  metrics, gateway, all\n",
        out);
}

/* The command line as a POSIX shell would take it back: an argument that is empty or holds
 * anything but [A-Za-z0-9,._+:@%/=-] is single-quoted ('\'' for a quote inside). Control
 * characters are kept (the report escapes nothing else either); the line is cut at len. */
static void join_command(int argc, char **argv, char *buf, size_t len)
{
  static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                              ",._+:@%/=-";

  bench_fmt(buf, len, "diskgate");
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    size_t used = strlen(buf);
    bool quote = a[0] == '\0' || a[strspn(a, plain)] != '\0';

    if (!bench_fmt(buf + used, len - used, quote ? " '" : " ")) {
      break;
    }
    for (const char *c = a; *c != '\0'; c++) {
      used = strlen(buf);
      if (!bench_fmt(buf + used, len - used, *c == '\'' && quote ? "'\\''" : "%c", *c)) {
        return;
      }
    }
    used = strlen(buf);
    if (quote && !bench_fmt(buf + used, len - used, "'")) {
      break;
    }
  }
}

/* Writes one report file with `write`; returns 0 or -errno. */
static int write_report(const struct bench_env *env, const char *name,
                        int (*write)(FILE *, const struct bench_results *),
                        const struct bench_results *r)
{
  char path[PATH_MAX];
  FILE *f;
  int rc;

  bench_env_out_path(env, NULL, name, path, sizeof(path));
  f = fopen(path, "w");
  if (f == NULL) {
    rc = -errno;
    fprintf(stderr, "diskgate bench: cannot write %s: %s\n", path, strerror(-rc));
    return rc;
  }
  rc = write(f, r);
  if (fflush(f) != 0) {
    rc = -errno; /* the reason (ENOSPC), where the writer could only see ferror */
  }
  if (fclose(f) != 0 && rc == 0) {
    rc = -errno;
  }
  if (rc < 0) {
    fprintf(stderr, "diskgate bench: cannot write %s: %s\n", path, strerror(-rc));
  }
  return rc;
}

/* Returns true when some selected row reads the test file (every row but the RBD ones). */
static bool needs_file(const struct bench_results *r)
{
  for (size_t c = 0; c < r->nconfigs; c++) {
    if (!bench_rbd_is_row(r->configs[c])) {
      return true;
    }
  }
  return false;
}

/* Not root: drops the copy workload (it needs mkfs and mount), with one line saying so,
 * before anything is prepared for it. Returns the number of workloads left. */
static size_t drop_copy_unless_root(struct bench_results *r)
{
  size_t kept = 0;

  if (geteuid() == 0 || !copy_selected(r)) {
    return r->nworkloads;
  }
  fprintf(stderr, "diskgate bench: note: not root, so the copy test is skipped (it needs "
                  "mkfs and mount)\n");
  for (size_t w = 0; w < r->nworkloads; w++) {
    if (r->workloads[w]->kind != BENCH_WL_COPY) {
      r->workloads[kept++] = r->workloads[w];
    }
  }
  r->nworkloads = kept;
  return kept;
}

/* Drops the RBD rows that cannot run here, with one line saying why. Returns the number of
 * rows left. */
static size_t drop_unusable_rbd_rows(struct bench_results *r, const struct bench_env *env)
{
  size_t kept = 0;

  for (size_t c = 0; c < r->nconfigs; c++) {
    char why[256];

    if (bench_rbd_is_row(r->configs[c]) &&
        bench_rbd_check(env, r->configs[c], why, sizeof(why)) < 0) {
      fprintf(stderr, "diskgate bench: skipping %s: %s\n", r->configs[c]->name, why);
      continue;
    }
    r->configs[kept++] = r->configs[c];
  }
  r->nconfigs = kept;
  return kept;
}

/* Drops the diskgate qcow2 and ASIF rows whose binary cannot serve that format, with one
 * line saying why. Returns the number of rows left. */
static size_t drop_unusable_image_rows(struct bench_results *r, const struct bench_env *env)
{
  size_t kept = 0;

  for (size_t c = 0; c < r->nconfigs; c++) {
    char why[PATH_MAX + 96];

    if (bench_qcow2_check(env, r->configs[c], why, sizeof(why)) < 0 ||
        bench_asif_check(env, r->configs[c], why, sizeof(why)) < 0) {
      fprintf(stderr, "diskgate bench: skipping %s: %s\n", r->configs[c]->name, why);
      continue;
    }
    r->configs[kept++] = r->configs[c];
  }
  r->nconfigs = kept;
  return kept;
}

/* The test file, the gateway rows' export files, the copy tree and the RBD image, as the
 * selected cells need them. A failed RBD setup is not fatal: the RBD rows then fail (see
 * bench_run.c), the others run. */
static int prepare_data(struct bench_env *env, struct bench_results *r)
{
  bool rbd = false, gateway = false;
  int rc;

  if (env->need_file) {
    fprintf(stderr, "diskgate bench: writing the test file %s (%llu MiB)\n", env->file,
            (unsigned long long)(env->opts->size >> 20));
    rc = bench_env_make_file(env);
    if (rc < 0) {
      if (rc != -EINTR) {
        fprintf(stderr, "diskgate bench: cannot write %s: %s\n", env->file, strerror(-rc));
      }
      return rc;
    }
  }
  for (size_t c = 0; c < r->nconfigs; c++) {
    gateway |= r->configs[c]->kind == BENCH_CFG_GATEWAY;
  }
  if (gateway) {
    rc = bench_gateway_files(env);
    if (rc < 0) {
      return rc;
    }
  }
  for (size_t w = 0; w < r->nworkloads; w++) {
    if (r->workloads[w]->kind == BENCH_WL_COPY) {
      fprintf(stderr, "diskgate bench: making the copy tree %s (%llu MiB)\n", env->tree,
              (unsigned long long)(env->opts->copy_size >> 20));
      rc = bench_copy_make_tree(env);
      if (rc < 0) {
        if (rc != -EINTR) {
          fprintf(stderr, "diskgate bench: cannot make %s: %s\n", env->tree, strerror(-rc));
        }
        return rc;
      }
      fprintf(stderr, "diskgate bench: the tree holds %u files, %llu bytes\n", env->tree_files,
              (unsigned long long)env->tree_bytes);
      break;
    }
  }
  for (size_t c = 0; c < r->nconfigs; c++) {
    rbd |= bench_rbd_is_row(r->configs[c]);
  }
  if (rbd) {
    bench_rbd_setup(env, r->rbd, sizeof(r->rbd));
  }
  return 0;
}

/* --render: the three reports of an earlier run's bench.json, written into --out again. */
static int render_main(const struct bench_opts *opts)
{
  static struct bench_results r;
  struct bench_env env;
  int rc;

  memset(&env, 0, sizeof(env));
  env.opts = opts;
  if (bench_load_json(opts->render, &r) < 0) {
    if (r.cells == NULL && access(opts->render, R_OK) != 0) {
      char shown[LOG_SHOWN_MAX];
      fprintf(stderr, "diskgate bench: cannot read %s: %s\n",
              log_escape_str(shown, sizeof shown, opts->render), strerror(errno));
    }
    return 2;
  }
  if (bench_env_open_out(&env) < 0) {
    free(r.cells);
    return 2; /* a bad command line */
  }
  rc = 0;
  if (write_report(&env, "bench.md", bench_report_targets_md_write, &r) < 0 ||
      write_report(&env, "bench.json", bench_report_json_write, &r) < 0 ||
      write_report(&env, "bench.svg", bench_report_svg_write, &r) < 0) {
    rc = 1;
  } else {
    bench_report_targets_md_write(stdout, &r);
  }
  free(r.cells);
  return rc;
}

static int lab_run(int argc, char **argv, struct bench_results *r);

int bench_main(int argc, char **argv)
{
  static struct bench_results r;
  char tmp[] = "/var/tmp/diskgate-bench.XXXXXX";
  bool made_dir = false;
  int rc, status;

  memset(&r, 0, sizeof(r));
  rc = bench_cli_parse(argc, argv, &r.opts, stdout, stderr);
  if (rc == BENCH_CLI_HELP) {
    return 0;
  }
  if (rc < 0) {
    return 2;
  }
  if (r.opts.list) {
    list_all(stdout);
    return 0;
  }
  if (r.opts.render != NULL) {
    return render_main(&r.opts);
  }
  if (r.opts.dir == NULL) { /* the test file goes to a fresh folder, never the cwd */
    if (mkdtemp(tmp) == NULL) {
      fprintf(stderr, "diskgate bench: cannot create a folder in /var/tmp: %s (give --dir)\n",
              strerror(errno));
      return 1;
    }
    r.opts.dir = tmp;
    made_dir = true;
  }
  status = lab_run(argc, argv, &r);
  if (made_dir && r.opts.keep) {
    fprintf(stderr, "diskgate bench: --keep: the test file stays in %s\n", tmp);
  } else if (made_dir) {
    bench_env_remove_tree(tmp);
  }
  return status;
}

/* Selects the rows and columns, checks the copy test, the test folder, the tools, --out and
 * the folder's lock, and allocates r->cells. Returns 0 with env locked and r->cells
 * allocated, or the exit status (1 or 2) with nothing left to free. Main thread only. */
static int lab_select(int argc, char **argv, struct bench_results *r, struct bench_env *env)
{
  int rc = bench_profiles_select(&r->opts, r, stderr);
  if (rc == -ENOENT) {
    fprintf(stderr, "diskgate bench: nothing to run: no selected workload applies to the "
                    "selected configurations\n");
  }
  if (rc < 0 || bench_variants_apply(&r->opts, r, stderr) < 0) {
    return 2;
  }
  if (drop_copy_unless_root(r) == 0) {
    fprintf(stderr, "diskgate bench: nothing to run: the copy test needs root\n");
    return 2;
  }
  bool copy = copy_selected(r); /* final: only rows are dropped after this */
  if (copy && bench_cli_check_copy_size(&r->opts, stderr) < 0) {
    return 2;
  }
  if (bench_env_locate(env, &r->opts, needs_file(r), copy) < 0) {
    return 2;
  }
  if (drop_unusable_rbd_rows(r, env) == 0 || drop_unusable_image_rows(r, env) == 0) {
    return 2;
  }
  r->cells = calloc(r->nconfigs * r->nworkloads, sizeof(*r->cells));
  if (r->cells == NULL) {
    fprintf(stderr, "diskgate bench: out of memory\n");
    return 1;
  }
  join_command(argc, argv, r->command, sizeof(r->command));
  if (check_tools(r, env) < 0) {
    free(r->cells);
    return 2;
  }
  if (bench_env_lock_dir(env) < 0 || /* not bench_env_cleanup: the files are another lab's */
      bench_env_open_out(env) < 0) { /* before anything runs: a bad command line */
    free(r->cells);
    return 2;
  }
  return 0;
}

/* The lab proper, once the command line is parsed and opts.dir names a folder: selects the
 * rows (lab_select), runs every cell and writes the reports. Returns the exit status.
 * Main thread only. */
static int lab_run(int argc, char **argv, struct bench_results *r)
{
  struct bench_env env;
  double t0;
  time_t now;
  int rc, status = 0;
  bool written;

  rc = lab_select(argc, argv, r, &env);
  if (rc != 0) {
    return rc;
  }
  bench_proc_install_signals();
  if (bench_env_init(&env) < 0) {
    bench_env_cleanup(&env);
    free(r->cells);
    return 1;
  }
  now = time(NULL);
  strftime(r->started, sizeof(r->started), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  bench_machine_describe(&r->machine, env.dir);
  r->caches_dropped = access("/proc/sys/vm/drop_caches", W_OK) == 0;
  bench_run_plan(r);
  t0 = bench_proc_now();
  rc = prepare_data(&env, r);
  if (rc == 0) {
    rc = bench_run_all(&env, r);
    if (rc < 0) {
      status = 1;
    }
  } else {
    status = 1;
  }
  bench_rbd_cleanup(&env);
  bench_qcow2_cleanup(&env);
  bench_asif_cleanup(&env);
  bench_gateway_cleanup(&env);
  r->elapsed_s = bench_proc_now() - t0;
  r->tree_bytes = env.tree_bytes;
  r->tree_files = env.tree_files;
  bench_fmt(r->machine.accel, sizeof(r->machine.accel), "%s", env.accel);
  bench_stats_results_finish(r);
  written = write_report(&env, "bench.md", bench_report_targets_md_write, r) == 0 &&
            write_report(&env, "bench.json", bench_report_json_write, r) == 0 &&
            write_report(&env, "bench.svg", bench_report_svg_write, r) == 0;
  bench_report_targets_md_write(stdout, r); /* the table, even when --out could not take it */
  if (bench_proc_interrupted()) {
    status = 128 + bench_proc_interrupt_signal(); /* as a shell reports it: 130 for Ctrl-C */
  }
  if (!written) {
    status = status > 128 ? status : 1;
  } else {
    fprintf(stderr, "diskgate bench: wrote %s/bench.md, bench.json and bench.svg%s\n", env.out,
            status > 128  ? " (interrupted: the runs done so far; cells not reached say "
                            "'not run')"
            : status != 0 ? " (some runs failed: see the cells and logs/)"
                          : "");
  }
  bench_env_cleanup(&env);
  free(r->cells);
  return status;
}
