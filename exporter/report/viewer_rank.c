/*
 * viewer_rank.c - one trace as the viewer draws it, read once after the
 * detector's run (opt.keep_objects >= 2):
 *
 *   - the objects of the space analyzed in depth, in allocation order; all
 *     of them up to --viewer-objects, else the ones stp_det_select() picks
 *     (findings first, then bytes x lifetime: the rule of the Perfetto
 *     timeline's --top), the others summed into a grey band: at each event
 *     of an embedded object, the highest live bytes of the others since
 *     the previous one (so peaks survive);
 *   - events: each embedded object's allocation and end, with its time
 *     (ns since the trace's first event, never going back);
 *   - when an object ends, from the detector (stp_det_object: its FREE, or
 *     the ALLOC that reused its address): no address map here, and the
 *     page's lifetimes are the report's;
 *   - call paths as a trie of frame texts rooted at the innermost frame,
 *     texts interned up to 16 MiB (past that, paths are cut and counted);
 *   - the call sites the objects, findings and top list name;
 *   - module intervals (depth < 3) from the markers, one stack per trace
 *     as the detector keeps it;
 *   - recorded segments of the space's device, and the models
 *     (viewer_models.c);
 *   - the first accesses of each object (stp_det_object_accesses).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

#define STR_BUDGET (16u << 20)
#define MAX_FRAMES 64
#define MAX_MODULE_ROWS 50000u
#define MODULE_DEPTH 3
#define MAX_ACCESSES 256u
#define PEND_EMBEDDED (1ull << 63)

typedef struct pend {
	uint64_t end, seq, v; /* v: embedded index | PEND_EMBEDDED, or size */
} pend;

typedef struct pass {
	vw_rank *k;
	pend *heap;
	size_t nheap, cap;
	uint64_t res_cur, res_max;
	uint64_t t_last;
	int32_t primary;
	uint32_t *stack_node;  /* stack id -> trie node + 1 */
	size_t nstack_node;
	vw_map trie;           /* parent << 32 | string -> node */
	struct { int64_t name; uint64_t b; } mods[256];
	uint32_t depth;
	uint64_t *bits, nbits;
	int oom;
} pass;

/* ------------------------------------------------------------ pending ends */

static int pend_less(const pend *a, const pend *b)
{
	return a->end < b->end;
}

static void pend_push(pass *p, pend e)
{
	if (p->nheap == p->cap) {
		size_t nc = p->cap ? p->cap * 2 : 1024;
		pend *h = realloc(p->heap, nc * sizeof *h);
		if (!h) {
			p->oom = 1;
			return;
		}
		p->heap = h;
		p->cap = nc;
	}
	size_t i = p->nheap++;
	p->heap[i] = e;
	while (i && pend_less(&p->heap[i], &p->heap[(i - 1) / 2])) {
		pend t = p->heap[i];
		p->heap[i] = p->heap[(i - 1) / 2];
		p->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static pend pend_pop(pass *p)
{
	pend top = p->heap[0];
	p->heap[0] = p->heap[--p->nheap];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < p->nheap && pend_less(&p->heap[l], &p->heap[m]))
			m = l;
		if (r < p->nheap && pend_less(&p->heap[r], &p->heap[m]))
			m = r;
		if (m == i)
			break;
		pend t = p->heap[i];
		p->heap[i] = p->heap[m];
		p->heap[m] = t;
		i = m;
	}
	return top;
}

/* ------------------------------------------------------------ names */

uint64_t vw_rank_site(vw_rank *k, uint32_t det_site)
{
	uint64_t v;
	if (vw_map_get(&k->siteix, det_site, &v))
		return v;
	v = k->sdet.n;
	char where[512];
	stp_det_site s = {0};
	if (det_site < k->r->nsites) {
		stp_det_site_get(k->d, det_site, &s);
		stp_det_site_where(k->d, det_site, where, sizeof where);
	} else {
		snprintf(where, sizeof where, "(no call path recorded)");
	}
	int64_t u = vw_str(&k->strs, where);
	vw_push(&k->sdet, det_site);
	vw_push(&k->suser, u < 0 ? 0 : (uint64_t)u + 1);
	vw_push(&k->speak, s.peak_bytes);
	vw_push(&k->sallocs, s.allocs);
	vw_push(&k->scls, det_site < k->r->nsites ? s.dominant : STP_CLASS_UNCLASSIFIED);
	if (vw_map_put(&k->siteix, det_site, v) < 0)
		k->sdet.oom = 1;
	return v;
}

