/*
 * det.c - stp_det_run(): pass 1, the windows (markers or detection), pass
 * 2, then the result.  The top of the detector: it calls the passes and
 * nothing here is called back by them (their shared helpers are in
 * state.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "det.h"
#include "space.h"

void stp_det_options_default(stp_det_options *o)
{
	memset(o, 0, sizeof *o);
	o->early_min_apis = 2; /* DrGPUM's 1: one kernel between is the framework's own order */
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

static stp_det *det_new(const char *path, const stp_det_options *o)
{
	stp_det *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	if (o)
		d->opt = *o;
	else
		stp_det_options_default(&d->opt);
	d->has_python_frames = -1;
	d->path = strdup(path);
	d->frames = det_frames_new();
	if (!d->path || !d->frames || det_map_init(&d->names, 16) < 0 || det_map_init(&d->fidx, 64) < 0) {
		stp_det_free(d);
		return NULL;
	}
	d->res.primary = -1;
	d->res.peak_iteration = d->res.peak_phase = -1;
	d->res.rank = d->res.local_rank = d->res.world_size = -1;
	return d;
}

/* The method of iterations detected after a lone marked one: "one
 * iteration begun by a marker, none ended; detected a period ..." where
 * detection wrote "no iteration markers; detected a period ...". */
static void say_lone_iteration(stp_det *d)
{
	static const char none[] = "no iteration markers", lone[] = "one iteration begun by a marker, none ended";
	if (strncmp(d->method, none, sizeof none - 1))
		return;
	size_t rest = strlen(d->method) - (sizeof none - 1);
	if (sizeof lone + rest > sizeof d->method)
		return;
	memmove(d->method + sizeof lone - 1, d->method + sizeof none - 1, rest + 1);
	memcpy(d->method, lone, sizeof lone - 1);
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
	/* One iteration begun and none ended says nothing of the loop: a
	 * program whose optimizer step torch.compile compiled (the shim's step
	 * hooks are traced as nothing: collector/torch/python/stprof/
	 * torch_markers.py), or a trace cut short in its first iteration.  The
	 * allocations' period, where there is one, says more; where there is
	 * none the markers' window stays. */
	if (found > 0 && d->opt.iter_mode == STP_DET_ITER_AUTO && d->tok && d->niters <= 1 && !d->seen_iter_end) {
		char marked[sizeof d->method];
		memcpy(marked, d->method, sizeof marked);
		int p = det_detect_period(d);
		if (p < 0)
			return -1;
		if (p > 0) {
			d->have_iter_markers = 0;
			say_lone_iteration(d);
		} else {
			memcpy(d->method, marked, sizeof marked);
		}
	}
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
	free(d->ipeak_seq);
	free(d->ipeaks);
	free(d->objs);
	free(d->p1_size);
	free(d->p1_space);
	free(d->p1_next);
	free(d->fslot);
	free(d->reuse);
	det_ko_free(d);
	free(d->sites);
	free(d->site_of_stack);
	det_map_destroy(&d->site_paths);
	free(d->facc);
	free(d->surv);
	det_map_destroy(&d->fidx);
	free(d->spub);
	free(d->cold);
	free(d->site_order);
	free(d->out_findings);
	free(d->series);
	free(d);
}
