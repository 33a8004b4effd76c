/*
 * search.c - the exact step: "do the static requests fit under capacity C?"
 * decided by a depth-first search over canonical layouts (MiniMalloc's ideas,
 * built from the paper, not its code).
 *
 * Time is cut into sections (between consecutive distinct lifetime ends of
 * the static requests).  Every section k has a floor f[k]: everything below
 * it is placed or proven empty, and a bit sup[k]: the floor is the top of a
 * placed request (or the base) rather than a level raised over empty space.
 * A node takes the lowest floor m over the sections that still have
 * unplaced requests and one section k at m (per restart: the leftmost, or
 * the one with the most unplaced bytes, i.e. the least slack), and branches:
 *   place:  an unplaced request b covering k whose sections all sit at m
 *           goes to offset m (its sections rise to m + size, supported),
 *           provided it rests on something: one of its sections is
 *           supported.  A request that floats (every section's floor is a
 *           raised level) could drop, and gravity-packed layouts (where no
 *           request can drop; one exists for every feasible C) never hold
 *           one: by induction every request in them rests on the base or on
 *           the top of one placed before it, whose section still has that
 *           floor.  A candidate alone in all its sections is tried alone
 *           (nothing else can use its space: if it fails, all fail);
 *   waste:  nothing lands at m in k: k's floor rises to L (unsupported), a
 *           level the lowest request y covering k cannot lie below.  y
 *           rests on something in a section other than k: a placed request
 *           whose top is that section's (supported) floor, then y can lie at
 *           its highest floor e_y > m; or an unplaced z that does not cover
 *           k (it would be lower in k), then y lies at least at e_z + size
 *           of z.  L = the least of these over the unplaced requests covering
 *           k (waste_level); none: no waste branch.
 * Every gravity-packed layout is reached this way, so an exhausted search
 * proves that C does not fit.
 * Pruning ("inference"): a section fails when its effective floor (the
 * lowest max floor of its unplaced requests) plus its unplaced bytes exceed
 * C, and the floor rises to the effective floor (unallocated floor);
 * requests identical in (sections, size) are tried once per node
 * (symmetry); a state (placed set, floors, support bits) whose subtree
 * failed is remembered by two 64-bit hashes and not searched again (a
 * collision, odds about 2^-100 per lookup, could hide a layout and so
 * wrongly call C impossible); when no unplaced request crosses some section
 * boundaries the parts are solved independently (dynamic decomposition: a
 * failure in one part is not retried against the other parts'
 * alternatives).
 *
 * Search trees here are heavy-tailed: one (order, section rule, direction)
 * solves in a few hundred nodes what another does not in millions.  So
 * pl_search restarts in slices that double every 5 rounds of a direction,
 * alternating the timeline forwards and backwards (a mirror image the
 * search meets in another order; each direction keeps its own memory of
 * failed states, which hold under any order), and going through candidate
 * orders: MiniMalloc's static preorders (T = most bytes live in one of the
 * request's sections, W = lifetime, A = area: TWA, WAT, TAW), the incumbent
 * layout's offsets (guided), size, most loaded section, area, snug fit,
 * then sizes shaken per round.
 *
 * Obstacles (pl_obst: requests placed already, for the large-set steps):
 * each section keeps the address intervals of those that meet it in time,
 * merged.  A floor never rests inside one: reaching its bottom it moves to
 * its top, which supports (something may rest on an obstacle); a candidate
 * must also fit below the next obstacle in every section; the bytes free in
 * a section are C minus its floor minus the obstacles between them (room);
 * and the waste level and the inference take, for an unplaced request,
 * where it first fits between the obstacles above its floors (ob_fit), and
 * count an obstacle's top as a level it may rest on.  Each of these is a
 * lower bound on where a request can lie, so an exhausted search still
 * proves C impossible (with these obstacles).
 *
 * A node tests its candidates through per-block aggregates (BLK sections)
 * of the floors (max), the unplaced bytes (max) and the support bits
 * (count), not section by section.
 *
 * Pinned requests sit below everything (pl_work); the search places the
 * STATIC ones above w->pinned_bytes.  Invariants: f[k] <= C for every
 * section with unplaced requests; rem[k] is the unplaced bytes covering k;
 * cross[k] counts unplaced requests covering sections k-1 and k; sup[k] is
 * set iff f[k] is the base, the top of a placed request covering k or the
 * top of an obstacle; f[k] is never inside an obstacle; the block
 * aggregates are recomputed (fix_blocks) after every change of f, rem or
 * sup.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct sreq {
	uint32_t sa, sb;   /* sections [sa, sb) */
	uint64_t size;
	uint32_t id;       /* index in pl_work */
	uint32_t len;      /* lifetime in ticks */
	uint64_t tot;      /* most bytes live in one of its sections */
	uint32_t rk[3];    /* static ranks: TWA, WAT, TAW (0 first) */
} sreq;

typedef struct frame {
	uint32_t k;        /* section */
	uint64_t m;        /* its floor when the node was opened */
	uint32_t next;     /* next candidate (index into cand) to try; UINT32_MAX = waste tried */
	uint32_t cend;     /* this node's candidates: cand[previous frame's cend .. cend) */
	uint32_t placed;   /* request placed by this frame, UINT32_MAX = none (or waste) */
	uint64_t prev_size;/* size of the last candidate tried (symmetry) */
	uint32_t prev_sb;
	uint32_t tried;    /* candidates placed from this node */
	uint64_t h1, h2;   /* the state's hash when the node was opened */
	uint32_t tr;       /* trail length before this frame's last action */
	uint32_t nowaste;  /* a candidate alone in all its sections: it alone is tried */
} frame;

/* a floor raised by the inference (unallocated floor), to restore */
typedef struct raised {
	uint32_t k;
	uint8_t sup;
	uint64_t f;
} raised;

/* failed states: (placed set, floors of the sections still to fill) as two
 * 64-bit hashes; open addressing, never grown (full: no more entries) */
#define TT_BITS 20    /* 16 MB per direction */
#define TT_BITS_OB 16 /* with obstacles (neighbourhoods of at most a few hundred): 1 MB */
#define TT_PROBE 8

#define BLK 16

