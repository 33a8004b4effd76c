/*
 * fold.c - steady-state folding: once a marked loop's iterations repeat,
 * later ones are written as a FOLD event (counters and a digest) instead
 * of their events (docs/trace-format.md, "Folded iterations").
 *
 * Where it sits: between the flush rounds and the output.  Once the first
 * ITER_BEGIN is recorded (stc_fold_activate), every EVENTS chunk the
 * collector writes (the threads' buffers, the CUDA backend's held launches)
 * comes here instead (stc_fold_chunk_locked), is decoded, and is held; each
 * flush round (stc_fold_round_locked) takes the held events below the
 * round's watermark in seq order, cuts them into iterations (ITER_BEGIN to
 * ITER_END; what lies between iterations is never folded), decides the
 * oldest ones and writes them, and returns the watermark lowered to the
 * first event still held.  Everything runs on the flushing thread under the
 * output lock; the program's threads never wait for it.
 *
 * What is decided, per complete iteration, in order:
 *   - its digest: a sum (order-free: threads interleave differently from
 *     one iteration to the next) of a hash per allocation, free, segment,
 *     API and phase marker over what repeats (sizes, call paths,
 *     kinds, names; not addresses, times or durations), leaving out the
 *     sampled host heap (random by design) and, while it is sampled, the
 *     frees of host-heap blocks allocated before the iteration (as
 *     random: the interpreter's buffers given back when its garbage
 *     collector runs); the free of any other object from before the
 *     iteration counts without its size (the last step's batch and loss:
 *     their sizes are that step's, judged there); and per memory space
 *     the peak of live bytes above the iteration's start (which the last
 *     step's objects still move when they go during it: a loop that keeps
 *     a step's logits until the next step's forward has a peak that
 *     depends on the step before, and the planner's replay needs such
 *     iterations: tests/allocator/test_stalloc_loops.sh, the LSTM);
 *   - its loose digest, the one folding compares: the digest with the
 *     allocations and frees that come ahead of its first phase marker
 *     counted without their sizes, when a phase begins in it.  That part
 *     is the data pipeline's, and a loader that fetches ahead (accelerate's,
 *     under Hugging Face's Trainer: it collates batch i+1 before it hands
 *     out batch i) makes there the next step's sizes: a loop whose lengths
 *     vary would then repeat only the pairs of lengths it has seen.  Its
 *     counts, the peaks and all from the forward on must still repeat, the
 *     FOLD's totals are the iteration's own, and the batch it keeps past
 *     the iteration is written (below); lean_judge compares the digest;
 *   - it is folded when it is not among the first K (g_cfg.fold_keep) nor
 *     the last K of the loop, and an iteration written in full had the same
 *     loose digest and peaks within 1% (+4 KiB) (the table keeps 512
 *     digests, the one found longest ago making room: a loop whose lengths
 *     vary has one per length); otherwise it is written in full, and its
 *     digests join the table.
 *   - The last K: iteration i is decided once K+1 complete iterations
 *     follow it (so whether i+1 is folded is known too); at the end of the
 *     recording the ones left are decided with the same rule, the last K
 *     written in full.  So K+1 iterations and the one under way are held:
 *     what a SIGKILL loses beyond the flush period (exit and exec decide
 *     and write them; a fatal signal writes them as decided so far: the
 *     ones decided folded folded, the rest in full).
 *   - In a folded iteration the FOLD event stands for: its API events, its
 *     phase and module markers, and every object allocated and freed in it,
 *     or allocated in it and freed in the next one when that is folded too
 *     (PyTorch's gradients: made in the backward, freed by the next
 *     zero_grad).  What changes the memory between iterations stays: its
 *     iteration markers and annotations, segment events, the allocations
 *     that outlive it, the frees of objects from before it.  The FOLD event
 *     takes the seq of the first event it stands for and says how many,
 *     and per space its peak and (1.3) how many of the objects it leaves
 *     out, its own and the ones carried in, are live at that peak.
 *   - Sampled host-heap allocations it leaves out differ between iterations:
 *     they are summed per call site and written with the FOLD of the last
 *     folded iteration of a run (or every 1024 folded iterations).
 *
 * Lean iterations (docs/record.md, "Lean iterations"; STPROF_LEAN=0 turns
 * them off): once two consecutive iterations of a Python loop, as they are
 * scanned, match an iteration written in full (STC_LEAN_SAME), or have the
 * shape (the digest without sizes) of one of the last FOLD_SHAPES recorded
 * in full (STC_LEAN_SHAPE: another sequence length each step), the next
 * iterations are recorded lean: a tensor's call path is the one the
 * thread's last full iteration had at the same place in its sequence
 * (collector/torch/torch_lean.c: same Python frames, and same size unless
 * lean began on shapes: it stays SHAPE until it stops) instead of
 * a native walk, and the Python shim hands out no backward sites and
 * (unless the model recomputes) runs no module hooks, so records no module
 * markers (stprof_lean_v1), until the collector says otherwise.  What an
 * iteration is recorded as is decided at its ITER_BEGIN (marker.c,
 * g_lean_now); a change is recorded by the annotation "stprof.lean" (value
 * 1 or 0) right after that marker.  A lean iteration that repeats its
 * reference has the events of a full one but for module markers, which no
 * digest takes, so it is judged like one; one that deviates (a tensor
 * kept, a new size where sizes count, whose paths were walked) is written
 * in full, and the recording goes back to full detail from the next
 * ITER_BEGIN after this thread sees it, until two iterations match again.
 * Only where Python frames are read in place (marker.c checks).
 *
 * Memory: held events are decoded stp_events (about 140 bytes each) in
 * mmap'd arrays; past FOLD_HELD_MAX of them the oldest complete iteration
 * is written in full at once, and an iteration that alone exceeds it is
 * written as it comes (not folded).  The live map (address -> bytes, for
 * the peaks and the frees' sizes) holds the objects allocated since
 * folding started.
 *
 * Lock: the output lock (every caller holds it).  Calls: defs.c and tbuf.c
 * call in; this file calls the output (stc_out_chunk_locked) and mem.
 */
