/*
 * record.h - running a program under the collector (shared by `stprof
 * record` and `stprof PROGRAM`).
 */
#ifndef STPROF_CLI_RECORD_H
#define STPROF_CLI_RECORD_H
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

typedef struct record_opts {
	const char *output;   /* trace path; NULL: <program>.stp */
	uint64_t min_size;
	int depth;            /* -1: collector default */
	int host_depth;       /* -1: collector default (--depth's; 8 in Python) */
	int flush_ms;         /* -1: collector default */
	int quiet;
	int sidecars;         /* one-shot: .plan and .pftrace beside the trace */
	int accesses;         /* --accesses: RECORD_ACCESSES_* */
	int sample_launches;  /* --sample-launches N, 0: collector default */
	const char *torch_cuda; /* --torch-cuda: caching, pluggable, off; NULL: the shim's default */
	int cuda;             /* 1 --cuda, -1 --no-cuda, 0 default (on when built in) */
	int full;             /* --full: every event (no sampling, no folding) */
	int64_t heap_sample;  /* --heap-sample SIZE; -1: collector default */
	const char *skip_exec; /* --skip-exec PATTERNS; NULL: collector default */
} record_opts;
enum { RECORD_ACCESSES_NONE = 0, RECORD_ACCESSES_OPS = 1, RECORD_ACCESSES_EXACT = 2 };

/* Parses one record option at argv[optind] style with getopt_long: the
 * option table and the help text are shared by record and run. */
extern const char record_optstring[];
extern const struct option record_longopts[];
extern const char record_help[];
/* Applies option c (from getopt_long) to o; prints an error and returns -1
 * when its argument is bad, 1 when c is not a record option. */
int record_apply_option(record_opts *o, int c, const char *arg);

/* Runs argv[0..] under the collector and waits.  Fills trace_path (the main
 * trace) and returns the program's wait status, or -1 when stprof could not
 * run it (a message was printed).  *started is 0 when PROGRAM could not be
 * executed (then the status is that of a shell: exit 127 or 126). */
int record_run(const record_opts *o, char **argv, char *trace_path, size_t trace_path_len, int *started);
/* record_run() for the subcommands: when PROGRAM could not be executed, exits
 * with the shell's status (after the message); returns the wait status, or
 * -1 when stprof itself failed. */
int record_program(const record_opts *o, char **argv, char *trace_path, size_t trace_path_len);
/* Lists the traces of a recording (the main one and FILE.<pid>[.n] of child
 * processes and exec'd images) on stderr. Returns how many exist. */
int record_summary(const char *trace_path, const char *program, int status, int quiet);
/* Exits the way the program did: same exit code, or the same signal. */
void exit_like(int status) __attribute__((noreturn));
/* Puts the Python shim (stprof-python/ beside lib, libstprof.so) first on
 * PYTHONPATH, when it is there; warns when it is not and argv runs Python. */
void record_python_shim(const char *lib, char *const *argv);

#endif
