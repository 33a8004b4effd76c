/*
 * reqs.c - the request set (stp_reqs): growth, strings, phase and layer
 * segments, the start-up sequence, consistency check, and the lower bound
 * max_t(live bytes) on the repeating schedule.  Segment 0 of phases and
 * layers is always "none".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void stp_reqs_init(stp_reqs *r)
{
	memset(r, 0, sizeof *r);
	r->iteration = -1;
}

void stp_reqs_free(stp_reqs *r)
{
	free(r->req);
	free(r->phases);
	free(r->layers);
	free(r->strings);
	free(r->startup);
	free(r->startup_until);
	stp_reqs_init(r);
}

int stp_reqs_add_startup(stp_reqs *r, uint64_t size)
{
	if (r->nstartup == r->startup_cap) {
		if (r->startup_cap >= UINT32_MAX / 2)
			return -1;
		uint32_t nc = r->startup_cap ? r->startup_cap * 2 : 1024;
		uint64_t *ns = realloc(r->startup, (size_t)nc * sizeof *ns);
		if (!ns)
			return -1;
		r->startup = ns;
		r->startup_cap = nc;
	}
	r->startup[r->nstartup++] = size;
	return 0;
}

long stp_reqs_add(stp_reqs *r, const stp_req *q)
{
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 1024;
		stp_req *nr = realloc(r->req, nc * sizeof *nr);
		if (!nr)
			return -1;
		r->req = nr;
		r->cap = nc;
	}
	r->req[r->n] = *q;
	return (long)r->n++;
}

uint32_t stp_reqs_string(stp_reqs *r, const char *s)
{
	if (!s || !*s)
		return 0;
	size_t len = strlen(s) + 1;
	if (!r->strings_len)
		r->strings_len = 1; /* offset 0 is the empty string */
	if ((uint64_t)r->strings_len + len > UINT32_MAX)
		return 0;
	if (r->strings_len + len > r->strings_cap) {
		size_t nc = r->strings_cap ? r->strings_cap : 256;
		while (nc < r->strings_len + len)
			nc *= 2;
		char *ns = realloc(r->strings, nc);
		if (!ns)
			return 0;
		r->strings = ns;
		r->strings_cap = (uint32_t)nc;
		r->strings[0] = 0;
	}
	uint32_t off = r->strings_len;
	memcpy(r->strings + off, s, len);
	r->strings_len += (uint32_t)len;
	return off;
}

const char *stp_reqs_str(const stp_reqs *r, uint32_t off)
{
	if (!off || off >= r->strings_len || !r->strings)
		return "";
	return r->strings + off;
}

static uint32_t add_span(stp_reqs *r, stp_span **arr, uint32_t *n, const char *name, int64_t value,
                         uint64_t t0, uint64_t t1)
{
	if (*n == 0) {
		*arr = calloc(16, sizeof **arr);
		if (!*arr)
			return 0;
		*n = 1; /* 0 = none */
	} else if ((*n & (*n - 1)) == 0 && *n >= 16) {
		stp_span *na = realloc(*arr, (size_t)*n * 2 * sizeof *na);
		if (!na)
			return 0;
		*arr = na;
	}
	stp_span *sp = &(*arr)[*n];
	sp->name = stp_reqs_string(r, name);
	sp->value = value;
	sp->t_begin = t0;
	sp->t_end = t1;
	return (*n)++;
}

uint32_t stp_reqs_add_phase(stp_reqs *r, const char *name, int64_t value, uint64_t t0, uint64_t t1)
{
	return add_span(r, &r->phases, &r->nphases, name, value, t0, t1);
}

uint32_t stp_reqs_add_layer(stp_reqs *r, const char *name, int64_t value, uint64_t t0, uint64_t t1)
{
	return add_span(r, &r->layers, &r->nlayers, name, value, t0, t1);
}