#include <string.h>

#include "fold.h"
#include "sample.h"

#define FOLD_HELD_MAX (1u << 19)  /* held events before forcing decisions */
#define FOLD_SIGS 512             /* digests of iterations written in full */
#define FOLD_SHAPES 8             /* shapes of the last iterations recorded in full */
#define FOLD_SPACES 16
#define FOLD_SITES_EVERY 1024     /* folded iterations between site counters at most */
#define NONE UINT64_MAX

int g_fold_on;
int g_lean_wanted, g_lean_now;
uint32_t g_lean_annotation_id;
uint64_t g_iter_gen; /* face.h; moved by marker.c */

typedef struct hev {              /* a held event */
	stp_event ev;
	uint64_t partner;         /* global index of the matching ALLOC / FREE, NONE */
	uint64_t bytes;           /* ALLOC: what it counts for (weighed when sampled) */
	uint64_t ranges;          /* API: index of its ranges in the range arena */
	int64_t unit;             /* iteration serial, -1 between iterations */
	uint8_t space;            /* space slot (ALLOC, FREE of a known object) */
	uint8_t sampled;          /* a sampled host-heap object: not in the digest */
	uint8_t elide;            /* decided: left out */
	uint8_t known;            /* FREE: its object's size is known */
	float w;                  /* ALLOC of the sampled heap: what it stands for (1/p) */
} hev;

typedef struct space_key {
	uint8_t kind;
	int32_t device;
	uint32_t pool;            /* 1 tensors, 0 the rest */
} space_key;

typedef struct unit {             /* an iteration being held */
	int64_t serial;           /* counts iterations since folding started */
	int64_t value;            /* its markers' value */
	uint64_t first, last;     /* global indexes of ITER_BEGIN and ITER_END */
	int complete;
	int fold;                 /* -1 undecided, 0 full, 1 folded */
	int streamed;             /* too large: written as it came, full */
	uint64_t digest;
	uint64_t shape;           /* the digest without sizes (lean_judge) */
	uint64_t loose;           /* the digest with what comes ahead of its first
	                           * phase unsized (folding; at ITER_END) */
	uint64_t ahead, ahead_unsized; /* that part of digest, and unsized */
	int phased;               /* a phase has begun in it */
	int recorded_lean;        /* as its stprof.lean annotations say */
	int64_t like;
	uint64_t peak[FOLD_SPACES];
	uint64_t peak_at[FOLD_SPACES];    /* global index of the event that reached it (first: none did) */
	uint64_t carried_in[FOLD_SPACES];
	uint64_t carried_in_objects[FOLD_SPACES];
} unit;

typedef struct sig {
	uint64_t digest, loose;
	int64_t value;
	int64_t used;             /* serial of the last iteration it was found for */
	uint64_t peak[FOLD_SPACES];
} sig;

typedef struct site_acc {
	uint32_t stack;           /* 0: empty slot */
	uint64_t allocs, bytes;
} site_acc;

typedef struct live_ent {
	uint64_t addr;            /* 0 empty; 1 a deleted slot */
	uint64_t index;           /* global index of its ALLOC (NONE: not held any more) */
	uint64_t bytes;
	uint8_t space, sampled;
} live_ent;

static struct {
	/* held events: pend (decoded, not yet ordered) then ord (in seq order) */
	hev *pend;
	size_t npend, pend_cap;
	hev *ord;
	size_t nord, ord_cap;
	void *scratch;            /* take_below's sort space, kept between rounds */
	size_t scratch_cap;       /* its 16-byte units */
	uint64_t base;            /* global index of ord[0] */
	uint64_t scanned;         /* global index of the first ord event not yet scanned */
	stp_range *rng;
	size_t nrng, rng_cap;
	/* iterations */
	unit *units;
	size_t nunits, units_cap;
	int64_t serials;          /* iterations begun since folding started */
	long open;                /* index in units of the iteration under way, -1 none */
	/* running peaks of the open iteration */
	int64_t run[FOLD_SPACES];
	uint64_t runpeak[FOLD_SPACES];
	uint64_t runpeak_at[FOLD_SPACES];  /* where it was reached */
	space_key spaces[FOLD_SPACES];
	unsigned nspaces;
	sig sigs[FOLD_SIGS];
	unsigned nsigs;
	/* sampled heap left out since the last FOLD with sites */
	site_acc *sites;
	size_t sites_cap, nsites;
	uint64_t folded_since_sites;
	/* objects allocated since folding started */
	live_ent *live;
	size_t live_cap, nlive, live_used;
	live_ent *live_spare;     /* the map before the last rebuild, zeroed, for the next */
	size_t live_spare_cap;
	uint64_t heap_interval;   /* sampling in force (annotations) */
	unsigned steady;          /* consecutive iterations scanned that matched */
	uint64_t shapes[FOLD_SHAPES]; /* of the last iterations recorded in full, a ring */
	unsigned nshapes;
	int recording_lean;       /* the last stprof.lean annotation scanned */
	/* output */
	uint8_t *out;
	size_t outlen;
	stp_enc_state st;
	int out_tid_set;
} F;

/* ---------------------------------------------------------------- small tools */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* 1 - exp(-x) for x in [0, 1], without libm: its series (x < 1: 18 terms
 * are exact to 1e-16). */
static double one_minus_exp_neg(double x)
{
	double t = x, sum = 0;
	for (int k = 1; k <= 18; k++) {
		sum += t;
		t *= -x / (k + 1);
	}
	return sum;
}

/* What a host-heap allocation of size bytes counts for under interval R
 * (stp_heap_weight in trace/): size / p. */
static uint64_t weighed(uint64_t size, uint64_t r)
{
	if (!r || size >= r)
		return size;
	if (!size)
		return 0;
	return (uint64_t)((double)size / one_minus_exp_neg((double)size / (double)r) + 0.5);
}

/* What a sampled host-heap allocation of size bytes stands for under
 * interval R: 1/p (1 when it was not sampled). */
