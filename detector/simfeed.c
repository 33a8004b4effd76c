/*
 * simfeed.c - the allocator models inside the report: pass 2 hands its
 * allocations, frees and segment events to an allocsim collector (no third
 * read of the trace), and after the pass the models run (allocsim/allocsim_replay.c).
 *
 * What is fed (docs/allocator-models.md, "In the report"):
 *   - when pass 1 saw device allocations: every device allocation, its free
 *     and the allocator's segment events (the actual E); when some were a
 *     framework allocator's (PyTorch's tensors, pool 1), only those (the
 *     memory cuBLAS and others take with cudaMalloc is not the allocator's);
 *   - otherwise the host allocations of at least opt.sim_host_min_size
 *     bytes (512: PyTorch's smallest block; smaller ones are interpreter and
 *     library objects a GPU allocator would never see) and their frees:
 *     "what if these ran on a GPU"; on a PyTorch CPU run analyzed in its
 *     tensor space, every tensor whatever its size (a GPU allocator sees
 *     small tensors too, and rounds them to 512 bytes).
 * Invariants: a free is fed only for an object whose allocation was (the
 * object's DET_OBJ_SIM flag); objects are named by the detector's slots
 * (allocsim_collector_event_slot), so the models' log keeps no address map
 * of its own; the report's times are the trace's own clock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "det.h"
#include "space.h"

int stp_det_sim_models_parse(const char *list, unsigned *models)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {{"pytorch", STP_DET_SIM_PYTORCH}, {"expandable", STP_DET_SIM_EXPANDABLE},
	             {"bfc", STP_DET_SIM_BFC},         {"raw", STP_DET_SIM_RAW},
	             {"all", STP_DET_SIM_ALL},         {"none", 0}};
	unsigned m = 0;
	const char *p = list;
	if (!*p)
		return -1;
	while (*p) {
		size_t n = strcspn(p, ",");
		size_t i = 0;
		for (; i < sizeof names / sizeof *names; i++)
			if (strlen(names[i].name) == n && !strncmp(p, names[i].name, n))
				break;
		if (i == sizeof names / sizeof *names)
			return -1;
		m |= names[i].bit;
		p += n;
		if (*p == ',' && !*++p)
			return -1;
	}
	/* the PyTorch model as run is the reference of the others */
	if (m)
		m |= STP_DET_SIM_PYTORCH;
	*models = m;
	return 0;
}

int det_sim_init(stp_det *d)
{
	if (!d->opt.sim_models)
		return 0;
	d->sim_device = d->sim_pool_only = 0;
	for (uint32_t i = 0; i < d->nspaces; i++)
		if (d->spaces[i].kind == STP_MEM_DEVICE && d->spaces[i].allocs) {
			d->sim_device = 1;
			d->sim_pool_only |= d->spaces[i].pool_allocs > 0;
		}
	allocsim_xla_settings_default(&d->sim_xla);
	d->simc = allocsim_collector_new();
	return d->simc ? 0 : -1;
}

void det_sim_alloc(stp_det *d, det_obj *o, uint32_t slot, const stp_event *ev)
{
	const stp_alloc_info *a = &ev->u.alloc;
	if (d->sim_device) {
		if (a->kind != STP_MEM_DEVICE)
			return;
		/* PyTorch's allocator recorded (its tensors, pool 1): what it
		 * allocated is what the models replay; other libraries' own
		 * cudaMalloc calls never went through it */
		if (d->sim_pool_only && !stp_pool_framework(a->pool)) {
			d->res.sim_skipped_other++;
			return;
		}
	} else {
		if (a->kind != STP_MEM_HOST)
			return;
		/* on a PyTorch run, the tensors (not the interpreter's heap) */
		if (d->res.primary >= 0 && d->spaces[d->res.primary].kind == STP_MEM_HOST &&
		    (d->spaces[d->res.primary].device == DET_DEV_TENSORS) != (DET_ALLOC_DEVICE(a) == DET_DEV_TENSORS))
			return;
		/* a framework's buffers (PyTorch's CPU tensors; JAX's buffers,
		 * all device buffers on a GPU) count, the small ones too */
		if (a->size < d->opt.sim_host_min_size && DET_ALLOC_DEVICE(a) != DET_DEV_TENSORS) {
			d->res.sim_skipped++;
			return;
		}
	}
	o->flags |= DET_OBJ_SIM;
	d->res.sim_fed_allocs++;
	allocsim_collector_event_slot(d->simc, ev, slot);
}

void det_sim_free(stp_det *d, const stp_event *ev, uint32_t slot) { allocsim_collector_event_slot(d->simc, ev, slot); }

