/*
 * det.c - stp_det_run(): pass 1, the windows (markers or detection), pass
 * 2, then the result; plus the small helpers the passes share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "det.h"
#include "space.h"

void stp_det_options_default(stp_det_options *o)
{
	memset(o, 0, sizeof *o);
	o->early_min_apis = 1;
	o->late_min_apis = 1;
	o->idle_min_apis = 2;
	o->redundant_pct = 10.0;
	o->late_free_quantile = 0.9;
	o->late_free_min_segments = 2;
	o->late_free_min_peers = 5;
	o->iter_mode = STP_DET_ITER_AUTO;
	o->detect_max_allocs = 2u << 20;
	o->series_points = 1000;
	o->site_depth = 12;
	o->sim_models = STP_DET_SIM_ALL;
	o->sim_host_min_size = 512;
}

int det_space_index(stp_det *d, uint8_t kind, int32_t device)
{
	if (kind == STP_MEM_HOST && device != DET_DEV_TENSORS)
		device = -1;
	for (uint32_t i = 0; i < d->nspaces; i++)
		if (d->spaces[i].kind == kind && d->spaces[i].device == device)
			return (int)i;
	if (d->nspaces >= 255)
		return 254; /* the rest share the last space */
	if (d->nspaces == d->spaces_cap) {
		uint32_t nc = d->spaces_cap ? d->spaces_cap * 2 : 4;
		stp_det_space *ns = realloc(d->spaces, nc * sizeof *ns);
		if (!ns)
			return -1;
		d->spaces = ns;
		det_space_state *nst = realloc(d->sstate, nc * sizeof *nst);
		if (!nst)
			return -1;
		d->sstate = nst;
		d->spaces_cap = nc;
	}
	d->spaces[d->nspaces] = (stp_det_space){.kind = kind, .device = device, .tensors = device == DET_DEV_TENSORS};
	d->sstate[d->nspaces] = (det_space_state){0};
	return (int)d->nspaces++;
}

const char *det_intern(stp_det *d, const stp_reader *r, uint32_t sid)
{
	uint64_t v;
	if (det_map_get(&d->names, sid, &v))
		return d->name_store[v];
	if (d->nnames == d->names_cap) {
		uint32_t nc = d->names_cap ? d->names_cap * 2 : 16;
		char **n = realloc(d->name_store, nc * sizeof *n);
		if (!n)
			return "";
		d->name_store = n;
		d->names_cap = nc;
	}
	const char *s = stp_reader_string(r, sid);
	char *c = strdup(*s ? s : "(unnamed)");
	if (!c || det_map_put(&d->names, sid, d->nnames, NULL) < 0) {
		free(c);
		return "";
	}
	d->name_store[d->nnames] = c;
	return d->name_store[d->nnames++];
}

int det_push_cut(stp_det *d, uint64_t seq, uint64_t ns)
{
	if (d->ncuts == d->cuts_cap) {
		uint32_t nc = d->cuts_cap ? d->cuts_cap * 2 : 64;
		uint64_t *c = realloc(d->cuts, nc * sizeof *c);
		if (!c)
			return -1;
		d->cuts = c;
		uint64_t *t = realloc(d->cut_ns, nc * sizeof *t);
		if (!t)
			return -1;
		d->cut_ns = t;
		d->cuts_cap = nc;
	}
	d->cuts[d->ncuts] = seq;
	d->cut_ns[d->ncuts] = ns;
	d->ncuts++;
	return 0;
}

uint32_t det_count_le(const uint64_t *v, uint32_t n, uint64_t x)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

unsigned det_time_bucket(uint64_t ns)
{
	unsigned b = 0;
	uint64_t lim = 1000; /* 1 us */
	while (b < STP_DET_TIME_BUCKETS - 2 && ns >= lim) {
		b++;
		lim *= 10;
	}
	return b;
}

unsigned det_logical_bucket(uint64_t dist)
{
	if (!dist)
		return 0;
	unsigned b = 1;
	uint64_t lim = 10;
	while (b < STP_DET_LOGICAL_BUCKETS - 2 && dist >= lim) {
		b++;
		lim *= 10;
	}
	return b;
}

static stp_det *det_new(const char *path, const stp_det_options *o)
{
	stp_det *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	if (o)
		d->opt = *o;
	else
		stp_det_options_default(&d->opt);
	d->path = strdup(path);
	d->frames = det_frames_new();
	if (!d->path || !d->frames || det_map_init(&d->names, 16) < 0 || det_map_init(&d->fidx, 64) < 0) {
		stp_det_free(d);
		return NULL;
	}
	d->res.primary = -1;
	d->res.peak_iteration = d->res.peak_phase = -1;
	return d;
}