static double weight(uint64_t size, uint64_t r)
{
	if (!r || size >= r || !size)
		return 1.0;
	return 1.0 / one_minus_exp_neg((double)size / (double)r);
}

static int grow(void **arr, size_t *cap, size_t used, size_t elem, size_t first)
{
	void *n = stc_mem_grow(*arr, cap, used, elem, first);
	if (!n)
		return -1;
	*arr = n;
	return 0;
}

static unsigned space_of(uint8_t kind, int32_t device, uint32_t pool)
{
	uint32_t p = pool == STP_POOL_TENSORS;
	for (unsigned i = 0; i < F.nspaces; i++)
		if (F.spaces[i].kind == kind && F.spaces[i].device == device && F.spaces[i].pool == p)
			return i;
	if (F.nspaces == FOLD_SPACES)
		return FOLD_SPACES - 1; /* more spaces than any program has: the last takes the rest */
	F.spaces[F.nspaces] = (space_key){kind, device, p};
	return F.nspaces++;
}

static hev *at(uint64_t g) { return g >= F.base && g < F.base + F.nord ? &F.ord[g - F.base] : NULL; }

/* ---------------------------------------------------------------- the live map */

static size_t live_slot(uint64_t addr) { return (size_t)(mix(addr) & (F.live_cap - 1)); }

/* Rebuilt (tombstones dropped) at a size for what is live: 4x, at least
 * 4096.  Under churn it is rebuilt at the same size again and again, so the
 * old map is kept zeroed for the next rebuild: a fresh mapping each time
 * faulted in every page of it (a PyTorch 2.11 GPT's loop: about 700 page
 * faults a second on the flusher's thread). */
static int live_grow(void)
{
	size_t oc = F.live_cap, nc = 4096;
	while (nc < 4 * (F.nlive + 1))
		nc *= 2;
	live_ent *o = F.live, *n;
	if (F.live_spare && F.live_spare_cap == nc) {
		n = F.live_spare;
		F.live_spare = NULL;
	} else {
		if (F.live_spare)
			stc_mem_free(F.live_spare, F.live_spare_cap * sizeof *n);
		F.live_spare = NULL;
		n = stc_mem_alloc(nc * sizeof *n);
	}
	if (!n)
		return -1;
	F.live = n;
	F.live_cap = nc;
	F.live_used = 0;
	for (size_t i = 0; i < oc; i++)
		if (o[i].addr > 1) {
			size_t j = live_slot(o[i].addr);
			while (n[j].addr)
				j = (j + 1) & (nc - 1);
			n[j] = o[i];
			F.live_used++;
		}
	if (o && oc == nc) {
		memset(o, 0, oc * sizeof *o);
		F.live_spare = o;
		F.live_spare_cap = oc;
	} else if (o)
		stc_mem_free(o, oc * sizeof *o);
	return 0;
}

static live_ent *live_find(uint64_t addr)
{
	if (!F.live_cap || addr <= 1)
		return NULL;
	for (size_t j = live_slot(addr);; j = (j + 1) & (F.live_cap - 1)) {
		if (!F.live[j].addr)
			return NULL;
		if (F.live[j].addr == addr)
			return &F.live[j];
	}
}

static void live_put(uint64_t addr, uint64_t index, uint64_t bytes, uint8_t space, uint8_t sampled)
{
	if (addr <= 1)
		return;
	live_ent *e = live_find(addr);
	if (!e) {
		if ((F.live_used + 1) * 2 > F.live_cap && live_grow() < 0)
			return;
		size_t j = live_slot(addr);
		while (F.live[j].addr > 1)
			j = (j + 1) & (F.live_cap - 1);
		if (!F.live[j].addr)
			F.live_used++;
		e = &F.live[j];
		F.nlive++;
	}
	*e = (live_ent){addr, index, bytes, space, sampled};
}

static void live_del(live_ent *e)
{
	e->addr = 1; /* a tombstone; the map is rebuilt when it doubles */
	F.nlive--;
}

/* ---------------------------------------------------------------- output */

static void out_flush(void)
{
	if (F.outlen)
		stc_out_chunk_locked(STP_CHUNK_EVENTS, F.st.tid, F.out, F.outlen);
	F.outlen = 0;
	F.out_tid_set = 0;
}

static void out_event(const stp_event *ev)
{
	if (!F.out && !(F.out = stc_mem_alloc(STC_BUF_SIZE)))
		return;
	for (int tries = 0; tries < 2; tries++) {
		if (!F.out_tid_set) {
			stp_enc_reset(&F.st, ev->tid);
			F.out_tid_set = 1;
		}
		uint8_t *p = F.out + STP_CHUNK_HEADER_SIZE + F.outlen;
		size_t n = stp_enc_event(p, STC_BUF_SIZE - STP_CHUNK_HEADER_SIZE - F.outlen, &F.st, ev);
		if (n) {
			F.outlen += n;
			return;
		}
		out_flush(); /* full: a fresh chunk (an event larger than one is dropped) */
	}
}

static void out_hev(hev *h)
{
	if (h->ev.type == STP_EV_API && h->ev.u.api.nranges)
		h->ev.u.api.ranges = &F.rng[h->ranges];
	out_event(&h->ev);
}

/* ---------------------------------------------------------------- taking events in */

void stc_fold_activate(void)
{
	/* accesses (--accesses): the patterns judge every access of objects
	 * that live across iterations, which a folded iteration leaves out */
	if (g_cfg.full || !g_cfg.fold_keep || g_cfg.accesses != STC_ACCESSES_NONE ||
	    __atomic_load_n(&g_fold_on, __ATOMIC_ACQUIRE))
		return;
	stc_out_lock(); /* the folder's state is the output lock's */
	if (!g_fold_on) {
		F.open = -1;
		__atomic_store_n(&g_fold_on, 1, __ATOMIC_RELEASE);
	}
	stc_out_unlock();
}

