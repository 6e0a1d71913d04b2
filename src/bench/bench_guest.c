/* SPDX-License-Identifier: MIT */
/* bench_guest.c: guest rows through tests/guest/run-guest.sh. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_fio.h"
#include "bench/bench_guest.h"
#include "bench/bench_json.h"
#include "bench/bench_proc.h"
#include "bench/bench_util.h"

#define MARK BENCH_GUEST_MARK

int bench_guest_script(const struct bench_env *env, const char *rel, char *buf, size_t len)
{
  if (env->srcdir[0] == '\0') {
    return -ENOENT;
  }
  bench_fmt(buf, len, "%s/%s", env->srcdir, rel);
  return access(buf, X_OK) == 0 ? 0 : -ENOENT;
}

int bench_guest_prepare(struct bench_env *env)
{
  char script[PATH_MAX], log[PATH_MAX];
  char *argv[] = { script, "--with", "fio", NULL };
  int rc, fds[2], st = 0;
  pid_t pid;
  size_t len = 0;

  if (env->guest_image[0] != '\0') {
    return 0;
  }
  rc = bench_guest_script(env, "scripts/guest-image.sh", script, sizeof(script));
  if (rc < 0) {
    return rc;
  }
  bench_env_out_path(env, "logs", "guest-image.log", log, sizeof(log));
  if (pipe2(fds, O_CLOEXEC) < 0) {
    return -errno;
  }
  rc = bench_proc_spawn(argv, log, fds[1], &pid);
  close(fds[1]);
  if (rc < 0) {
    close(fds[0]);
    return rc;
  }
  for (;;) {
    ssize_t n = read(fds[0], env->guest_image + len, sizeof(env->guest_image) - 1 - len);

    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    len += (size_t)n;
    if (len >= sizeof(env->guest_image) - 1) {
      break;
    }
  }
  close(fds[0]);
  env->guest_image[len] = '\0';
  env->guest_image[strcspn(env->guest_image, "\n")] = '\0';
  rc = bench_proc_wait(pid, 1800.0, &st, NULL);
  if (rc < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || env->guest_image[0] == '\0') {
    fprintf(stderr, "diskgate bench: scripts/guest-image.sh failed (see %s)\n", log);
    env->guest_image[0] = '\0';
    return -EIO;
  }
  return 0;
}

/* Writes /task.sh: runs each job with markers around it, then prints every JSON output. */
static int write_task(const char *path, const struct bench_workload *const *wls, size_t n,
                      const char *prologue)
{
  FILE *f = fopen(path, "w");

  if (f == NULL) {
    return -errno;
  }
  fputs("#!/bin/sh\n# diskgate bench: fio jobs in the guest; JSON printed after all runs\n", f);
  if (prologue != NULL) {
    fputs(prologue, f);
  }
  fputs("jobs=\"", f);
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "%s%s", i > 0 ? " " : "", wls[i]->name);
  }
  fputs("\"\n", f);
  fputs("for j in $jobs; do\n"
        "  echo \"" MARK "BEGIN $j\"\n"
        "  fio --output-format=json --output=/tmp/$j.json /bench/$j.fio >/tmp/$j.log 2>&1\n"
        "  echo \"" MARK "END $j $?\"\n"
        "done\n"
        "for j in $jobs; do\n"
        "  echo \"" MARK "JSON $j\"\n"
        "  cat /tmp/$j.json 2>/dev/null\n"
        "  echo\n"
        "  echo \"" MARK "JSON-END $j\"\n"
        "  if [ -s /tmp/$j.log ]; then echo \"" MARK "LOG $j\"; cat /tmp/$j.log; fi\n"
        "done\n",
        f);
  return fclose(f) == 0 ? 0 : -EIO;
}