/* The trie node of a stack's frames (innermost at the root's child). */
static uint64_t stack_node(pass *p, uint32_t stack)
{
	vw_rank *k = p->k;
	if (!stack)
		return 0;
	if (stack < p->nstack_node && p->stack_node[stack])
		return p->stack_node[stack] - 1;
	if (stack >= p->nstack_node) {
		size_t nc = p->nstack_node ? p->nstack_node : 4096;
		while (nc <= stack)
			nc *= 2;
		uint32_t *n = realloc(p->stack_node, nc * sizeof *n);
		if (!n) {
			p->oom = 1;
			return 0;
		}
		memset(n + p->nstack_node, 0, (nc - p->nstack_node) * sizeof *n);
		p->stack_node = n;
		p->nstack_node = nc;
	}
	stp_det_frame fr[MAX_FRAMES];
	uint32_t nf = stp_det_stack_frames(k->d, stack, fr, MAX_FRAMES);
	uint64_t node = 0;
	for (uint32_t j = 0; j < nf; j++) {
		char text[1024];
		int64_t sid = vw_str(&k->strs, stp_det_frame_text(&fr[j], text, sizeof text));
		if (sid < 0) {
			k->frames_cut++;
			break;
		}
		uint64_t key = node << 32 | (uint64_t)sid, child;
		if (!vw_map_get(&p->trie, key, &child)) {
			child = k->kp.n + 1;
			vw_push(&k->kp, node);
			vw_push(&k->kf, (uint64_t)sid);
			if (vw_map_put(&p->trie, key, child) < 0)
				p->oom = 1;
		}
		node = child;
	}
	p->stack_node[stack] = (uint32_t)node + 1;
	return node;
}

/* ------------------------------------------------------------ events */

static void event(pass *p, uint64_t t)
{
	vw_rank *k = p->k;
	vw_push(&k->et, t);
	vw_push(&k->res, p->res_max > p->res_cur ? p->res_max : p->res_cur);
	p->res_max = p->res_cur;
	k->nev++;
}

static void end_object(pass *p, pend e, uint64_t t)
{
	vw_rank *k = p->k;
	for (int s = k->nreal; s < k->nst; s++)
		k->st[s].pending_ev = k->nev;
	vw_models_free(k->st + k->nreal, k->nst - k->nreal, e.seq, t);
	if (e.v & PEND_EMBEDDED) {
		uint64_t i = e.v & ~PEND_EMBEDDED;
		k->life.v[i] = k->nev - k->oa.v[i];
		event(p, t);
	} else {
		p->res_cur -= e.v < p->res_cur ? e.v : p->res_cur;
	}
}

static void accesses(pass *p, uint64_t seq, uint32_t total)
{
	vw_rank *k = p->k;
	stp_det_access a[MAX_ACCESSES];
	uint32_t n = total ? stp_det_object_accesses(k->d, seq, a, MAX_ACCESSES) : 0;
	vw_push(&k->xn, n);
	vw_push(&k->xc, total);
	for (uint32_t j = 0; j < n; j++) {
		int64_t sid = vw_str(&k->strs, a[j].name);
		vw_push(&k->xt, a[j].ns);
		vw_push(&k->xa, sid < 0 ? 0 : (uint64_t)sid);
		vw_push(&k->xm, (uint64_t)a[j].kind << 2 | (a[j].mode & 3));
	}
}

