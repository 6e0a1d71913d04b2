/* SPDX-License-Identifier: MIT */
/* cli.h: for the subcommands' option parsers (serve.c, bench_cli.c): one line that names
 * what is wrong with a command line getopt_long parsed (an option it refused, a value that
 * is another option: a forgotten value), the checks of values shared by both (numbers,
 * UTF-8 names), and the exit status and text of a start-up failure (serve.c, pid_file.c). getopt_long reports an unknown option, a missing value and a value given
 * to an option that takes none all the same way ('?' or ':'), and its optopt is the
 * offending character only for short options; this tells the three apart from the
 * argument itself. Source: glibc's getopt_long(3) (abbreviations of
 * long options, "--NAME=VALUE"). Threads: any (reads only its arguments). */
#ifndef DISKGATE_UTIL_CLI_H
#define DISKGATE_UTIL_CLI_H

#include <getopt.h>
#include <stddef.h>

/* Writes into msg (at most size bytes, NUL-terminated) what was wrong with the option
 * getopt_long just refused, e.g. "unknown option '-r' (the options are long ones, --NAME)", "option '--read-only' takes no value", "option '--listen' needs a value",
 * "option '--s' is ambiguous (--socket, --sync)" or "unknown option '--bogus'".
 * `longopts` is the table given to getopt_long, ending with a zero entry; `arg` is
 * argv[optind - 1] right after the refusal (the argument that held the option), and
 * `short_opt` is optopt as getopt_long left it: a character for a short option (negative
 * for a byte above 0x7f, which glibc keeps in a signed char), 0 or the option's value for a
 * long one. The long options' values must therefore be 256 or more. The argument's bytes are shown escaped
 * (log_escape), so the message stays one line. Returns msg. */
char *cli_option_error(const struct option *longopts, const char *arg, int short_opt, char *msg,
                       size_t size);

/* For an option that takes a value: when getopt_long took that value from the next
 * argument (argv[next - 1] == value, as it is right after getopt_long returned `opt`, with
 * `next` its optind) and the value is itself one of longopts ("--NAME", "--NAME=..." or an
 * abbreviation of one or more), as in `--export --read-only PATH` where the export's name
 * was forgotten, writes into msg (at most size bytes, NUL-terminated, escaped) a line
 * naming both, e.g. "option '--export' needs a value, not the option '--read-only'; write
 * --export=--read-only if that is the value", and returns msg. Returns NULL when the value
 * is fine: given as "--NAME=VALUE", or not an option's name. `opt` is the val of an option
 * in longopts. */
char *cli_value_option_error(const struct option *longopts, char *const argv[], int next,
                             const char *value, int opt, char *msg, size_t size);

/* Parses an option's decimal value in [min, max] into *out: digits only, from the first
 * byte to the last (no sign, no spaces, no suffix, which strtoul would take or skip).
 * Returns 0, or -EINVAL (not such a number, or out of range; *out is unchanged). */
int cli_parse_unsigned(const char *text, unsigned min, unsigned max, unsigned *out);

/* Checks that the NUL-terminated `text` is UTF-8 (doc/proto.md: the NBD protocol's strings,
 * export names among them, are UTF-8): code points up to U+10FFFF, no surrogates, no
 * overlong forms, nothing cut short; the check is iconv(3)'s conversion to UTF-32.
 * Returns 0, -EILSEQ (not UTF-8), or -ENOMEM / -EINVAL when iconv cannot be opened. */
int cli_utf8_check(const char *text);

/* The exit status of a start-up failure with error `err` (-errno): 1 when the machine ran
 * out of a resource (EMFILE, ENFILE, ENOMEM, ENOBUFS: the command line is not at fault, and
 * qemu-nbd and nbdkit exit 1 for it too), 2 when what the command line names cannot be
 * used (a missing or locked file, an address in use, a bad value). */
int cli_startup_status(int err);

/* strerror(-err) for a start-up error line; for -EMFILE followed by the open-files limit,
 * which is what to raise: "Too many open files (the open-files limit, ulimit -Hn, is 8)"
 * (the hard limit: `diskgate serve` raises its soft limit to it first). Returns buf (at
 * most size bytes, NUL-terminated) or a static string. */
const char *cli_startup_error(int err, char *buf, size_t size);

#endif