/* Live state while the guest runs. */
struct watch {
  struct bench_env *env;
  const struct bench_workload *const *wls;
  size_t n;
  pid_t server_pid;
  const char *qemu_pidfile;
  pid_t qemu;
  long current;          /* index of the running workload, -1 between runs */
  double sample_at;      /* when to take the start sample (0 = taken) */
  double qemu0, srv0;    /* start samples */
  double cpu_client[BENCH_MAX_WORKLOADS];
  double cpu_server[BENCH_MAX_WORKLOADS];
  double seconds[BENCH_MAX_WORKLOADS];
  double began[BENCH_MAX_WORKLOADS];
  bench_guest_progress_fn progress;
  void *arg;
  pid_t script;          /* run-guest.sh: stopped (SIGTERM) on an interrupt */
  bool stopped;
};

static pid_t read_pidfile(const char *path)
{
  FILE *f = fopen(path, "r");
  long pid = 0;

  if (f == NULL) {
    return 0;
  }
  if (fscanf(f, "%ld", &pid) != 1) {
    pid = 0;
  }
  fclose(f);
  return (pid_t)pid;
}

static void sample(struct watch *w, double *qemu, double *srv)
{
  if (w->qemu <= 0) {
    w->qemu = read_pidfile(w->qemu_pidfile);
  }
  *qemu = 0;
  *srv = 0;
  if (w->qemu > 0) {
    bench_proc_cpu(w->qemu, qemu);
  }
  if (w->server_pid > 0) {
    bench_proc_cpu(w->server_pid, srv);
  }
}

static long find_workload(const struct watch *w, const char *name)
{
  for (size_t i = 0; i < w->n; i++) {
    if (strcmp(w->wls[i]->name, name) == 0) {
      return (long)i;
    }
  }
  return -1;
}

/* Handles one line of run-guest.sh's stderr (the console, streamed by -v). */
static void on_line(struct watch *w, char *line)
{
  char *p;
  const char *acc = strstr(line, "guest: accel=");

  if (acc != NULL) {
    bench_fmt(w->env->accel, sizeof(w->env->accel), "%s", acc + strlen("guest: accel="));
    w->env->accel[strcspn(w->env->accel, " \t")] = '\0';
    return;
  }
  p = strstr(line, MARK "BEGIN ");
  if (p != NULL) {
    long i = find_workload(w, p + strlen(MARK "BEGIN "));

    if (i >= 0) {
      w->current = i;
      w->began[i] = bench_proc_now();
      w->sample_at = w->began[i] + w->env->opts->ramp_s + 0.05;
      if (w->progress != NULL) {
        w->progress(w->arg, (size_t)i);
      }
    }
    return;
  }
  p = strstr(line, MARK "END ");
  if (p != NULL && w->current >= 0) {
    double q, s;
    size_t i = (size_t)w->current;

    if (w->sample_at > 0) { /* a run shorter than its ramp: sample now */
      sample(w, &w->qemu0, &w->srv0);
      w->sample_at = 0;
    }
    sample(w, &q, &s);
    w->cpu_client[i] = q - w->qemu0;
    w->cpu_server[i] = s - w->srv0;
    w->seconds[i] = bench_proc_now() - w->began[i];
    w->current = -1;
  }
}

/* Reads run-guest.sh's stderr until EOF, copying it to the log and watching for markers. */
static void watch_stream(struct watch *w, int fd, FILE *log)
{
  char buf[8192];
  size_t len = 0;

  for (;;) {
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    int timeout = 200;
    ssize_t got;

    if (!w->stopped && bench_proc_interrupted()) {
      /* Ctrl-C or SIGTERM to the lab: the guest's remaining jobs are not run. The script
       * kills QEMU and, with DG_GUEST_KEEP_ON_SIGNAL=0, removes its scratch directory. */
      kill(w->script, SIGTERM);
      w->stopped = true;
    }
    if (w->sample_at > 0) {
      double now = bench_proc_now();

      if (now >= w->sample_at) {
        sample(w, &w->qemu0, &w->srv0);
        w->sample_at = 0;
      } else {
        timeout = (int)((w->sample_at - now) * 1000) + 1;
      }
    }
    if (poll(&pfd, 1, timeout) <= 0) {
      continue;
    }
    got = read(fd, buf + len, sizeof(buf) - 1 - len);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;
    }
    if (log != NULL) {
      fwrite(buf + len, 1, (size_t)got, log);
    }
    len += (size_t)got;
    buf[len] = '\0';
    for (;;) {
      char *nl = memchr(buf, '\n', len);
      size_t used;

      if (nl == NULL) {
        break;
      }
      *nl = '\0';
      buf[strcspn(buf, "\r")] = '\0';
      on_line(w, buf);
      used = (size_t)(nl - buf) + 1;
      memmove(buf, nl + 1, len - used);
      len -= used;
    }
    if (len == sizeof(buf) - 1) {
      len = 0; /* an absurdly long line: drop it */
    }
  }
  if (log != NULL) {
    fflush(log);
  }
}

