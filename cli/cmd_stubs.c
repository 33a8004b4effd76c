/* cmd_stubs.c - placeholders replaced as the subcommands land. */
#include "commands.h"
#include "util.h"
