/*
 * requests_from_trace.c - one steady-state iteration of a trace as requests.
 *
 * Pass 1 reads the markers: the complete iterations (ITER_BEGIN .. ITER_END).
 * The window is the last complete one, the one asked for, or a (begin_seq,
 * end_seq) given by a detector (stp_window.use_seq).  Without iteration
 * markers the whole trace is one iteration, and r->notes says so.
 *
 * Pass 2 follows every allocation (device ones when the trace has any,
 * otherwise host ones) by address:
 *   - allocated in the window and freed in it: a request [alloc, free), in
 *     ticks = seq - begin_seq;
 *   - allocated before the window and still live after it: persistent;
 *   - allocated in the window and live after it: it wraps into the next
 *     iteration.  Its free tick is taken from the objects that the previous
 *     iteration left for this one (allocated before, freed inside), paired
 *     in order by (size, call site); unpaired ones are kept for the whole
 *     iteration.  One whose partner is freed only after it is allocated
 *     (the previous iteration's instance still live when this one comes,
 *     as `loss = ...` in a loop) is kept for the whole iteration too, and
 *     gets a spare request (STP_REQ_SPARE) of its size: two instances are
 *     live at once, and the runtime allocator puts them in turn in the two
 *     ranges;
 *   - allocated before and freed inside without a partner: not part of the
 *     repeating iteration (warm-up leftovers); counted in the notes.
 * Phases come from PHASE_BEGIN/END markers (or the detector's cuts), layers
 * from MODULE_ENTER/EXIT; a request's phase/layer is the innermost open one
 * at its allocation and at its free.  With detect_varying, a request whose
 * size differs between complete iterations at the same position (call site
 * and occurrence of that call site within the iteration) is dynamic.
 * Iterations the collector folded (FOLD events: their temporaries are
 * counters) are never the one planned and take no part in detect_varying.
 *
 * With w->stream, pass 2 also keeps every allocation and free of the
 * planned space (whatever its size, from stream_min_size up) and the
 * ITER_BEGIN markers of the whole trace, in order: what the runtime
 * allocator will be asked, for replaying a plan (allocator/replay.c).
 * A folded iteration's allocations (those that outlive it) are marked
 * (STP_SEV_ALLOC_OUTLIVING).
 *
 * The call-site hash covers the frames of the allocation's stack, each as
 * (module path, offset in the module) when the module is known, so it stays
 * the same across runs of a PIE binary; raw addresses otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "stprof/programkey.h"
#include "stprof/trace.h"

void stp_window_init(stp_window *w)
{
	memset(w, 0, sizeof *w);
	w->iteration = -1;
	w->device_only = 1;
	w->detect_varying = STP_VARYING_MAX;
}

/* ---- a small open-addressing map u64 -> u64 with deletion */
typedef struct map {
	uint64_t *k, *v;
	size_t cap, n;
} map;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static int map_grow(map *m)
{
	size_t nc = m->cap ? m->cap * 2 : 1024;
	uint64_t *nk = calloc(nc, sizeof *nk), *nv = malloc(nc * sizeof *nv);
	if (!nk || !nv) {
		free(nk), free(nv);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->k[i]) {
			size_t j = mix(m->k[i]) & (nc - 1);
			while (nk[j])
				j = (j + 1) & (nc - 1);
			nk[j] = m->k[i];
			nv[j] = m->v[i];
		}
	free(m->k), free(m->v);
	m->k = nk, m->v = nv, m->cap = nc;
	return 0;
}

/* slot of key (key != 0), or of the empty slot where it would go */
static size_t map_slot(const map *m, uint64_t key)
{
	size_t j = mix(key) & (m->cap - 1);
	while (m->k[j] && m->k[j] != key)
		j = (j + 1) & (m->cap - 1);
	return j;
}

static uint64_t *map_get(const map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	size_t j = map_slot(m, key ? key : 1);
	return m->k[j] ? &m->v[j] : NULL;
}

static int map_put(map *m, uint64_t key, uint64_t val)
{
	key = key ? key : 1;
	if ((m->n + 1) * 4 > m->cap * 3 && map_grow(m) < 0)
		return -1;
	size_t j = map_slot(m, key);
	if (!m->k[j])
		m->n++;
	m->k[j] = key;
	m->v[j] = val;
	return 0;
}

static void map_del(map *m, uint64_t key)
{
	key = key ? key : 1;
	if (!m->cap)
		return;
	size_t j = map_slot(m, key);
	if (!m->k[j])
		return;
	m->k[j] = 0;
	m->n--;
	/* backward-shift the cluster after j */
	size_t i = (j + 1) & (m->cap - 1);
	while (m->k[i]) {
		size_t home = mix(m->k[i]) & (m->cap - 1);
		/* move k[i] to j when j lies cyclically in [home, i) */
		if ((i > j && (home <= j || home > i)) || (i < j && home <= j && home > i)) {
			m->k[j] = m->k[i];
			m->v[j] = m->v[i];
			m->k[i] = 0;
			j = i;
		}
		i = (i + 1) & (m->cap - 1);
	}
}

