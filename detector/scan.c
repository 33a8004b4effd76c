/*
 * scan.c - pass 1 over the trace: the process and its modules, per memory
 * space the allocation counts, live bytes, peak (seq and time) and reserved
 * bytes, the markers (handed to windows.c), and, while the trace has shown
 * no iteration marker, the allocation tokens that period.c detects
 * iterations from.
 *
 * Memory: per live object one 16-byte map entry (address -> slot) and 13
 * bytes of slot (size, space, free list); per FREE event 4 bytes (the slot
 * it ends, so pass 2 needs no address map; not for the timeline alone), plus the detection window (20 bytes per allocation, at most
 * opt.detect_max_allocs, dropped as soon as an iteration marker shows up).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "det.h"
#include "space.h"

void det_marker(stp_det *d, const stp_reader *r, const stp_event *ev, uint64_t live_total);
void det_marker_live(stp_det *d, uint64_t seq, uint64_t live_total);
void det_markers_end(stp_det *d, uint64_t seq, uint64_t ns);

static inline uint32_t token_of(uint64_t size, uint32_t stack)
{
	uint64_t h = size * 0x9e3779b97f4a7c15ull ^ (uint64_t)stack * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	return (uint32_t)h ^ (uint32_t)(h >> 32);
}

static int push_token(stp_det *d, uint32_t tok, uint64_t seq, uint64_t live, uint64_t size)
{
	if (d->ntok == d->tok_cap) {
		if (d->tok_cap >= d->opt.detect_max_allocs)
			return 0;
		uint64_t nc = d->tok_cap ? d->tok_cap * 2 : 4096;
		if (nc > d->opt.detect_max_allocs)
			nc = d->opt.detect_max_allocs;
		uint32_t *t = realloc(d->tok, nc * sizeof *t);
		if (!t)
			return -1;
		d->tok = t;
		uint64_t *s = realloc(d->tok_seq, nc * sizeof *s);
		if (!s)
			return -1;
		d->tok_seq = s;
		uint64_t *l = realloc(d->tok_live, nc * sizeof *l);
		if (!l)
			return -1;
		d->tok_live = l;
		uint32_t *z = realloc(d->tok_size, nc * sizeof *z);
		if (!z)
			return -1;
		d->tok_size = z;
		d->tok_cap = nc;
	}
	d->tok[d->ntok] = tok;
	d->tok_seq[d->ntok] = seq;
	d->tok_live[d->ntok] = live;
	d->tok_size[d->ntok] = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
	d->ntok++;
	return 0;
}

void det_tokens_free(stp_det *d)
{
	free(d->tok);
	free(d->tok_size);
	free(d->tok_seq);
	free(d->tok_live);
	d->tok = d->tok_size = NULL;
	d->tok_seq = d->tok_live = NULL;
	d->ntok = d->tok_cap = 0;
}

#define PACK(size, space) (((size) << 8) | (space))
/* p1_size's top bit: a device allocation of a framework's allocator (pool 1) */
#define P1_POOL (1ull << 63)
#define P1_BYTES(v) ((v) & ~P1_POOL)

/* A device allocation (or its end) counted as the framework allocator's
 * or another library's, and their peaks. */
static void device_split(stp_det *d, uint32_t si, uint64_t v, int add)
{
	stp_det_space *sp = &d->spaces[si];
	det_space_state *ss = &d->sstate[si];
	if (sp->kind != STP_MEM_DEVICE)
		return;
	uint64_t size = P1_BYTES(v);
	uint64_t *live = v & P1_POOL ? &ss->pool_live : &ss->other_live;
	*live = add ? *live + size : *live - size;
	if (!add)
		return;
	if (v & P1_POOL) {
		sp->pool_allocs++;
		if (ss->pool_live > sp->pool_peak_bytes)
			sp->pool_peak_bytes = ss->pool_live;
	} else {
		sp->other_allocs++;
		sp->other_bytes_allocated += size;
		if (ss->other_live > sp->other_peak_bytes)
			sp->other_peak_bytes = ss->other_live;
	}
}

/* After pass 1: the access patterns judge the objects of the spaces API
 * events named, except the plain host heap of a run whose events also name
 * device memory or tensors (a CUDA program's host buffers are named only
 * as the ends of copies: every other host object would be "unused"). */