void stc_fold_chunk_locked(uint32_t tid, const uint8_t *payload, size_t len)
{
	stp_dec d;
	stp_event ev;
	stp_def def;
	int k;
	stp_dec_init(&d, payload, len, tid);
	while ((k = stp_dec_next(&d, &ev, &def)) != STP_DEC_END) {
		if (k != STP_DEC_EVENT)
			break; /* cannot happen: our own encoding */
		if (F.npend == F.pend_cap && grow((void **)&F.pend, &F.pend_cap, F.npend, sizeof *F.pend, 4096) < 0)
			break;
		hev *h = &F.pend[F.npend++];
		memset(h, 0, sizeof *h);
		h->ev = ev;
		h->partner = NONE;
		if (ev.type == STP_EV_API && ev.u.api.nranges) {
			while (F.nrng + ev.u.api.nranges > F.rng_cap)
				if (grow((void **)&F.rng, &F.rng_cap, F.nrng, sizeof *F.rng, 4096) < 0) {
					F.npend--;
					goto next;
				}
			memcpy(&F.rng[F.nrng], ev.u.api.ranges, ev.u.api.nranges * sizeof *F.rng);
			h->ranges = F.nrng;
			F.nrng += ev.u.api.nranges;
			h->ev.u.api.ranges = NULL;
		}
	next:;
	}
	stp_dec_free(&d);
}

/* Sorts n (seq, index) pairs by seq: a bottom-up merge sort (stable) with
 * a scratch array of the same size. */
typedef struct seqidx {
	uint64_t seq, idx;
} seqidx;
static void sort_pairs(seqidx *a, seqidx *tmp, size_t n)
{
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				tmp[k++] = a[j].seq < a[i].seq ? a[j++] : a[i++];
			while (i < mid)
				tmp[k++] = a[i++];
			while (j < hi)
				tmp[k++] = a[j++];
		}
		memcpy(a, tmp, n * sizeof *a);
	}
}

/* Moves the pending events below mark into ord, in seq order.  (Nothing
 * below an earlier round's mark can still come: they all land after ord's
 * events.) */
static void take_below(uint64_t mark)
{
	size_t n = 0;
	for (size_t i = 0; i < F.npend; i++)
		n += F.pend[i].ev.seq < mark;
	if (!n)
		return;
	/* the sort space is kept: a fresh mapping every round faulted in a
	 * page per 128 events, each round (a PyTorch 2.11 GPT's loop: 2,600
	 * page faults a second on this thread) */
	while (2 * n > F.scratch_cap)
		if (grow(&F.scratch, &F.scratch_cap, 0, sizeof(seqidx), 4096) < 0)
			return; /* no memory: they wait for the next round */
	seqidx *a = F.scratch;
	size_t m = 0;
	for (size_t i = 0; i < F.npend; i++)
		if (F.pend[i].ev.seq < mark)
			a[m++] = (seqidx){F.pend[i].ev.seq, i};
	sort_pairs(a, a + n, n);
	while (F.nord + n > F.ord_cap)
		if (grow((void **)&F.ord, &F.ord_cap, F.nord, sizeof *F.ord, 4096) < 0)
			return;
	for (size_t i = 0; i < n; i++)
		F.ord[F.nord++] = F.pend[a[i].idx];
	size_t keep = 0;
	for (size_t i = 0; i < F.npend; i++)
		if (F.pend[i].ev.seq >= mark)
			F.pend[keep++] = F.pend[i];
	F.npend = keep;
}

/* ---------------------------------------------------------------- scanning in order */

static int is_sampled_heap(uint8_t kind, uint32_t pool, uint64_t size)
{
	return g_cfg.heap_sample && kind == STP_MEM_HOST && pool == 0 && size < g_cfg.heap_sample;
}

static void note_peak(unsigned s, int64_t delta, uint64_t g)
{
	F.run[s] += delta;
	if (F.run[s] > 0 && (uint64_t)F.run[s] > F.runpeak[s]) {
		F.runpeak[s] = (uint64_t)F.run[s];
		F.runpeak_at[s] = g;
	}
}

/* An event's part of a digest; sized 0: of a shape, its sizes left out. */
static uint64_t hash_event(const hev *h, int sized)
{
	const stp_event *e = &h->ev;
	uint64_t x = (uint64_t)e->type * 0x9e3779b97f4a7c15ull;
	switch (e->type) {
	case STP_EV_ALLOC:
	case STP_EV_SEGMENT_RESERVE:
	case STP_EV_SEGMENT_RELEASE:
	case STP_EV_REFUSED: {
		const stp_alloc_info *a = &e->u.alloc;
		x = mix(x ^ (sized ? a->size : 0)) ^
		    mix(((uint64_t)a->kind << 40) ^ ((uint64_t)(uint32_t)a->device << 8) ^ a->pool);
		return mix(x ^ ((uint64_t)a->stack << 20));
	}
	case STP_EV_FREE: {
		const stp_free_info *f = &e->u.free;
		x = mix(x ^ ((uint64_t)f->kind << 40) ^ ((uint64_t)(uint32_t)f->device << 8) ^ f->pool);
		return mix(x ^ (h->known && sized ? h->bytes : 0));
	}
	case STP_EV_API: {
		const stp_api_info *a = &e->u.api;
		x = mix(x ^ a->kind ^ ((uint64_t)a->name << 8)) ^ mix(((uint64_t)a->stack << 1) ^ a->nranges);
		return mix(x ^ a->stream ^ ((uint64_t)(uint32_t)a->device << 32));
	}
	case STP_EV_MARKER: {
		const stp_marker_info *m = &e->u.marker;
		return mix(x ^ m->kind ^ ((uint64_t)m->name << 8) ^ ((uint64_t)m->value << 40));
	}
	}
	return 0;
}

/* In the digest: what should repeat from one iteration to the next. */
static int in_digest(const hev *h)
{
	switch (h->ev.type) {
	case STP_EV_ALLOC:
	case STP_EV_FREE:
		return !h->sampled;
	case STP_EV_SEGMENT_RESERVE:
	case STP_EV_SEGMENT_RELEASE:
	case STP_EV_API:
	case STP_EV_REFUSED: /* unlike an iteration without (and never elided) */
		return 1;
	case STP_EV_MARKER: /* phases; not modules: a lean iteration has none */
		return h->ev.u.marker.kind == STP_MARK_PHASE_BEGIN || h->ev.u.marker.kind == STP_MARK_PHASE_END;
	}
	return 0;
}

