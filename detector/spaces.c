/*
 * spaces.c - choosing the memory space analyzed in depth (the "primary"
 * space: call sites, classes, timeline, plan).  By default a PyTorch run is
 * analyzed in its tensor space (device memory, or the host tensor storages
 * on a CPU run), the STAlloc view; the interpreter's and libraries' own
 * heap is one option away (--space host).  Without tensors, the space with
 * the highest peak.
 */
#include <stdio.h>
#include <string.h>

#include "det.h"
#include "space.h"

int stp_det_space_parse(const char *name, int *space)
{
	static const char *const n[] = {"auto", "host", "tensors", "device"};
	for (int i = 0; i < 4; i++)
		if (!strcmp(name, n[i])) {
			*space = i;
			return 0;
		}
	return -1;
}

const char *stp_det_space_name(const stp_det_space *s, char *buf, size_t len)
{
	if (s->kind == STP_MEM_HOST && s->tensors)
		snprintf(buf, len, s->jax ? "jax buffers (cpu)" : "cpu tensors");
	else if (s->jax && s->device >= 0)
		snprintf(buf, len, "jax buffers (%s %d)", stp_mem_kind_name(s->kind), s->device);
	else if (s->kind == STP_MEM_HOST)
		snprintf(buf, len, "host");
	else if (s->device >= 0)
		snprintf(buf, len, "%s %d", stp_mem_kind_name(s->kind), s->device);
	else
		snprintf(buf, len, "%s", stp_mem_kind_name(s->kind));
	return buf;
}

int stp_det_space_is(const stp_det_space *s, int want)
{
	switch (want) {
	case STP_DET_SPACE_HOST: return s->kind == STP_MEM_HOST && s->device != DET_DEV_TENSORS;
	case STP_DET_SPACE_TENSORS: return s->kind == STP_MEM_HOST && s->device == DET_DEV_TENSORS;
	case STP_DET_SPACE_DEVICE: return s->kind == STP_MEM_DEVICE;
	default: return 1;
	}
}

static int32_t highest(const stp_det *d, int want)
{
	int32_t best = -1;
	for (uint32_t i = 0; i < d->nspaces; i++)
		if (d->spaces[i].allocs && stp_det_space_is(&d->spaces[i], want) &&
		    (best < 0 || d->spaces[i].peak_bytes > d->spaces[best].peak_bytes))
			best = (int32_t)i;
	return best;
}

int32_t det_primary_space(const stp_det *d)
{
	int32_t p = -1;
	if (d->opt.space != STP_DET_SPACE_AUTO)
		p = highest(d, d->opt.space);
	if (p < 0) {
		p = highest(d, STP_DET_SPACE_DEVICE);
		if (p < 0)
			p = highest(d, STP_DET_SPACE_TENSORS);
	}
	if (p < 0)
		p = highest(d, STP_DET_SPACE_AUTO);
	if (p < 0 && d->nspaces) /* spaces without allocations: the first */
		p = 0;
	return p;
}

int32_t stp_det_alloc_space(const stp_det *d, const stp_alloc_info *a)
{
	int32_t dev = DET_ALLOC_DEVICE(a);
	for (uint32_t i = 0; i < d->nspaces; i++)
		if (d->spaces[i].kind == a->kind && d->spaces[i].device == dev)
			return (int32_t)i;
	return -1;
}
