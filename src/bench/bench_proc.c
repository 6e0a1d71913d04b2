/* SPDX-License-Identifier: MIT */
/* bench_proc.c: child processes, /proc CPU accounting, signals. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_proc.h"
#include "bench/bench_util.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
  interrupted = sig; /* SIGINT or SIGTERM, both > 0 */
}

double bench_proc_now(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void bench_proc_install_signals(void)
{
  struct sigaction sa;

  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

bool bench_proc_interrupted(void)
{
  return interrupted != 0;
}

int bench_proc_interrupt_signal(void)
{
  return interrupted;
}

int bench_proc_spawn_io(char *const argv[], int stdout_fd, int stderr_fd, pid_t *pid)
{
  pid_t parent = getpid();
  int null_fd;
  pid_t child;

  null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    return -errno;
  }
  fflush(NULL);
  child = fork();
  if (child < 0) {
    int err = -errno;

    close(null_fd);
    return err;
  }
  if (child == 0) {
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGPIPE, &sa, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) {
      _exit(127);
    }
    dup2(null_fd, STDIN_FILENO);
    dup2(stdout_fd, STDOUT_FILENO);
    dup2(stderr_fd, STDERR_FILENO);
    execvp(argv[0], argv);
    dprintf(STDERR_FILENO, "diskgate bench: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(null_fd);
  *pid = child;
  return 0;
}

int bench_proc_spawn(char *const argv[], const char *log_path, int stdout_fd, pid_t *pid)
{
  int log_fd, rc;

  log_fd = open(log_path != NULL ? log_path : "/dev/null",
                O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return -errno;
  }
  rc = bench_proc_spawn_io(argv, stdout_fd >= 0 ? stdout_fd : log_fd, log_fd, pid);
  close(log_fd);
  return rc;
}

int bench_proc_rss_kib(pid_t pid, double *kib)
{
  char path[64], line[256];
  FILE *f;
  int rc = -ENOENT;

  *kib = 0.0;
  bench_fmt(path, sizeof(path), "/proc/%ld/status", (long)pid);
  f = fopen(path, "re");
  if (f == NULL) {
    return -errno;
  }
  while (fgets(line, sizeof(line), f) != NULL) {
    unsigned long long v;

    if (sscanf(line, "VmRSS: %llu kB", &v) == 1) {
      *kib = (double)v;
      rc = 0;
      break;
    }
  }
  fclose(f);
  return rc;
}

int bench_proc_status_kib(const char *status, const char *key, double *kib)
{
  size_t klen = strlen(key);

  *kib = 0.0;
  for (const char *line = status; line != NULL && *line != '\0';) {
    const char *next = strchr(line, '\n');

    if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
      unsigned long long v;
      char unit[4];

      if (sscanf(line + klen + 1, "%llu %3s", &v, unit) == 2 && strcmp(unit, "kB") == 0) {
        *kib = (double)v;
        return 0;
      }
      return -ENOENT;
    }
    line = next != NULL ? next + 1 : NULL;
  }
  return -ENOENT;
}

int bench_proc_hwm_kib(pid_t pid, double *kib)
{
  char path[64], buf[8192];
  size_t n;
  FILE *f;

  *kib = 0.0;
  bench_fmt(path, sizeof(path), "/proc/%ld/status", (long)pid);
  f = fopen(path, "re");
  if (f == NULL) {
    return -errno;
  }
  n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return bench_proc_status_kib(buf, "VmHWM", kib);
}

int bench_proc_cpu(pid_t pid, double *seconds)
{
  char path[64], buf[1024];
  unsigned long long ut, st;
  long long cut, cst;
  const char *p;
  ssize_t n;
  int fd;

  *seconds = 0.0;
  bench_fmt(path, sizeof(path), "/proc/%ld/stat", (long)pid);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return -errno;
  }
  n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) {
    return n < 0 ? -errno : -EIO;
  }
  buf[n] = '\0';
  p = strrchr(buf, ')');
  if (p == NULL) {
    return -EIO;
  }
  /* after ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime ... */
  if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld", &ut, &st,
             &cut, &cst) != 4) {
    return -EIO;
  }
  *seconds = (double)(ut + st + (unsigned long long)cut + (unsigned long long)cst) /
             (double)sysconf(_SC_CLK_TCK);
  return 0;
}

/* bench_proc_wait; when `interruptible`, an interrupt (SIGINT, SIGTERM) sends the child
 * SIGTERM and, 10 s later, SIGKILL, and the result is -EINTR. */