static unit *new_unit(int64_t value, uint64_t first)
{
	if (F.nunits == F.units_cap && grow((void **)&F.units, &F.units_cap, F.nunits, sizeof *F.units, 64) < 0)
		return NULL;
	unit *u = &F.units[F.nunits++];
	memset(u, 0, sizeof *u);
	u->serial = F.serials++;
	u->value = value;
	u->first = first;
	u->last = NONE;
	u->fold = -1;
	u->recorded_lean = F.recording_lean;
	memset(F.run, 0, sizeof F.run);
	memset(F.runpeak, 0, sizeof F.runpeak);
	for (unsigned s = 0; s < FOLD_SPACES; s++)
		F.runpeak_at[s] = first;
	F.open = (long)(F.nunits - 1);
	return u;
}

static unit *open_unit(void) { return F.open >= 0 ? &F.units[F.open] : NULL; }

static void lean_judge(const unit *u);

/* Walks the ordered events not yet scanned: units, partners, peaks, digests. */
static void scan(void)
{
	for (; F.scanned < F.base + F.nord; F.scanned++) {
		uint64_t g = F.scanned;
		hev *h = at(g);
		stp_event *e = &h->ev;
		if (e->type == STP_EV_MARKER && e->u.marker.kind == STP_MARK_ANNOTATION && e->u.marker.name) {
			if (e->u.marker.name == g_heap_annotation_id)
				F.heap_interval = e->u.marker.value > 0 ? (uint64_t)e->u.marker.value : 0;
			else if (e->u.marker.name == g_lean_annotation_id) {
				F.recording_lean = e->u.marker.value != 0; /* right after an ITER_BEGIN */
				if (open_unit())
					open_unit()->recorded_lean = F.recording_lean;
			}
		}
		if (e->type == STP_EV_MARKER && e->u.marker.kind == STP_MARK_ITER_BEGIN) {
			unit *o = open_unit();
			if (o) { /* begun again without an end: the old one is never folded */
				o->last = g - 1;
				o->fold = 0;
			}
			if (!new_unit(e->u.marker.value, g))
				F.open = -1;
		}
		unit *u = open_unit();
		h->unit = u ? u->serial : -1;
		int sized = 1; /* in the digest with its size */
		switch (e->type) {
		case STP_EV_ALLOC: {
			const stp_alloc_info *a = &e->u.alloc;
			h->sampled = (uint8_t)is_sampled_heap(a->kind, a->pool, a->size);
			h->bytes = a->kind == STP_MEM_HOST && a->pool == 0 ? weighed(a->size, F.heap_interval) : a->size;
			h->w = h->sampled ? (float)weight(a->size, F.heap_interval) : 1.0f;
			h->space = (uint8_t)space_of(a->kind, a->device, a->pool);
			live_put(a->addr, g, h->bytes, h->space, h->sampled);
			if (u)
				note_peak(h->space, (int64_t)h->bytes, g);
			break;
		}
		case STP_EV_FREE: {
			const stp_free_info *f = &e->u.free;
			/* the free of a host-heap block from before this iteration
			 * (a buffer the interpreter made before the loop, given
			 * back when its garbage collector runs): when it comes is
			 * as random as the sampled heap, so while the heap is
			 * sampled it is not in the digest (it is still written) */
			int older_heap = g_cfg.heap_sample && f->kind == STP_MEM_HOST && f->pool == 0;
			live_ent *l = live_find(f->addr);
			if (l) {
				h->known = 1;
				h->bytes = l->bytes;
				h->space = l->space;
				h->sampled = l->sampled;
				hev *a = l->index != NONE ? at(l->index) : NULL;
				if (a && a->ev.type == STP_EV_ALLOC) {
					h->partner = l->index;
					a->partner = g;
				}
				int carried = !a || a->ev.type != STP_EV_ALLOC || !u || a->unit != u->serial;
				if (older_heap && carried)
					h->sampled = 1;
				/* an object from an earlier iteration (the last step's
				 * loss or batch): its size is that iteration's, so the
				 * free counts here by its kind alone, or no step of a
				 * loop whose lengths vary would repeat the last */
				sized = !carried;
				live_del(l);
				if (u)
					note_peak(h->space, -(int64_t)h->bytes, g);
			} else {
				h->sampled = (uint8_t)older_heap;
			}
			break;
		}
		default:
			break;
		}
		if (u && in_digest(h)) {
			uint64_t x = hash_event(h, sized), y = hash_event(h, 0);
			u->digest += x;
			u->shape += y;
			if (e->type == STP_EV_MARKER && e->u.marker.kind == STP_MARK_PHASE_BEGIN)
				u->phased = 1;
			else if (!u->phased && (e->type == STP_EV_ALLOC || e->type == STP_EV_FREE)) {
				u->ahead += x;
				u->ahead_unsized += y;
			}
		}
		if (e->type == STP_EV_MARKER && e->u.marker.kind == STP_MARK_ITER_END && u) {
			u->last = g;
			u->complete = 1;
			u->loose = u->phased ? u->digest - u->ahead + u->ahead_unsized : u->digest;
			memcpy(u->peak, F.runpeak, sizeof u->peak);
			memcpy(u->peak_at, F.runpeak_at, sizeof u->peak_at);
			F.open = -1;
			lean_judge(u);
		}
	}
}

/* ---------------------------------------------------------------- deciding */

static int peaks_match(const uint64_t *a, const uint64_t *b)
{
	for (unsigned s = 0; s < F.nspaces; s++) {
		if (F.spaces[s].kind == STP_MEM_HOST && F.spaces[s].pool == 0 && g_cfg.heap_sample)
			continue; /* a sampled heap's peak is an estimate: it varies */
		uint64_t d = a[s] > b[s] ? a[s] - b[s] : b[s] - a[s];
		if (d > b[s] / 100 + 4096)
			return 0;
	}
	return 1;
}