/* Reads a whole file into a NUL-terminated buffer (free() it); NULL on error. */
static char *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t cap = 0;

  *len = 0;
  if (f == NULL) {
    return NULL;
  }
  for (;;) {
    if (cap - *len < 4096) {
      char *nb = realloc(buf, cap + 65536);

      if (nb == NULL) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = nb;
      cap += 65536;
    }
    size_t got = fread(buf + *len, 1, cap - *len - 1, f);

    *len += got;
    if (got == 0) {
      break;
    }
  }
  fclose(f);
  buf[*len] = '\0';
  return buf;
}

/* Adds the CPU figures watched on the host to the parsed samples. */
static void add_cpu(const struct watch *w, struct bench_sample *out)
{
  for (size_t i = 0; i < w->n; i++) {
    out[i].cpu_client_s = w->cpu_client[i];
    out[i].cpu_server_s = w->cpu_server[i];
    out[i].seconds = w->seconds[i];
    out[i].cpu_per_kio = out[i].ios > 0
                           ? (out[i].cpu_client_s + out[i].cpu_server_s) / (out[i].ios / 1000.0)
                           : 0.0;
  }
}

/* The virtio-9p share: the test file's directory, mounted in the guest at /mnt/dg. */
#define NINEP_TAG "dgbench"
#define NINEP_MNT "/mnt/dg"

/* Prepares the 9p row: the modules (bench/guest-9p-modules.sh, listed into files[] as --file
 * arguments from index *nf on), a QEMU wrapper adding -virtfs (run-guest.sh takes its QEMU
 * binary from $QEMU) and the task's prologue (insmod, mount). Returns 0 or -errno. */
static int ninep_prepare(const struct bench_env *env, const char *tag, char (*files)[PATH_MAX + 32],
                         size_t *nf, size_t maxf, char *wrapper, size_t wlen, char *prologue,
                         size_t plen)
{
  char script[PATH_MAX], moddir[PATH_MAX], order[PATH_MAX + 8], name[200], line[256];
  char *argv[] = { script, (char *)env->guest_image, NULL };
  size_t used;
  FILE *f;

  if (env->srcdir[0] == '\0' ||
      !bench_fmt(script, sizeof(script), "%s/bench/guest-9p-modules.sh", env->srcdir) ||
      bench_proc_capture(argv, moddir, sizeof(moddir), 600.0) != 0 || moddir[0] != '/') {
    fprintf(stderr, "diskgate bench: bench/guest-9p-modules.sh failed: no 9p modules\n");
    return -EIO;
  }
  bench_fmt(prologue, plen, "for m in");
  bench_fmt(order, sizeof(order), "%s/order", moddir);
  f = fopen(order, "r");
  if (f == NULL) {
    return -errno;
  }
  while (fgets(line, sizeof(line), f) != NULL && *nf < maxf) {
    line[strcspn(line, "\n")] = '\0';
    if (line[0] == '\0') {
      continue;
    }
    bench_fmt(files[*nf], sizeof(files[*nf]), "%s/%s:/bench9p/%s", moddir, line, line);
    (*nf)++;
    used = strlen(prologue);
    bench_fmt(prologue + used, plen - used, " %s", line);
  }
  fclose(f);
  used = strlen(prologue);
  bench_fmt(prologue + used, plen - used,
            "; do insmod /bench9p/$m 2>/dev/null; done\n"
            "mkdir -p " NINEP_MNT "\n"
            "mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 " NINEP_TAG " " NINEP_MNT
            " || { echo 'cannot mount the 9p share'; exit 1; }\n");
  bench_fmt(name, sizeof(name), "%s-qemu-9p.sh", tag);
  bench_env_work_path(env, name, wrapper, wlen);
  f = fopen(wrapper, "w");
  if (f == NULL) {
    return -errno;
  }
  fprintf(f, "#!/bin/sh\n# diskgate bench: QEMU with the test file's directory shared over virtio-9p\n"
             "case \"$1\" in --version|-version) exec qemu-system-x86_64 \"$@\" ;; esac\n"
             "exec qemu-system-x86_64 \"$@\" -virtfs local,path=%s,mount_tag=" NINEP_TAG
             ",security_model=none,id=" NINEP_TAG "\n", env->dir);
  if (fclose(f) != 0 || chmod(wrapper, 0755) < 0) {
    return -EIO;
  }
  return 0;
}

