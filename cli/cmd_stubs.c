/* cmd_stubs.c - placeholders replaced as the subcommands land. */
#include "commands.h"
#include "util.h"
int cmd_record(int argc, char **argv) { stprof_err("record: not built yet"); return 2; }
int cmd_run(int argc, char **argv) { stprof_err("run: not built yet"); return 2; }