/* Pass 1 and the windows (markers or detection): what both entry points
 * share.  0, -1 out of memory, -2 the trace could not be read at all. */
static int det_timeline(stp_det *d)
{
	if (det_scan(d) < 0 && !d->stats.events)
		return -2;
	d->res.primary = det_primary_space(d);
	int found = 0;
	if (d->opt.iter_mode == STP_DET_ITER_AUTO || d->opt.iter_mode == STP_DET_ITER_MARKERS)
		found = det_windows_from_markers(d);
	if (found < 0)
		return -1;
	if (!found && d->tok && (d->opt.iter_mode == STP_DET_ITER_AUTO || d->opt.iter_mode == STP_DET_ITER_DETECT))
		found = det_detect_period(d);
	if (found < 0)
		return -1;
	if (!found) {
		/* nothing usable: no windows at all */
		free(d->phases);
		d->phases = NULL;
		d->nphases = d->phases_cap = 0;
		d->niters = 0;
		if (d->opt.iter_mode == STP_DET_ITER_NONE)
			snprintf(d->method, sizeof d->method, "iterations not looked for (--iterations none)");
		else if (!d->method[0])
			snprintf(d->method, sizeof d->method, "%s",
			         d->opt.iter_mode == STP_DET_ITER_MARKERS ? "no iteration or phase markers in the trace"
			                                                  : "no markers and no periodic allocation sequence");
	}
	det_tokens_free(d);
	return det_windows_finish(d) < 0 ? -1 : 0;
}

static stp_det *det_open(const char *path, const stp_det_options *o, char *err, size_t errlen)
{
	/* open once up front so a missing or unreadable file is the caller's
	 * error, not a result */
	stp_reader *probe = stp_reader_open(path, err, errlen);
	if (!probe)
		return NULL;
	stp_reader_close(probe);
	stp_det *d = det_new(path, o);
	if (!d)
		snprintf(err, errlen, "%s: out of memory", path);
	return d;
}

static stp_det *det_fail(stp_det *d, int rc, char *err, size_t errlen)
{
	if (rc == -2)
		snprintf(err, errlen, "%s", d->error ? d->error : "cannot read the trace");
	else
		snprintf(err, errlen, "%s: out of memory", d->path);
	stp_det_free(d);
	return NULL;
}

stp_det *stp_det_run(const char *path, const stp_det_options *o, char *err, size_t errlen)
{
	stp_det *d = det_open(path, o, err, errlen);
	if (!d)
		return NULL;
	d->want_slots = 1;
	int rc = det_timeline(d);
	if (rc < 0)
		return det_fail(d, rc, err, errlen);
	if (det_analyze(d) < 0 && !d->error)
		return det_fail(d, -1, err, errlen);
	det_choose_steady(d);
	if (det_build_result(d) < 0)
		return det_fail(d, -1, err, errlen);
	return d;
}

stp_det *stp_det_timeline_run(const char *path, const stp_det_options *o, char *err, size_t errlen)
{
	stp_det *d = det_open(path, o, err, errlen);
	if (!d)
		return NULL;
	int rc = det_timeline(d);
	if (rc < 0)
		return det_fail(d, rc, err, errlen);
	if (det_iter_stats(d) < 0 && !d->error)
		return det_fail(d, -1, err, errlen);
	det_choose_steady(d);
	if (det_build_result(d) < 0)
		return det_fail(d, -1, err, errlen);
	return d;
}

const stp_det_result *stp_det_result_of(const stp_det *d) { return &d->res; }

void stp_det_free(stp_det *d)
{
	if (!d)
		return;
	det_access_free(d);
	det_latefree_free(d);
	det_modbytes_free(d);
	det_sim_free_all(d);
	if (d->rd)
		stp_reader_close(d->rd);
	det_frames_free(d->frames);
	free(d->path);
	free(d->command);
	free(d->error);
	free(d->spaces);
	free(d->sstate);
	free(d->iters);
	free(d->phases);
	free(d->cuts);
	free(d->cut_ns);
	free(d->ibounds);
	for (uint32_t i = 0; i < d->nnames; i++)
		free(d->name_store[i]);
	free(d->name_store);
	det_map_destroy(&d->names);
	det_tokens_free(d);
	free(d->turn_seq);
	free(d->turn_ns);
	free(d->objs);
	free(d->p1_size);
	free(d->p1_space);
	free(d->p1_next);
	free(d->fslot);
	free(d->reuse);
	free(d->ko_seq);
	free(d->ko_info);
	free(d->ko_lf);
	free(d->sites);
	free(d->site_of_stack);
	det_map_destroy(&d->site_paths);
	free(d->facc);
	det_map_destroy(&d->fidx);
	free(d->spub);
	free(d->cold);
	free(d->site_order);
	free(d->out_findings);
	free(d->series);
	free(d);
}