int stp_reqs_check(const stp_reqs *r, char *err, size_t errlen)
{
	if (r->period == 0 && r->n) {
		snprintf(err, errlen, "request set has %zu requests but period 0", r->n);
		return -1;
	}
	if (r->period >= (uint64_t)1 << 62) {
		snprintf(err, errlen, "period %llu too large", (unsigned long long)r->period);
		return -1;
	}
	for (size_t i = 0; i < r->n; i++) {
		const stp_req *q = &r->req[i];
		const char *bad = NULL;
		if (q->size == 0)
			bad = "size 0";
		else if (q->size >= (uint64_t)1 << 56)
			bad = "size too large";
		else if (q->t_start > r->period || q->t_end > r->period)
			bad = "time beyond the period";
		else if (q->phase_start >= (r->nphases ? r->nphases : 1) ||
		         q->phase_end >= (r->nphases ? r->nphases : 1))
			bad = "phase id out of range";
		else if (q->layer_start >= (r->nlayers ? r->nlayers : 1) ||
		         q->layer_end >= (r->nlayers ? r->nlayers : 1))
			bad = "layer id out of range";
		if (bad) {
			snprintf(err, errlen, "request %zu (ordinal %u): %s", i, q->ordinal, bad);
			return -1;
		}
	}
	return 0;
}

int stp_req_live_at(const stp_req *q, uint64_t period, uint64_t t)
{
	if (q->flags & STP_REQ_PERSISTENT)
		return 1;
	uint64_t s = q->t_start % (period ? period : 1), e = q->t_end;
	if (e > s)
		return t >= s && t < e;
	return t >= s || t < e; /* wraps (e == s: the whole period) */
}

uint64_t pl_lower_bound(const stp_reqs *r, int with_dynamic, uint64_t align)
{
	if (!r->n)
		return 0;
	/* events (time, free-before-alloc) -> signed size */
	size_t cap = r->n * 4;
	pl_kv *ev = malloc(cap * sizeof *ev), *tmp = malloc(cap * sizeof *tmp);
	if (!ev || !tmp) {
		free(ev);
		free(tmp);
		return 0;
	}
	size_t m = 0;
	uint64_t always = 0;
	uint64_t T = r->period;
	for (size_t i = 0; i < r->n; i++) {
		const stp_req *q = &r->req[i];
		if ((q->flags & STP_REQ_DYNAMIC) && !with_dynamic)
			continue;
		uint64_t s = q->t_start, e = q->t_end;
		if ((q->flags & STP_REQ_PERSISTENT) || e == s) {
			always += pl_align_up(q->size, align);
			continue;
		}
		if (e > s) {
			ev[m++] = (pl_kv){s << 1 | 1, (uint32_t)i};
			ev[m++] = (pl_kv){e << 1, (uint32_t)i};
		} else {
			ev[m++] = (pl_kv){s << 1 | 1, (uint32_t)i};
			ev[m++] = (pl_kv){T << 1, (uint32_t)i};
			ev[m++] = (pl_kv){0 << 1 | 1, (uint32_t)i};
			ev[m++] = (pl_kv){e << 1, (uint32_t)i};
		}
	}
	pl_sort_kv(ev, tmp, m);
	uint64_t live = 0, peak = 0;
	for (size_t j = 0; j < m; j++) {
		uint64_t sz = pl_align_up(r->req[ev[j].v].size, align);
		if (ev[j].k & 1) {
			live += sz;
			if (live > peak)
				peak = live;
		} else {
			live -= sz;
		}
	}
	free(ev);
	free(tmp);
	return peak + always;
}