static void map_free(map *m)
{
	free(m->k), free(m->v);
	memset(m, 0, sizeof *m);
}

/* ---- the planned space's event stream (stp_window.stream) */
static int stream_push(stp_stream *s, uint32_t kind, uint64_t size, uint32_t obj)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? 2 * s->cap : 4096;
		stp_sev *ne = realloc(s->ev, nc * sizeof *ne);
		if (!ne)
			return -1;
		s->ev = ne;
		s->cap = nc;
	}
	s->ev[s->n++] = (stp_sev){size, obj, kind};
	s->iterations += kind == STP_SEV_ITER;
	return 0;
}

void stp_stream_free(stp_stream *s)
{
	free(s->ev);
	memset(s, 0, sizeof *s);
}

/* ---- objects followed by address */
typedef struct obj {
	uint64_t size, callsite, alloc_seq;
	long req;            /* request index when allocated in the window, else -1 */
	uint32_t pre_ordinal;
} obj;

typedef struct incoming {
	uint64_t key, cs, free_tick, alloc_seq;
	uint32_t phase, layer;
	int used;
} incoming;

typedef struct modinfo {
	uint64_t base, size, pathhash;
} modinfo;

static int cmp_mod(const void *a, const void *b)
{
	const modinfo *x = a, *y = b;
	return x->base < y->base ? -1 : x->base > y->base;
}

typedef struct conv {
	stp_reader *rd;
	stp_reqs *r;
	map open;            /* addr -> index into objs */
	obj *objs;
	size_t nobjs, capobjs, freeobj_head;
	uint64_t *stack_hash; /* per stack id, 0 = not computed */
	uint32_t nstack_hash;
	modinfo *mods;
	size_t nmods, capmods;
	int mods_sorted;
} conv;

static uint64_t fnv(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static uint64_t callsite_of(conv *c, uint32_t stack)
{
	if (!stack)
		return 0;
	if (stack >= c->nstack_hash) {
		uint32_t nn = c->nstack_hash ? c->nstack_hash : 1024;
		while (nn <= stack)
			nn *= 2;
		uint64_t *ns = realloc(c->stack_hash, nn * sizeof *ns);
		if (!ns)
			return 0;
		memset(ns + c->nstack_hash, 0, (nn - c->nstack_hash) * sizeof *ns);
		c->stack_hash = ns;
		c->nstack_hash = nn;
	}
	if (c->stack_hash[stack])
		return c->stack_hash[stack];
	if (!c->mods_sorted) {
		if (c->nmods)
			qsort(c->mods, c->nmods, sizeof *c->mods, cmp_mod);
		c->mods_sorted = 1;
	}
	uint64_t ips[128];
	uint32_t d = stp_reader_stack(c->rd, stack, ips, 128);
	uint64_t h = 0x84222325cbf29ce4ull;
	for (uint32_t k = 0; k < d; k++) {
		uint64_t ip = ips[k], mh = 0;
		size_t lo = 0, hi = c->nmods;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (c->mods[mid].base <= ip)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && ip - c->mods[lo - 1].base < c->mods[lo - 1].size) {
			mh = c->mods[lo - 1].pathhash;
			ip -= c->mods[lo - 1].base;
		}
		h = mix(h ^ mix(ip ^ mh));
	}
	h = h ? h : 1;
	c->stack_hash[stack] = h;
	return h;
}

static long new_obj(conv *c)
{
	if (c->freeobj_head) {
		long i = (long)c->freeobj_head - 1;
		c->freeobj_head = (size_t)c->objs[i].alloc_seq;
		return i;
	}
	if (c->nobjs == c->capobjs) {
		size_t nc = c->capobjs ? 2 * c->capobjs : 4096;
		obj *no = realloc(c->objs, nc * sizeof *no);
		if (!no)
			return -1;
		c->objs = no;
		c->capobjs = nc;
	}
	return (long)c->nobjs++;
}

static void drop_obj(conv *c, long i)
{
	c->objs[i].alloc_seq = c->freeobj_head;
	c->freeobj_head = (size_t)i + 1;
}

/* The spaces a plan may be of (pass 1 measures each, pass 2 keeps one). */
enum { SP_DEVICE_TENSORS, SP_DEVICE, SP_TENSORS, SP_HOST, SP_N };

static unsigned spaces_of(const stp_alloc_info *a, uint64_t host_min)
{
	if (stp_host_mapped(a->kind, a->pool, a->stream))
		return 0; /* mapped, not allocated: no allocator serves it */
	if (a->kind == STP_MEM_DEVICE)
		return 1u << SP_DEVICE | (a->pool == STP_POOL_TENSORS ? 1u << SP_DEVICE_TENSORS : 0);
	if (a->kind == STP_MEM_HOST && a->pool == STP_POOL_TENSORS)
		return 1u << SP_TENSORS | (a->size >= host_min ? 1u << SP_HOST : 0);
	return a->kind != STP_MEM_HOST || a->size >= host_min ? 1u << SP_HOST : 0;
}