typedef struct srch {
	uint32_t nq, K;
	sreq *q;
	uint32_t *first, *list;  /* requests starting in section k: list[first[k] .. first[k+1]) */
	uint64_t *f, *rem, *eff;
	uint64_t *bmax, *bmin;   /* per block of BLK sections: max floor; min e (feasible) */
	uint64_t *brem;          /* per block: most unplaced bytes of a section */
	uint64_t *blow;          /* per block: lowest floor of a section with unplaced bytes */
	uint32_t *bsup;          /* per block: sections whose floor supports */
	uint32_t *cross;
	uint8_t *done;
	uint8_t *sup;            /* per section: its floor is the top of a placed request (or the base) */
	uint64_t *off;           /* offset per request (index into q) */
	uint64_t *inc;           /* the incumbent layout's offsets (guided order), or NULL */
	frame *st;
	size_t stcap;
	size_t sp;               /* frames in use (all of them, nested solves included) */
	raised *trail;           /* floors raised by feasible(), per frame action */
	size_t ntrail, trcap;
	int mode;                /* candidate order of this restart */
	pl_kv *cand;             /* candidate stacks of the open nodes (k: order key) */
	size_t ccap;
	uint64_t h1, h2;         /* hash of the current state (sums of terms) */
	uint64_t *tt;            /* 2 words per slot; 0 = empty */
	unsigned tt_bits;        /* 1 << tt_bits slots */
	uint64_t cap, nodes, node_limit;
	double deadline;         /* pl_now() */
	double cpu_deadline;     /* pl_cpu_now(): the caller's share of work */
	int timed_out;
	int sel;                 /* section rule of this restart: 0 leftmost, 1 least slack */
	int rev;                 /* time runs backwards (section k is K-1-k of the input) */
	/* obstacles (pl_obst: requests placed already, which the layout must
	 * avoid): per section k, disjoint intervals ob_lo/ob_hi[ob_first[k] ..
	 * ob_first[k+1]) sorted and merged where they touch; ob_pre[i] = the
	 * bytes of intervals 0 .. i-1.  NULL: none */
	uint32_t *ob_first;
	uint64_t *ob_lo, *ob_hi, *ob_pre;
} srch;

static void srch_free(srch *s)
{
	free(s->q);
	free(s->first);
	free(s->list);
	free(s->f);
	free(s->rem);
	free(s->eff);
	free(s->bmax);
	free(s->bmin);
	free(s->brem);
	free(s->blow);
	free(s->bsup);
	free(s->cross);
	free(s->done);
	free(s->sup);
	free(s->off);
	free(s->inc);
	free(s->st);
	free(s->tt);
	free(s->cand);
	free(s->trail);
	free(s->ob_first);
	free(s->ob_lo);
	free(s->ob_hi);
	free(s->ob_pre);
}