static int proc_wait(pid_t pid, double timeout_s, int *status, double *cpu_s, bool interruptible)
{
  double deadline = bench_proc_now() + timeout_s;
  bool killed = false, stopped = false;
  siginfo_t info;
  int st = 0;

  if (cpu_s != NULL) {
    *cpu_s = 0.0;
  }
  for (;;) {
    memset(&info, 0, sizeof(info));
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -errno;
    }
    if (info.si_pid == pid) {
      break;
    }
    if (!killed && timeout_s >= 0 && bench_proc_now() > deadline) {
      kill(pid, SIGKILL);
      killed = true;
    }
    if (interruptible && !stopped && bench_proc_interrupted()) {
      kill(pid, SIGTERM);
      stopped = true;
      deadline = bench_proc_now() + 10.0;
      timeout_s = 10.0;
    }
    usleep(10000);
  }
  if (cpu_s != NULL && bench_proc_cpu(pid, cpu_s) < 0) {
    *cpu_s = 0.0;
  }
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) {
      return -errno;
    }
  }
  if (status != NULL) {
    *status = st;
  }
  if (stopped) {
    return -EINTR;
  }
  return killed ? -ETIMEDOUT : 0;
}

int bench_proc_wait(pid_t pid, double timeout_s, int *status, double *cpu_s)
{
  return proc_wait(pid, timeout_s, status, cpu_s, false);
}

bool bench_proc_exited(pid_t pid)
{
  siginfo_t info;

  memset(&info, 0, sizeof(info));
  if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) < 0) {
    return errno == ECHILD;
  }
  return info.si_pid == pid;
}

int bench_proc_stop(pid_t pid, double timeout_s, int *status)
{
  double deadline = bench_proc_now() + timeout_s;
  int st = 0;

  kill(pid, SIGTERM);
  for (;;) {
    pid_t got = waitpid(pid, &st, WNOHANG);

    if (got == pid) {
      break;
    }
    if (got < 0 && errno != EINTR) {
      return -errno;
    }
    if (bench_proc_now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      if (status != NULL) {
        *status = st;
      }
      return -ETIMEDOUT;
    }
    usleep(10000);
  }
  if (status != NULL) {
    *status = st;
  }
  return 0;
}

static int proc_run(char *const argv[], const char *log_path, double timeout_s, double *cpu_s,
                    bool interruptible)
{
  pid_t pid;
  int st = 0;
  int rc = bench_proc_spawn(argv, log_path, -1, &pid);

  if (rc < 0) {
    return rc;
  }
  rc = proc_wait(pid, timeout_s, &st, cpu_s, interruptible);
  if (rc < 0) {
    return rc;
  }
  if (WIFEXITED(st)) {
    return WEXITSTATUS(st);
  }
  return -EINTR;
}

int bench_proc_run(char *const argv[], const char *log_path, double timeout_s, double *cpu_s)
{
  return proc_run(argv, log_path, timeout_s, cpu_s, false);
}

int bench_proc_run_measured(char *const argv[], const char *log_path, double timeout_s,
                            double *cpu_s)
{
  return proc_run(argv, log_path, timeout_s, cpu_s, true);
}

int bench_proc_capture(char *const argv[], char *out, size_t outlen, double timeout_s)
{
  double deadline = bench_proc_now() + timeout_s;
  size_t len = 0;
  int fds[2];
  pid_t pid;
  int rc, st = 0;

  if (outlen > 0) {
    out[0] = '\0';
  }
  if (pipe2(fds, O_CLOEXEC) < 0) {
    return -errno;
  }
  rc = bench_proc_spawn(argv, NULL, fds[1], &pid);
  close(fds[1]);
  if (rc < 0) {
    close(fds[0]);
    return rc;
  }
  for (;;) {
    struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
    char buf[4096];
    ssize_t n;
    int left = (int)((deadline - bench_proc_now()) * 1000);

    if (left <= 0) {
      kill(pid, SIGKILL);
      break;
    }
    if (poll(&pfd, 1, left) <= 0) {
      continue;
    }
    n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    for (ssize_t i = 0; i < n && len + 1 < outlen; i++) {
      out[len++] = buf[i];
    }
  }
  close(fds[0]);
  if (outlen > 0) {
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r')) {
      len--;
    }
    out[len] = '\0';
  }
  rc = bench_proc_wait(pid, 5.0, &st, NULL);
  if (rc < 0) {
    return rc;
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -EINTR;
}

bool bench_proc_have_tool(const char *name)
{
  const char *path = getenv("PATH");
  char buf[4096];

  if (strchr(name, '/') != NULL) {
    return access(name, X_OK) == 0;
  }
  if (path == NULL) {
    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
  }
  while (*path != '\0') {
    const char *end = strchr(path, ':');
    size_t n = end != NULL ? (size_t)(end - path) : strlen(path);
    struct stat sb;

    if (n > 0 && n + strlen(name) + 2 < sizeof(buf)) {
      memcpy(buf, path, n);
      buf[n] = '/';
      strcpy(buf + n + 1, name);
      if (stat(buf, &sb) == 0 && S_ISREG(sb.st_mode) && access(buf, X_OK) == 0) {
        return true;
      }
    }
    path += n;
    if (*path == ':') {
      path++;
    }
  }
  return false;
}

void bench_proc_drop_caches(void)
{
  int fd;

  sync();
  fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return;
  }
  if (write(fd, "3\n", 2) < 0) {
    /* not root, or a read-only /proc: the runs just see warmer caches */
  }
  close(fd);
}
