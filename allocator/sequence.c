/*
 * sequence.c - a plan's signature sequence and the matcher that follows a
 * running program along it.
 *
 * The sequence is the plan's requests in allocation order: the start-up
 * one (every request before the planned iteration, up to the last
 * persistent one: plan 1.3) is walked once; the iteration's repeats
 * (cyclic).  A request is matched
 * by its size, which is what a program repeats exactly from one iteration
 * to the next; where the program drifts from the recorded order, the
 * matcher recovers instead of giving up:
 *   - lookahead: the entry at the cursor or up to `lookahead` entries after
 *     it (the ones in between were not requested this time: skipped);
 *   - reorder ring: the last ST_RING skipped entries stay claimable while
 *     the cursor is at most RING_REACH past them, so two requests that
 *     swapped places both hit; looked at before the lookahead, which would
 *     otherwise jump to a later entry of the same size (layers repeat
 *     their sizes);
 *   - varying: an entry sized for the largest request seen at its place
 *     (STP_REQ_VARYING) takes a request up to its size: at the cursor, or
 *     within the lookahead after entries that fit the two requests just
 *     made; a request that nothing nearby takes looks for one up to
 *     VARYING_REACH varying entries ahead (an iteration shorter than the
 *     planned one skips the rest of its recurrence);
 *   - dynamic: a size-varying entry near the cursor takes any size;
 *   - resync: after `resync_after` misses in a row, the cursor jumps to the
 *     entry of this size whose two predecessors have the sizes of the two
 *     requests just before it (the nearest such entry, either way).
 * Each is O(1) for a request that follows the plan; lookahead and ring are
 * bounded; resync looks at no more than RESYNC_CANDIDATES entries, the
 * varying search at VARYING_REACH (found by bisection in `var`).
 *
 * Invariants: cursor < n (or 0 when n == 0); ring slots hold positions of
 * static entries or UINT32_MAX.
 */
#include <string.h>

#include "internal.h"

#define RESYNC_CANDIDATES 256
#define DYNAMIC_REACH 4
#define RING_REACH 4 /* a skipped entry stays claimable this far behind */
#define VARYING_REACH 64 /* varying entries looked at for a size the plan lacks */

int st_seq_build(st_seq *s, const st_entry *src, uint32_t n, int cyclic)
{
	memset(s, 0, sizeof *s);
	memset(s->ring, 0xff, sizeof s->ring);
	s->cyclic = cyclic;
	s->n = n;
	if (!n)
		return 0;
	s->e = st_map(n * sizeof *s->e);
	s->next_same = st_map(n * sizeof *s->next_same);
	if (!s->e || !s->next_same)
		return -1;
	memcpy(s->e, src, n * sizeof *s->e);
	for (uint32_t i = 0; i < n; i++)
		s->nvar += s->e[i].varying != 0;
	if (s->nvar && !(s->var = st_map(s->nvar * sizeof *s->var)))
		return -1;
	for (uint32_t i = 0, k = 0; i < n; i++)
		if (s->e[i].varying)
			s->var[k++] = i;
	/* chains of equal sizes in position order: built backwards */
	for (uint32_t i = n; i-- > 0;) {
		if (s->e[i].dynamic)
			continue;
		uint64_t *head = st_ptrmap_get(&s->first, s->e[i].size);
		s->next_same[i] = head ? (uint32_t)*head : 0;
		if (st_ptrmap_put(&s->first, s->e[i].size, (uint64_t)i + 1) < 0)
			return -1;
	}
	return 0;
}

void st_seq_free(st_seq *s)
{
	st_unmap(s->e, s->n * sizeof *s->e);
	st_unmap(s->next_same, s->n * sizeof *s->next_same);
	st_unmap(s->var, s->nvar * sizeof *s->var);
	st_ptrmap_free(&s->first);
	memset(s, 0, sizeof *s);
}