static void on_alloc(pass *p, const stp_event *ev, uint64_t t, int accessed)
{
	vw_rank *k = p->k;
	const stp_alloc_info *a = &ev->u.alloc;
	stp_det_object_rec rec;
	if (stp_det_alloc_space(k->d, a) != p->primary || stp_det_object(k->d, ev->seq, &rec) < 0)
		return;
	int emb = !p->bits || (ev->seq < p->nbits && (p->bits[ev->seq / 64] >> (ev->seq % 64) & 1));
	for (int s = k->nreal; s < k->nst; s++)
		k->st[s].pending_ev = k->nev;
	vw_models_alloc(k->st + k->nreal, k->nst - k->nreal, ev, t, vw_models_fed(k->r, a), emb);
	uint64_t v;
	if (emb) {
		v = k->nobj++ | PEND_EMBEDDED;
		vw_push(&k->seq, ev->seq);
		vw_push(&k->oa, k->nev);
		vw_push(&k->life, 0);
		vw_push(&k->size, a->size);
		vw_push(&k->round, a->requested && a->requested < a->size ? a->size - a->requested : 0);
		vw_push(&k->info, (uint64_t)(rec.cls & 15) | (uint64_t)rec.patterns << 4);
		vw_push(&k->node, stack_node(p, a->stack));
		vw_push(&k->site, vw_rank_site(k, stp_det_stack_site(k->d, a->stack)));
		int64_t m = rec.module ? vw_str(&k->strs, rec.module) : -1;
		vw_push(&k->mod, m < 0 ? 0 : (uint64_t)m + 1);
		vw_push(&k->addr, a->addr);
		if (accessed)
			accesses(p, ev->seq, rec.accesses);
		event(p, t);
	} else {
		v = a->size;
		p->res_cur += a->size;
		if (p->res_cur > p->res_max)
			p->res_max = p->res_cur;
	}
	if (rec.end_seq != UINT64_MAX)
		pend_push(p, (pend){rec.end_seq, ev->seq, v});
}

static void on_segment(pass *p, const stp_event *ev)
{
	vw_rank *k = p->k;
	const stp_segment_info *g = &ev->u.segment;
	const stp_det_space *sp = &k->r->spaces[p->primary];
	if (!k->nreal || g->kind != sp->kind || g->device != sp->device)
		return;
	vw_state *s = &k->st[0];
	uint64_t size = g->size;
	if (ev->type == STP_EV_SEGMENT_RESERVE) {
		if (vw_map_put(&s->seg_size, g->addr, g->size) < 0)
			p->oom = 1;
	} else {
		uint64_t was;
		if (vw_map_get(&s->seg_size, g->addr, &was))
			size = was;
		vw_map_put(&s->seg_size, g->addr, 0);
		if (!size)
			return;
		size = (uint64_t)-(int64_t)size;
	}
	vw_push(&s->ev, k->nev);
	vw_push(&s->at, g->addr);
	vw_push(&s->sz, size);
}

static void on_marker(pass *p, const stp_event *ev, const stp_reader *rd, uint64_t t)
{
	vw_rank *k = p->k;
	const stp_marker_info *m = &ev->u.marker;
	if (m->kind == STP_MARK_MODULE_ENTER) {
		if (p->depth < 256) {
			p->mods[p->depth].name = vw_str(&k->strs, stp_reader_string(rd, m->name));
			p->mods[p->depth].b = t;
		}
		p->depth++;
	} else if (m->kind == STP_MARK_MODULE_EXIT && p->depth) {
		p->depth--;
		if (p->depth >= MODULE_DEPTH || p->depth >= 256 || p->mods[p->depth].name < 0)
			return;
		if (k->nmodules >= MAX_MODULE_ROWS) {
			k->modules_dropped++;
			return;
		}
		vw_printf(&k->modules, "%s[%" PRId64 ",%u,%" PRIu64 ",%" PRIu64 "]", k->nmodules ? "," : "",
		          p->mods[p->depth].name, p->depth, p->mods[p->depth].b, t);
		k->nmodules++;
	}
}

/* ------------------------------------------------------------ selection */

static int eligible(void *ctx, const stp_event *alloc)
{
	pass *p = ctx;
	return stp_det_alloc_space(p->k->d, &alloc->u.alloc) == p->primary;
}

static int has_finding(void *ctx, uint64_t alloc_seq)
{
	pass *p = ctx;
	unsigned pm = 0;
	return stp_det_object_info(p->k->d, alloc_seq, &pm) >= 0 && pm;
}

/* ------------------------------------------------------------ the pass */