typedef struct iterwin {
	uint64_t begin, end;
	int64_t index;
	int64_t like;   /* folded by the collector (a FOLD event): the iteration it repeats; else -1 */
	uint64_t peak[SP_N]; /* the most bytes live in it, per space */
} iterwin;

static int cmp_incoming(const void *a, const void *b)
{
	const incoming *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->alloc_seq < y->alloc_seq ? -1 : x->alloc_seq > y->alloc_seq;
}

typedef struct outgoing {
	uint64_t key, cs, alloc_seq;
	long req;
	int paired;
} outgoing;

static int cmp_outgoing(const void *a, const void *b)
{
	const outgoing *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->alloc_seq < y->alloc_seq ? -1 : x->alloc_seq > y->alloc_seq;
}

#define STACK_MAX 64

int stp_reqs_from_trace(const char *path, const stp_window *w, stp_reqs *r, char *err, size_t errlen)
{
	stp_reqs_init(r);
	stp_window defw;
	if (!w) {
		stp_window_init(&defw);
		w = &defw;
	}
	if (w->stream)
		memset(w->stream, 0, sizeof *w->stream);
	int rc = -1;
	iterwin *its = NULL;
	size_t nits = 0, capits = 0;
	uint32_t *until = NULL; /* pairs (start-up position, entries made before its free) */
	size_t nuntil = 0, capuntil = 0;
	conv c = {0};
	map pos = {0}, occ = {0}, sopen = {0}; /* sopen: address -> stream object + 1 */
	map lives = {0}; /* pass 1: address -> size << SP_N | spaces, for the iterations' peaks */
	map seen_in = {0}; /* position -> last iteration it was seen in << 32 | iterations seen in */
	incoming *inc = NULL;
	outgoing *outg = NULL;
	size_t ninc = 0, capinc = 0, nout = 0, capout = 0;
	char notes[512] = "";
	char program[4096 + 8] = ""; /* the process's key: stprof/programkey.h */
	stp_event ev;
	int any_device = 0, any_tensors = 0, any_device_tensors = 0, any_jax = 0;
	uint64_t last_seq = 0, events = 0, others_left_out = 0;

	/* ---- pass 1: iterations */
	stp_reader *rd = stp_reader_open(path, err, errlen);
	if (!rd)
		return -1;
	uint64_t open_begin = UINT64_MAX, first_begin = UINT64_MAX; /* the first ITER_BEGIN */
	int64_t open_index = 0, open_like = -1;
	uint64_t live[SP_N] = {0}, open_peak[SP_N] = {0};
	int k;
	while ((k = stp_reader_next(rd, &ev)) > 0) {
		last_seq = ev.seq;
		events++;
		if (ev.type == STP_EV_PROCESS && !program[0])
			stp_program_key(stp_reader_string(rd, ev.u.process.exe), stp_reader_string(rd, ev.u.process.cmdline),
			                program, sizeof program);
		if (ev.type == STP_EV_ALLOC && ev.u.alloc.size < (uint64_t)1 << 56) {
			unsigned sp = spaces_of(&ev.u.alloc, w->host_min_size);
			uint64_t *old = map_get(&lives, ev.u.alloc.addr);
			for (int s = 0; s < SP_N; s++) {
				if (old && (*old >> s & 1))
					live[s] -= *old >> SP_N; /* its free was lost */
				if (sp >> s & 1) {
					live[s] += ev.u.alloc.size;
					if (live[s] > open_peak[s])
						open_peak[s] = live[s];
				}
			}
			if (sp && map_put(&lives, ev.u.alloc.addr, ev.u.alloc.size << SP_N | sp) < 0)
				goto oom;
			if (!sp && old)
				map_del(&lives, ev.u.alloc.addr);
		} else if (ev.type == STP_EV_FREE) {
			uint64_t *old = map_get(&lives, ev.u.free.addr);
			if (old) {
				for (int s = 0; s < SP_N; s++)
					if (*old >> s & 1)
						live[s] -= *old >> SP_N;
				map_del(&lives, ev.u.free.addr);
			}
		}
		if (ev.type == STP_EV_ALLOC && ev.u.alloc.kind == STP_MEM_DEVICE) {
			any_device = 1;
			any_device_tensors |= stp_pool_framework(ev.u.alloc.pool);
		}
		if (ev.type == STP_EV_ALLOC && ev.u.alloc.kind == STP_MEM_HOST && stp_pool_framework(ev.u.alloc.pool))
			any_tensors = 1;
		if (ev.type == STP_EV_FOLD && open_begin != UINT64_MAX)
			open_like = ev.u.fold.like;
		if (ev.type == STP_EV_ALLOC && ev.u.alloc.pool == STP_POOL_JAX)
			any_jax = 1;
		if (ev.type != STP_EV_MARKER)
			continue;
		if (ev.u.marker.kind == STP_MARK_ITER_BEGIN) {
			open_begin = ev.seq;
			memcpy(open_peak, live, sizeof live);
			if (first_begin == UINT64_MAX)
				first_begin = ev.seq;
			open_index = ev.u.marker.value;
			open_like = -1;
		} else if (ev.u.marker.kind == STP_MARK_ITER_END && open_begin != UINT64_MAX) {
			if (nits == capits) {
				capits = capits ? 2 * capits : 64;
				iterwin *ni = realloc(its, capits * sizeof *ni);
				if (!ni)
					goto oom;
				its = ni;
			}
			its[nits] = (iterwin){open_begin, ev.seq + 1, open_index, open_like, {0}};
			memcpy(its[nits++].peak, open_peak, sizeof open_peak);
			open_begin = UINT64_MAX;
		}
	}
	if (k < 0) {
		snprintf(err, errlen, "%s", stp_reader_error(rd));
		goto out;
	}
	stp_reader_close(rd);
	rd = NULL;
	map_free(&lives);
	for (size_t j = 0; w->stream && j < nits; j++)
		w->stream->folded += its[j].like >= 0;
	int want_device = w->device_only && any_device;
	/* a PyTorch GPU run: the allocations of PyTorch's allocator (its
	 * tensors, pool 1), which is what libstalloc replaces; the device
	 * memory other libraries take with cudaMalloc themselves (cuBLAS's
	 * handle workspaces, 64 MiB each on an H100) never reaches it, and
	 * planning it would shift every later request's ordinal */
	int want_device_tensors = want_device && any_device_tensors;
	/* a PyTorch CPU run: its tensors, not the interpreter's heap */
	int want_tensors = w->device_only && !any_device && any_tensors;
	int space = want_device_tensors ? SP_DEVICE_TENSORS : want_device ? SP_DEVICE : want_tensors ? SP_TENSORS : SP_HOST;
	uint64_t begin, end;
	int64_t index = -1;
	if (w->use_seq) {
		begin = w->begin_seq;
		first_begin = begin;
		end = w->end_seq;
		if (end <= begin || begin > last_seq + 1) {
			snprintf(err, errlen, "%s: window [%" PRIu64 ", %" PRIu64 ") is empty or beyond the trace (%" PRIu64
			                      " events)", path, begin, end, last_seq + 1);
			goto out;
		}
		snprintf(notes, sizeof notes, "iteration window given by sequence numbers");
	} else if (!nits) {
		first_begin = begin = 0;
		end = last_seq + 1;
		snprintf(notes, sizeof notes, "no iteration markers: the whole trace is one iteration");
	} else {
		/* the iteration that needs the most memory: where shapes vary from
		 * step to step (sequence lengths), the others fit in its plan;
		 * the first complete one (lazily made state) only when there are
		 * fewer than 3; ties go to the later one (fixed shapes: the last) */
		size_t pick = nits - 1;
		for (size_t j = nits >= 3 ? 1 : 0; j < nits; j++) /* a folded one repeats one written in full */
			if (its[j].like < 0 && its[j].peak[space] > its[pick].peak[space])
				pick = j;
		if (w->iteration >= 0) {
			size_t j;
			for (j = 0; j < nits && its[j].index != w->iteration; j++)
				;
			if (j == nits) {
				snprintf(err, errlen, "%s: no complete iteration %" PRId64 " (the trace has %zu, last %" PRId64 ")",
				         path, w->iteration, nits, its[nits - 1].index);
				goto out;
			}
			if (its[j].like >= 0) {
				snprintf(err, errlen,
				         "%s: iteration %" PRId64 " was folded by the collector (it repeats iteration %" PRId64
				         "): plan from that one, or record with --full",
				         path, w->iteration, its[j].like);
				goto out;
			}
			pick = j;
		} else {
			while (pick > 0 && its[pick].like >= 0) /* one written in full */
				pick--;
		}
		begin = its[pick].begin;
		end = its[pick].end;
		index = its[pick].index;
		snprintf(notes, sizeof notes, "iteration %" PRId64 " of %zu complete ones%s", index, nits,
		         w->iteration < 0 && pick != nits - 1 ? ", the one with the most bytes live" : "");
	}
	r->iteration = index;
	r->begin_seq = begin;
	r->end_seq = end;
	r->trace_events = events;
	r->period = end - begin;
	r->tensors = want_tensors;
	/* the runtime allocator sends what was left out elsewhere (plan 1.1) */
	r->min_size = want_device ? 0 : w->host_min_size;
	r->device = want_device;

	/* ---- pass 2: objects, phases, layers, positions */
	rd = stp_reader_open(path, err, errlen);
	if (!rd)
		goto out;
	c.rd = rd;
	c.r = r;
	uint32_t phase_stack[STACK_MAX], layer_stack[STACK_MAX];
	int nphase = 0, nlayer = 0;
	uint32_t ordinal = 0, pre_ordinal = 0;
	size_t cur_it = 0;  /* index into its of the iteration around the current event */
	int in_iter = 0;
	uint32_t gen = 0;   /* occurrence counters are per iteration: keyed with its index */
	uint64_t unpaired_in = 0, unpaired_out = 0, outlive = 0;
	size_t cut = 0, cut_added = SIZE_MAX;
	uint32_t cut_phase = 0;
	while ((k = stp_reader_next(rd, &ev)) > 0) {
		uint64_t seq = ev.seq;
		if (ev.type == STP_EV_MODULE) {
			if (c.nmods == c.capmods) {
				c.capmods = c.capmods ? 2 * c.capmods : 64;
				modinfo *nm = realloc(c.mods, c.capmods * sizeof *nm);
				if (!nm)
					goto oom;
				c.mods = nm;
			}
			c.mods[c.nmods++] = (modinfo){ev.u.module.base, ev.u.module.size,
			                              fnv(stp_reader_string(rd, ev.u.module.path))};
			c.mods_sorted = 0;
			continue;
		}
		/* iteration bookkeeping for the position map */
		while (cur_it < nits && seq >= its[cur_it].end)
			cur_it++;
		/* a folded iteration's allocations are only those that outlive it:
		 * their positions say nothing */
		in_iter = cur_it < nits && seq >= its[cur_it].begin && its[cur_it].like < 0;
		int in_folded = cur_it < nits && seq >= its[cur_it].begin && its[cur_it].like >= 0;
		gen = (uint32_t)cur_it + 1;
		int inwin = seq >= begin && seq < end;
		uint64_t tick = seq - begin;
		if (ev.type == STP_EV_MARKER && inwin && !w->cuts) {
			const stp_marker_info *m = &ev.u.marker;
			const char *nm = stp_reader_string(rd, m->name);
			if (m->kind == STP_MARK_PHASE_BEGIN && nphase < STACK_MAX) {
				uint32_t id = stp_reqs_add_phase(r, nm, m->value, tick, tick);
				if (!id)
					goto oom;
				phase_stack[nphase++] = id;
			} else if (m->kind == STP_MARK_PHASE_END && nphase) {
				r->phases[phase_stack[--nphase]].t_end = tick + 1;
			}
		}
		if (ev.type == STP_EV_MARKER && inwin) {
			const stp_marker_info *m = &ev.u.marker;
			if (m->kind == STP_MARK_MODULE_ENTER && nlayer < STACK_MAX) {
				uint32_t id = stp_reqs_add_layer(r, stp_reader_string(rd, m->name), m->value, tick, tick);
				if (!id)
					goto oom;
				layer_stack[nlayer++] = id;
			} else if (m->kind == STP_MARK_MODULE_EXIT && nlayer) {
				r->layers[layer_stack[--nlayer]].t_end = tick + 1;
			}
		}
		if (w->cuts && inwin) {
			/* the detector's phases: the cut containing seq */
			while (cut < w->ncuts && w->cuts[cut].end_seq <= seq)
				cut++;
			if (cut < w->ncuts && seq >= w->cuts[cut].begin_seq) {
				if (cut != cut_added) {
					cut_added = cut;
					uint64_t cb = w->cuts[cut].begin_seq > begin ? w->cuts[cut].begin_seq - begin : 0;
					uint64_t ce = w->cuts[cut].end_seq - begin;
					cut_phase = stp_reqs_add_phase(r, w->cuts[cut].name, w->cuts[cut].value, cb,
					                               ce > r->period ? r->period : ce);
					if (!cut_phase)
						goto oom;
				}
				nphase = 1;
				phase_stack[0] = cut_phase;
			} else {
				nphase = 0;
			}
		}
		if (w->stream && ev.type == STP_EV_MARKER && ev.u.marker.kind == STP_MARK_ITER_BEGIN &&
		    stream_push(w->stream, STP_SEV_ITER, (uint64_t)ev.u.marker.value, 0) < 0)
			goto oom;
		if (seq >= end && ev.type != STP_EV_ALLOC && ev.type != STP_EV_FREE)
			continue;
		if (ev.type == STP_EV_ALLOC) {
			const stp_alloc_info *a = &ev.u.alloc;
			/* the planned space: what the runtime allocator will be asked */
			if (want_device && a->kind != STP_MEM_DEVICE)
				continue;
			if (stp_host_mapped(a->kind, a->pool, a->stream))
				continue; /* a mapped storage: no allocator is asked for it */
			if (want_tensors && (a->kind != STP_MEM_HOST || !stp_pool_framework(a->pool)))
				continue;
			if (want_device_tensors && !stp_pool_framework(a->pool)) {
				others_left_out++;
				continue;
			}
			if (w->stream && (want_device || want_tensors || a->size >= w->stream_min_size ||
			                  a->size >= w->host_min_size)) {
				if (map_put(&sopen, a->addr, (uint64_t)w->stream->nobj + 1) < 0 ||
				    stream_push(w->stream, in_folded ? STP_SEV_ALLOC_OUTLIVING : STP_SEV_ALLOC, a->size,
				                w->stream->nobj) < 0)
					goto oom;
				w->stream->nobj++;
			}
			if (!want_device && a->kind == STP_MEM_HOST && a->size < w->host_min_size)
				continue;
			uint64_t cs = callsite_of(&c, a->stack);
			/* position within its iteration, for detect_varying */
			uint64_t poskey = 0;
			/* the first complete iteration makes lazy state: its positions
			 * are not compared when there are 3 or more */
			if (w->detect_varying && in_iter && (nits < 3 || cur_it > 0)) {
				uint64_t ck = mix(cs ^ 0x5bd1e995ull) ^ gen;
				uint64_t *cnt = map_get(&occ, ck);
				uint64_t o = cnt ? ++*cnt : 0;
				if (!cnt && map_put(&occ, ck, 0) < 0)
					goto oom;
				poskey = mix(cs + 0x9E3779B97F4A7C15ull * (o + 1));
				uint64_t *sz = map_get(&pos, poskey);
				if (!sz) {
					if (map_put(&pos, poskey, a->size << 1) < 0)
						goto oom;
				} else if ((*sz >> 1) != a->size) {
					/* varies: the largest seen, for the plan */
					*sz = ((*sz >> 1) > a->size ? *sz >> 1 : a->size) << 1 | 1;
				}
				uint64_t *si = map_get(&seen_in, poskey);
				if (!si) {
					if (map_put(&seen_in, poskey, (uint64_t)gen << 32 | 1) < 0)
						goto oom;
				} else if (*si >> 32 != gen) {
					*si = (uint64_t)gen << 32 | ((*si & 0xffffffffu) + 1);
				}
			}
			if (seq >= end)
				continue;
			long oi = new_obj(&c);
			if (oi < 0)
				goto oom;
			obj *o = &c.objs[oi];
			o->size = a->size;
			o->callsite = cs;
			o->alloc_seq = seq;
			o->req = -1;
			o->pre_ordinal = pre_ordinal;
			if (inwin) {
				stp_req q = {0};
				q.size = a->size ? a->size : 1;
				q.t_start = tick;
				q.t_end = tick; /* until freed: whole period */
				q.phase_start = nphase ? phase_stack[nphase - 1] : 0;
				q.layer_start = nlayer ? layer_stack[nlayer - 1] : 0;
				q.ordinal = ordinal++;
				q.callsite = cs;
				long ri = stp_reqs_add(r, &q);
				if (ri < 0)
					goto oom;
				o->req = ri;
				if (poskey && w->detect_varying) {
					/* the window request at this position, looked up after the pass */
					if (map_put(&occ, poskey ^ 0xA5A5A5A5A5A5A5A5ull, (uint64_t)ri + 1) < 0)
						goto oom;
				}
			} else {
				/* until freed before the first iteration: it outlives start-up */
				if (stp_reqs_add_startup(r, a->size | STP_STARTUP_OUTLIVES) < 0)
					goto oom;
				pre_ordinal++;
			}
			/* a reused address means the old object's free was lost: forget it */
			if (map_put(&c.open, a->addr, (uint64_t)oi) < 0)
				goto oom;
			continue;
		}
		if (ev.type == STP_EV_FREE) {
			uint64_t *sobj = w->stream ? map_get(&sopen, ev.u.free.addr) : NULL;
			if (sobj) {
				if (stream_push(w->stream, STP_SEV_FREE, 0, (uint32_t)(*sobj - 1)) < 0)
					goto oom;
				map_del(&sopen, ev.u.free.addr);
			}
			uint64_t *slot = map_get(&c.open, ev.u.free.addr);
			if (!slot)
				continue;
			long oi = (long)*slot;
			obj *o = &c.objs[oi];
			if (o->req < 0 && seq < first_begin && o->pre_ordinal < r->nstartup)
				r->startup[o->pre_ordinal] &= ~STP_STARTUP_OUTLIVES;
			else if (o->req < 0 && o->alloc_seq < first_begin && first_begin != UINT64_MAX &&
			         o->pre_ordinal < r->nstartup) {
				/* made in start-up, freed in an iteration before the window */
				if (nuntil == capuntil) {
					capuntil = capuntil ? 2 * capuntil : 64;
					uint32_t *nu = realloc(until, capuntil * 2 * sizeof *nu);
					if (!nu)
						goto oom;
					until = nu;
				}
				until[2 * nuntil] = o->pre_ordinal;
				until[2 * nuntil++ + 1] = pre_ordinal;
			}
			if (seq >= end) {
				continue; /* still live at the end of the window */
			}
			if (inwin && o->req >= 0) {
				stp_req *q = &r->req[o->req];
				q->t_end = tick;
				q->phase_end = nphase ? phase_stack[nphase - 1] : 0;
				q->layer_end = nlayer ? layer_stack[nlayer - 1] : 0;
			} else if (inwin) {
				/* allocated before the window, freed inside: a candidate partner */
				if (ninc == capinc) {
					capinc = capinc ? 2 * capinc : 256;
					incoming *ni = realloc(inc, capinc * sizeof *ni);
					if (!ni)
						goto oom;
					inc = ni;
				}
				inc[ninc++] = (incoming){mix(o->size ^ mix(o->callsite)), o->callsite, tick, o->alloc_seq,
				                         nphase ? phase_stack[nphase - 1] : 0, nlayer ? layer_stack[nlayer - 1] : 0, 0};
			}
			map_del(&c.open, ev.u.free.addr);
			drop_obj(&c, oi);
		}
	}
	if (k < 0) {
		snprintf(err, errlen, "%s", stp_reader_error(rd));
		goto out;
	}
	/* still open at the end of the window (or of the trace) */
	for (size_t s = 0; s < c.open.cap; s++) {
		if (!c.open.k[s])
			continue;
		obj *o = &c.objs[c.open.v[s]];
		if (o->req < 0) {
			/* allocated before the window, live after it: persistent */
			stp_req q = {0};
			q.size = o->size ? o->size : 1;
			q.flags = STP_REQ_PERSISTENT;
			q.ordinal = o->pre_ordinal;
			q.callsite = o->callsite;
			if (stp_reqs_add(r, &q) < 0)
				goto oom;
			continue;
		}
		stp_req *q = &r->req[o->req];
		if (q->t_end != q->t_start)
			continue; /* freed inside after all (closed above) */
		if (nout == capout) {
			capout = capout ? 2 * capout : 256;
			outgoing *no = realloc(outg, capout * sizeof *no);
			if (!no)
				goto oom;
			outg = no;
		}
		outg[nout++] = (outgoing){mix(o->size ^ mix(o->callsite)), o->callsite, o->alloc_seq, o->req, 0};
	}
	/* the start-up sequence ends with its last persistent request */
	uint32_t last = 0;
	for (size_t i = 0; i < r->n; i++)
		if ((r->req[i].flags & STP_REQ_PERSISTENT) && r->req[i].ordinal + 1 > last)
			last = r->req[i].ordinal + 1;
	r->nstartup = last < r->nstartup ? last : r->nstartup;
	if (nuntil && r->nstartup) {
		r->startup_until = malloc((size_t)r->nstartup * sizeof *r->startup_until);
		if (!r->startup_until)
			goto oom;
		memset(r->startup_until, 0xff, (size_t)r->nstartup * sizeof *r->startup_until);
		for (size_t j = 0; j < nuntil; j++)
			if (until[2 * j] < r->nstartup && until[2 * j + 1] < r->nstartup)
				r->startup_until[until[2 * j]] = until[2 * j + 1];
	}
	/* pair outgoing with incoming by key, in allocation order: first by
	 * (size, call site), then what is left by call site alone (a tensor
	 * whose size changes from step to step, as the batch of a loop over
	 * sequences of varying length) */
	for (int round = 0; round < 2; round++) {
	if (round) {
		for (size_t j = 0; j < ninc; j++)
			inc[j].key = inc[j].used ? UINT64_MAX : mix(inc[j].cs);
		for (size_t j = 0; j < nout; j++)
			outg[j].key = outg[j].paired ? UINT64_MAX : mix(outg[j].cs);
	}
	if (ninc)
		qsort(inc, ninc, sizeof *inc, cmp_incoming);
	if (nout)
		qsort(outg, nout, sizeof *outg, cmp_outgoing);
	size_t a0 = 0;
	for (size_t b0 = 0; b0 < nout; b0++) {
		if (outg[b0].paired || outg[b0].key == UINT64_MAX)
			continue;
		while (a0 < ninc && (inc[a0].key < outg[b0].key || inc[a0].used))
			a0++;
		stp_req *q = &r->req[outg[b0].req];
		if (a0 < ninc && inc[a0].key == outg[b0].key) {
			outg[b0].paired = 1;
			/* a partner freed after this one is allocated: the previous
			 * iteration's instance is still live when this one comes
			 * (`loss = f(...)` in a loop).  Whole iteration (t_end stays
			 * t_start), and a spare range that the instances take in turn */
			int outlives = inc[a0].free_tick >= q->t_start;
			stp_req spare = *q;
			spare.flags |= STP_REQ_SPARE;
			if (!outlives)
				q->t_end = inc[a0].free_tick;
			q->phase_end = inc[a0].phase;
			q->layer_end = inc[a0].layer;
			inc[a0++].used = 1;
			if (outlives && stp_reqs_add(r, &spare) < 0) /* q is stale from here */
				goto oom;
			outlive += outlives;
		}
	}
	}
	for (size_t j = 0; j < nout; j++)
		unpaired_out += !outg[j].paired; /* t_end == t_start: live the whole iteration */
	for (size_t j = 0; j < ninc; j++)
		unpaired_in += !inc[j].used;
	/* varying sizes: planned at the largest seen at that position, so any
	 * of the sizes seen fits its range (the reusable space sized from the
	 * observed variation); a spare of the request too */
	uint64_t varying = 0, absent = 0;
	uint32_t compared = 0; /* the iterations compared: written in full (folded ones are not), the first left out of 3+ */
	for (size_t j = nits >= 3 ? 1 : 0; j < nits; j++)
		compared += its[j].like < 0;
	if (w->detect_varying && pos.cap) {
		for (size_t s = 0; s < pos.cap; s++) {
			if (!pos.k[s])
				continue;
			uint64_t *si = map_get(&seen_in, pos.k[s]);
			int missing = si && (*si & 0xffffffffu) < compared;
			if (!(pos.v[s] & 1) && !missing)
				continue;
			uint64_t *ri = map_get(&occ, pos.k[s] ^ 0xA5A5A5A5A5A5A5A5ull);
			if (!ri || !*ri || (r->req[*ri - 1].flags & (STP_REQ_DYNAMIC | STP_REQ_VARYING)))
				continue;
			stp_req *q = &r->req[*ri - 1];
			if ((pos.v[s] & 1) && w->detect_varying == STP_VARYING_DYNAMIC) {
				q->flags |= STP_REQ_DYNAMIC;
				varying++;
			} else if (pos.v[s] & 1) {
				q->flags |= STP_REQ_VARYING;
				q->size = pos.v[s] >> 1 > q->size ? pos.v[s] >> 1 : q->size;
				varying++;
			} else {
				absent++;
			}
		}
		/* a spare is its request's twin (same ordinal): same size */
		map vsize = {0};
		for (size_t i = 0; i < r->n; i++)
			if ((r->req[i].flags & STP_REQ_VARYING) && !(r->req[i].flags & STP_REQ_SPARE) &&
			    map_put(&vsize, (uint64_t)r->req[i].ordinal + 1, r->req[i].size) < 0) {
				map_free(&vsize);
				goto oom;
			}
		for (size_t i = 0; i < r->n && vsize.n; i++) {
			const uint64_t *v = (r->req[i].flags & STP_REQ_SPARE) ? map_get(&vsize, (uint64_t)r->req[i].ordinal + 1) : NULL;
			if (v) {
				r->req[i].flags |= STP_REQ_VARYING;
				r->req[i].size = *v;
			}
		}
		map_free(&vsize);
	}
	/* open phases and layers end with the window */
	for (uint32_t j = 1; j < r->nphases; j++)
		if (r->phases[j].t_end <= r->phases[j].t_begin)
			r->phases[j].t_end = r->period;
	for (uint32_t j = 1; j < r->nlayers; j++)
		if (r->layers[j].t_end <= r->layers[j].t_begin)
			r->layers[j].t_end = r->period;
	size_t nl = strlen(notes);
	if (want_tensors)
		snprintf(notes + nl, sizeof notes - nl, any_jax ? "; JAX's buffers" : "; tensor allocations");
	else if (!want_device && w->host_min_size)
		snprintf(notes + nl, sizeof notes - nl, "; host allocations of %" PRIu64 " B or more", w->host_min_size);
	else if (want_device_tensors)
		snprintf(notes + nl, sizeof notes - nl,
		         "; device tensors (%s); %" PRIu64
		         " device allocations of other libraries (cuBLAS's workspaces, ...) not planned",
		         any_jax ? "JAX's buffers" : "PyTorch's allocator", others_left_out);
	else
		snprintf(notes + nl, sizeof notes - nl, "; %s allocations", want_device ? "device" : "all");
	if (unpaired_out) {
		nl = strlen(notes);
		snprintf(notes + nl, sizeof notes - nl,
		         "; %" PRIu64 " allocated in the iteration and not freed by its end without a partner: kept for the "
		         "whole iteration",
		         unpaired_out);
	}
	if (outlive) {
		nl = strlen(notes);
		snprintf(notes + nl, sizeof notes - nl,
		         "; %" PRIu64 " outlive the iteration (the next one's is allocated before it is freed): a spare range each",
		         outlive);
	}
	if (unpaired_in) {
		nl = strlen(notes);
		snprintf(notes + nl, sizeof notes - nl,
		         "; %" PRIu64 " freed in the iteration but allocated before it without a partner: not planned",
		         unpaired_in);
	}
	if (absent) {
		nl = strlen(notes);
		snprintf(notes + nl, sizeof notes - nl, "; %" PRIu64 " %s not made in every iteration (the number of operations varies)",
		         absent, absent == 1 ? "is" : "are");
	}
	if (varying) {
		nl = strlen(notes);
		snprintf(notes + nl, sizeof notes - nl, "; %" PRIu64 " vary in size across iterations: %s", varying,
		         w->detect_varying == STP_VARYING_DYNAMIC ? "dynamic" : "planned at the largest seen");
	}
	r->shapes_vary = varying + absent > 0;
	r->sizes_vary = varying > 0;
	r->iterations = nits;
	r->notes = stp_reqs_string(r, notes);
	r->source = stp_reqs_string(r, path);
	r->program = program[0] && program[0] != '\n' ? stp_reqs_string(r, program) : 0;
	rc = stp_reqs_check(r, err, errlen);
	goto out;
oom:
	snprintf(err, errlen, "%s: out of memory", path);
out:
	if (rd)
		stp_reader_close(rd);
	free(its);
	map_free(&c.open);
	map_free(&pos);
	map_free(&occ);
	map_free(&sopen);
	map_free(&lives);
	map_free(&seen_in);
	free(c.objs);
	free(c.stack_hash);
	free(c.mods);
	free(inc);
	free(outg);
	free(until);
	if (rc) {
		stp_reqs_free(r);
		if (w->stream)
			stp_stream_free(w->stream);
	}
	return rc;
}