/* The paths of one guest run. */
struct guest_paths {
  char script[PATH_MAX];  /* tests/guest/run-guest.sh of the source tree */
  char task[PATH_MAX];    /* the task script (write_task), in the work folder */
  char pidfile[PATH_MAX]; /* QEMU's pid file, written by run-guest.sh */
  char outpath[PATH_MAX]; /* run-guest.sh's stdout: raw/guest-TAG.out */
  char log[PATH_MAX];     /* run-guest.sh's stderr, the console: logs/guest-TAG.log */
};

/* run-guest.sh's command line and the strings its words point into. */
struct guest_cmd {
  char *argv[24 + 2 * BENCH_MAX_WORKLOADS + 16];
  int argc;                                       /* words in argv so far */
  char files[BENCH_MAX_WORKLOADS][PATH_MAX + 32]; /* --file JOB:/bench/NAME.fio, a workload each */
  char timeout[32];                               /* --timeout in whole seconds */
};

/* Fills *p for the guest run named tag. Returns 0, or -ENOENT when run-guest.sh is missing
 * (the other paths are then unset). */
static int guest_name_paths(const struct bench_env *env, const char *tag, struct guest_paths *p)
{
  char name[200];
  int rc = bench_guest_script(env, "tests/guest/run-guest.sh", p->script, sizeof(p->script));

  if (rc < 0) {
    return rc;
  }
  bench_fmt(name, sizeof(name), "%s-task.sh", tag);
  bench_env_work_path(env, name, p->task, sizeof(p->task));
  bench_fmt(name, sizeof(name), "%s-qemu.pid", tag);
  bench_env_work_path(env, name, p->pidfile, sizeof(p->pidfile));
  bench_fmt(name, sizeof(name), "guest-%s.out", tag);
  bench_env_out_path(env, "raw", name, p->outpath, sizeof(p->outpath));
  bench_fmt(name, sizeof(name), "guest-%s.log", tag);
  bench_env_out_path(env, "logs", name, p->log, sizeof(p->log));
  return 0;
}

/* Writes a fio job file for each of the n workloads wls[] into the work folder (t: the disk as
 * the guest sees it; the runtime and ramp of env->opts, in seconds), appends a --file pair for
 * each to cmd and names the raw output in out[i].raw. Returns 0, or the -errno of the first
 * job file that could not be opened or written (-EIO when it could not be closed). */
static int guest_add_jobs(const struct bench_env *env, const struct bench_workload *const *wls,
                          size_t n, const char *tag, const struct bench_fio_target *t,
                          struct guest_cmd *cmd, struct bench_sample *out)
{
  const struct bench_opts *o = env->opts;
  char name[200];
  int rc;

