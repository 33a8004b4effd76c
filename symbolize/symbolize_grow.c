/*
 * symbolize_grow.c - the growable-array helper every file of the symbolizer
 * uses.  The bottom of symbolize/: it calls nothing of it, so calls among
 * symbolize.c, symbolize_file.c and symbolize_dwarf.c run one way.
 *
 * Invariant: *cap only grows, by doubling from 16; *v is untouched on
 * failure.
 */
#include <stdlib.h>

#include "symbolize_int.h"

int stp_sym_grow_(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t c;
	void *n;

	if (need <= *cap)
		return 0;
	c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	n = realloc(*v, c * elem);
	if (!n)
		return -1;
	*v = n;
	*cap = c;
	return 0;
}