/* An iteration written in full that u repeats: by the digest (loose 0:
 * lean_judge, whose lean iterations compare each tensor's size), or by
 * the loose digest (loose 1: folding). */
static sig *find_sig(const unit *u, int loose)
{
	for (unsigned i = 0; i < F.nsigs; i++)
		if ((loose ? F.sigs[i].loose == u->loose : F.sigs[i].digest == u->digest) &&
		    peaks_match(u->peak, F.sigs[i].peak)) {
			F.sigs[i].used = u->serial;
			return &F.sigs[i];
		}
	return NULL;
}

static int has_content(const unit *u)
{
	return u->last != NONE && u->last > u->first + 1;
}

/* u was just scanned whole: whether the next iterations may be recorded
 * lean, and how (two in a row matched: STC_LEAN_SAME when u matched an
 * iteration written in full, STC_LEAN_SHAPE when only the shape of one of
 * the last FOLD_SHAPES iterations recorded in full: the same events with
 * other sizes), or must not (u matched none).  Only shapes recorded in
 * full: after a change (a tensor kept from now on, an evaluation) the
 * recording goes back to full detail until full iterations repeat, so the
 * lean ones have a reference like them and their modules. */
static void lean_judge(const unit *u)
{
	int same = has_content(u) && find_sig(u, 0) != NULL, shaped = 0;
	for (unsigned i = 0; !same && has_content(u) && i < F.nshapes && i < FOLD_SHAPES; i++)
		shaped |= F.shapes[i] == u->shape;
	if (!u->recorded_lean)
		F.shapes[F.nshapes++ % FOLD_SHAPES] = u->shape;
	F.steady = same || shaped ? F.steady + 1 : 0;
	/* marker.c checks STPROF_LEAN and the rest */
	int want = F.steady < 2 ? 0 : same ? STC_LEAN_SAME : STC_LEAN_SHAPE;
	if (want != __atomic_load_n(&g_lean_wanted, __ATOMIC_RELAXED))
		__atomic_store_n(&g_lean_wanted, want, __ATOMIC_RELAXED);
}

int stc_fold_lean_begin(int allowed)
{
	int want = allowed ? __atomic_load_n(&g_lean_wanted, __ATOMIC_RELAXED) : 0;
	int now = __atomic_load_n(&g_lean_now, __ATOMIC_RELAXED);
	if (want == STC_LEAN_SAME && now == STC_LEAN_SHAPE)
		want = STC_LEAN_SHAPE; /* the threads' references have other sizes */
	if (want == now)
		return -1;
	__atomic_store_n(&g_lean_now, want, __ATOMIC_RELAXED);
	return !want != !now ? want != 0 : -1; /* SAME to SHAPE: still lean */
}

/* Whether unit u (complete, not among the last K) would be folded, with the
 * table as it is. */
static int would_fold(unit *u)
{
	if (!u->complete || u->streamed || u->serial < (int64_t)g_cfg.fold_keep || !has_content(u))
		return 0;
	const sig *s = find_sig(u, 1);
	if (!s)
		return 0;
	u->like = s->value;
	return 1;
}

static void add_sig(const unit *u)
{
	if (!u->complete || u->streamed)
		return;
	if (find_sig(u, 0))
		return;
	unsigned k = F.nsigs;
	if (k == FOLD_SIGS) { /* full: the one found longest ago makes room */
		for (unsigned i = k = 0; i < FOLD_SIGS; i++)
			if (F.sigs[i].used < F.sigs[k].used)
				k = i;
	} else {
		F.nsigs++;
	}
	F.sigs[k].digest = u->digest;
	F.sigs[k].loose = u->loose;
	F.sigs[k].value = u->value;
	F.sigs[k].used = u->serial;
	memcpy(F.sigs[k].peak, u->peak, sizeof u->peak);
}

static void site_add(uint32_t stack, uint64_t bytes)
{
	if ((F.nsites + 1) * 2 > F.sites_cap) {
		size_t oc = F.sites_cap, nc = oc ? oc * 2 : 256;
		site_acc *o = F.sites, *n = stc_mem_alloc(nc * sizeof *n);
		if (!n)
			return;
		for (size_t i = 0; i < oc; i++)
			if (o[i].stack) {
				size_t j = (size_t)mix(o[i].stack) & (nc - 1);
				while (n[j].stack)
					j = (j + 1) & (nc - 1);
				n[j] = o[i];
			}
		stc_mem_free(o, oc * sizeof *o);
		F.sites = n;
		F.sites_cap = nc;
	}
	size_t j = (size_t)mix(stack ? stack : 0xffffffffu) & (F.sites_cap - 1);
	uint32_t key = stack ? stack : 0xffffffffu; /* 0 marks an empty slot */
	while (F.sites[j].stack && F.sites[j].stack != key)
		j = (j + 1) & (F.sites_cap - 1);
	if (!F.sites[j].stack) {
		F.sites[j].stack = key;
		F.nsites++;
	}
	F.sites[j].allocs++;
	F.sites[j].bytes += bytes;
}

