/*
 * snapshot_cli.h - memory snapshots in the stprof command: `stprof import`,
 * `export --format torch-snapshot`, and PyTorch snapshot pickles or JAX
 * device memory profiles given where a trace is expected (report, export,
 * plan, info, dump).
 */
#ifndef STPROF_CLI_SNAPSHOT_H
#define STPROF_CLI_SNAPSHOT_H

/* When *path is a pickle (a PyTorch memory snapshot) or a gzip'd pprof
 * profile (a JAX device memory profile), imports it into a temporary .stp
 * (same base name, removed at exit) and points *path at it.  0, or 1 after
 * printing the error (the file cannot be read). */
int stprof_pickle_input(const char **path, int quiet);
/* What to call a trace in messages: the pickle a temporary trace was
 * imported from, else path itself. */
const char *stprof_input_name(const char *path);
/* The warning for a snapshot whose allocations lay outside its segments
 * (its segments were dropped: stp_snapshot_import_stats.outside_allocs). */
struct stp_snapshot_import_stats;
void stprof_snapshot_warn(const char *pickle, const struct stp_snapshot_import_stats *st);
/* Same for argv[from..argc). */
int stprof_pickle_inputs(int argc, char **argv, int from, int quiet);
/* `stprof export --format torch-snapshot`: writes trace as a snapshot
 * pickle (layout 2 or 113) of the allocations of space (STP_DET_SPACE_*:
 * auto is a PyTorch run's tensors, or device memory); 0, or 1 after
 * printing the error. */
int snapshot_export_run(const char *trace, const char *out, int layout, int space, int quiet);
#endif