int vw_rank_build(vw_rank *k, stp_det *d, const stp_report_options *o)
{
	memset(k, 0, sizeof *k);
	k->d = d;
	const stp_det_result *r = k->r = stp_det_result_of(d);
	k->strs.max_bytes = STR_BUDGET;
	const char *base = strrchr(r->path, '/');
	if (r->rank >= 0)
		snprintf(k->label, sizeof k->label, "rank %d", r->rank);
	else
		snprintf(k->label, sizeof k->label, "%s", base ? base + 1 : r->path);
	if (r->primary < 0) {
		snprintf(k->error, sizeof k->error, "%s: no allocations to draw", r->path);
		return -1;
	}
	pass p = {.k = k, .primary = r->primary};
	const stp_det_space *sp = &r->spaces[r->primary];
	k->objects_total = sp->allocs;
	if (o->viewer_objects && sp->allocs > o->viewer_objects) {
		stp_det_select_opts so = {.n = o->viewer_objects, .eligible = eligible, .has_finding = has_finding, .ctx = &p};
		if (stp_det_select(r->path, &so, &p.bits, &p.nbits, k->error, sizeof k->error) < 0)
			return -1;
		k->selected = 1;
	}
	/* allocator states: recorded segments first, then the models */
	if (sp->kind == STP_MEM_DEVICE && r->by_type[STP_EV_SEGMENT_RESERVE]) {
		vw_state *s = &k->st[k->nst++];
		k->nreal = 1;
		snprintf(s->key, sizeof s->key, "real");
		snprintf(s->name, sizeof s->name, "recorded segments (the allocator's own)");
		snprintf(s->note, sizeof s->note, "Segments as the program's allocator reserved and released them, and the "
		         "objects at their recorded addresses.");
	}
	k->nst += vw_models_open(d, k->st + k->nst, VW_MAX_MODELS);
	stp_reader *rd = stp_reader_open(r->path, k->error, sizeof k->error);
	if (!rd) {
		free(p.bits);
		return -1;
	}
	int accessed = r->have_accesses && o->viewer_accesses;
	stp_event ev;
	int got;
	while ((got = stp_reader_next(rd, &ev)) > 0 && !p.oom) {
		uint64_t t = ev.time_ns > r->t0_ns ? ev.time_ns - r->t0_ns : 0;
		if (t < p.t_last)
			t = p.t_last; /* threads' clocks differ a little: never back */
		p.t_last = t;
		while (p.nheap && p.heap[0].end <= ev.seq)
			end_object(&p, pend_pop(&p), t);
		switch (ev.type) {
		case STP_EV_ALLOC: on_alloc(&p, &ev, t, accessed); break;
		case STP_EV_SEGMENT_RESERVE:
		case STP_EV_SEGMENT_RELEASE: on_segment(&p, &ev); break;
		case STP_EV_MARKER: on_marker(&p, &ev, rd, t); break;
		default: break;
		}
	}
	if (got < 0 && !r->error)
		snprintf(k->error, sizeof k->error, "%s", stp_reader_error(rd));
	/* objects whose end the reader did not reach (a damaged trace) */
	while (p.nheap)
		end_object(&p, pend_pop(&p), p.t_last);
	while (p.depth > 0) {
		stp_event x = {.type = STP_EV_MARKER, .u.marker = {.kind = STP_MARK_MODULE_EXIT}};
		on_marker(&p, &x, rd, p.t_last);
	}
	stp_reader_close(rd);
	free(p.heap);
	free(p.stack_node);
	free(p.bits);
	vw_map_free(&p.trie);
	if (!k->nobj && k->objects_total && !got) {
		snprintf(k->error, sizeof k->error, "%s: the detector kept no objects (run it with keep_objects 2)",
		         r->path);
		return -1;
	}
	if (p.oom || k->strs.oom || k->seq.oom || k->et.oom || k->kp.oom || k->modules.oom) {
		snprintf(k->error, sizeof k->error, "%s: out of memory building the viewer's data", r->path);
		return -1;
	}
	return got < 0 && !r->error ? -1 : 0;
}

int64_t vw_rank_object(const vw_rank *k, uint64_t alloc_seq)
{
	size_t lo = 0, hi = k->seq.n;
	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;
		if (k->seq.v[m] < alloc_seq)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < k->seq.n && k->seq.v[lo] == alloc_seq ? (int64_t)lo : -1;
}

void vw_rank_free(vw_rank *k)
{
	vw_u64s *arrays[] = {&k->seq, &k->oa,  &k->life, &k->size, &k->round, &k->info,   &k->node,  &k->site,
	                     &k->mod, &k->addr, &k->et,  &k->res,  &k->xn,    &k->xc,     &k->xt,    &k->xa,
	                     &k->xm,  &k->kp,   &k->kf,  &k->sdet, &k->suser, &k->speak,  &k->sallocs, &k->scls};
	for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
		vw_u64s_free(arrays[i]);
	vw_strs_free(&k->strs);
	vw_bytes_free(&k->modules);
	vw_map_free(&k->siteix);
	vw_states_free(k->st, k->nst);
}