/* The FOLD event of unit u, in place of its first left-out event. */
static void write_fold_event(const unit *u, const hev *first, uint64_t elided, uint64_t apis, uint64_t markers,
                             const uint64_t *allocs, const uint64_t *bytes, const uint64_t *carried_out,
                             const uint64_t *nsamp, const double *est, const uint64_t *at_peak, int with_sites)
{
	stp_fold_space sp[FOLD_SPACES];
	stp_fold_site *si = NULL;
	uint32_t nsp = 0, nsi = 0;
	for (unsigned s = 0; s < F.nspaces; s++) {
		if (!allocs[s] && !u->peak[s] && !u->carried_in[s] && !carried_out[s])
			continue;
		sp[nsp++] = (stp_fold_space){.kind = F.spaces[s].kind, .device = F.spaces[s].device,
		                             .pool = F.spaces[s].pool, .allocs = allocs[s], .bytes = bytes[s],
		                             .peak = u->peak[s], .carried_in = u->carried_in[s],
		                             .carried_out = carried_out[s], .sampled = nsamp[s],
		                             .sampled_est = (uint64_t)(est[s] + 0.5), .peak_objects = at_peak[s]};
	}
	size_t sbytes = 0;
	if (with_sites && F.nsites) {
		sbytes = F.nsites * sizeof *si;
		si = stc_mem_alloc(sbytes);
		for (size_t i = 0; si && i < F.sites_cap; i++)
			if (F.sites[i].stack)
				si[nsi++] = (stp_fold_site){.stack = F.sites[i].stack == 0xffffffffu ? 0 : F.sites[i].stack,
				                            .kind = STP_MEM_HOST, .device = -1, .pool = 0,
				                            .allocs = F.sites[i].allocs, .bytes = F.sites[i].bytes};
		memset(F.sites, 0, F.sites_cap * sizeof *F.sites);
		F.nsites = 0;
		F.folded_since_sites = 0;
	}
	stp_event ev = {.type = STP_EV_FOLD, .tid = first->ev.tid, .seq = first->ev.seq, .time_ns = first->ev.time_ns};
	stp_fold_info *f = &ev.u.fold;
	f->iteration = u->value;
	f->like = u->like;
	f->last_seq = at(u->last)->ev.seq;
	f->elided = elided;
	f->apis = apis;
	f->markers = markers;
	f->digest = u->loose;
	f->nspaces = nsp;
	f->counted = 1;
	f->spaces = sp;
	f->nsites = nsi;
	f->sites = si;
	out_event(&ev);
	if (si)
		stc_mem_free(si, sbytes);
}

/* Marks what a folded unit leaves out and writes it (the FOLD event in
 * place of its first left-out event). */
static void write_folded(unit *u, int next_folds)
{
	uint64_t allocs[FOLD_SPACES] = {0}, bytes[FOLD_SPACES] = {0}, out[FOLD_SPACES] = {0}, nsamp[FOLD_SPACES] = {0};
	uint64_t nout[FOLD_SPACES] = {0}, at_peak[FOLD_SPACES];
	/* the objects left out live at the peak: the carried-in ones, with
	 * the left-out allocations and frees up to the event that reached it */
	memcpy(at_peak, u->carried_in_objects, sizeof at_peak);
	double est[FOLD_SPACES] = {0};
	uint64_t elided = 0, apis = 0, markers = 0;
	unit *nx = u + 1 < F.units + F.nunits ? u + 1 : NULL;
	/* decide first: the FOLD event's seq is the first left out */
	for (uint64_t g = u->first; g <= u->last; g++) {
		hev *h = at(g);
		const stp_event *e = &h->ev;
		int el = 0;
		switch (e->type) {
		case STP_EV_ALLOC:
			if (h->partner != NONE) {
				hev *fr = at(h->partner);
				if (fr && fr->unit == u->serial)
					el = 1;
				else if (fr && next_folds && nx && fr->unit == nx->serial) {
					el = 1;
					out[h->space] += h->bytes;
					nout[h->space]++;
				}
				if (el)
					fr->elide = 1;
			}
			if (el) {
				if (g <= u->peak_at[h->space])
					at_peak[h->space]++;
				allocs[h->space]++;
				bytes[h->space] += h->bytes;
				if (h->sampled) {
					site_add(e->u.alloc.stack, h->bytes);
					nsamp[h->space]++;
					est[h->space] += h->w;
				}
			}
			break;
		case STP_EV_FREE:
			el = h->elide; /* its allocation was left out */
			if (el && g <= u->peak_at[h->space])
				at_peak[h->space]--;
			break;
		case STP_EV_API:
			el = 1;
			apis++;
			break;
		case STP_EV_MARKER:
			el = e->u.marker.kind >= STP_MARK_PHASE_BEGIN && e->u.marker.kind <= STP_MARK_MODULE_EXIT;
			markers += (uint64_t)el;
			break;
		}
		h->elide = (uint8_t)el;
		elided += (uint64_t)el;
	}
	if (nx) {
		memcpy(nx->carried_in, out, sizeof out);
		memcpy(nx->carried_in_objects, nout, sizeof nout);
	}
	F.folded_since_sites++;
	int with_sites = !next_folds || F.folded_since_sites >= FOLD_SITES_EVERY;
	int fold_written = 0;
	for (uint64_t g = u->first; g <= u->last; g++) {
		hev *h = at(g);
		if (!h->elide) {
			out_hev(h);
			continue;
		}
		if (!fold_written) {
			write_fold_event(u, h, elided, apis, markers, allocs, bytes, out, nsamp, est, at_peak, with_sites);
			fold_written = 1;
		}
	}
}

/* Writes ord's events from its start up to global index end (exclusive),
 * the units among them being decided. */
static void write_upto(uint64_t end)
{
	size_t ui = 0;
	for (uint64_t g = F.base; g < end;) {
		while (ui < F.nunits && F.units[ui].first < g)
			ui++;
		unit *u = ui < F.nunits ? &F.units[ui] : NULL;
		if (u && u->first == g && u->fold == 1 && u->complete && u->last < end) {
			unit *nx = ui + 1 < F.nunits ? &F.units[ui + 1] : NULL;
			write_folded(u, nx && nx->fold == 1);
			g = u->last + 1;
			continue;
		}
		hev *h = at(g);
		if (!h->elide)
			out_hev(h);
		g++;
	}
	out_flush();
}

/* Drops written events from ord (and units wholly written), moves the rest
 * to its front, rebuilds the range arena. */
