/*
 * children.c - the child processes of a recorded program, for the
 * report's "Child processes" section (exporter/report/report_children.c):
 * a DataLoader's workers, a launcher's helpers.  Their traces lie beside
 * the recording's main trace, FILE.<pid>[.<n>] (the collector's names):
 * the ones whose process's parent is the program's, the last image of
 * each (programtrace.c's traces_beside), in pid order.  Each of the first
 * CHILDREN_LISTED is analyzed on its own with the detector's light run
 * (stp_det_timeline_run: the spaces' peaks, the iterations) unless its
 * trace is over CHILD_READ_MAX bytes or the ones read before it already
 * came to CHILDREN_READ_TOTAL (a report is not held up by a hundred
 * epochs' workers); the rest are counted.  A child
 * whose phases include "fetch" (the shim marks each batch a DataLoader
 * worker fetches) is a "DataLoader worker"; others are named by their
 * executable.  A trace beside it whose process cannot be read (damaged,
 * or empty: a worker killed before it wrote anything) cannot say whose
 * child it was: it is listed, not read, with the reader's error, the pid
 * its name gives; so is why any other row was not read.
 */
#include <stdlib.h>
#include <string.h>

#include "children.h"
#include "programtrace.h"

#define CHILDREN_LISTED 16
#define CHILD_READ_MAX ((off_t)256 << 20)
#define CHILDREN_READ_TOTAL ((off_t)512 << 20)

struct found {
	char trace[4096 + 256];
	char exe[512];
	char why[512];            /* not "": its process could not be read */
	uint32_t pid;
	off_t size;
};
typedef struct found found;

struct scan {
	uint32_t parent;
	size_t base_len;          /* of the main trace's file name: FILE.<pid>[.<n>] follows */
	found *f;
	size_t n, cap;
	int oom;
};

static int take(const char *trace, off_t size, void *arg)
{
	struct scan *s = arg;
	uint32_t ppid = 0;
	char exe[512] = "", why[512] = "";
	uint32_t pid = trace_process_why(trace, &ppid, exe, sizeof exe, why, sizeof why);
	if (!pid) { /* whose it is cannot be known: listed, with its name's pid */
		const char *name = strrchr(trace, '/');
		name = name ? name + 1 : trace;
		pid = strlen(name) > s->base_len ? (uint32_t)strtoul(name + s->base_len + 1, NULL, 10) : 0;
		ppid = s->parent;
	}
	if (!pid || ppid != s->parent || pid == s->parent || strlen(trace) >= sizeof s->f->trace)
		return 0;
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 16;
		found *g = realloc(s->f, nc * sizeof *g);
		if (!g) {
			s->oom = 1;
			return 1;
		}
		s->f = g;
		s->cap = nc;
	}
	found *k = &s->f[s->n++];
	snprintf(k->trace, sizeof k->trace, "%s", trace);
	const char *b = strrchr(exe, '/');
	snprintf(k->exe, sizeof k->exe, "%s", b ? b + 1 : exe[0] ? exe : why[0] ? "a process" : "?");
	snprintf(k->why, sizeof k->why, "%s", exe[0] ? "" : why);
	k->pid = pid;
	k->size = size;
	return 0;
}

static int by_pid(const void *a, const void *b)
{
	const found *x = a, *y = b;
	return x->pid != y->pid ? (x->pid < y->pid ? -1 : 1) : strcmp(x->trace, y->trace);
}

/* The host heap's peak (the space of kind host, device -1) and the
 * largest tensor space's. */
static void peaks(const stp_det_result *r, uint64_t *host, uint64_t *tensors)
{
	*host = *tensors = 0;
	for (uint32_t i = 0; r && i < r->nspaces; i++) {
		const stp_det_space *s = &r->spaces[i];
		if (s->kind == STP_MEM_HOST && s->device == -1 && !s->tensors)
			*host = s->peak_bytes;
		else if (s->tensors && s->peak_bytes > *tensors)
			*tensors = s->peak_bytes;
	}
}

static int is_worker(const stp_det_result *r)
{
	for (uint32_t i = 0; i < r->timeline.nphases; i++)
		if (r->timeline.phases[i].name && !strcmp(r->timeline.phases[i].name, "fetch"))
			return 1;
	return 0;
}

/* Fills row from k (its trace read when the budget allows); row's strings
 * are k's. */
static void analyze(found *k, stp_report_child *row, off_t *budget)
{
	row->trace = k->trace;
	row->pid = k->pid;
	row->what = k->exe;
	if (k->why[0]) {
		row->not_read = k->why;
		return;
	}
	if (k->size > CHILD_READ_MAX) {
		snprintf(k->why, sizeof k->why, "over %lld MiB: stprof report reads it alone", (long long)(CHILD_READ_MAX >> 20));
		row->not_read = k->why;
		return;
	}
	if (k->size > *budget) {
		snprintf(k->why, sizeof k->why, "the %lld MiB read for this section spent: stprof report reads it alone",
		         (long long)(CHILDREN_READ_TOTAL >> 20));
		row->not_read = k->why;
		return;
	}
	*budget -= k->size;
	stp_det_options o;
	stp_det_options_default(&o);
	char err[512];
	stp_det *d = stp_det_timeline_run(k->trace, &o, err, sizeof err);
	if (!d) {
		snprintf(k->why, sizeof k->why, "%s", err);
		row->not_read = k->why;
		return;
	}
	const stp_det_result *r = stp_det_result_of(d);
	if (!r->error) {
		row->analyzed = 1;
		peaks(r, &row->host_peak, &row->tensor_peak);
		row->iterations = r->timeline.niterations;
		if (is_worker(r))
			row->what = "DataLoader worker";
	} else {
		snprintf(k->why, sizeof k->why, "%s", r->error);
		row->not_read = k->why;
	}
	stp_det_free(d);
}

void children_find(const char *main, const char *image, const stp_det_result *r, children *c)
{
	memset(c, 0, sizeof *c);
	struct scan s = {0};
	s.parent = trace_process(image, NULL, NULL, 0);
	if (!s.parent)
		return;
	const char *mb = strrchr(main, '/');
	s.base_len = strlen(mb ? mb + 1 : main);
	traces_beside(main, take, &s);
	size_t n = s.n < CHILDREN_LISTED ? s.n : CHILDREN_LISTED;
	if (s.oom || !n || !(c->rows = calloc(n, sizeof *c->rows))) {
		free(s.f);
		return;
	}
	qsort(s.f, s.n, sizeof *s.f, by_pid);
	c->found = s.f;
	off_t budget = CHILDREN_READ_TOTAL;
	for (size_t i = 0; i < n; i++)
		analyze(&s.f[i], &c->rows[i], &budget);
	c->view.child = c->rows;
	c->view.n = n;
	c->view.more = s.n - n;
	uint64_t t;
	peaks(r, &c->view.host_peak, &t);
}

void children_free(children *c)
{
	free(c->rows);
	free(c->found);
	memset(c, 0, sizeof *c);
}
