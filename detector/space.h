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

/* Whether objects of space si count in the totals and findings: all of
 * them, except on a run analyzed in its tensor space (then only those). */
static inline int det_space_in_view(const stp_det *d, uint32_t si)
{
	int32_t p = d->res.primary;
	return p < 0 || (uint32_t)p == si || !d->spaces[p].tensors;
}

/* modbytes.c: pass 2's feed of the bytes-by-module table. */
void det_modbytes_marker(stp_det *d, const stp_event *ev);
void det_modbytes_alloc(stp_det *d, uint64_t size);
void det_modbytes_free(stp_det *d);
/* The innermost module open now, as an index of det_modbytes_name() + 1;
 * 0 when none. */
uint32_t det_modbytes_current(stp_det *d);
const char *det_modbytes_name(const stp_det *d, uint32_t k);

/* The space analyzed in depth, after pass 1 (opt.space; spaces.c); -1 none. */
int32_t det_primary_space(const stp_det *d);
#endif
