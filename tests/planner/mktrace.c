/* mktrace.c - `plan_mktrace OUT.stp [iters layers micro_batches varying device markers odd]`:
 * writes the synthetic training trace of mktrace.h (for test_plan_cli.sh). */
#include <stdlib.h>

#include "mktrace.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: plan_mktrace OUT.stp [iters layers micro_batches varying device markers odd]\n");
		return 2;
	}
	mk_opts o = {4, 6, 3, 1, 1, 1, 0};
	int *f[] = {&o.iters, &o.layers, &o.micro_batches, &o.varying, &o.device, &o.markers, &o.odd};
	for (int k = 2; k < argc && k < 9; k++)
		*f[k - 2] = atoi(argv[k]);
	return mk_trace(argv[1], &o) ? 1 : 0;
}