/* the first obstacle interval of section k whose top is above x */
static uint32_t ob_at(const srch *s, uint32_t k, uint64_t x)
{
	uint32_t lo = s->ob_first[k], hi = s->ob_first[k + 1];
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (s->ob_hi[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A floor x of section k moved past the obstacle it is inside, if any;
 * *sup is set when it ends on an obstacle's top (something rests there). */
static uint64_t ob_lift(const srch *s, uint32_t k, uint64_t x, uint8_t *sup)
{
	if (!s->ob_first)
		return x;
	uint32_t i = ob_at(s, k, x);
	if (i < s->ob_first[k + 1] && s->ob_lo[i] <= x) {
		*sup = 1;
		return s->ob_hi[i];
	}
	if (i > s->ob_first[k] && s->ob_hi[i - 1] == x)
		*sup = 1;
	return x;
}

/* the bottom of the lowest obstacle at or above x (not inside one) in
 * section k; UINT64_MAX when none */
static uint64_t ob_ceil(const srch *s, uint32_t k, uint64_t x)
{
	if (!s->ob_first)
		return UINT64_MAX;
	uint32_t i = ob_at(s, k, x);
	return i < s->ob_first[k + 1] ? s->ob_lo[i] : UINT64_MAX;
}

/* the lowest obstacle top above both m and e in section k, UINT64_MAX none */
static uint64_t ob_top_above(const srch *s, uint32_t k, uint64_t m, uint64_t e)
{
	uint64_t x = m > e ? m : e;
	if (!s->ob_first)
		return UINT64_MAX;
	uint32_t i = ob_at(s, k, x);
	/* ob_hi[i] > x; one below with top == x == e > m counts too */
	if (i > s->ob_first[k] && s->ob_hi[i - 1] == e && e > m)
		return e;
	return i < s->ob_first[k + 1] ? s->ob_hi[i] : UINT64_MAX;
}

/* the lowest offset >= x where a request of `size` over sections [a, b)
 * meets no obstacle (each pass over the sections only raises it) */
static uint64_t ob_fit(const srch *s, uint32_t a, uint32_t b, uint64_t size, uint64_t x)
{
	if (!s->ob_first)
		return x;
	for (int moved = 1; moved;) {
		moved = 0;
		for (uint32_t j = a; j < b; j++)
			for (uint32_t i = ob_at(s, j, x); i < s->ob_first[j + 1] && s->ob_lo[i] < x + size; i++) {
				x = s->ob_hi[i];
				moved = 1;
			}
	}
	return x;
}

/* free bytes in [x, cap) of section k */
static uint64_t room(const srch *s, uint32_t k, uint64_t x)
{
	if (x >= s->cap)
		return 0;
	uint64_t r = s->cap - x;
	if (!s->ob_first)
		return r;
	uint32_t i = ob_at(s, k, x), lo = i, hi = s->ob_first[k + 1];
	while (lo < hi) { /* the first interval from i at or above cap */
		uint32_t mid = lo + (hi - lo) / 2;
		if (s->ob_lo[mid] < s->cap)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == i)
		return r;
	uint64_t used = s->ob_pre[lo] - s->ob_pre[i];
	if (s->ob_lo[i] < x)
		used -= x - s->ob_lo[i];
	if (s->ob_hi[lo - 1] > s->cap)
		used -= s->ob_hi[lo - 1] - s->cap;
	return r - used;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}
static uint64_t tf1(uint32_t k, uint64_t f) { return mix(f * 0xD6E8FEB86659FD93ull ^ mix(k)); }
static uint64_t tf2(uint32_t k, uint64_t f) { return mix(mix(f + 0x632BE59BD9B4E019ull) ^ ((uint64_t)k << 32 | 0x5bd1)); }
static uint64_t tb1(uint32_t i) { return mix((uint64_t)i << 1 | 1); }
static uint64_t tb2(uint32_t i) { return mix(((uint64_t)i << 20) ^ 0xA0761D6478BD642Full); }

/* sets section j's floor and unplaced bytes, keeping the hash (a section
 * counts only while it has unplaced requests) */
static void sec_set3(srch *s, uint32_t j, uint64_t nf, uint64_t nrem, uint8_t nsup)
{
	if (s->rem[j]) {
		s->h1 -= tf1(j, s->f[j] << 1 | s->sup[j]);
		s->h2 -= tf2(j, s->f[j] << 1 | s->sup[j]);
	}
	s->f[j] = nf;
	s->rem[j] = nrem;
	s->sup[j] = nsup;
	if (nrem) {
		s->h1 += tf1(j, nf << 1 | nsup);
		s->h2 += tf2(j, nf << 1 | nsup);
	}
}
static void sec_set(srch *s, uint32_t j, uint64_t nf, uint64_t nrem)
{
	sec_set3(s, j, nf, nrem, s->sup[j]);
}

/* makes room for n more trail entries: 0, or -1 out of memory */
static int trail_reserve(srch *s, size_t n)
{
	if (s->ntrail + n <= s->trcap)
		return 0;
	size_t nc = s->trcap ? s->trcap * 2 : 1024;
	while (nc < s->ntrail + n)
		nc *= 2;
	raised *nt = realloc(s->trail, nc * sizeof *nt);
	if (!nt)
		return -1;
	s->trail = nt;
	s->trcap = nc;
	return 0;
}

/* recomputes the block aggregates over sections [lo, hi): the most floor,
 * the most unplaced bytes, the lowest floor with unplaced bytes, the
 * supported floors (every change of f, rem or sup is followed by this) */
static void fix_blocks(srch *s, uint32_t lo, uint32_t hi)
{
	for (uint32_t bl = lo / BLK; bl * BLK < hi; bl++) {
		uint64_t mx = 0, rm = 0, low = UINT64_MAX;
		uint32_t sup = 0;
		uint32_t end = (bl + 1) * BLK < s->K ? (bl + 1) * BLK : s->K;
		for (uint32_t j = bl * BLK; j < end; j++) {
			if (s->f[j] > mx)
				mx = s->f[j];
			if (s->rem[j] > rm)
				rm = s->rem[j];
			if (s->rem[j] && s->f[j] < low)
				low = s->f[j];
			sup += s->sup[j];
		}
		s->bmax[bl] = mx;
		s->brem[bl] = rm;
		s->blow[bl] = low;
		s->bsup[bl] = sup;
	}
}

/* most unplaced bytes of a section in [lo, hi) */
static uint64_t range_rem(const srch *s, uint32_t lo, uint32_t hi)
{
	uint64_t mx = 0;
	for (; lo < hi && lo % BLK; lo++)
		mx = s->rem[lo] > mx ? s->rem[lo] : mx;
	for (; lo + BLK <= hi; lo += BLK)
		mx = s->brem[lo / BLK] > mx ? s->brem[lo / BLK] : mx;
	for (; lo < hi; lo++)
		mx = s->rem[lo] > mx ? s->rem[lo] : mx;
	return mx;
}

/* is a floor in [lo, hi) the top of something (it supports)? */
static int range_sup(const srch *s, uint32_t lo, uint32_t hi)
{
	for (; lo < hi && lo % BLK; lo++)
		if (s->sup[lo])
			return 1;
	for (; lo + BLK <= hi; lo += BLK)
		if (s->bsup[lo / BLK])
			return 1;
	for (; lo < hi; lo++)
		if (s->sup[lo])
			return 1;
	return 0;
}

/* max floor over sections [lo, hi) */
static uint64_t range_max(const srch *s, uint32_t lo, uint32_t hi)
{
	uint64_t mx = 0;
	while (lo < hi && lo % BLK) {
		if (s->f[lo] > mx)
			mx = s->f[lo];
		lo++;
	}
	while (lo + BLK <= hi) {
		if (s->bmax[lo / BLK] > mx)
			mx = s->bmax[lo / BLK];
		lo += BLK;
	}
	for (; lo < hi; lo++)
		if (s->f[lo] > mx)
			mx = s->f[lo];
	return mx;
}

static uint64_t *tt_slot(srch *s, uint64_t h1, uint64_t h2, int *found)
{
	uint64_t key = h1 ? h1 : 1;
	size_t mask = ((size_t)1 << s->tt_bits) - 1;
	for (size_t p = 0; p < TT_PROBE; p++) {
		uint64_t *e = &s->tt[2 * ((h2 + p) & mask)];
		if (!e[0] || (e[0] == key && e[1] == h2)) {
			*found = e[0] != 0;
			return e;
		}
	}
	*found = 0;
	return NULL;
}

/* candidate order inside a start section: larger first, then longer */
static int cmp_cand(const void *pa, const void *pb, void *ctx)
{
	const sreq *q = ctx;
	const sreq *a = &q[*(const uint32_t *)pa], *b = &q[*(const uint32_t *)pb];
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	if (a->sb != b->sb)
		return a->sb > b->sb ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* insertion sort with context (lists are short; qsort_r is not C11) */
static void sort_list(uint32_t *a, uint32_t n, const sreq *q)
{
	for (uint32_t i = 1; i < n; i++) {
		uint32_t x = a[i], j = i;
		while (j > 0 && cmp_cand(&x, &a[j - 1], (void *)q) < 0) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = x;
	}
}

/* Maps the obstacles onto the sections (points P[0..K], the distinct ends
 * of the requests searched): an obstacle live over [s, e) meets section k
 * (P[k] <= t < P[k+1]) when P[k] < e and P[k+1] > s; every request covering
 * k is live over all of it, so the two meet in time exactly when the request
 * covers a section the obstacle meets. */
static int build_obstacles(srch *s, const uint64_t *P, const pl_obst *ob)
{
	uint32_t K = s->K;
	size_t m = 0;
	uint32_t *ka = malloc((ob->n + 1) * sizeof *ka), *kb = malloc((ob->n + 1) * sizeof *kb);
	s->ob_first = calloc((size_t)K + 2, sizeof *s->ob_first);
	if (!ka || !kb || !s->ob_first) {
		free(ka);
		free(kb);
		return -1;
	}
	for (size_t o = 0; o < ob->n; o++) {
		uint32_t lo = 0, hi = K + 1; /* first point > s */
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (P[mid] <= ob->s[o])
				lo = mid + 1;
			else
				hi = mid;
		}
		uint32_t a = lo ? lo - 1 : 0;
		lo = 0, hi = K + 1; /* first point >= e */
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (P[mid] < ob->e[o])
				lo = mid + 1;
			else
				hi = mid;
		}
		uint32_t b = lo < K ? lo : K;
		if (ob->hi[o] <= ob->lo[o] || a >= b) {
			ka[o] = kb[o] = 0;
			continue;
		}
		if (s->rev) {
			uint32_t t = a;
			a = K - b;
			b = K - t;
		}
		ka[o] = a;
		kb[o] = b;
		m += b - a;
	}
	/* pieces by offset, then bucketed by section (stable: sorted within) */
	pl_kv *kv = malloc((ob->n + 1) * sizeof *kv), *tmp = malloc((ob->n + 1) * sizeof *tmp);
	s->ob_lo = malloc((m + 1) * sizeof *s->ob_lo);
	s->ob_hi = malloc((m + 1) * sizeof *s->ob_hi);
	s->ob_pre = malloc((m + 2) * sizeof *s->ob_pre);
	uint32_t *fill = calloc((size_t)K + 1, sizeof *fill);
	int rc = -1;
	if (!kv || !tmp || !s->ob_lo || !s->ob_hi || !s->ob_pre || !fill)
		goto out;
	for (size_t o = 0; o < ob->n; o++)
		for (uint32_t k = ka[o]; k < kb[o]; k++)
			s->ob_first[k + 1]++;
	for (uint32_t k = 0; k < K; k++)
		s->ob_first[k + 1] += s->ob_first[k];
	for (size_t o = 0; o < ob->n; o++)
		kv[o] = (pl_kv){ob->lo[o], (uint32_t)o};
	pl_sort_kv(kv, tmp, ob->n);
	for (size_t j = 0; j < ob->n; j++) {
		uint32_t o = kv[j].v;
		for (uint32_t k = ka[o]; k < kb[o]; k++) {
			uint32_t at = s->ob_first[k] + fill[k]++;
			s->ob_lo[at] = ob->lo[o];
			s->ob_hi[at] = ob->hi[o];
		}
	}
	/* merge overlapping and touching intervals, section by section */
	uint32_t out = 0;
	for (uint32_t k = 0; k < K; k++) {
		uint32_t b0 = s->ob_first[k], b1 = s->ob_first[k + 1], start = out;
		for (uint32_t i = b0; i < b1; i++) {
			if (out > start && s->ob_lo[i] <= s->ob_hi[out - 1]) {
				if (s->ob_hi[i] > s->ob_hi[out - 1])
					s->ob_hi[out - 1] = s->ob_hi[i];
				continue;
			}
			s->ob_lo[out] = s->ob_lo[i];
			s->ob_hi[out++] = s->ob_hi[i];
		}
		s->ob_first[k] = start;
	}
	s->ob_first[K] = out;
	s->ob_pre[0] = 0;
	for (uint32_t i = 0; i < out; i++)
		s->ob_pre[i + 1] = s->ob_pre[i] + (s->ob_hi[i] - s->ob_lo[i]);
	rc = 0;
out:
	free(ka);
	free(kb);
	free(kv);
	free(tmp);
	free(fill);
	return rc;
}

static int build(srch *s, const pl_work *w, const pl_obst *ob)
{
	size_t n = w->n;
	uint32_t nq = 0;
	for (size_t i = 0; i < n; i++)
		nq += w->kind[i] == PL_STATIC;
	s->nq = nq;
	pl_kv *t = malloc((2 * (size_t)nq + 1) * sizeof *t), *tmp = malloc((2 * (size_t)nq + 1) * sizeof *tmp);
	s->q = malloc((nq + 1) * sizeof *s->q);
	if (!t || !tmp || !s->q) {
		free(t);
		free(tmp);
		return -1;
	}
	uint32_t j = 0;
	for (size_t i = 0; i < n; i++)
		if (w->kind[i] == PL_STATIC) {
			s->q[j] = (sreq){0, 0, w->size[i], (uint32_t)i, w->e[i] - w->s[i], 0, {0, 0, 0}};
			t[2 * j] = (pl_kv){w->s[i], 2 * j};
			t[2 * j + 1] = (pl_kv){w->e[i], 2 * j + 1};
			j++;
		}
	pl_sort_kv(t, tmp, 2 * (size_t)nq);
	uint32_t K = 0;
	for (size_t a = 0; a < 2 * (size_t)nq; a++) {
		if (a && t[a].k != t[a - 1].k)
			t[++K].k = t[a].k; /* t[0 .. K]: the distinct points, for obstacles */
		uint32_t v = t[a].v;
		if (v & 1)
			s->q[v >> 1].sb = K;
		else
			s->q[v >> 1].sa = K;
	}
	s->K = K; /* sections 0 .. K-1 (the last point closes the last section) */
	if (s->rev) /* time backwards: section k becomes K-1-k */
		for (uint32_t i = 0; i < nq; i++) {
			uint32_t sa = s->q[i].sa;
			s->q[i].sa = K - s->q[i].sb;
			s->q[i].sb = K - sa;
		}
	if (ob && ob->n && nq) {
		uint64_t *P = malloc(((size_t)K + 1) * sizeof *P);
		for (uint32_t k = 0; P && k <= K; k++)
			P[k] = t[k].k;
		int r = P ? build_obstacles(s, P, ob) : -1;
		free(P);
		if (r < 0) {
			free(t);
			free(tmp);
			return -1;
		}
	}
	free(t);
	free(tmp);
	s->first = calloc((size_t)K + 2, sizeof *s->first);
	s->list = malloc((nq + 1) * sizeof *s->list);
	s->f = calloc((size_t)K + 2, sizeof *s->f);
	s->rem = calloc((size_t)K + 2, sizeof *s->rem);
	s->eff = calloc((size_t)K + 2, sizeof *s->eff);
	s->bmax = calloc((size_t)K / BLK + 2, sizeof *s->bmax);
	s->bmin = calloc((size_t)K / BLK + 2, sizeof *s->bmin);
	s->brem = calloc((size_t)K / BLK + 2, sizeof *s->brem);
	s->blow = calloc((size_t)K / BLK + 2, sizeof *s->blow);
	s->bsup = calloc((size_t)K / BLK + 2, sizeof *s->bsup);
	s->cross = calloc((size_t)K + 2, sizeof *s->cross);
	s->done = calloc(nq + 1, 1);
	s->sup = malloc((size_t)K + 2);
	s->off = malloc((nq + 1) * sizeof *s->off);
	s->stcap = (size_t)nq * 2 + K + 2;
	s->st = malloc(s->stcap * sizeof *s->st);
	if (!s->first || !s->list || !s->f || !s->rem || !s->eff || !s->bmax || !s->bmin || !s->brem || !s->blow || !s->bsup || !s->cross || !s->done || !s->sup || !s->off || !s->st)
		return -1;
	for (uint32_t i = 0; i < nq; i++)
		s->first[s->q[i].sa + 1]++;
	for (uint32_t k = 0; k < K + 1; k++)
		s->first[k + 1] += s->first[k];
	uint32_t *fill = calloc((size_t)K + 1, sizeof *fill);
	if (!fill)
		return -1;
	for (uint32_t i = 0; i < nq; i++)
		s->list[s->first[s->q[i].sa] + fill[s->q[i].sa]++] = i;
	free(fill);
	for (uint32_t k = 0; k < K; k++)
		sort_list(s->list + s->first[k], s->first[k + 1] - s->first[k], s->q);
	return 0;
}

static void take(srch *s, uint32_t i, int sign)
{
	const sreq *q = &s->q[i];
	for (uint32_t k = q->sa; k < q->sb; k++) {
		if (sign > 0)
			s->rem[k] += q->size;
		else
			s->rem[k] -= q->size;
		if (k > q->sa)
			s->cross[k] += sign;
	}
}

/* The waste level of section k (floor m): a lower bound on the offset of
 * the lowest unplaced request y covering k when nothing lands at m in k.
 * y lies at or above e_y (its max floor) and rests on something in a
 * section other than k: a placed request whose top is that section's floor
 * (then y can be at e_y > m), or an unplaced z that does not cover k (z
 * would be lower in k) and lies at or above e_z: then y is at least
 * e_z + size of z.  UINT64_MAX: no request can be the lowest (no waste).
 * Uses eff[] (min e_z + size_z per section over such z) as scratch. */
static uint64_t waste_level(srch *s, uint32_t k, uint64_t m, uint32_t a, uint32_t b)
{
	for (uint32_t j = a; j < b; j++)
		s->eff[j] = UINT64_MAX;
	for (uint32_t j = a; j < b; j++)
		for (uint32_t p = s->first[j]; p < s->first[j + 1]; p++) {
			uint32_t i = s->list[p];
			const sreq *q = &s->q[i];
			if (s->done[i] || (q->sa <= k && q->sb > k))
				continue;
			uint64_t e = ob_fit(s, q->sa, q->sb, q->size, range_max(s, q->sa, q->sb)) + q->size;
			for (uint32_t t = q->sa; t < q->sb; t++)
				if (e < s->eff[t])
					s->eff[t] = e;
		}
	uint64_t L = UINT64_MAX;
	for (uint32_t i = 0; i < s->nq; i++) {
		const sreq *q = &s->q[i];
		if (s->done[i] || q->sa > k || q->sb <= k || (q->sb == q->sa + 1 && !s->ob_first))
			continue;
		uint64_t e0 = range_max(s, q->sa, q->sb);
		if (e0 >= L)
			continue;
		/* with obstacles, y lies no lower than where it first fits
		 * between them above its floors */
		uint64_t e = ob_fit(s, q->sa, q->sb, q->size, e0);
		int held = 0;
		uint64_t z = UINT64_MAX, ot = UINT64_MAX;
		for (uint32_t j = q->sa; j < q->sb; j++) {
			/* or on an obstacle's top, in any of its sections */
			uint64_t x = ob_top_above(s, j, m, e);
			if (x < ot)
				ot = x;
			if (j == k)
				continue;
			if (s->f[j] == e && s->sup[j] && e > m)
				held = 1;
			if (s->eff[j] < z)
				z = s->eff[j];
		}
		uint64_t l = held ? e : z == UINT64_MAX ? UINT64_MAX : (z > e ? z : e);
		if (ot < l)
			l = ot;
		if (l <= m)
			l = m + 1; /* not at m: above it */
		if (l < L)
			L = l;
	}
	return L;
}

/* The inference over the whole component [a, b): every unplaced request
 * lies at or above its max floor e_y, so nothing covering section j lies
 * below eff[j] = min e_y over the unplaced requests covering j; the section
 * fails when eff[j] + its unplaced bytes exceed the capacity.  0 = prune. */
static int feasible(srch *s, uint32_t a, uint32_t b)
{
	for (uint32_t j = a; j < b; j++)
		s->eff[j] = UINT64_MAX;
	for (uint32_t bl = a / BLK; bl * BLK < b; bl++)
		s->bmin[bl] = UINT64_MAX;
	for (uint32_t k = a; k < b; k++)
		for (uint32_t p = s->first[k]; p < s->first[k + 1]; p++) {
			uint32_t i = s->list[p];
			if (s->done[i])
				continue;
			const sreq *q = &s->q[i];
			uint64_t e = ob_fit(s, q->sa, q->sb, q->size, range_max(s, q->sa, q->sb));
			if (e + q->size > s->cap)
				return 0;
			uint32_t lo = q->sa, hi = q->sb;
			for (; lo < hi && lo % BLK; lo++)
				if (e < s->eff[lo])
					s->eff[lo] = e;
			for (; lo + BLK <= hi; lo += BLK)
				if (e < s->bmin[lo / BLK])
					s->bmin[lo / BLK] = e;
			for (; lo < hi; lo++)
				if (e < s->eff[lo])
					s->eff[lo] = e;
		}
	for (uint32_t j = a; j < b; j++) {
		uint64_t e = s->eff[j] < s->bmin[j / BLK] ? s->eff[j] : s->bmin[j / BLK];
		s->eff[j] = e;
		if (s->rem[j] && s->rem[j] > room(s, j, e))
			return 0;
	}
	/* unallocated floor: nothing can go below eff[j] in section j, so its
	 * floor rises there now (one node instead of a waste node per level);
	 * the old floors go on the trail for undo() */
	int any = 0;
	for (uint32_t j = a; j < b; j++)
		if (s->rem[j] && s->eff[j] > s->f[j] && s->eff[j] != UINT64_MAX) {
			if (trail_reserve(s, 1) < 0)
				break; /* no more raises: still correct */
			s->trail[s->ntrail++] = (raised){j, s->sup[j], s->f[j]};
			uint8_t sup = 0;
			uint64_t f = ob_lift(s, j, s->eff[j], &sup);
			sec_set3(s, j, f, s->rem[j], sup);
			any = 1;
		}
	if (any)
		fix_blocks(s, a, b);
	return 1;
}

/* The order in which a node tries its candidates, per restart (mode):
 * 0 guided by the incumbent (the best layout so far): the candidate whose
 * offset there is nearest m first, so the search starts close to a layout
 * known to be good and departs from it where it must; 1 larger first; 2 the
 * most loaded section first (fail first); 3 larger area (size x lifetime)
 * first; 4 those whose top meets a neighbouring floor (a snug fit) first,
 * then larger; 10, 11, 12 the static preorders TWA, WAT, TAW (static_ranks);
 * any other: larger first with sizes shaken by up to 1/8 (a different tie
 * order each restart). */
static uint64_t cand_key(const srch *s, const sreq *q, uint64_t most_loaded)
{
	switch (s->mode) {
	case 0: { /* guided: where the incumbent layout has it, nearest first */
		if (!s->inc)
			return q->size;
		uint64_t m = s->f[q->sa], o = s->inc[q - s->q];
		return UINT64_MAX - (o > m ? o - m : m - o);
	}
	case 1: return q->size;
	case 10: case 11: case 12: return UINT64_MAX - q->rk[s->mode - 10];
	case 2: return most_loaded;
	case 3: return q->size * (uint64_t)q->len;
	case 4: { /* snug first: its top meets a neighbouring floor */
		uint64_t top = s->f[q->sa] + q->size;
		int snug = (q->sa > 0 && s->rem[q->sa - 1] && s->f[q->sa - 1] == top) ||
		           (q->sb < s->K && s->rem[q->sb] && s->f[q->sb] == top);
		return (uint64_t)snug << 63 | q->size;
	}
	default: return q->size + (mix((uint64_t)s->mode << 32 | q->id) % (q->size / 8 + 1));
	}
}

/* candidates by key descending, then size, lifetime, section range, index
 * (identical requests end up adjacent) */
static int cand_before(const srch *s, const pl_kv *x, const pl_kv *y)
{
	if (x->k != y->k)
		return x->k > y->k;
	const sreq *a = &s->q[x->v], *b = &s->q[y->v];
	if (a->size != b->size)
		return a->size > b->size;
	if (a->len != b->len)
		return a->len > b->len;
	if (a->size != b->size)
		return a->size > b->size;
	if (a->sb != b->sb)
		return a->sb > b->sb;
	return x->v < y->v;
}

static void sort_cands(const srch *s, pl_kv *c, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		pl_kv x = c[i];
		uint32_t j = i;
		while (j > 0 && cand_before(s, &x, &c[j - 1])) {
			c[j] = c[j - 1];
			j--;
		}
		c[j] = x;
	}
}

/* Undoes what frame fr did (a placement or a waste) and clears it. */
static void undo(srch *s, frame *fr)
{
	if (s->ntrail > fr->tr) {
		uint32_t lo = UINT32_MAX, hi = 0;
		while (s->ntrail > fr->tr) {
			raised x = s->trail[--s->ntrail];
			sec_set3(s, x.k, x.f, s->rem[x.k], x.sup);
			lo = x.k < lo ? x.k : lo;
			hi = x.k + 1 > hi ? x.k + 1 : hi;
		}
		fix_blocks(s, lo, hi);
	}
	if (fr->placed != UINT32_MAX) {
		const sreq *q = &s->q[fr->placed];
		for (uint32_t k = q->sa; k < q->sb; k++) {
			sec_set(s, k, fr->m, s->rem[k] + q->size);
			if (k > q->sa)
				s->cross[k]++;
		}
		fix_blocks(s, q->sa, q->sb);
		s->h1 -= tb1(fr->placed);
		s->h2 -= tb2(fr->placed);
		s->done[fr->placed] = 0;
		fr->placed = UINT32_MAX;
	} else if (fr->next == UINT32_MAX - 1) {
		sec_set(s, fr->k, fr->m, s->rem[fr->k]);
		fix_blocks(s, fr->k, fr->k + 1);
		fr->next = UINT32_MAX;
	}
}

static int solve(srch *s, uint32_t a, uint32_t b, size_t base, size_t *top);

/* Counts a node; 1 when a deadline has passed (looked at every 64 nodes:
 * a node of a few thousand requests costs about a millisecond) or the node
 * limit (every 1024, the granularity the restart slices were tuned with). */
static int out_of_budget(srch *s)
{
	if (++s->nodes & 63)
		return 0;
	if (pl_now() > s->deadline || pl_cpu_now() > s->cpu_deadline)
		return 1;
	return (s->nodes & 1023) == 0 && s->nodes > s->node_limit;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* Static preorders (MiniMalloc's paper: T = the most bytes live in one of
 * its sections, W = lifetime, A = area): rk[0] by T, W, A; rk[1] by W, A, T;
 * rk[2] by T, A, W (all descending).  Needs rem[] at its initial value. */
static int static_ranks(srch *s)
{
	uint32_t n = s->nq;
	pl_kv *a = malloc((n + 1) * sizeof *a), *tmp = malloc((n + 1) * sizeof *tmp);
	if (!a || !tmp) {
		free(a);
		free(tmp);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t t = 0;
		for (uint32_t k = s->q[i].sa; k < s->q[i].sb; k++)
			t = s->rem[k] > t ? s->rem[k] : t;
		s->q[i].tot = t;
	}
	static const char *const orders[3] = {"TWA", "WAT", "TAW"};
	for (int o = 0; o < 3; o++) {
		for (uint32_t i = 0; i < n; i++)
			a[i] = (pl_kv){0, i};
		for (int d = 2; d >= 0; d--) { /* least significant first: stable */
			for (uint32_t j = 0; j < n; j++) {
				const sreq *q = &s->q[a[j].v];
				char c = orders[o][d];
				uint64_t x = c == 'T' ? q->tot : c == 'W' ? q->len : sat_mul(q->size, q->len);
				a[j].k = UINT64_MAX - x;
			}
			pl_sort_kv(a, tmp, n);
		}
		for (uint32_t j = 0; j < n; j++)
			s->q[a[j].v].rk[o] = j;
	}
	free(a);
	free(tmp);
	return 0;
}

/* Dynamic decomposition: when no unplaced request crosses some boundaries
 * inside [a, b), the parts are independent: each is solved on its own, and
 * one part failing fails the node without retrying the others.  Returns
 * 2 when [a, b) is one part (nothing done), else as solve (on success every
 * part stays placed, frames up to *top; on failure all is undone). */
static int decompose(srch *s, uint32_t a, uint32_t b, size_t base, size_t *top)
{
	uint32_t parts = 0;
	int any = 0;
	for (uint32_t k = a; k < b; k++) {
		if (k > a && !s->cross[k] && any) {
			parts++;
			any = 0;
		}
		if (s->rem[k])
			any = 1;
	}
	parts += any;
	if (parts < 2)
		return 2;
	size_t at = base;
	uint32_t p = a;
	int rc = 1;
	for (uint32_t k = a + 1; k <= b && rc == 1; k++)
		if (k == b || !s->cross[k]) {
			int has = 0;
			for (uint32_t j = p; j < k && !has; j++)
				has = s->rem[j] != 0;
			if (has)
				rc = solve(s, p, k, at, &at);
			p = k;
		}
	if (rc == 1) {
		*top = at;
		return 1;
	}
	while (at > base) /* the parts solved before the one that failed */
		undo(s, &s->st[--at]);
	return rc;
}

/* Searches sections [a, b) from the current floors, with frames from
 * s->st[base].  Returns 1 found (offsets in s->off; the frames up to *top
 * hold what was placed, for a caller that must undo it), 0 proven
 * impossible (everything undone), -1 out of time, -2 no memory. */
static int solve(srch *s, uint32_t a, uint32_t b, size_t base, size_t *top)
{
	size_t depth = base;
	uint32_t remaining = 0;
	for (uint32_t k = a; k < b; k++)
		for (uint32_t p = s->first[k]; p < s->first[k + 1]; p++)
			remaining += !s->done[s->list[p]];
	for (uint32_t k = a; k < b; k++)
		if (s->rem[k] && s->rem[k] > room(s, k, s->f[k]))
			return 0;
	int open = 1;
	for (;;) {
		frame *fr;
		if (open) {
			if (!remaining) {
				*top = depth;
				return 1;
			}
			if (out_of_budget(s)) {
				s->timed_out = 1;
				return -1;
			}
			if (s->tt && depth > base) {
				int found;
				tt_slot(s, s->h1, s->h2, &found);
				if (found) {
					open = 0; /* failed before: the parent tries its next */
					continue;
				}
			}
			if (depth > base) {
				int d = decompose(s, a, b, depth, top);
				if (d == 1 || d < 0)
					return d;
				if (d == 0) {
					s->sp = depth;
					open = 0;
					continue;
				}
			}
			uint32_t k = UINT32_MAX;
			uint64_t m = UINT64_MAX;
			for (uint32_t j = a; j < b;) {
				if (j % BLK == 0 && j + BLK <= b) {
					if (s->blow[j / BLK] >= m) { /* nothing lower in this block */
						j += BLK;
						continue;
					}
				}
				if (s->rem[j] && s->f[j] < m) {
					m = s->f[j];
					k = j;
				}
				j++;
			}
			if (s->sel == 1) /* the section at m with the least slack */
				for (uint32_t j = k + 1; j < b; j++)
					if (s->rem[j] && s->f[j] == m && s->rem[j] > s->rem[k])
						k = j;
			/* r0: where the run of sections at m that holds k begins
			 * (candidates start in [r0, k] and cover k) */
			uint32_t r0 = k;
			while (r0 > a && s->rem[r0 - 1] && s->f[r0 - 1] == m)
				r0--;
			if (depth == s->stcap) {
				frame *ns = realloc(s->st, s->stcap * 2 * sizeof *ns);
				if (!ns)
					return -2;
				s->st = ns;
				s->stcap *= 2;
			}
			uint32_t cb = depth ? s->st[depth - 1].cend : 0, ce = cb, hat = 0;
			if (cb + (size_t)(s->first[k + 1] - s->first[r0]) > s->ccap) {
				size_t nc = (s->ccap + s->first[k + 1] - s->first[r0]) * 2;
				pl_kv *n2 = realloc(s->cand, nc * sizeof *n2);
				if (!n2)
					return -2;
				s->cand = n2;
				s->ccap = nc;
			}
			/* candidates: cover k, every section at m, resting on a
			 * placed top or the base in one of them; ordered by cand_key */
			for (uint32_t p = s->first[r0]; p < s->first[k + 1]; p++) {
				uint32_t i = s->list[p];
				const sreq *q = &s->q[i];
				if (s->done[i] || m + q->size > s->cap || q->sb <= k)
					continue;
				/* its sections hold its bytes unplaced, so their floors
				 * are at least m: all at m when the most is */
				int ok = range_max(s, q->sa, q->sb) == m && range_sup(s, q->sa, q->sb);
				for (uint32_t j = q->sa; j < q->sb && ok && (s->ob_first || !q->size); j++)
					ok = s->f[j] == m && m + q->size <= ob_ceil(s, j, m);
				if (ok) {
					uint64_t tot = range_rem(s, q->sa, q->sb);
					/* hatless: nothing else is unplaced where it lives, so
					 * if it fails at m, every alternative fails too (its
					 * sections hold at least its bytes: at most, only them) */
					int alone = tot == q->size;
					if (alone) {
						s->cand[cb] = (pl_kv){0, i};
						ce = cb + 1;
						hat = 1;
						break;
					}
					s->cand[ce++] = (pl_kv){cand_key(s, q, tot), i};
				}
			}
			sort_cands(s, s->cand + cb, ce - cb);
			fr = &s->st[depth++];
			s->sp = depth;
			*fr = (frame){k, m, cb, ce, UINT32_MAX, 0, 0, 0, s->h1, s->h2, (uint32_t)s->ntrail, hat};
			open = 0;
		}
		fr = &s->st[depth - 1];
		int was_placed = fr->placed != UINT32_MAX;
		undo(s, fr); /* what this frame did last */
		remaining += was_placed;
		uint32_t k = fr->k;
		uint64_t m = fr->m;
		int advanced = 0;
		while (fr->next < fr->cend) {
			uint32_t i = s->cand[fr->next++].v;
			const sreq *q = &s->q[i];
			if (q->size == fr->prev_size && q->sb == fr->prev_sb)
				continue; /* same as one tried here (identical ones are adjacent) */
			int ok = 1;
			fr->prev_size = q->size;
			fr->prev_sb = q->sb;
			fr->tried++;
			if (trail_reserve(s, q->sb - q->sa) < 0)
				return -2;
			fr->tr = (uint32_t)s->ntrail;
			s->done[i] = 1;
			remaining--;
			s->off[i] = m;
			fr->placed = i;
			s->h1 += tb1(i);
			s->h2 += tb2(i);
			for (uint32_t j = q->sa; j < q->sb; j++) {
				s->trail[s->ntrail++] = (raised){j, s->sup[j], m};
				uint8_t sup = 1;
				sec_set3(s, j, ob_lift(s, j, m + q->size, &sup), s->rem[j] - q->size, sup);
				if (j > q->sa)
					s->cross[j]--;
				if (s->rem[j] && s->rem[j] > room(s, j, s->f[j]))
					ok = 0;
			}
			fix_blocks(s, q->sa, q->sb);
			if (ok && out_of_budget(s)) {
				s->timed_out = 1;
				return -1;
			}
			if (!ok || !feasible(s, a, b))
				break; /* undone at the top of the loop */
			advanced = 1;
			break;
		}
		if (fr->placed != UINT32_MAX) {
			if (advanced)
				open = 1;
			continue;
		}
		if (fr->nowaste && fr->next != UINT32_MAX - 1)
			fr->next = UINT32_MAX;
		if (fr->next != UINT32_MAX && fr->next != UINT32_MAX - 1) {
			/* the waste branch */
			fr->next = UINT32_MAX;
			uint64_t L = waste_level(s, k, m, a, b);
			uint8_t lsup = 0;
			if (L != UINT64_MAX)
				L = ob_lift(s, k, L, &lsup);
			if (L != UINT64_MAX && L > m && s->rem[k] <= room(s, k, L)) {
				if (trail_reserve(s, 1) < 0)
					return -2;
				fr->tr = (uint32_t)s->ntrail;
				s->trail[s->ntrail++] = (raised){k, s->sup[k], m};
				sec_set3(s, k, L, s->rem[k], lsup);
				fix_blocks(s, k, k + 1);
				fr->next = UINT32_MAX - 1;
				if (feasible(s, a, b)) {
					open = 1;
					continue;
				}
				s->ntrail--;
				sec_set3(s, k, m, s->rem[k], s->trail[s->ntrail].sup);
				fix_blocks(s, k, k + 1);
				fr->next = UINT32_MAX;
			}
		}
		/* exhausted: remember the state as failed, pop */
		if (s->tt) {
			int found;
			uint64_t *e = tt_slot(s, fr->h1, fr->h2, &found);
			if (e && !found) {
				e[0] = fr->h1 ? fr->h1 : 1;
				e[1] = fr->h2;
			}
		}
		s->sp = --depth;
		if (depth == base)
			return 0;
	}
}

/* Sets up one search of the static requests under cap (rev: time runs
 * backwards, a mirror image that the search meets in another order). */
static int srch_init(srch *s, const pl_work *w, const pl_obst *ob, uint64_t cap, int rev, const uint64_t *off)
{
	memset(s, 0, sizeof *s);
	s->rev = rev;
	if (build(s, w, ob) < 0)
		return -1;
	s->cap = cap;
	/* off holds the incumbent on entry: it guides the first order */
	s->inc = malloc((s->nq + 1) * sizeof *s->inc);
	for (uint32_t i = 0; s->inc && i < s->nq; i++)
		s->inc[i] = off[s->q[i].id] == STP_NO_OFFSET ? 0 : off[s->q[i].id];
	for (uint32_t i = 0; i < s->nq; i++)
		take(s, i, +1);
	if (static_ranks(s) < 0)
		return -1;
	s->tt_bits = ob && ob->n ? TT_BITS_OB : TT_BITS;
	s->tt = calloc((size_t)2 << s->tt_bits, sizeof *s->tt); /* without it: no memo, same answers */
	for (uint32_t k = 0; k < s->K; k++) {
		s->sup[k] = 1; /* the base supports */
		s->f[k] = ob_lift(s, k, w->pinned_bytes, &s->sup[k]);
		if (s->rem[k]) {
			s->h1 += tf1(k, s->f[k] << 1 | 1);
			s->h2 += tf2(k, s->f[k] << 1 | 1);
		}
	}
	fix_blocks(s, 0, s->K);
	return 0;
}

int pl_search(const pl_work *w, const pl_obst *ob, uint64_t cap, double deadline, double cpu_deadline,
              uint64_t node_limit, int guided,
              uint64_t *off, uint64_t *nodes)
{
	srch two[2];
	int rc = -2, ndir = 2;
	memset(two, 0, sizeof two);
	for (int d = 0; d < ndir; d++)
		if (srch_init(&two[d], w, ob, cap, d, off) < 0)
			goto out;
	/* Restarts: each with another candidate order and section rule, the
	 * timeline forwards and backwards in turn, twice the nodes every 5
	 * rounds of a direction.  Search trees are heavy-tailed: one order
	 * solves in a few hundred nodes what another does not in millions.
	 * Failed states stay remembered across restarts (they fail under any
	 * order); each direction has its own memory. */
	uint64_t limit = node_limit ? node_limit : UINT64_MAX, used = 0;
	srch *s = &two[0];
	for (int round = 0;; round++) {
		/* (order, section rule) per round: the least-slack section and
		 * the leftmost one alternate (each solves instances the other
		 * does not in millions of nodes) */
		static const int first_modes[][2] = {{10, 1}, {10, 0}, {12, 1}, {0, 0}, {12, 0}, {11, 1}, {3, 0}, {2, 1},
		                                     {0, 1}, {11, 0}, {3, 1}, {2, 0}, {1, 0}, {4, 0}, {1, 1}, {4, 1}};
		int nfirst = (int)(sizeof first_modes / sizeof *first_modes);
		int r = round / ndir;
		s = &two[round % ndir];
		if (guided && round == 0)
			r = 3; /* {0, 0}: the incumbent's order first */
		else if (guided && r == 3)
			r = 0;
		s->mode = r < nfirst ? first_modes[r][0] : r;
		s->sel = r < nfirst ? first_modes[r][1] : r & 1;
		/* a round may visit 4 nodes per request and section (a descent
		 * visits about one each), doubling every 5 rounds */
		uint64_t per = ((uint64_t)s->nq + s->K + 64) * 4 << (r / 5 < 30 ? r / 5 : 30);
		uint64_t before = s->nodes;
		s->node_limit = s->nodes + (limit - used > per ? per : limit - used);
		s->deadline = deadline;
		s->cpu_deadline = cpu_deadline;
		s->timed_out = 0;
		/* components (no request crosses between them) are solved one by one */
		size_t top = 0;
		rc = s->K ? decompose(s, 0, s->K, 0, &top) : 1;
		if (rc == 2)
			rc = solve(s, 0, s->K, 0, &top);
		used += s->nodes - before;
		if (rc != -1 || pl_now() >= deadline || pl_cpu_now() >= cpu_deadline || used >= limit)
			break;
		while (s->sp) /* back to the start */
			undo(s, &s->st[--s->sp]);
	}
	if (rc == 1) {
		uint64_t base = 0; /* pinned requests stacked at the bottom, as greedy does */
		for (size_t i = 0; i < w->n; i++)
			if (w->kind[i] == PL_PINNED) {
				off[i] = base;
				base += w->size[i];
			}
		for (uint32_t i = 0; i < s->nq; i++)
			off[s->q[i].id] = s->off[i];
	}
out:
	for (int d = 0; d < ndir; d++) {
		if (nodes)
			*nodes += two[d].nodes;
		srch_free(&two[d]);
	}
	return rc;
}