uint64_t stp_lower_bound(const stp_reqs *r, int with_dynamic)
{
	return pl_lower_bound(r, with_dynamic, 1);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int stp_reqs_raise_min(const stp_reqs *src, uint64_t min_size, stp_reqs *dst)
{
	stp_reqs_init(dst);
	dst->period = src->period;
	dst->source = src->source;
	dst->iteration = src->iteration;
	dst->begin_seq = src->begin_seq;
	dst->end_seq = src->end_seq;
	dst->trace_events = src->trace_events;
	dst->notes = src->notes;
	dst->program = src->program;
	dst->device = src->device;
	dst->tensors = src->tensors;
	dst->shapes_vary = src->shapes_vary;
	dst->sizes_vary = src->sizes_vary;
	dst->iterations = src->iterations;
	dst->min_size = min_size > src->min_size ? min_size : src->min_size;
	uint32_t *rank = NULL, *ords = NULL;
	size_t nords = 0;
	if (src->strings_len) {
		if (!(dst->strings = malloc(src->strings_len)))
			goto oom;
		memcpy(dst->strings, src->strings, src->strings_len);
		dst->strings_len = dst->strings_cap = src->strings_len;
	}
	for (int which = 0; which < 2; which++) {
		uint32_t n = which ? src->nlayers : src->nphases;
		const stp_span *from = which ? src->layers : src->phases;
		if (!n)
			continue;
		stp_span *to = malloc((size_t)(n < 16 ? 16 : n) * 2 * sizeof *to); /* add_span's growth rule */
		if (!to)
			goto oom;
		memcpy(to, from, n * sizeof *to);
		*(which ? &dst->layers : &dst->phases) = to;
		*(which ? &dst->nlayers : &dst->nphases) = n;
	}
	/* start-up positions kept, and the rank of each among them */
	rank = malloc(((size_t)src->nstartup + 1) * sizeof *rank);
	ords = malloc((src->n + 1) * sizeof *ords);
	if (!rank || !ords)
		goto oom;
	uint32_t kept = 0;
	for (uint32_t i = 0; i < src->nstartup; i++) {
		rank[i] = kept;
		if (STP_STARTUP_SIZE(src->startup[i]) >= dst->min_size) {
			if (stp_reqs_add_startup(dst, src->startup[i]) < 0)
				goto oom;
			kept++;
		}
	}
	/* the iteration's ordinals kept, sorted: a request's new ordinal is
	 * the index of its old one (spares share their request's) */
	for (size_t i = 0; i < src->n; i++)
		if (src->req[i].size >= dst->min_size && !(src->req[i].flags & STP_REQ_PERSISTENT))
			ords[nords++] = src->req[i].ordinal;
	qsort(ords, nords, sizeof *ords, cmp_u32);
	size_t u = 0;
	for (size_t i = 0; i < nords; i++)
		if (!u || ords[u - 1] != ords[i])
			ords[u++] = ords[i];
	nords = u;
	for (size_t i = 0; i < src->n; i++) {
		stp_req q = src->req[i];
		if (q.size < dst->min_size)
			continue;
		if (q.flags & STP_REQ_PERSISTENT) {
			if (q.ordinal < src->nstartup)
				q.ordinal = rank[q.ordinal];
		} else {
			const uint32_t *at = bsearch(&q.ordinal, ords, nords, sizeof *ords, cmp_u32);
			q.ordinal = at ? (uint32_t)(at - ords) : q.ordinal;
		}
		if (stp_reqs_add(dst, &q) < 0)
			goto oom;
	}
	/* the start-up sequence ends with its last persistent request again */
	uint32_t last = 0;
	for (size_t i = 0; i < dst->n; i++)
		if ((dst->req[i].flags & STP_REQ_PERSISTENT) && dst->req[i].ordinal + 1 > last)
			last = dst->req[i].ordinal + 1;
	dst->nstartup = last < dst->nstartup ? last : dst->nstartup;
	/* a free's position in the sequence: the entries kept before it */
	if (src->startup_until && dst->nstartup) {
		dst->startup_until = malloc((size_t)dst->nstartup * sizeof *dst->startup_until);
		if (!dst->startup_until)
			goto oom;
		for (uint32_t i = 0; i < src->nstartup; i++) {
			uint32_t at = src->startup_until[i];
			if (STP_STARTUP_SIZE(src->startup[i]) >= dst->min_size && rank[i] < dst->nstartup)
				dst->startup_until[rank[i]] = at < src->nstartup ? rank[at] : UINT32_MAX;
		}
	}
	free(rank);
	free(ords);
	return 0;
oom:
	free(rank);
	free(ords);
	stp_reqs_free(dst);
	return -1;
}