void st_seq_restart(st_seq *s)
{
	s->cursor = 0;
	s->misses = 0;
	memset(s->ring, 0xff, sizeof s->ring);
}

/* position j entries after the cursor; UINT32_MAX past the end of a
 * start-up sequence */
static inline uint32_t ahead(const st_seq *s, uint32_t j)
{
	uint64_t p = (uint64_t)s->cursor + j;
	if (p >= s->n) {
		if (!s->cyclic)
			return UINT32_MAX;
		p %= s->n;
	}
	return (uint32_t)p;
}

static void advance_to(st_seq *s, uint32_t p)
{
	if (p + 1 >= s->n) {
		if (s->cyclic) {
			s->cursor = 0;
			s->wraps++;
		} else {
			s->cursor = s->n; /* spent */
		}
	} else {
		s->cursor = p + 1;
	}
}

static void remember_skipped(st_seq *s, uint32_t p)
{
	if (s->e[p].dynamic)
		return;
	s->ring[s->ring_at] = p;
	s->ring_at = (s->ring_at + 1) % ST_RING;
}

static uint32_t before(const st_seq *s, uint32_t p, uint32_t k)
{
	if (p >= k)
		return p - k;
	return s->cyclic && s->n > k ? p + s->n - k : UINT32_MAX;
}

/* how far the cursor has moved past position p (cyclic) */
static uint32_t behind(const st_seq *s, uint32_t p)
{
	return s->cursor >= p ? s->cursor - p : s->cursor + s->n - p;
}

/* 1 when entry p comes after entries that could be the two requests just
 * made (sizes hist[0], hist[1]; a varying entry, any size up to its own) */
static int follows(const st_seq *s, uint32_t p, const uint64_t hist[2])
{
	for (uint32_t k = 0; k < 2; k++) {
		uint32_t q = before(s, p, k + 1);
		if (q == UINT32_MAX || !hist[k])
			return 0;
		if (s->e[q].varying ? s->e[q].size < hist[k] : s->e[q].size != hist[k])
			return 0;
	}
	return 1;
}

static int hit_at(st_seq *s, uint32_t j, uint32_t *pos, uint32_t *skipped)
{
	uint32_t p = ahead(s, j);
	uint32_t first = j > ST_RING ? j - ST_RING : 0;
	for (uint32_t i = first; i < j; i++)
		remember_skipped(s, ahead(s, i));
	*skipped = j;
	*pos = p;
	advance_to(s, p);
	s->misses = 0;
	return ST_HIT;
}

int st_seq_expects(const st_seq *s, uint64_t size)
{
	return s->cursor < s->n && !s->e[s->cursor].dynamic && s->e[s->cursor].size == size;
}

