/*
 * util.h - helpers shared by the stprof subcommands: messages, size parsing
 * and printing, locating the collector library.
 */
#ifndef STPROF_CLI_UTIL_H
#define STPROF_CLI_UTIL_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stprof/trace.h"

#define STPROF_VERSION "0.1.0"

void stprof_cli_init(const char *argv0);
/* "stprof: <message>" on stderr. */
void stprof_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parses "123", "4k", "16KiB", "2M", "1G" (binary units). -1 on error. */
int stprof_parse_size(const char *s, uint64_t *out);
/* Parses a non-negative integer. -1 on error. */
int stprof_parse_uint(const char *s, uint64_t max, uint64_t *out);
/* Parses "1.5s", "200ms", "30us", "1000ns", "1000" (ns). -1 on error. */
int stprof_parse_time(const char *s, uint64_t *out);
/* Parses "T0:T1" (either may be empty: start, end) with T0 <= T1. -1 on error. */
int stprof_parse_window(const char *s, uint64_t *lo, uint64_t *hi);
/* Formats bytes as "1.50 MiB" into buf (returns buf). */
const char *stprof_fmt_bytes(uint64_t bytes, char *buf, size_t len);
/* Formats nanoseconds as "1.234 s" / "12.3 ms" / "456 us". */
const char *stprof_fmt_ns(uint64_t ns, char *buf, size_t len);
/* Path of libstprof.so: $STPROF_LIB, else beside the stprof binary, else
 * ../lib/ and ../lib/stprof/ from it.  NULL when not found. */
const char *stprof_collector_path(void);
/* Directory of the running stprof binary. */
const char *stprof_self_dir(void);
/* Opens a trace for a subcommand; prints the error and returns NULL. */
stp_reader *stprof_open_trace(const char *path);
#endif