  for (size_t i = 0; i < n; i++) {
    char job[PATH_MAX];
    FILE *f;

    bench_fmt(name, sizeof(name), "%s-%s.fio", tag, wls[i]->name);
    bench_env_work_path(env, name, job, sizeof(job));
    f = fopen(job, "w");
    if (f == NULL) {
      return -errno;
    }
    rc = bench_fio_write_job(f, wls[i], t, o->runtime_s, o->ramp_s);
    if (fclose(f) != 0 || rc < 0) {
      return rc < 0 ? rc : -EIO;
    }
    bench_fmt(cmd->files[i], sizeof(cmd->files[i]), "%s:/bench/%s.fio", job, wls[i]->name);
    cmd->argv[cmd->argc++] = "--file";
    cmd->argv[cmd->argc++] = cmd->files[i];
    bench_fmt(out[i].raw, sizeof(out[i].raw), "raw/guest-%s.out", tag);
  }
  return 0;
}

/* Appends the disk (--nbd or --drive), --nvme for NVMe rows, the --timeout (180 s, plus the
 * runtime, the ramp and 60 s for each of the n workloads), the QEMU pid file and --verbose to
 * cmd, and ends argv with NULL. */
static void guest_add_options(struct guest_cmd *cmd, const struct bench_config *cfg,
                              const struct bench_guest_disk *disk, const struct bench_opts *o,
                              size_t n, char *pidfile)
{
  if (disk->nbd != NULL) {
    cmd->argv[cmd->argc++] = "--nbd";
    cmd->argv[cmd->argc++] = (char *)disk->nbd;
  } else if (disk->drive != NULL) {
    cmd->argv[cmd->argc++] = "--drive";
    cmd->argv[cmd->argc++] = (char *)disk->drive;
  }
  if (cfg->nvme) {
    cmd->argv[cmd->argc++] = "--nvme";
  }
  bench_fmt(cmd->timeout, sizeof(cmd->timeout), "%u",
            (unsigned)(180 + n * (o->runtime_s + o->ramp_s + 60)));
  cmd->argv[cmd->argc++] = "--timeout";
  cmd->argv[cmd->argc++] = cmd->timeout;
  cmd->argv[cmd->argc++] = "--qemu-pid-file";
  cmd->argv[cmd->argc++] = pidfile;
  cmd->argv[cmd->argc++] = "--verbose";
  cmd->argv[cmd->argc] = NULL;
}

/* Starts run-guest.sh (argv) with its stdout into outpath (created or truncated) and its stderr
 * into a pipe, after removing a stale pidfile. With wrapper != NULL the script runs that as
 * its QEMU (the caller's $QEMU, set or not, is restored). Returns 0 with the child in *pid and
 * the pipe's read end in *fd (the caller closes it), or -errno with no descriptor left open. */
static int guest_spawn_script(char **argv, const char *outpath, const char *pidfile,
                              const char *wrapper, pid_t *pid, int *fd)
{
  char old_qemu[PATH_MAX] = "";
  bool had_qemu = false;
  int rc, out_fd, fds[2];

  out_fd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0) {
    return -errno;
  }
  if (pipe2(fds, O_CLOEXEC) < 0) {
    rc = -errno;
    close(out_fd);
    return rc;
  }
  unlink(pidfile);
  if (wrapper != NULL) {
    had_qemu = getenv("QEMU") != NULL;
    if (had_qemu) {
      bench_fmt(old_qemu, sizeof(old_qemu), "%s", getenv("QEMU"));
    }
    setenv("QEMU", wrapper, 1);
  }
  setenv("DG_GUEST_KEEP_ON_SIGNAL", "0", 1); /* an interrupted lab leaves no scratch dir */
  rc = bench_proc_spawn_io(argv, out_fd, fds[1], pid);
  if (wrapper != NULL) {
    if (had_qemu) {
      setenv("QEMU", old_qemu, 1);
    } else {
      unsetenv("QEMU");
    }
  }
  close(out_fd);
  close(fds[1]);
  if (rc < 0) {
    close(fds[0]);
    return rc;
  }
  *fd = fds[0];
  return 0;
}

/* Watches the script w->script through its stderr (fd) until EOF, appending the stream to the
 * file log, then closes fd and reaps the script within 60 s into *st. Returns 0 or the
 * -errno of the wait. */
