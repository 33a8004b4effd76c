/*
 * report_ranks.c - builds the merged view of several traces of one run
 * (report_ranks.h): roles, the compared ranks in rank order, the peaking
 * rank, and the rows of call sites and phases that differ.
 *
 * Invariants: cmp[] lists each RK_RANK trace once, sorted by rank (then
 * pid); every row has ncmp byte counts; sites and phases are sorted by
 * |diff| descending, ties by name, so the output is deterministic.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_fmt.h"
#include "report_ranks.h"

const char *rk_base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

const char *rk_label(const rk_merge *m, size_t ti, char *buf, size_t len)
{
	const stp_det_result *r = m->t[ti].r;
	if (!m->have_ranks || r->rank < 0) {
		snprintf(buf, len, "pid %u", r->pid);
		return buf;
	}
	int dup = 0;
	for (size_t k = 0; k < m->ncmp; k++)
		if (m->cmp[k] != ti && m->t[m->cmp[k]].r->rank == r->rank)
			dup = 1;
	if (dup)
		snprintf(buf, len, "rank %d (pid %u)", r->rank, r->pid);
	else
		snprintf(buf, len, "rank %d", r->rank);
	return buf;
}

static const rk_merge *sort_m;
static int cmp_by_rank(const void *a, const void *b)
{
	const stp_det_result *x = sort_m->t[*(const size_t *)a].r, *y = sort_m->t[*(const size_t *)b].r;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int row_cmp(const void *a, const void *b)
{
	const rk_row *x = a, *y = b;
	double dx = fabs(x->diff), dy = fabs(y->diff);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* One (name, rank, bytes) observation, merged into rows by name. */
typedef struct obs {
	char *name;
	size_t k;
	uint64_t bytes;
} obs;

static int obs_cmp(const void *a, const void *b)
{
	const obs *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->k > y->k) - (x->k < y->k);
}

/* Rows from observations (names taken over); bytes summed per rank
 * (sites: several call paths share a where), or maxed (phases). */
static int rows_from(rk_merge *m, obs *o, size_t no, int sum, rk_row **rows, size_t *nrows)
{
	qsort(o, no, sizeof *o, obs_cmp);
	rk_row *v = calloc(no ? no : 1, sizeof *v);
	if (!v)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < no;) {
		rk_row *row = &v[n++];
		row->name = o[i].name;
		row->bytes = calloc(m->ncmp, sizeof *row->bytes);
		if (!row->bytes) {
			*rows = v;
			*nrows = n;
			for (; i < no; i++)
				if (o[i].name != row->name)
					free(o[i].name);
			return -1;
		}
		size_t j = i;
		for (; j < no && !strcmp(o[j].name, row->name); j++) {
			uint64_t *b = &row->bytes[o[j].k];
			*b = sum ? *b + o[j].bytes : (o[j].bytes > *b ? o[j].bytes : *b);
			if (j > i)
				free(o[j].name);
		}
		i = j;
		double s = 0;
		for (size_t k = 0; k < m->ncmp; k++)
			if (k != m->peak)
				s += (double)row->bytes[k];
		row->mean_others = s / (double)(m->ncmp - 1);
		row->diff = (double)row->bytes[m->peak] - row->mean_others;
	}
	qsort(v, n, sizeof *v, row_cmp);
	*rows = v;
	*nrows = n;
	return 0;
}

static int push(obs **o, size_t *n, size_t *cap, const char *name, size_t k, uint64_t bytes)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		obs *v = realloc(*o, c * sizeof *v);
		if (!v)
			return -1;
		*o = v;
		*cap = c;
	}
	char *s = strdup(name);
	if (!s)
		return -1;
	(*o)[(*n)++] = (obs){s, k, bytes};
	return 0;
}

static void obs_free(obs *o, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(o[i].name);
	free(o);
}

static int build_sites(rk_merge *m)
{
	obs *o = NULL;
	size_t no = 0, cap = 0;
	char buf[1024];
	for (size_t k = 0; k < m->ncmp; k++) {
		rk_trace *t = &m->t[m->cmp[k]];
		uint32_t n = t->r->nsites < RK_SITES_PER_RANK ? t->r->nsites : RK_SITES_PER_RANK;
		for (uint32_t i = 0; i < n; i++) {
			stp_det_site s;
			stp_det_site_get(t->d, i, &s);
			if (!s.peak_bytes)
				break; /* sorted by peak_bytes: the rest hold nothing at the peak */
			if (push(&o, &no, &cap, stp_det_site_where(t->d, i, buf, sizeof buf), k, s.peak_bytes) < 0) {
				obs_free(o, no);
				return -1;
			}
		}
		if (t->r->nsites > RK_SITES_PER_RANK) {
			stp_det_site s;
			stp_det_site_get(t->d, RK_SITES_PER_RANK, &s);
			if (s.peak_bytes)
				m->sites_cut = 1;
		}
	}
	int rc = rows_from(m, o, no, 1, &m->sites, &m->nsites);
	free(o);
	return rc;
}

/* The highest live bytes of the series during [b, e]: each sample covers
 * (the previous sample's t, its t].  The samples wholly inside the window
 * count; when none is, those overlapping it (a window shorter than a
 * sample).  *inside says which. */
