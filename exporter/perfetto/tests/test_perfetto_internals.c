/*
 * test_perfetto_internals.c - the exporter's containers against brute
 * force: the u64 map (random puts, gets and deletes, UINT64_MAX included),
 * the string table, and the treap of live objects (find, floor, next after
 * random inserts and removes).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../perfetto_export.h"
#include "../perfetto_util.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

#define N 4000

static void test_map(void)
{
	static uint64_t keys[N], vals[N];
	static int present[N];
	pf_map m;
	memset(&m, 0, sizeof m);
	for (int i = 0; i < N; i++)
		keys[i] = i == 0 ? UINT64_MAX : i < 100 ? (uint64_t)i : rnd() % 100000;
	/* make keys distinct */
	for (int i = 0; i < N; i++)
		for (int j = 0; j < i; j++)
			if (keys[j] == keys[i]) {
				keys[i] = rnd() | 1ull << 62;
				j = -1;
			}
	size_t errors = 0;
	for (int step = 0; step < 200000; step++) {
		int i = (int)(rnd() % N);
		switch (rnd() % 3) {
		case 0:
			vals[i] = rnd();
			CHECK(pf_map_put(&m, keys[i], vals[i]) == 0);
			present[i] = 1;
			break;
		case 1: {
			uint64_t *v = pf_map_get(&m, keys[i]);
			errors += present[i] ? !v || *v != vals[i] : v != NULL;
			break;
		}
		default:
			errors += pf_map_del(&m, keys[i]) != present[i];
			present[i] = 0;
		}
	}
	size_t n = 0;
	for (int i = 0; i < N; i++) {
		uint64_t *v = pf_map_get(&m, keys[i]);
		errors += present[i] ? !v || *v != vals[i] : v != NULL;
		n += present[i] && keys[i] != UINT64_MAX;
	}
	CHECK_EQ_U(errors, 0);
	CHECK_EQ_U(m.n, n);
	pf_map_clear(&m);
	CHECK(pf_map_get(&m, keys[5]) == NULL);
	pf_map_free(&m);
}

static void test_strtab(void)
{
	pf_strtab t;
	memset(&t, 0, sizeof t);
	char buf[64];
	const char *kept[3000];
	for (int i = 0; i < 3000; i++) {
		snprintf(buf, sizeof buf, "name-%d-%s", i, i % 7 ? "x" : "a somewhat longer text");
		kept[i] = pf_strtab_add(&t, buf, strlen(buf), (uint64_t)i + 1);
		CHECK(kept[i] != NULL);
	}
	size_t errors = 0;
	for (int i = 0; i < 3000; i++) {
		snprintf(buf, sizeof buf, "name-%d-%s", i, i % 7 ? "x" : "a somewhat longer text");
		uint64_t id = 0;
		const char *s = pf_strtab_find(&t, buf, strlen(buf), &id);
		errors += s != kept[i] || id != (uint64_t)i + 1 || strcmp(s, buf) != 0;
	}
	uint64_t id;
	CHECK(pf_strtab_find(&t, "absent", 6, &id) == NULL);
	CHECK_EQ_U(errors, 0);
	pf_strtab_free(&t);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_treap(void)
{
	pf_objs o;
	memset(&o, 0, sizeof o);
	o.free_head = o.root = PF_NONE;
	static uint64_t addrs[N];
	static uint32_t ids[N];
	size_t n = 0, errors = 0;
	for (int step = 0; step < 60000; step++) {
		if (n < N && (rnd() % 3 || !n)) {
			uint64_t a = (rnd() % 50000) * 16;
			if (pf_obj_find(&o, a) != PF_NONE)
				continue;
			uint32_t i = pf_obj_new(&o);
			o.v[i].addr = a;
			pf_obj_insert(&o, i);
			addrs[n] = a;
			ids[n++] = i;
		} else {
			size_t k = (size_t)(rnd() % n);
			errors += pf_obj_find(&o, addrs[k]) != ids[k];
			pf_obj_remove(&o, ids[k]);
			addrs[k] = addrs[--n];
			ids[k] = ids[n];
		}
		if (step % 97)
			continue;
		/* floor / next of random points against the sorted addresses */
		uint64_t sorted[N];
		memcpy(sorted, addrs, n * sizeof *sorted);
		qsort(sorted, n, sizeof *sorted, cmp_u64);
		for (int q = 0; q < 20; q++) {
			uint64_t a = rnd() % 800016;
			uint64_t fl = UINT64_MAX, nx = UINT64_MAX;
			for (size_t j = 0; j < n; j++) {
				if (sorted[j] <= a)
					fl = sorted[j];
				if (sorted[j] > a && nx == UINT64_MAX)
					nx = sorted[j];
			}
			uint32_t f = pf_obj_floor(&o, a), x = pf_obj_next(&o, a);
			errors += fl == UINT64_MAX ? f != PF_NONE : f == PF_NONE || o.v[f].addr != fl;
			errors += nx == UINT64_MAX ? x != PF_NONE : x == PF_NONE || o.v[x].addr != nx;
		}
	}
	CHECK_EQ_U(errors, 0);
	CHECK_EQ_U(o.live, n);
	pf_objs_free(&o);
}

int main(void)
{
	test_map();
	test_strtab();
	test_treap();
	return check_done();
}
