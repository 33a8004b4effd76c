/*
 * host_internal.h - what the host heap models (host_spans.c, host_glibc.c)
 * share with their driver (host.c), which keeps the map from a trace's
 * addresses to each object's placement.  Private to allocsim/.
 *
 * A model places an object and returns its placement (one 64-bit word the
 * driver keeps for it, HOST_NOWHERE: not placed, its free is ignored); on
 * free it gets the word back.  A model keeps the usage figures (pages and
 * blocks holding a live object, the most pages) up to date at every call.
 */
#ifndef STPROF_ALLOCSIM_HOST_INTERNAL_H
#define STPROF_ALLOCSIM_HOST_INTERNAL_H

#include <stdint.h>

#include "stprof/allocsim.h"

#define HOST_NOWHERE UINT64_MAX

typedef struct host_ops {
	void *(*create)(void);
	void (*destroy)(void *m);
	/* 0 with *where set, or -1 when out of memory */
	int (*alloc)(void *m, allocsim_host_usage *u, uint64_t size, unsigned lifetime_class, uint64_t *where);
	void (*free)(void *m, allocsim_host_usage *u, uint64_t where);
} host_ops;

extern const host_ops host_spans_ops, host_glibc_ops;

static inline void host_note_pages(allocsim_host_usage *u)
{
	if (u->pages > u->max_pages)
		u->max_pages = u->pages;
}

#endif