static uint64_t series_max(const stp_det_result *r, uint64_t b, uint64_t e, int *inside)
{
	uint32_t lo = 0, hi = r->nseries;
	while (lo < hi) { /* first sample whose t > b */
		uint32_t mid = lo + (hi - lo) / 2;
		if (r->series[mid].t_ns <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint64_t in = 0, over = 0;
	*inside = 0;
	for (uint32_t j = lo; j < r->nseries; j++) {
		uint64_t from = j ? r->series[j - 1].t_ns : 0, v = r->series[j].live_bytes;
		if (from >= e)
			break;
		if (from >= b && r->series[j].t_ns <= e) {
			*inside = 1;
			in = v > in ? v : in;
		}
		over = v > over ? v : over;
	}
	return *inside ? in : over;
}

static int build_phases(rk_merge *m)
{
	obs *o = NULL;
	size_t no = 0, cap = 0;
	for (size_t k = 0; k < m->ncmp; k++) {
		const stp_det_result *r = m->t[m->cmp[k]].r;
		for (uint32_t p = 0; p < r->timeline.nphases; p++) {
			const stp_det_phase *ph = &r->timeline.phases[p];
			if (!ph->name)
				continue;
			int inside;
			uint64_t v = series_max(r, ph->begin_ns, ph->end_ns, &inside);
			if (!inside)
				m->phases_coarse = 1;
			if (push(&o, &no, &cap, ph->name, k, v) < 0) {
				obs_free(o, no);
				return -1;
			}
		}
	}
	int rc = rows_from(m, o, no, 0, &m->phases, &m->nphases);
	free(o);
	return rc;
}

int rk_merge_build(rk_merge *m, stp_det *const *d, size_t n)
{
	memset(m, 0, sizeof *m);
	m->peak = m->lowest = SIZE_MAX;
	m->t = calloc(n ? n : 1, sizeof *m->t);
	m->cmp = calloc(n ? n : 1, sizeof *m->cmp);
	if (!m->t || !m->cmp) {
		rk_merge_free(m);
		errno = ENOMEM;
		return -1;
	}
	m->n = n;
	for (size_t i = 0; i < n; i++) {
		rk_trace *t = &m->t[i];
		t->d = d[i];
		t->r = stp_det_result_of(d[i]);
		t->sp = t->r->primary >= 0 ? &t->r->spaces[t->r->primary] : NULL;
		if (t->sp)
			rf_space(t->sp, t->space, sizeof t->space);
		else
			snprintf(t->space, sizeof t->space, "-");
		const stp_det_timeline *tl = &t->r->timeline;
		t->iterations = tl->niterations;
		t->peak_iteration = t->r->peak_iteration >= 0 && (uint32_t)t->r->peak_iteration < tl->niterations
		                        ? tl->iterations[t->r->peak_iteration].index : -1;
		t->peak_phase = t->r->peak_phase >= 0 && (uint32_t)t->r->peak_phase < tl->nphases
		                    ? tl->phases[t->r->peak_phase].name : NULL;
		if (t->r->rank >= 0)
			m->have_ranks = 1;
	}
	for (size_t i = 0; i < n; i++) {
		rk_trace *t = &m->t[i];
		if (m->have_ranks && t->r->rank < 0) {
			t->role = RK_OTHER;
			continue;
		}
		/* an image that called execve is followed by the rank's next image */
		int later = 0;
		for (size_t j = 0; j < n && t->r->whole && t->r->end_reason == STP_END_EXEC; j++)
			if (j != i && m->t[j].r->rank == t->r->rank && m->t[j].r->pid == t->r->pid)
				later = 1;
		t->role = later ? RK_EARLIER : RK_RANK;
		if (!later)
			m->cmp[m->ncmp++] = i;
	}
	sort_m = m;
	qsort(m->cmp, m->ncmp, sizeof *m->cmp, cmp_by_rank);
	if (m->ncmp < 2)
		return 0;
	size_t peak = 0, low = 0;
	for (size_t k = 0; k < m->ncmp; k++) {
		const rk_trace *t = &m->t[m->cmp[k]];
		uint64_t v = t->sp ? t->sp->peak_bytes : 0;
		const rk_trace *p = &m->t[m->cmp[peak]], *l = &m->t[m->cmp[low]];
		if (v > (p->sp ? p->sp->peak_bytes : 0))
			peak = k;
		if (v < (l->sp ? l->sp->peak_bytes : 0))
			low = k;
		if (strcmp(t->space, m->t[m->cmp[0]].space))
			m->mixed_spaces = 1;
	}
	m->peak = peak;
	m->lowest = low;
	double s = 0;
	for (size_t k = 0; k < m->ncmp; k++)
		if (k != peak && m->t[m->cmp[k]].sp)
			s += (double)m->t[m->cmp[k]].sp->peak_bytes;
	m->others_mean = s / (double)(m->ncmp - 1);
	if (build_sites(m) < 0 || build_phases(m) < 0) {
		rk_merge_free(m);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

static void rows_free(rk_row *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].bytes);
	}
	free(v);
}

void rk_merge_free(rk_merge *m)
{
	rows_free(m->sites, m->nsites);
	rows_free(m->phases, m->nphases);
	free(m->t);
	free(m->cmp);
	memset(m, 0, sizeof *m);
}
