/*
 * mktrace.c - writes one of the crafted scenarios (scenarios.h) to a file,
 * for the script tests: mktrace SCENARIO FILE.
 */
#include "scenarios.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: mktrace SCENARIO FILE\n");
		return 2;
	}
	tg g;
	if (tg_open(&g, argv[2]) < 0)
		return 1;
	if (!strcmp(argv[1], "train"))
		scenario_train(&g, 0);
	else if (!strcmp(argv[1], "train-cut"))
		scenario_train(&g, 1);
	else if (!strcmp(argv[1], "patterns"))
		scenario_patterns(&g);
	else if (!strcmp(argv[1], "streams"))
		scenario_streams(&g);
	else if (!strcmp(argv[1], "adjacent"))
		scenario_adjacent(&g);
	else if (!strcmp(argv[1], "retry"))
		scenario_retry(&g);
	else if (!strcmp(argv[1], "oomfrag"))
		scenario_oomfrag(&g);
	else {
		fprintf(stderr, "mktrace: unknown scenario %s\n", argv[1]);
		tg_abandon(&g);
		return 2;
	}
	return 0;
}