/* The objects live at a folded iteration's peak (one above nothing: it
 * holds at least one): those with events live at the FOLD event (the ones
 * analyze.c's mark_peak lists there) and the ones it left out that its
 * peak holds (1.3; a 1.2 FOLD does not count them: one).  A peak reached
 * by an object allocated after the FOLD event with an event of its own
 * (one that outlives the iteration) holds that one. */
static uint64_t fold_peak_objects(const stp_fold_info *f, const stp_fold_space *x, const det_space_state *ss)
{
	uint64_t n = ss->live_objects + (f->counted ? x->peak_objects : 1);
	return n ? n : 1;
}

/* An iteration written in full ends: each space's highest moment in it
 * (above its start), for a later folded iteration that repeats it. */
static int keep_iter_peaks(stp_det *d)
{
	if (!d->iter_open || d->iters[d->iter_open - 1].folded)
		return 0;
	for (uint32_t i = 0; i < d->nspaces; i++) {
		det_space_state *ss = &d->sstate[i];
		if (ss->it_peak_seq == UINT64_MAX)
			continue;
		if (d->nipeaks == d->ipeaks_cap) {
			uint32_t nc = d->ipeaks_cap ? d->ipeaks_cap * 2 : 64;
			struct det_iter_peak *n = realloc(d->ipeaks, nc * sizeof *n);
			if (!n)
				return -1;
			d->ipeaks = n;
			d->ipeaks_cap = nc;
		}
		d->ipeaks[d->nipeaks++] = (struct det_iter_peak){.iter = d->iters[d->iter_open - 1].index, .space = i,
		                                                 .seq = ss->it_peak_seq, .ns = ss->it_peak_ns,
		                                                 .bytes = ss->it_peak_live,
		                                                 .objects = (uint32_t)(ss->it_peak_objects < UINT32_MAX
		                                                                                ? ss->it_peak_objects
		                                                                                : UINT32_MAX)};
		ss->it_peak_seq = UINT64_MAX;
	}
	return 0;
}

/* After pass 1, each space whose peak is a folded iteration's, which
 * repeats iteration peak_like (set at the FOLD): its objects are those
 * live at that iteration's highest moment (the latest iteration of that
 * number written in full before the FOLD, of this space), which held no
 * more bytes (it came before: the peak then was at least as high, the
 * window too when that moment lies in a --window, which it must).  Once
 * at the end, not at each FOLD that raises the peak (a slow leak raises
 * it every step): one walk of the kept moments. */
static void resolve_peak_likes(stp_det *d)
{
	for (uint32_t si = 0; si < d->nspaces; si++) {
		stp_det_space *sp = &d->spaces[si];
		if (sp->peak_like < 0)
			continue;
		int64_t like = sp->peak_like;
		sp->peak_like = -1;
		for (uint32_t k = d->nipeaks; k-- > 0;) {
			const struct det_iter_peak *p = &d->ipeaks[k];
			if (p->iter != like || p->space != si || p->seq >= sp->peak_seq)
				continue;
			if (d->opt.has_window && (p->ns < d->opt.window_begin_ns || p->ns >= d->opt.window_end_ns))
				break;
			sp->peak_like = like;
			sp->peak_like_seq = p->seq;
			sp->peak_like_bytes = p->bytes;
			sp->peak_objects = p->objects;
			break;
		}
	}
}

static void judge_spaces(stp_det *d)
{
	int other = 0;
	uint32_t heap = UINT32_MAX;
	for (uint32_t i = 0; i < d->nspaces; i++) {
		if (d->spaces[i].kind == STP_MEM_HOST && d->spaces[i].device != DET_DEV_TENSORS)
			heap = i;
		else
			other |= d->space_judged[i];
	}
	if (other && heap != UINT32_MAX)
		d->space_judged[heap] = 0;
}

static int p1_grow(stp_det *d)
{
	uint32_t nc = d->p1_cap ? d->p1_cap * 2 : 4096;
	uint64_t *sz = realloc(d->p1_size, (size_t)nc * sizeof *sz);
	if (!sz)
		return -1;
	d->p1_size = sz;
	uint8_t *sp = realloc(d->p1_space, nc);
	if (!sp)
		return -1;
	d->p1_space = sp;
	uint32_t *nx = realloc(d->p1_next, (size_t)nc * sizeof *nx);
	if (!nx)
		return -1;
	d->p1_next = nx;
	d->p1_cap = nc;
	return 0;
}

