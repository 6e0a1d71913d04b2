/* SPDX-License-Identifier: MIT */
/* reexec.c: see reexec.h. */
#include "server/reexec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The environment of the new process: this one's without the two variables, plus them.
 * Returns a malloc'd array (its added strings in `fds_var` and `pid_var`), or NULL. */
static char **env_build(const int *fds, size_t n, char *fds_var, size_t fds_size,
                        char *pid_var, size_t pid_size)
{
  size_t count = 0, k = 0, len;
  char **env;

  for (char **e = environ; *e != NULL; e++) {
    count++;
  }
  env = calloc(count + 3, sizeof *env);
  if (env == NULL) {
    return NULL;
  }
  len = (size_t)snprintf(fds_var, fds_size, "%s=", REEXEC_FDS_ENV);
  for (size_t i = 0; i < n && len < fds_size; i++) {
    len += (size_t)snprintf(fds_var + len, fds_size - len, "%s%d", i > 0 ? "," : "", fds[i]);
  }
  snprintf(pid_var, pid_size, "%s=%ld", REEXEC_TAKEOVER_ENV, (long)getpid());
  for (char **e = environ; *e != NULL; e++) {
    if (strncmp(*e, REEXEC_FDS_ENV "=", sizeof REEXEC_FDS_ENV) != 0 &&
        strncmp(*e, REEXEC_TAKEOVER_ENV "=", sizeof REEXEC_TAKEOVER_ENV) != 0) {
      env[k++] = *e;
    }
  }
  env[k++] = fds_var;
  env[k++] = pid_var;
  env[k] = NULL;
  return env;
}

pid_t reexec_spawn(char *const argv[], const int *fds, size_t n)
{
  char fds_var[256], pid_var[64];
  char **env = env_build(fds, n, fds_var, sizeof fds_var, pid_var, sizeof pid_var);
  int report[2], err = 0;
  pid_t pid;

  if (env == NULL) {
    return -ENOMEM;
  }
  if (pipe2(report, O_CLOEXEC) < 0) {
    err = errno;
    free(env);
    return -err;
  }
  pid = fork();
  if (pid == 0) {
    /* the child: only async-signal-safe calls until the exec */
    for (size_t i = 0; i < n; i++) {
      fcntl(fds[i], F_SETFD, 0);
    }
    execvpe(argv[0], argv, env);
    execve("/proc/self/exe", argv, env);
    err = errno;
    (void)!write(report[1], &err, sizeof err);
    _exit(127);
  }
  err = pid < 0 ? errno : 0;
  close(report[1]);
  free(env);
  if (pid > 0) {
    /* EOF: the exec succeeded (the pipe closed on exec); else the child's errno */
    ssize_t got;
    do {
      got = read(report[0], &err, sizeof err);
    } while (got < 0 && errno == EINTR);
    if (got != (ssize_t)sizeof err) {
      err = 0;
    } else {
      waitpid(pid, NULL, 0);
    }
  }
  close(report[0]);
  return err != 0 ? -err : pid;
}

int reexec_takeover_pid(void)
{
  const char *v = getenv(REEXEC_TAKEOVER_ENV);

  return v != NULL ? atoi(v) : 0;
}

int reexec_inherited(int *fds, size_t max)
{
  const char *v = getenv(REEXEC_FDS_ENV);
  size_t n = 0;
  int rc = 0;

  if (v == NULL) {
    return 0;
  }
  while (*v != '\0' && rc == 0) {
    char *end;
    long fd = strtol(v, &end, 10);
    int listening = 0;
    socklen_t len = sizeof listening;
    if (end == v || fd < 0 || fd > 1 << 20 || n == max || (*end != ',' && *end != '\0') ||
        getsockopt((int)fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening) {
      rc = -EINVAL;
      break;
    }
    fcntl((int)fd, F_SETFD, FD_CLOEXEC);
    fds[n++] = (int)fd;
    v = *end == ',' ? end + 1 : end;
  }
  unsetenv(REEXEC_FDS_ENV);
  unsetenv(REEXEC_TAKEOVER_ENV);
  return rc < 0 ? rc : (int)n;
}
