/*
 * children.h - the program's child processes recorded beside its trace,
 * for the report's "Child processes" section (see children.c).
 */
#ifndef STPROF_CLI_CHILDREN_H
#define STPROF_CLI_CHILDREN_H
#include "stprof/report.h"

typedef struct children {
	stp_report_children view; /* what the report writers take */
	stp_report_child *rows;
	struct found *found;      /* the traces found; the rows' strings are theirs */
} children;

/* The children of the program whose trace is image (the last image of the
 * recording whose main trace is main: the children's traces are named
 * after main), each analyzed, into *c; r is the program's own result (its
 * host peak for the sum line).  c->view.n is 0 when there are none or on
 * failure (nothing is said: the section is left out). */
void children_find(const char *main, const char *image, const stp_det_result *r, children *c);
void children_free(children *c);
#endif
