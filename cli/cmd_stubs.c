/* cmd_stubs.c - placeholders replaced as the subcommands land. */
#include "commands.h"
#include "util.h"
int cmd_report(int argc, char **argv) { stprof_err("report: not built yet"); return 2; }