int st_seq_match(st_seq *s, uint64_t size, const uint64_t hist[2], uint32_t lookahead, uint32_t resync_after,
                 uint32_t *pos, uint32_t *skipped)
{
	*skipped = 0;
	if (!s->n || s->cursor >= s->n)
		return ST_MISS;
	/* the cursor */
	if (st_seq_expects(s, size))
		return hit_at(s, 0, pos, skipped);
	/* an entry skipped a moment ago (two requests that swapped places):
	 * before the lookahead, which would jump over the right place to a
	 * later entry of the same size (layers repeat their sizes) */
	for (uint32_t i = 0; i < ST_RING; i++) {
		uint32_t p = s->ring[i];
		if (p == UINT32_MAX)
			continue;
		if (behind(s, p) > RING_REACH) {
			s->ring[i] = UINT32_MAX; /* too long ago: it was missing, not late */
			continue;
		}
		if (s->e[p].size == size) {
			s->ring[i] = UINT32_MAX;
			*pos = p;
			s->misses = 0;
			return ST_HIT_REORDER;
		}
	}
	/* a few entries ahead: the ones in between were not requested */
	for (uint32_t j = 1; j <= lookahead && j < s->n; j++) {
		uint32_t p = ahead(s, j);
		if (p == UINT32_MAX)
			break;
		if (!s->e[p].dynamic && s->e[p].size == size)
			return hit_at(s, j, pos, skipped);
	}
	/* an entry sized for the largest request seen at its place: at the
	 * cursor, or the nearest that holds this one after the two sizes just
	 * requested */
	for (uint32_t j = 0; j <= lookahead && j < s->n; j++) {
		uint32_t p = ahead(s, j);
		if (p == UINT32_MAX)
			break;
		if (s->e[p].varying && s->e[p].size >= size && (!j || follows(s, p, hist)))
			return hit_at(s, j, pos, skipped);
	}
	/* a size-varying entry near the cursor */
	for (uint32_t j = 0; j < DYNAMIC_REACH && j < s->n; j++) {
		uint32_t p = ahead(s, j);
		if (p == UINT32_MAX)
			break;
		if (s->e[p].dynamic) {
			*skipped = j;
			*pos = p;
			advance_to(s, p);
			s->misses = 0;
			return ST_HIT_DYNAMIC;
		}
	}
	/* a size the plan has no entry of (a tensor whose shape follows the
	 * step's sequence length): the next entry sized for the largest seen
	 * at its place that holds it, however far (the iteration was planned
	 * at its largest, so this one runs short of it: the entries between
	 * are not requested this time) */
	if (s->nvar) {
		uint32_t lo = 0, hi = s->nvar;
		while (lo < hi) {
			uint32_t mid = (lo + hi) / 2;
			if (s->var[mid] < s->cursor)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (uint32_t k = 0; k < VARYING_REACH && k < s->nvar; k++) {
			uint32_t p = s->var[(lo + k) % s->nvar];
			if (!s->cyclic && p < s->cursor)
				break;
			if (s->e[p].size >= size && follows(s, p, hist)) {
				*skipped = p >= s->cursor ? p - s->cursor : p + s->n - s->cursor;
				*pos = p;
				advance_to(s, p);
				s->misses = 0;
				return ST_HIT_RESYNC;
			}
		}
	}
	/* lost: find where the last sizes line up again, nearest the cursor
	 * either way */
	if (++s->misses >= resync_after && hist[0] && hist[1]) {
		uint64_t *head = st_ptrmap_get(&s->first, size);
		uint32_t best = UINT32_MAX;
		uint64_t best_dist = UINT64_MAX;
		unsigned looked = 0;
		for (uint32_t c = head ? (uint32_t)*head : 0; c && looked < RESYNC_CANDIDATES;
		     c = s->next_same[c - 1], looked++) {
			uint32_t p = c - 1, p1 = before(s, p, 1), p2 = before(s, p, 2);
			if (p1 == UINT32_MAX || p2 == UINT32_MAX || s->e[p1].size != hist[0] || s->e[p2].size != hist[1])
				continue;
			if (!s->cyclic && p < s->cursor)
				continue;
			uint64_t fwd = p >= s->cursor ? p - s->cursor : (uint64_t)p + s->n - s->cursor;
			uint64_t back = s->n - fwd;
			uint64_t dist = s->cyclic && back < fwd ? back : fwd;
			if (dist < best_dist) {
				best_dist = dist;
				best = p;
			}
		}
		if (best != UINT32_MAX) {
			*pos = best;
			advance_to(s, best);
			s->misses = 0;
			return ST_HIT_RESYNC;
		}
	}
	return ST_MISS;
}

int st_seq_match_index(st_seq *s, uint64_t size, uint32_t *pos)
{
	/* STAlloc's published rule: the request's index in the iteration, hit
	 * or not; kept to measure against */
	if (!s->n || s->cursor >= s->n)
		return ST_MISS;
	uint32_t p = s->cursor;
	advance_to(s, p);
	*pos = p;
	return !s->e[p].dynamic && s->e[p].size == size ? ST_HIT : ST_MISS;
}
