/* SPDX-License-Identifier: MIT */
/* bench_proc.h: child processes for the lab (fio, servers, losetup, mount...), their CPU time
 * read from /proc, and the interrupt flag. Main thread only: the functions wait for children
 * with waitpid/waitid and must not race another thread doing so. */
#ifndef DISKGATE_BENCH_PROC_H
#define DISKGATE_BENCH_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Returns CLOCK_MONOTONIC in seconds. */
double bench_proc_now(void);

/* Installs handlers that turn SIGINT and SIGTERM into the interrupt flag, and ignores
 * SIGPIPE. */
void bench_proc_install_signals(void);

/* Returns true once SIGINT or SIGTERM was received. */
bool bench_proc_interrupted(void);

/* The signal that interrupted the lab (SIGINT, SIGTERM), or 0. */
int bench_proc_interrupt_signal(void);

/* Starts argv[0] (searched in PATH) with argv. stdin is /dev/null; stdout goes to stdout_fd when
 * it is >= 0, else to log_path; stderr goes to log_path (appended; /dev/null when NULL). The
 * child gets SIGTERM if this process dies. Sets *pid. Returns 0 or -errno (fork, open). A
 * failed exec makes the child exit 127 after writing one line into the log. */
int bench_proc_spawn(char *const argv[], const char *log_path, int stdout_fd, pid_t *pid);

/* Starts argv[0] (searched in PATH) with stdin from /dev/null and stdout / stderr on the given
 * descriptors (which stay open in the caller). Otherwise as bench_proc_spawn(). */
int bench_proc_spawn_io(char *const argv[], int stdout_fd, int stderr_fd, pid_t *pid);

/* Reads the CPU time of process pid and of its reaped children (utime + stime + cutime +
 * cstime of /proc/PID/stat), in seconds. Works on a zombie. Returns 0 or -errno. */
int bench_proc_cpu(pid_t pid, double *seconds);

/* Reads the resident set size of process pid (VmRSS of /proc/PID/status) into *kib, in KiB.
 * Returns 0, -errno when the file cannot be read, -ENOENT when it has no VmRSS line (a
 * zombie). */
int bench_proc_rss_kib(pid_t pid, double *kib);

/* Finds the line "KEY:   N kB" of a /proc/PID/status text (NUL-terminated) and sets *kib to
 * N. Returns 0, or -ENOENT (then *kib is 0) when no line names key or its value is not a
 * number of kB. Any thread. */
int bench_proc_status_kib(const char *status, const char *key, double *kib);

/* Reads the peak resident set size of process pid (VmHWM of /proc/PID/status) into *kib,
 * in KiB. Returns 0, -errno when the file cannot be read, -ENOENT without a VmHWM line. */
int bench_proc_hwm_kib(pid_t pid, double *kib);

/* Waits for child pid to exit, up to timeout_s seconds (< 0: forever); after the timeout it
 * kills it with SIGKILL and returns -ETIMEDOUT. Before reaping it reads the child's CPU time
 * into *cpu_s (when not NULL; 0 if unreadable). Sets *status to the raw wait status (when not
 * NULL). Returns 0 or -errno. */
int bench_proc_wait(pid_t pid, double timeout_s, int *status, double *cpu_s);

/* Returns true when child pid has exited (it is left unreaped for bench_proc_wait). */
bool bench_proc_exited(pid_t pid);

/* Sends SIGTERM to child pid, waits up to timeout_s seconds, then SIGKILLs it. Sets *status to
 * the raw wait status. Returns 0, or -ETIMEDOUT when it had to be killed. */
int bench_proc_stop(pid_t pid, double timeout_s, int *status);

/* Runs argv to completion (see bench_proc_spawn for the log). Returns its exit status (>= 0),
 * -EINTR when it was killed by a signal, -ETIMEDOUT, or -errno. Sets *cpu_s when not NULL. */
int bench_proc_run(char *const argv[], const char *log_path, double timeout_s, double *cpu_s);

/* bench_proc_run for a measured workload (cp of the copy test): an interrupt (Ctrl-C)
 * stops it with SIGTERM (SIGKILL 10 s later) and the result is -EINTR. Setup and cleanup
 * steps (losetup -d, umount) use bench_proc_run, which an interrupt does not cut short. */
int bench_proc_run_measured(char *const argv[], const char *log_path, double timeout_s,
                            double *cpu_s);

/* Runs argv and copies up to outlen - 1 bytes of its stdout (stderr discarded) into out,
 * NUL-terminated, trailing newlines removed. Returns the exit status (>= 0) or -errno. */
int bench_proc_capture(char *const argv[], char *out, size_t outlen, double timeout_s);

/* Returns true when an executable called `name` is in PATH (or `name` is an executable path). */
bool bench_proc_have_tool(const char *name);

/* Runs "sync" and asks the kernel to drop clean caches (needs root; silently skipped
 * otherwise). */
void bench_proc_drop_caches(void);

#endif
