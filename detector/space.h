/*
 * space.h - which memory space an allocation counts in.  Spaces are keyed
 * by (memory kind, device); every host allocation is one space ("host",
 * device -1) except a framework's own buffers (host pools STP_POOL_TENSORS,
 * PyTorch's CPU tensors, and STP_POOL_JAX, JAX's CPU buffers), which are a
 * space of their own, keyed by the device DET_DEV_TENSORS.
 */
#ifndef STP_DET_SPACE_H
#define STP_DET_SPACE_H

#include "det.h"
#include "stprof/detector.h"
#include "stprof/trace.h"

#define DET_DEV_TENSORS (-2)

static inline int32_t det_space_device(uint8_t kind, int32_t device, uint32_t pool)
{
	if (kind != STP_MEM_HOST)
		return device;
	return stp_pool_framework(pool) ? DET_DEV_TENSORS : -1;
}
#define DET_ALLOC_DEVICE(a) det_space_device((a)->kind, (a)->device, (a)->pool)

/* Whether objects of space si are analyzed in depth: the primary space's
 * only (call sites, classes, findings), so that the report's classes and
 * call sites sum to the space it names (stp_det_check). */
static inline int det_space_in_view(const stp_det *d, uint32_t si)
{
	int32_t p = d->res.primary;
	return p < 0 || (uint32_t)p == si;
}

/* Host-heap sampling (trace.h, STP_HEAP_SAMPLE_ANNOTATION): a pass keeps
 * the interval in force (*interval, from 0: every allocation) up to date
 * from the annotations it reads; an allocation's weight (1/p, what it
 * stands for) under it: above 1 only for a sampled host-heap allocation. */
void det_heap_sample_note(const stp_reader *r, const stp_event *ev, uint64_t *interval);
static inline double det_alloc_weight(uint64_t interval, const stp_alloc_info *a)
{
	if (!interval || a->kind != STP_MEM_HOST || a->pool != 0)
		return 1.0;
	/* rounded to a float, as det_obj keeps it: an object's bytes are
	 * the same when it is allocated and when it ends (det_obj_bytes) */
	return (double)(float)stp_heap_weight(a->size, interval);
}
/* The bytes an allocation of size with weight w stands for. */
static inline uint64_t det_weighted(uint64_t size, double w)
{
	return w == 1.0 ? size : (uint64_t)((double)size * w + 0.5);
}

/* The space of a FOLD event's space entry. */
static inline int det_fold_space_index(stp_det *d, const stp_fold_space *x)
{
	return det_space_index(d, x->kind, det_space_device(x->kind, x->device, x->pool));
}

/* modbytes.c: pass 2's feed of the bytes-by-module table. */
void det_modbytes_marker(stp_det *d, const stp_event *ev);
/* A FOLD event: the iteration under way was folded (its module markers left
 * out); what it keeps is of no module. */
void det_modbytes_fold(stp_det *d);
/* The stack id of the allocation the next alloc/current calls are about
 * (in lean iterations it names the module: modbytes.c). */
void det_modbytes_stack(stp_det *d, uint32_t stack);
void det_modbytes_alloc(stp_det *d, uint64_t size);
void det_modbytes_free(stp_det *d);
/* The module of the allocation det_modbytes_stack() named (the innermost
 * open; in a lean iteration the one its call path had: modbytes.c), as an
 * index of det_modbytes_name() + 1; 0 when none. */
uint32_t det_modbytes_current(stp_det *d);
const char *det_modbytes_name(const stp_det *d, uint32_t k);

/* The space analyzed in depth, after pass 1 (opt.space; spaces.c); -1 none. */
int32_t det_primary_space(const stp_det *d);
#endif
