/*
 * test_tree.c - the intrusive AVL set the allocator models use: random
 * inserts and erases checked against a sorted reference after every step,
 * lower_bound / next / prev against the reference.
 */
#include "check.h"
#include "../allocsim_internal.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

#define N 2000

static sim_block B[N + 1];
static int in[N + 1];

/* reference: the smallest in-set key >= (k1,k2) */
static uint32_t ref_lower(uint64_t k1, uint64_t k2)
{
	uint32_t best = 0;
	for (uint32_t i = 1; i <= N; i++) {
		if (!in[i] || st_less(&B[i], k1, k2))
			continue;
		if (!best || st_less(&B[i], B[best].k1, B[best].k2))
			best = i;
	}
	return best;
}

int main(void)
{
	sim_tree t = {0, 0};
	for (uint32_t i = 1; i <= N; i++) {
		B[i].k1 = rnd() % 50;
		B[i].k2 = i; /* unique keys */
	}
	long steps = 0;
	for (int round = 0; round < 20000; round++) {
		uint32_t i = 1 + (uint32_t)(rnd() % N);
		if (in[i]) {
			st_erase(B, &t, i);
			in[i] = 0;
		} else {
			st_insert(B, &t, i);
			in[i] = 1;
		}
		if (round % 97 == 0 || round < 300) {
			CHECK(sim_tree_verify(B, &t) >= 0);
			uint64_t k1 = rnd() % 52, k2 = rnd() % (N + 2);
			uint32_t lb = st_lower_bound(B, &t, k1, k2);
			CHECK_EQ_U(lb, ref_lower(k1, k2));
			if (lb) {
				uint32_t nx = st_next(B, lb);
				CHECK_EQ_U(nx, ref_lower(B[lb].k1, B[lb].k2 + 1));
				if (nx)
					CHECK_EQ_U(st_prev(B, nx), lb);
			}
			steps++;
		}
	}
	long cnt = 0;
	for (uint32_t i = st_first(B, &t); i; i = st_next(B, i))
		cnt++;
	CHECK_EQ_U((unsigned long long)cnt, t.count);
	CHECK(st_last(B, &t) == 0 || st_next(B, st_last(B, &t)) == 0);
	/* erase everything */
	for (uint32_t i = 1; i <= N; i++)
		if (in[i]) {
			st_erase(B, &t, i);
			in[i] = 0;
		}
	CHECK_EQ_U(t.count, 0);
	CHECK_EQ_U(t.root, 0);
	CHECK(sim_tree_verify(B, &t) == 0);
	CHECK(steps > 100);
	return check_done();
}