static void compact(uint64_t end)
{
	size_t drop = (size_t)(end - F.base);
	if (!drop)
		return;
	/* a live object whose ALLOC leaves: its map entry stops pointing here */
	for (size_t i = 0; i < drop; i++) {
		hev *h = &F.ord[i];
		if (h->ev.type == STP_EV_ALLOC) {
			live_ent *l = live_find(h->ev.u.alloc.addr);
			if (l && l->index == F.base + i)
				l->index = NONE;
		}
	}
	memmove(F.ord, F.ord + drop, (F.nord - drop) * sizeof *F.ord);
	F.nord -= drop;
	F.base = end;
	size_t keep = 0;
	long open = -1;
	for (size_t i = 0; i < F.nunits; i++)
		if (F.units[i].last == NONE || F.units[i].last >= end) {
			if ((long)i == F.open)
				open = (long)keep;
			F.units[keep++] = F.units[i];
		}
	F.nunits = keep;
	F.open = open;
	/* the range arena: the ranges of the events still held, packed */
	size_t n = 0;
	for (int pass = 0; pass < 2; pass++) {
		hev *arr = pass ? F.pend : F.ord;
		size_t cnt = pass ? F.npend : F.nord;
		for (size_t i = 0; i < cnt; i++)
			if (arr[i].ev.type == STP_EV_API && arr[i].ev.u.api.nranges) {
				uint32_t k = arr[i].ev.u.api.nranges;
				memmove(&F.rng[n], &F.rng[arr[i].ranges], k * sizeof *F.rng);
				arr[i].ranges = n;
				n += k;
			}
	}
	F.nrng = n;
}

/* Decides the units that can be, in order (a unit once K+1 complete ones
 * follow it: not among the last K, and the one after can be decided in
 * turn), and returns the global index up to which ord can be written: up
 * to the first unit undecided, or folded while the next one is undecided
 * (its objects freed there are left out only if that one folds too).
 * final: the recording ends, everything is decided and written. */
static uint64_t decide(int final)
{
	size_t n = F.nunits;
	for (size_t i = 0; i < n; i++) {
		unit *u = &F.units[i];
		if (u->fold != -1)
			continue;
		if (!u->complete) {
			if (u->last != NONE || final) { /* abandoned, or under way at the end: full */
				u->fold = 0;
				continue;
			}
			break;
		}
		size_t after = 0;
		for (size_t j = i + 1; j < n; j++)
			after += (size_t)F.units[j].complete;
		if (!final && after < g_cfg.fold_keep + 1u)
			break;
		u->fold = after >= g_cfg.fold_keep ? would_fold(u) : 0;
		if (!u->fold)
			add_sig(u);
	}
	if (final)
		return F.base + F.nord;
	uint64_t end = F.base + F.nord;
	for (size_t i = 0; i < n; i++) {
		unit *u = &F.units[i];
		int waits = u->fold == -1 || (u->fold == 1 && (i + 1 >= n || F.units[i + 1].fold == -1));
		if (u->streamed)
			continue;
		if (waits) {
			end = u->first;
			break;
		}
	}
	return end;
}

/* Too much held: the oldest undecided complete unit is written in full
 * now; an iteration under way that alone is too much is written as it
 * comes (and never folded). */
static void relieve(void)
{
	while (F.nord + F.npend > FOLD_HELD_MAX) {
		size_t i = 0;
		while (i < F.nunits && !(F.units[i].fold == -1 && F.units[i].complete))
			i++;
		if (i < F.nunits) {
			unit *u = &F.units[i];
			u->fold = 0;
			add_sig(u);
			uint64_t end = u->last + 1;
			for (size_t j = 0; j < i; j++) /* the ones before it: decided, or full now */
				if (F.units[j].fold == -1)
					F.units[j].fold = 0;
			write_upto(end);
			compact(end);
			continue;
		}
		unit *o = open_unit();
		if (o) {
			o->streamed = 1;
			o->fold = 0;
		}
		for (size_t j = 0; j < F.nunits; j++)
			if (F.units[j].fold == -1)
				F.units[j].fold = 0;
		uint64_t end = F.base + F.nord;
		write_upto(end);
		compact(end);
		break;
	}
}

uint64_t stc_fold_round_locked(uint64_t mark)
{
	if (!__atomic_load_n(&g_fold_on, __ATOMIC_ACQUIRE))
		return mark;
	take_below(mark);
	scan();
	/* an iteration streamed out keeps streaming */
	if (open_unit() && open_unit()->streamed) {
		uint64_t end = F.base + F.nord;
		write_upto(end);
		compact(end);
	}
	uint64_t end = decide(0);
	if (end > F.base) {
		write_upto(end);
		compact(end);
	}
	relieve();
	/* nothing at or after the first event held is in the file */
	uint64_t low = mark;
	if (F.nord && F.ord[0].ev.seq < low)
		low = F.ord[0].ev.seq;
	for (size_t i = 0; i < F.npend; i++)
		if (F.pend[i].ev.seq < low)
			low = F.pend[i].ev.seq;
	return low;
}

void stc_fold_finish_locked(void)
{
	if (!__atomic_load_n(&g_fold_on, __ATOMIC_ACQUIRE))
		return;
	take_below(UINT64_MAX);
	scan();
	uint64_t end = decide(1);
	write_upto(end);
	compact(end);
}

void stc_fold_emergency_locked(void)
{
	if (!__atomic_load_n(&g_fold_on, __ATOMIC_ACQUIRE))
		return;
	/* a fatal signal: no sorting, no deciding; ord is in order, pend is in
	 * per-chunk order (a new chunk wherever the seq goes back).  What was
	 * decided stands: an iteration decided folded is written folded (the
	 * iteration before it, written folded already, left out its frees of
	 * the objects they share), the rest in full. */
	write_upto(F.base + F.nord);
	uint64_t prev = 0;
	for (size_t i = 0; i < F.npend; i++) {
		if (F.pend[i].ev.seq < prev)
			out_flush();
		prev = F.pend[i].ev.seq;
		out_hev(&F.pend[i]);
	}
	out_flush();
	F.nord = F.npend = 0;
}

void stc_fold_atfork_child(void)
{
	/* the parent's held events are the parent's to write */
	memset(&F, 0, sizeof F);
	F.open = -1;
	g_fold_on = 0;
	g_lean_wanted = g_lean_now = 0;
	g_iter_gen = 0; /* a child (a DataLoader worker) runs no loop of its own yet */
}