static int push_fslot(stp_det *d, uint32_t slot)
{
	if (d->nfslot == d->fslot_cap) {
		uint64_t nc = d->fslot_cap ? d->fslot_cap * 2 : 4096;
		uint32_t *n = realloc(d->fslot, nc * sizeof *n);
		if (!n)
			return -1;
		d->fslot = n;
		d->fslot_cap = nc;
	}
	d->fslot[d->nfslot++] = slot;
	return 0;
}

static int push_reuse(stp_det *d, uint64_t seq, uint32_t slot)
{
	if (d->nreuse == d->reuse_cap) {
		uint32_t nc = d->reuse_cap ? d->reuse_cap * 2 : 16;
		det_reuse *n = realloc(d->reuse, nc * sizeof *n);
		if (!n)
			return -1;
		d->reuse = n;
		d->reuse_cap = nc;
	}
	d->reuse[d->nreuse++] = (det_reuse){seq, slot};
	return 0;
}

/* The annotations the detector reads: the collector's on how accesses were
 * recorded (the Compute Sanitizer backend's, docs/accesses.md), and an
 * imported snapshot's segments dropped as inconsistent (docs/snapshot.md). */
static void note_annotation(stp_det *d, const char *name, int64_t v)
{
	static const char pre[] = "stprof.sanitizer";
	if (name && !strcmp(name, "stprof.segments_dropped")) {
		d->res.segments_dropped = v > 0 ? (uint64_t)v : 0; /* snap_import.c */
		return;
	}
	/* a rank learnt after the start (collector/core/rank_late.c: a
	 * torch.multiprocessing.spawn worker), its PROCESS event's rank -1 */
	int32_t *late = !name                                ? NULL
	                : !strcmp(name, "stprof.rank")       ? &d->res.rank
	                : !strcmp(name, "stprof.world_size") ? &d->res.world_size
	                : !strcmp(name, "stprof.local_rank") ? &d->res.local_rank
	                                                     : NULL;
	if (late) {
		if (*late < 0 && v >= 0 && v <= INT32_MAX) {
			*late = (int32_t)v;
			d->res.rank_late |= late == &d->res.rank;
		}
		return;
	}
	if (!name || strncmp(name, pre, sizeof pre - 1))
		return;
	const char *k = name + sizeof pre - 1;
	uint64_t u = v > 0 ? (uint64_t)v : 0;
	if (!*k)
		d->res.acc.sanitizer = (int32_t)v;
	else if (!strcmp(k, "_launches"))
		d->res.acc.launches = u;
	else if (!strcmp(k, "_sampled"))
		d->res.acc.sampled = u;
	else if (!strcmp(k, "_timed_launches"))
		d->res.acc.timed = u;
	else if (!strcmp(k, "_unread_launches"))
		d->res.acc.unread = u;
	else if (!strcmp(k, "_ranges_dropped"))
		d->res.acc.dropped = u;
	else if (!strcmp(k, "_unplaced_launches"))
		d->res.acc.unplaced = u;
	else if (!strcmp(k, "_patched_kinds"))
		d->res.acc.kinds = (uint32_t)u;
}

/* An allocator's refused attempt (stp_refused_attempt): the first of a
 * request's opens it, on its thread; the request is then served (its
 * ALLOC on that thread: attempt_served, with the request's bytes) or
 * refused (a REFUSED of it closes it).  An open one of another thread, or
 * one the trace ends on, is a request whose outcome is not known. */
static void attempt_note(stp_det_space *sp, det_space_state *ss, uint32_t tid, const stp_det_refusal *x)
{
	sp->refused_attempts++;
	if (ss->attempt_open && ss->attempt_tid == tid)
		return;
	if (ss->attempt_open)
		sp->retry_unknown++;
	ss->attempt_open = 1;
	ss->attempt_tid = tid;
	ss->attempt_first = *x;
}

static void attempt_served(stp_det_space *sp, det_space_state *ss, uint64_t bytes)
{
	if (!sp->retried++) {
		sp->retried_first = ss->attempt_first;
		sp->retried_first.bytes = bytes; /* the request's, not the allocator's attempt's */
	}
	ss->attempt_open = 0;
}