/* The allocator's segment events, and its refused requests (the models
 * try the first: allocsim_device_report.refusal_probes). */
void det_sim_device_event(stp_det *d, const stp_event *ev)
{
	if (d->sim_device)
		allocsim_collector_event(d->simc, ev);
}

void det_sim_finish(stp_det *d)
{
	if (!d->simc)
		return;
	allocsim_replay_opts ro = {
		.as_run = d->opt.sim_alloc_conf,
		.xla = &d->sim_xla,
		.capacity = d->opt.sim_capacity,
		.no_recommend = d->opt.sim_no_recommend,
		.no_bfc = !(d->opt.sim_models & STP_DET_SIM_BFC),
		.no_raw = !(d->opt.sim_models & STP_DET_SIM_RAW),
		.no_expandable = !(d->opt.sim_models & STP_DET_SIM_EXPANDABLE),
	};
	char err[512];
	if (allocsim_collector_finish(d->simc, &ro, &d->sim, err, sizeof err) < 0) {
		allocsim_report_clear(&d->sim);
		d->sim_error = strdup(err);
	} else {
		d->sim_ran = 1;
		d->sim.start_time = d->t0;
		if (!d->sim_device && d->res.primary >= 0 && d->spaces[d->res.primary].tensors)
			d->sim.host_name = "CPU tensors";
		det_sim_merge_sites(d); /* simsites.c: one row per call site */
	}
	allocsim_collector_destroy(d->simc);
	d->simc = NULL;
	d->res.sim = d->sim_ran ? &d->sim : NULL;
	d->res.sim_error = d->sim_error;
	d->res.sim_host = !d->sim_device;
	d->res.sim_min_size = d->sim_device || (d->res.primary >= 0 && d->spaces[d->res.primary].tensors)
	                          ? 0
	                          : d->opt.sim_host_min_size;
}

void det_sim_free_all(stp_det *d)
{
	allocsim_collector_destroy(d->simc);
	d->simc = NULL;
	allocsim_report_clear(&d->sim);
	free(d->sim_error);
}

uint32_t stp_det_stack_site(const stp_det *d, uint32_t stack)
{
	if (stack >= d->site_of_stack_cap || !d->site_of_stack[stack])
		return UINT32_MAX;
	return d->sites[d->site_of_stack[stack] - 1].out_index;
}

/* A frame in few words: a line of source as the report gives it
 * ("train.py:42 in step (aten::mm)"), else the function without its
 * parameter list (C++ names are long), else module+0xoffset. */
static void short_frame(const stp_det_frame *f, char *buf, size_t len)
{
	if (f->file && f->line) {
		stp_det_frame_text(f, buf, len);
		return;
	}
	if (f->function) {
		const char *fn = f->function, *p = fn;
		size_t n = strlen(fn);
		/* cut at the '(' of the parameter list: the first one at template
		 * depth 0 that is not operator() */
		int depth = 0;
		for (; *p; p++) {
			if (*p == '<')
				depth++;
			else if (*p == '>' && depth)
				depth--;
			else if (*p == '(' && !depth && !(p - fn >= 8 && !strncmp(p - 8, "operator", 8))) {
				n = (size_t)(p - fn);
				break;
			}
		}
		snprintf(buf, len, "%.*s", (int)n, fn);
		return;
	}
	stp_det_frame_text(f, buf, len);
}

const char *stp_det_stack_name(void *ctx, uint32_t stack, char *buf, size_t len)
{
	stp_det *d = ctx;
	uint32_t s = stp_det_stack_site(d, stack);
	if (s == UINT32_MAX)
		return NULL;
	stp_det_frame fr[2], pkg;
	uint32_t n = stp_det_site_frames(d, s, fr, 2);
	char a[200], b[200], in[220] = "";
	/* a library's model run from one line of the user's (a Hugging Face
	 * Trainer's): the model's line tells the sites apart, as in the report */
	if (n && stp_det_site_package_line(d, s, &pkg)) {
		stp_det_frame_text(&pkg, b, sizeof b);
		snprintf(in, sizeof in, " (in %s)", b);
	}
	if (!n)
		snprintf(buf, len, "site #%u (no call path)", s + 1);
	else if (n == 1 || in[0])
		short_frame(&fr[0], a, sizeof a), snprintf(buf, len, "site #%u: %s%s", s + 1, a, in);
	else
		short_frame(&fr[0], a, sizeof a), short_frame(&fr[1], b, sizeof b),
		    snprintf(buf, len, "site #%u: %s <- %s", s + 1, a, b);
	return buf;
}