static int guest_watch_script(struct watch *w, int fd, const char *log, int *st)
{
  FILE *logf = fopen(log, "a");

  watch_stream(w, fd, logf);
  if (logf != NULL) {
    fclose(logf);
  }
  close(fd);
  return bench_proc_wait(w->script, 60.0, st, NULL);
}

/* Parses run-guest.sh's output (the file outpath) into out[0..w->n) and adds the CPU figures
 * watched on the host. Returns 0, or -EIO when the file cannot be read. */
static int guest_read_output(const struct watch *w, const char *outpath, struct bench_sample *out)
{
  size_t len;
  char *text = slurp(outpath, &len);

  if (text == NULL) {
    return -EIO;
  }
  (void)len;
  bench_json_parse_guest_output(text, w->wls, w->n, out);
  add_cpu(w, out);
  free(text);
  return 0;
}

int bench_guest_run(struct bench_env *env, const struct bench_config *cfg,
                    const struct bench_workload *const *wls, size_t n,
                    const struct bench_guest_disk *disk, pid_t server_pid, const char *tag,
                    bench_guest_progress_fn progress, void *arg, struct bench_sample *out)
{
  const struct bench_opts *o = env->opts;
  struct guest_paths p;
  struct guest_cmd cmd;
  char files9p[8][PATH_MAX + 32], wrapper[PATH_MAX], prologue[1024], ninep_file[PATH_MAX];
  struct bench_fio_target t = { .ioengine = "io_uring", .filename = "${DISK}", .size = o->size };
  bool ninep = cfg->backing == BENCH_GUEST_9P;
  size_t nf = 0;
  struct watch w;
  int rc, fd = -1, st = 0;
  pid_t pid;

  memset(out, 0, n * sizeof(*out));
  if (n == 0 || n > BENCH_MAX_WORKLOADS) {
    return -EINVAL;
  }
  rc = guest_name_paths(env, tag, &p);
  if (rc < 0) {
    return rc;
  }
  if (ninep) {
    const char *base = strrchr(env->file, '/');

    rc = ninep_prepare(env, tag, files9p, &nf, 8, wrapper, sizeof(wrapper), prologue,
                       sizeof(prologue));
    if (rc < 0) {
      return rc;
    }
    bench_fmt(ninep_file, sizeof(ninep_file), NINEP_MNT "/%s", base != NULL ? base + 1 : "");
    t.filename = ninep_file;
  }
  rc = write_task(p.task, wls, n, ninep ? prologue : NULL);
  if (rc < 0) {
    return rc;
  }
  cmd.argc = 0;
  cmd.argv[cmd.argc++] = p.script;
  cmd.argv[cmd.argc++] = "--task";
  cmd.argv[cmd.argc++] = p.task;
  cmd.argv[cmd.argc++] = "--image-dir";
  cmd.argv[cmd.argc++] = env->guest_image;
  rc = guest_add_jobs(env, wls, n, tag, &t, &cmd, out);
  if (rc < 0) {
    return rc;
  }
  for (size_t i = 0; i < nf; i++) {
    cmd.argv[cmd.argc++] = "--file";
    cmd.argv[cmd.argc++] = files9p[i];
  }
  guest_add_options(&cmd, cfg, disk, o, n, p.pidfile);
  rc = guest_spawn_script(cmd.argv, p.outpath, p.pidfile, ninep ? wrapper : NULL, &pid, &fd);
  if (rc < 0) {
    return rc;
  }
  w = (struct watch){ .env = env, .wls = wls, .n = n, .server_pid = server_pid,
                      .qemu_pidfile = p.pidfile, .current = -1, .progress = progress,
                      .arg = arg, .script = pid };
  rc = guest_watch_script(&w, fd, p.log, &st);
  if (rc < 0) {
    return rc;
  }
  if (w.stopped) {
    return -EINTR;
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "diskgate bench: the guest for %s failed (status %d; see %s)\n", tag,
            WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), p.log);
  }
  return guest_read_output(&w, p.outpath, out);
}
