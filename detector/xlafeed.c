/*
 * xlafeed.c - a JAX run's view of XLA's allocator, from the annotations the
 * JAX backend records (docs/jax.md, "What is recorded"), into the
 * allocator models:
 *
 *   xla.KEY:D         KEY one of memory_stats()'s figures (bytes_in_use,
 *                     peak_bytes_in_use, pool_bytes, largest_free_block_bytes,
 *                     bytes_limit, ...) of device D (an integer; "cpu" or
 *                     a negative one for the host), value the figure;
 *   xla.preallocate   XLA_PYTHON_CLIENT_PREALLOCATE as run (0 or 1);
 *   xla.mem_fraction_ppm   XLA_PYTHON_CLIENT_MEM_FRACTION x 10^6;
 *   xla.allocator_platform XLA_PYTHON_CLIENT_ALLOCATOR=platform (0 or 1).
 *
 * A figure goes to the allocsim collector at its place among the
 * allocations (allocsim_collector_xla_stat: the figures at one place make
 * one sample); the settings go to det_sim_finish's replay options.
 * Anything else is left alone; a malformed name is ignored.
 */
#include <stdlib.h>
#include <string.h>

#include "det.h"

void det_sim_xla_marker(stp_det *d, const stp_event *ev)
{
	const char *n = stp_reader_string(d->rd, ev->u.marker.name);
	if (strncmp(n, "xla.", 4))
		return;
	n += 4;
	int64_t v = ev->u.marker.value;
	if (!strcmp(n, "preallocate")) {
		d->sim_xla.preallocate = v != 0;
		d->sim_xla.known = 1;
		return;
	}
	if (!strcmp(n, "mem_fraction_ppm")) {
		if (v > 0 && v <= 1000000)
			d->sim_xla.mem_fraction = (double)v / 1e6;
		d->sim_xla.known = 1;
		return;
	}
	if (!strcmp(n, "allocator_platform")) {
		d->sim_xla.platform = v != 0;
		d->sim_xla.known = 1;
		return;
	}
	const char *colon = strrchr(n, ':');
	if (!colon || v < 0)
		return;
	int key = allocsim_xla_key_of(n, (size_t)(colon - n));
	if (key < 0)
		return;
	long dev = -1;
	if (strcmp(colon + 1, "cpu")) {
		char *end;
		dev = strtol(colon + 1, &end, 10);
		if (end == colon + 1 || *end || dev < -1 || dev > 1 << 20)
			return;
	}
	allocsim_collector_xla_stat(d->simc, (int32_t)dev, ev->time_ns, key, (uint64_t)v);
}