/* --window: what is live when the window opens is its peak until an
 * allocation inside it rises above (a window of frees alone, or one that
 * opens at the step's high-water mark, has the bytes carried into it as
 * its peak).  Called before the first event at or after the window's
 * start; the peak is the state just before event `seq` (analyze.c marks
 * the objects live at it there). */
static void open_window(stp_det *d, uint64_t seq)
{
	for (uint32_t i = 0; i < d->nspaces; i++) {
		stp_det_space *sp = &d->spaces[i];
		const det_space_state *ss = &d->sstate[i];
		if (!ss->live_bytes)
			continue;
		sp->peak_bytes = ss->live_bytes;
		sp->peak_objects = ss->live_objects;
		sp->peak_seq = seq;
		sp->peak_ns = d->opt.window_begin_ns;
		sp->peak_at_window_begin = 1;
		sp->peak_like = -1;
	}
}

int det_scan(stp_det *d)
{
	char err[512];
	stp_reader *r = stp_reader_open(d->path, err, sizeof err);
	if (!r) {
		d->error = strdup(err);
		return -1;
	}
	struct stat st;
	uint64_t fsize = stat(d->path, &st) == 0 ? (uint64_t)st.st_size : 0;
	det_map live, segs, small; /* small: allocations ignored (under --min-size, or of an
	                            * impossible size), whose frees are not "unknown" */
	if (det_map_init(&live, 1024) < 0 || det_map_init(&segs, 64) < 0 || det_map_init(&small, 64) < 0) {
		stp_reader_close(r);
		return -1;
	}
	int want_tokens = d->opt.iter_mode == STP_DET_ITER_AUTO || d->opt.iter_mode == STP_DET_ITER_DETECT;
	int tensor_tokens = 0; /* tokens are the tensor space's only */
	uint64_t live_total = 0, nev = 0, heap_interval = 0;
	int have_t0 = 0, window_open = 0, rc;
	d->p1_free = UINT32_MAX;
	stp_event ev;
	while ((rc = stp_reader_next(r, &ev)) > 0) {
		if (!have_t0) {
			d->t0 = ev.time_ns;
			have_t0 = 1;
		}
		uint64_t ns = ev.time_ns > d->t0 ? ev.time_ns - d->t0 : 0;
		if (ns > d->end_ns)
			d->end_ns = ns;
		d->last_seq = ev.seq;
		d->cur_ns = ns;
		if (d->opt.has_window && !window_open && ns >= d->opt.window_begin_ns) {
			window_open = 1;
			open_window(d, ev.seq);
		}
		if ((++nev & 0xfffff) == 0 && d->opt.progress)
			d->opt.progress(d->opt.progress_ctx, 1, stp_reader_stats(r)->bytes, fsize);
		switch (ev.type) {
		case STP_EV_ALLOC: {
			const stp_alloc_info *a = &ev.u.alloc;
			if (!DET_KEEPS(d, a->size)) {
				if (a->size > DET_MAX_SIZE)
					d->res.huge_ignored++;
				else
					d->res.small_ignored++;
				if (det_map_put(&small, a->addr, 1, NULL) < 0)
					goto oom;
				break;
			}
			uint64_t was_small;
			if (d->res.small_ignored || d->res.huge_ignored)
				det_map_del(&small, a->addr, &was_small);
			int si = det_space_index(d, a->kind, DET_ALLOC_DEVICE(a));
			if (si < 0)
				goto oom;
			/* the slot pass 2 will give this object: the same LIFO free
			 * list, so pass 2 needs no address map */
			uint32_t slot;
			int fresh = d->p1_free == UINT32_MAX;
			if (!fresh) {
				slot = d->p1_free;
				d->p1_free = d->p1_next[slot];
			} else {
				if (d->p1_nslots == d->p1_cap && p1_grow(d) < 0)
					goto oom;
				slot = d->p1_nslots++;
			}
			uint64_t old;
			int put = det_map_put(&live, a->addr, slot, &old);
			if (put < 0)
				goto oom;
			if (put == 0) { /* a live address handed out again: its free was lost */
				d->res.reused_live++;
				uint32_t os = d->p1_space[old];
				d->sstate[os].live_bytes -= P1_BYTES(d->p1_size[old]);
				d->sstate[os].live_objects--;
				live_total -= P1_BYTES(d->p1_size[old]);
				device_split(d, os, d->p1_size[old], 0);
				/* pass 2 ends the old object (its slot goes on the free
				 * list) and pops it again: undo the pop, reuse old */
				if (fresh) {
					d->p1_nslots--;
				} else {
					d->p1_next[slot] = d->p1_free;
					d->p1_free = slot;
				}
				slot = (uint32_t)old;
				det_map_put(&live, a->addr, slot, NULL);
				if (d->want_slots && push_reuse(d, ev.seq, slot) < 0)
					goto oom;
			}
			/* a sampled heap object counts for the bytes it stands for */
			double w = det_alloc_weight(heap_interval, a);
			uint64_t bytes = det_weighted(a->size, w);
			d->p1_size[slot] = bytes | (a->kind == STP_MEM_DEVICE && stp_pool_framework(a->pool) ? P1_POOL : 0);
			d->p1_space[slot] = (uint8_t)si;
			device_split(d, (uint32_t)si, d->p1_size[slot], 1);
			stp_det_space *sp = &d->spaces[si];
			det_space_state *ss = &d->sstate[si];
			sp->jax |= a->pool == STP_POOL_JAX;
			sp->allocs++;
			sp->est_allocs += w;
			if (w != 1.0 || (heap_interval && a->kind == STP_MEM_HOST && a->pool == 0 && a->size < heap_interval))
				sp->sampled_allocs++;
			if (heap_interval > sp->sample_interval && a->kind == STP_MEM_HOST && a->pool == 0)
				sp->sample_interval = heap_interval;
			sp->bytes_allocated += bytes;
			ss->live_bytes += bytes;
			ss->live_objects++;
			if (ss->attempt_open && ss->attempt_tid == ev.tid) /* after refused attempts */
				attempt_served(sp, ss, a->requested ? a->requested : a->size);
			live_total += bytes;
			/* the allocator's blocks lie inside its segments (pool 1's,
			 * when it is recorded): more than reserved means segment
			 * events are missing (stp_det_space.over_reserved); counted
			 * before the first segment too, and kept only when the
			 * space has segments (as allocsim's replay does), so an
			 * allocated peak above the reserved one is always said */
			if ((sp->pool_allocs ? ss->pool_live : ss->live_bytes) > ss->reserved)
				sp->over_reserved++;
			if (ss->live_bytes > sp->peak_bytes &&
			    (!d->opt.has_window || (ns >= d->opt.window_begin_ns && ns < d->opt.window_end_ns))) {
				sp->peak_bytes = ss->live_bytes;
				sp->peak_objects = ss->live_objects;
				sp->peak_seq = ev.seq;
				sp->peak_ns = ns;
				sp->peak_at_window_begin = 0;
				sp->peak_like = -1;
			}
			if (d->iter_open && ss->live_bytes > ss->it_peak_live) {
				ss->it_peak_live = ss->live_bytes;
				ss->it_peak_seq = ev.seq;
				ss->it_peak_ns = ns;
				ss->it_peak_objects = ss->live_objects;
			}
			/* a PyTorch run: iterations are detected from its tensors
			 * alone (the interpreter's heap before and around them only
			 * blurs the period) unless the host heap is asked for */
			int is_tensor = sp->kind == STP_MEM_HOST && sp->device == DET_DEV_TENSORS;
			if (want_tokens && is_tensor && !tensor_tokens && d->opt.space != STP_DET_SPACE_HOST) {
				tensor_tokens = 1;
				d->ntok = 0;
				d->total_allocs = 0;
			}
			if (!tensor_tokens || is_tensor)
				d->total_allocs++; /* the allocations tokens stand for */
			if (want_tokens && (!tensor_tokens || is_tensor) &&
			    push_token(d, token_of(a->size, a->stack), ev.seq, tensor_tokens ? ss->live_bytes : live_total,
			               a->size) < 0)
				goto oom;
			if (d->have_iter_markers)
				det_marker_live(d, ev.seq, live_total);
			break;
		}
		case STP_EV_FREE: {
			uint64_t v;
			if (!det_map_del(&live, ev.u.free.addr, &v)) {
				if (!(d->res.small_ignored || d->res.huge_ignored) || !det_map_del(&small, ev.u.free.addr, &v))
					d->res.unknown_frees++;
				if (d->want_slots && push_fslot(d, UINT32_MAX) < 0)
					goto oom;
				break;
			}
			uint32_t slot = (uint32_t)v, si = d->p1_space[slot];
			uint64_t size = P1_BYTES(d->p1_size[slot]);
			device_split(d, si, d->p1_size[slot], 0);
			d->p1_next[slot] = d->p1_free;
			d->p1_free = slot;
			if (d->want_slots && push_fslot(d, slot) < 0)
				goto oom;
			d->spaces[si].frees++;
			d->spaces[si].bytes_freed += size;
			d->sstate[si].live_bytes -= size;
			d->sstate[si].live_objects--;
			live_total -= size;
			break;
		}
		case STP_EV_SEGMENT_RESERVE: {
			int si = det_space_index(d, ev.u.segment.kind, ev.u.segment.device);
			if (si < 0)
				goto oom;
			uint64_t old;
			int put = det_map_put(&segs, ev.u.segment.addr, PACK(ev.u.segment.size, (uint64_t)si), &old);
			if (put < 0)
				goto oom;
			if (put == 0)
				d->sstate[old & 0xff].reserved -= old >> 8;
			d->sstate[si].reserved += ev.u.segment.size;
			if (d->sstate[si].reserved > d->spaces[si].reserved_peak)
				d->spaces[si].reserved_peak = d->sstate[si].reserved;
			break;
		}
		case STP_EV_SEGMENT_RELEASE: {
			uint64_t v;
			if (det_map_del(&segs, ev.u.segment.addr, &v))
				d->sstate[v & 0xff].reserved -= v >> 8;
			break;
		}
		case STP_EV_REFUSED: { /* the first and last ones' moments: what was live then */
			const stp_alloc_info *a = &ev.u.alloc;
			int si = det_space_index(d, a->kind, DET_ALLOC_DEVICE(a));
			if (si < 0)
				goto oom;
			stp_det_space *sp = &d->spaces[si];
			det_space_state *ss = &d->sstate[si];
			stp_det_refusal x = {.bytes = stp_refused_bytes(a), .live = ss->live_bytes, .reserved = ss->reserved,
			                     .ns = ns, .seq = ev.seq, .stack = a->stack};
			if (stp_refused_attempt(a)) {
				attempt_note(sp, ss, ev.tid, &x);
				break;
			}
			if (ss->attempt_open && ss->attempt_tid == ev.tid) /* the attempts were for this request */
				ss->attempt_open = 0;
			sp->refused_last = x;
			if (!sp->refused++)
				sp->refused_first = sp->refused_last;
			break;
		}
		case STP_EV_API:
			if (ev.u.api.nranges)
				d->have_ranges = 1;
			/* the spaces whose objects API events name (judge_spaces) */
			for (uint32_t k = 0; k < ev.u.api.nranges; k++) {
				uint64_t v;
				if (det_map_get(&live, ev.u.api.ranges[k].addr, &v))
					d->space_judged[d->p1_space[(uint32_t)v]] = 1;
			}
			break;
		case STP_EV_MARKER:
			det_heap_sample_note(r, &ev, &heap_interval);
			if (ev.u.marker.kind == STP_MARK_ITER_END && keep_iter_peaks(d) < 0)
				goto oom;
			if (ev.u.marker.kind == STP_MARK_ITER_BEGIN)
				for (uint32_t i = 0; i < d->nspaces; i++) {
					det_space_state *ss = &d->sstate[i];
					ss->iter_begin_live = ss->it_peak_live = ss->live_bytes;
					ss->it_peak_seq = UINT64_MAX;
				}
			if (ev.u.marker.kind == STP_MARK_ANNOTATION)
				note_annotation(d, stp_reader_string(r, ev.u.marker.name), ev.u.marker.value);
			det_marker(d, r, &ev, live_total);
			/* the markers make the windows: the tokens are not needed
			 * (kept while one iteration is begun and none ended: see
			 * det_timeline) */
			if (d->have_iter_markers && d->opt.iter_mode == STP_DET_ITER_AUTO && d->tok &&
			    (d->seen_iter_end || d->niters > 1))
				det_tokens_free(d);
			break;
		case STP_EV_FOLD: {
			/* a steady iteration kept as counters: its temporaries count
			 * in the spaces' totals, its peak (above the live bytes at its
			 * start, with what the iteration before left it) in theirs */
			const stp_fold_info *f = &ev.u.fold;
			d->res.folded_iterations++;
			d->res.folded_events += f->elided;
			if (d->iter_open) {
				d->iters[d->iter_open - 1].folded = 1;
				d->iters[d->iter_open - 1].like = f->like;
			}
			uint64_t top = 0;
			for (uint32_t k = 0; k < f->nspaces; k++) {
				const stp_fold_space *x = &f->spaces[k];
				int si = det_fold_space_index(d, x);
				if (si < 0)
					goto oom;
				stp_det_space *sp = &d->spaces[si];
				det_space_state *ss = &d->sstate[si];
				sp->allocs += x->allocs;
				sp->frees += x->allocs;
				/* the sampled ones stand for more */
				sp->est_allocs += (double)(x->allocs - x->sampled) + (double)x->sampled_est;
				sp->sampled_allocs += x->sampled;
				sp->bytes_allocated += x->bytes;
				sp->bytes_freed += x->bytes;
				d->res.folded_allocs += x->allocs;
				sp->folded_allocs += x->allocs;
				sp->folded_bytes += x->bytes;
				uint64_t peak = ss->iter_begin_live + x->carried_in + x->peak;
				top += x->carried_in + x->peak;
				if (peak > sp->peak_bytes &&
				    (!d->opt.has_window || (ns >= d->opt.window_begin_ns && ns < d->opt.window_end_ns))) {
					sp->peak_bytes = peak;
					sp->peak_objects = fold_peak_objects(f, x, ss);
					sp->peak_seq = ev.seq;
					sp->peak_ns = ns;
					sp->peak_at_window_begin = 0;
					sp->peak_like = f->like; /* resolve_peak_likes */
				}
			}
			if (d->have_iter_markers)
				det_marker_live(d, ev.seq, live_total + top);
			break;
		}
		case STP_EV_MODULE: {
			const stp_module_info *m = &ev.u.module;
			if (det_frames_add_module(d->frames, stp_reader_string(r, m->path), m->base, m->size, m->bias,
			                          m->build_id, m->build_id_len) < 0)
				goto oom;
			break;
		}
		case STP_EV_PROCESS:
			if (!d->command) {
				d->command = strdup(stp_reader_string(r, ev.u.process.cmdline));
				d->res.pid = ev.u.process.pid;
				d->res.rank = ev.u.process.rank;
				d->res.local_rank = ev.u.process.local_rank;
				d->res.world_size = ev.u.process.world_size;
			}
			break;
		default:
			break;
		}
	}
	if (rc < 0)
		d->error = strdup(stp_reader_error(r));
	d->stats = *stp_reader_stats(r);
	/* a snapshot (or a detach) is a moment of a program that went on */
	d->snapshot = d->stats.whole && d->stats.end_reason == STP_END_SNAPSHOT;
	resolve_peak_likes(d);
	for (uint32_t i = 0; i < d->nspaces; i++) {
		d->spaces[i].live_bytes_end = d->sstate[i].live_bytes;
		d->spaces[i].live_objects_end = d->sstate[i].live_objects;
		if (!d->spaces[i].reserved_peak)
			d->spaces[i].over_reserved = 0; /* no segments: nothing to be inconsistent with */
		d->spaces[i].retry_unknown += d->sstate[i].attempt_open;
		d->sstate[i] = (det_space_state){0};
	}
	judge_spaces(d);
	det_markers_end(d, d->last_seq + 1, d->end_ns);
	free(d->p1_size);
	free(d->p1_space);
	free(d->p1_next);
	d->p1_size = NULL;
	d->p1_space = NULL;
	d->p1_next = NULL;
	det_map_destroy(&live);
	det_map_destroy(&segs);
	det_map_destroy(&small);
	stp_reader_close(r);
	return 0;
oom:
	det_map_destroy(&live);
	det_map_destroy(&segs);
	det_map_destroy(&small);
	stp_reader_close(r);
	d->error = strdup("out of memory");
	return -1;
}
